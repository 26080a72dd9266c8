// The set-up bench/session.ts and bench/scale.ts share: a dev server of their own (its transfer
// queue fast with BENCH_FAST_QUEUE=1), a Sluice worker in this process with one `echo` tool and a
// scripted model `bench` that makes one echo call a step until step n (the first user message),
// then answers `done`.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { z } from 'zod';
import { scriptedModel, type ScriptStep } from '../agent/adapters/scripted';
import type { ModelRequest } from '../agent/models';
import { SluiceClient } from '../client/client';
import { defineConfig, defineTool } from '../define/config';
import { freePort, startDevServer, TRANSFER_QUEUE_FAST } from '../temporal/dev-server';
import { createSluiceWorker } from '../worker/worker';
import { publishedWorkflowBundle } from './bench-stack';

export const FAST_QUEUE = process.env.BENCH_FAST_QUEUE === '1';

/** Step s ≤ n: one echo call; then the answer. The same for a session and a hand loop. */
export const answer =
  (n: number) =>
  (req: { step: number }): ScriptStep =>
    req.step <= n
      ? { text: `step ${req.step}`, calls: [{ id: `c${req.step}`, name: 'echo', args: { n: req.step } }] }
      : { text: 'done' };

/** n: the first user message, as a number. */
export const stepsOf = (req: ModelRequest) => {
  const first = req.messages.find((m) => m.role === 'user');
  return Number(first && first.role === 'user' && typeof first.content === 'string' ? first.content : 0);
};

export interface SessionBenchOptions {
  /** Awaited in each model step before it answers (bench/scale-heap.ts measures memory there). */
  beforeStep?: (req: ModelRequest) => Promise<void>;
}

export async function startSessionBench(name: string, opts: SessionBenchOptions = {}) {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), `sluice-bench-${name}-`));
  const server = await startDevServer({
    stateDir: path.resolve('.sluice'),
    port: await freePort(),
    headless: true,
    dbFile: path.join(stateDir, 'temporal.db'),
    ...(FAST_QUEUE ? { dynamicConfig: TRANSFER_QUEUE_FAST } : {}),
  });
  const connection = await NativeConnection.connect({ address: server.address });
  const taskQueue = `bench-${name}-${process.pid}`;
  const model = scriptedModel(async (req) => {
    await opts.beforeStep?.(req);
    return answer(stepsOf(req))(req);
  }, 'bench');
  const worker = await createSluiceWorker({
    workflowBundle: await publishedWorkflowBundle(),
    connection,
    taskQueue,
    stateDir,
    config: defineConfig({
      tools: [
        defineTool({
          name: 'echo',
          description: 'echo',
          input: z.object({ n: z.number() }),
          isConcurrencySafe: () => true,
          execute: ({ n }) => n,
        }),
      ],
      models: { bench: model },
    }),
  });
  const running = worker.run();
  const client = new SluiceClient({ connection, taskQueue });
  return {
    stateDir,
    server,
    client,
    model,
    worker,
    async close() {
      worker.shutdown();
      await running;
      await connection.close();
      await server.stop();
      fs.rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
