// A Sluice worker on its own task queue against the run's dev server, for one test file.
import type { DataConverter } from '@temporalio/common';
import { NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, inject } from 'vitest';
import { SluiceClient, type BatchRequest } from '../client/client';
import type { SluiceConfig } from '../define/config';
import type { SluiceStores } from '../stores/stores';
import type { SluiceTelemetry } from '../worker/telemetry';
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

export async function startHarness(
  name: string,
  config: SluiceConfig,
  opts: {
    autoStart?: boolean;
    dataConverter?: DataConverter;
    stateDir?: string;
    stores?: SluiceStores;
    telemetry?: SluiceTelemetry;
    /** The worker's sticky cache; createSluiceWorker's default when not given. */
    maxCachedWorkflows?: number;
  } = {},
): Promise<Harness> {
  if (!runtimeQuieted) {
    Runtime.install({ logger: new (require('@temporalio/worker').DefaultLogger)('ERROR') });
    runtimeQuieted = true;
  }
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const taskQueue = `${name}-${process.pid}-${Date.now()}`;
  const stateDir = opts.stateDir ?? fs.mkdtempSync(path.join(inject('runDir'), `${name}-`));
  const client = new SluiceClient({ connection, taskQueue, dataConverter: opts.dataConverter });
  let running: Promise<void> | undefined;
  let settled = false;
  const h: Harness = {
    connection,
    client,
    taskQueue,
    stateDir,
    worker: undefined as unknown as Worker,
    async startWorker() {
      h.worker = await createSluiceWorker({
        connection,
        taskQueue,
        config,
        stateDir,
        workflowBundle: { codePath: inject('workflowBundlePath') },
        dataConverter: opts.dataConverter,
        ...(opts.stores ? { stores: opts.stores } : {}),
        ...(opts.telemetry ? { telemetry: opts.telemetry } : {}),
        ...(opts.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: opts.maxCachedWorkflows } : {}),
      });
      settled = false;
      running = h.worker.run().finally(() => {
        settled = true;
      });
    },
    async stopWorker() {
      if (!running) return;
      // run() moves the worker to RUNNING a moment after it is called, and shutdown() before then
      // throws (IllegalStateError: Not running): a test that stops its worker at once waits for it.
      while (h.worker.getState() === 'INITIALIZED' && !settled) await new Promise((r) => setTimeout(r, 10));
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
export function batch(
  calls: { id?: string; name: string; args?: object | string }[],
  extra: Partial<BatchRequest> = {},
): BatchRequest {
  batchCounter++;
  return {
    sessionId: `s-${process.pid}-${Date.now()}-${batchCounter}`,
    turn: 1,
    step: 1,
    calls: calls.map((c, i) => ({
      id: c.id ?? `call-${i + 1}`,
      name: c.name,
      arguments: typeof c.args === 'string' ? c.args : JSON.stringify(c.args ?? {}),
    })),
    ...extra,
  };
}

export function text(result: { content: { type: string; text?: string }[] }): string {
  return result.content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('');
}

/**
 * A worker in its own process, so a test can kill it with SIGKILL mid-stage and start another.
 * `configFile` is a module exporting defineConfig(...) (see test/fixtures/).
 */
export interface ChildWorker {
  pid: number;
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Resolves when the worker printed that it polls. */
  ready: Promise<void>;
}

export function spawnWorker(
  configFile: string,
  taskQueue: string,
  stateDir: string,
  env: Record<string, string> = {},
): ChildWorker {
  const { spawn } = require('node:child_process') as typeof import('node:child_process');
  const child = spawn(
    process.execPath,
    [
      '--require',
      'tsx/cjs',
      path.join(__dirname, '..', 'worker', 'main.ts'),
      '--config',
      configFile,
      '--task-queue',
      taskQueue,
      '--address',
      inject('temporalAddress'),
      '--state-dir',
      stateDir,
      '--workflow-bundle',
      inject('workflowBundlePath'),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  );
  let out = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes('sluice worker:')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => reject(new Error(`worker exited (${code}) before it was ready:\n${out}`)));
  });
  ready.catch(() => undefined);
  return {
    pid: child.pid!,
    ready,
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/**
 * A file's harness whose worker is a child process the tests kill and start again (a session across
 * its worker's death): started before the file's tests, its worker killed and the harness closed
 * after them. `lines` reads a log the config's tools write in the harness's state folder.
 */
export function killableWorker(name: string, configFile: string) {
  const k = {
    h: undefined as unknown as Harness,
    worker: undefined as ChildWorker | undefined,
    async start(): Promise<void> {
      k.worker = spawnWorker(configFile, k.h.taskQueue, k.h.stateDir, { SLUICE_TEST_DIR: k.h.stateDir });
      await k.worker.ready;
    },
    async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
      await k.worker?.kill(signal);
      k.worker = undefined;
    },
    lines(file: string): string[] {
      const at = path.join(k.h.stateDir, file);
      return fs.existsSync(at) ? fs.readFileSync(at, 'utf8').trim().split('\n').filter(Boolean) : [];
    },
  };
  beforeAll(async () => {
    k.h = await startHarness(name, { tools: [] }, { autoStart: false });
  });
  afterAll(async () => {
    await k.kill();
    await k.h?.close();
  });
  return k;
}
