// A Sluice worker on its own task queue against the run's dev server, for one test file.
import { NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { inject } from 'vitest';
import { SluiceClient, type BatchRequest } from '../client/client';
import type { SluiceConfig } from '../worker/config';
import { createSluiceWorker } from '../worker/worker';

let runtimeQuieted = false;

export interface Harness {
  connection: NativeConnection;
  client: SluiceClient;
  taskQueue: string;
  stateDir: string;
  worker: Worker;
  /** Starts the worker (again); resolves once it polls. */
  startWorker(): Promise<void>;
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

export async function startHarness(name: string, config: SluiceConfig, opts: { autoStart?: boolean } = {}): Promise<Harness> {
  if (!runtimeQuieted) {
    Runtime.install({ logger: new (require('@temporalio/worker').DefaultLogger)('WARN') });
    runtimeQuieted = true;
  }
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const taskQueue = `${name}-${process.pid}-${Date.now()}`;
  const stateDir = fs.mkdtempSync(path.join(inject('runDir'), `${name}-`));
  const client = new SluiceClient({ connection, taskQueue });
  let running: Promise<void> | undefined;
  const h: Harness = {
    connection,
    client,
    taskQueue,
    stateDir,
    worker: undefined as unknown as Worker,
    async startWorker() {
      h.worker = await createSluiceWorker({ connection, taskQueue, config, stateDir, workflowBundle: { codePath: inject('workflowBundlePath') } });
      running = h.worker.run();
    },
    async stopWorker() {
      if (!running) return;
      h.worker.shutdown();
      await running;
      running = undefined;
    },
    async close() {
      await h.stopWorker();
      await connection.close();
    },
  };
  if (opts.autoStart !== false) await h.startWorker();
  return h;
}

let batchCounter = 0;
/** A batch on a fresh session, so tests never collide on workflow ids. */
export function batch(calls: { id?: string; name: string; args?: object | string }[], extra: Partial<BatchRequest> = {}): BatchRequest {
  batchCounter++;
  return {
    sessionId: `s-${process.pid}-${Date.now()}-${batchCounter}`,
    turn: 1,
    step: 1,
    calls: calls.map((c, i) => ({ id: c.id ?? `call-${i + 1}`, name: c.name, arguments: typeof c.args === 'string' ? c.args : JSON.stringify(c.args ?? {}) })),
    ...extra,
  };
}

export function text(result: { content: { type: string; text?: string }[] }): string {
  return result.content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('');
}
