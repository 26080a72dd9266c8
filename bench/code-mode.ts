// Code Mode's costs on this machine: starting a sandbox, and one sub-call through the pipeline
// compared with the same call made directly by the model. Run: `npx tsx bench/code-mode.ts`.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Runtime, DefaultLogger, NativeConnection } from '@temporalio/worker';
import { z } from 'zod';
import { SluiceClient } from '../client/client';
import { codeModeTool, runProgram } from '../tools/code-mode';
import { defineConfig, defineTool } from '../define/config';
import { freePort, startDevServer } from '../temporal/dev-server';
import { createSluiceWorker } from '../worker/worker';
import { publishedWorkflowBundle } from './bench-stack';

const SANDBOX_RUNS = 10;
const SUB_CALLS = 50;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const starts: number[] = [];
  for (let i = 0; i < SANDBOX_RUNS; i++) {
    const t = performance.now();
    await runProgram({
      code: 'return 1',
      toolNames: [],
      seed: `bench/${i}`,
      now: 0,
      callTool: async () => ({ ok: false, message: 'none' }),
    });
    starts.push(performance.now() - t);
  }
  console.log(
    `sandbox: a trivial program takes ${median(starts).toFixed(0)} ms (median of ${SANDBOX_RUNS}; thread, QuickJS instance, run)`,
  );

  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-'));
  const server = await startDevServer({
    stateDir: path.resolve('.sluice'),
    port: await freePort(),
    headless: true,
    dbFile: path.join(stateDir, 'temporal.db'),
  });
  const connection = await NativeConnection.connect({ address: server.address });
  const taskQueue = `bench-code-mode-${process.pid}`;
  const echo = defineTool({
    name: 'echo',
    description: 'echo',
    input: z.object({ n: z.number() }),
    execute: ({ n }) => n,
  });
  const worker = await createSluiceWorker({
    workflowBundle: await publishedWorkflowBundle(),
    connection,
    taskQueue,
    stateDir,
    config: defineConfig({ tools: [echo, codeModeTool()] }),
  });
  const running = worker.run();
  const client = new SluiceClient({ connection, taskQueue });
  try {
    const session = `bench-${Date.now()}`;
    const calls = Array.from({ length: SUB_CALLS }, (_, n) => ({ id: `c${n}`, name: 'echo', arguments: { n } }));
    let t = performance.now();
    await client.runBatch({ sessionId: `${session}-direct`, turn: 1, step: 1, calls });
    const direct = performance.now() - t;
    const code = `let sum = 0;\nfor (let n = 0; n < ${SUB_CALLS}; n++) sum += await tools.echo({ n });\nreturn sum;`;
    t = performance.now();
    const out = await client.runBatch({
      sessionId: `${session}-code`,
      turn: 1,
      step: 1,
      calls: [{ id: 'c', name: 'run_code', arguments: { code, description: 'bench' } }],
    });
    const viaCode = performance.now() - t;
    if (out.results[0].result.isError) throw new Error(JSON.stringify(out.results[0].result));
    console.log(
      `${SUB_CALLS} echo calls: ${(direct / SUB_CALLS).toFixed(1)} ms each as a batch of direct calls (sequential, not concurrency-safe); ${(viaCode / SUB_CALLS).toFixed(1)} ms each as sub-calls of one program (${viaCode.toFixed(0)} ms in all)`,
    );
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
