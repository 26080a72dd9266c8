// Code Mode's costs on this machine: starting a sandbox, and one sub-call through the pipeline
// compared with the same call made directly by the model, with where each one's time goes (the
// events and workflow tasks a call takes, and every gap between consecutive events of the last
// round's histories). Run: `npx tsx bench/code-mode.ts`; BENCH_FAST_QUEUE=1 polls the dev server's
// transfer queue up to 1,000 times a second instead of 20 (bench/session.ts says why).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Runtime, DefaultLogger, NativeConnection } from '@temporalio/worker';
import { z } from 'zod';
import { type BatchRequest, SluiceClient } from '../client/client';
import { codeModeTool, runProgram } from '../tools/code-mode';
import { defineConfig, defineTool } from '../define/config';
import { freePort, startDevServer, TRANSFER_QUEUE_FAST } from '../temporal/dev-server';
import { createSluiceWorker } from '../worker/worker';
import { publishedWorkflowBundle } from './bench-stack';
import { counts, fetchEvents, gaps, printGaps } from './history-gaps';
import { FAST_QUEUE } from './session-bench';

const SANDBOX_RUNS = 10;
const SUB_CALLS = 50;
const ROUNDS = 5;

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
    ...(FAST_QUEUE ? { dynamicConfig: TRANSFER_QUEUE_FAST } : {}),
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
    const calls = Array.from({ length: SUB_CALLS }, (_, n) => ({ id: `c${n}`, name: 'echo', arguments: { n } }));
    const code = `let sum = 0;\nfor (let n = 0; n < ${SUB_CALLS}; n++) sum += await tools.echo({ n });\nreturn sum;`;
    const program = [{ id: 'c', name: 'run_code', arguments: { code, description: 'bench' } }];
    const timed = async (sessionId: string, batch: BatchRequest['calls']) => {
      const t = performance.now();
      const handle = await client.startBatch({ sessionId, turn: 1, step: 1, calls: batch });
      const out = await handle.result();
      if (out.results.some((r) => r.result.isError)) throw new Error(JSON.stringify(out.results));
      return { ms: (performance.now() - t) / SUB_CALLS, workflowId: handle.workflowId };
    };
    // Alternating, so a change in the machine's load weighs on both; the first round warms up.
    const direct: { ms: number; workflowId: string }[] = [];
    const viaCode: { ms: number; workflowId: string }[] = [];
    for (let r = 0; r <= ROUNDS; r++) {
      const session = `bench-${Date.now()}-${r}`;
      const d = await timed(`${session}-direct`, calls);
      const c = await timed(`${session}-code`, program);
      if (r === 0) continue;
      direct.push(d);
      viaCode.push(c);
    }
    const d = median(direct.map((x) => x.ms));
    const c = median(viaCode.map((x) => x.ms));
    console.log(
      `${SUB_CALLS} echo calls, median of ${ROUNDS} rounds: ${d.toFixed(1)} ms each as a batch of direct calls (sequential, not concurrency-safe); ${c.toFixed(1)} ms each as sub-calls of one program (${(c / d).toFixed(2)}x)`,
    );
    // Where a call's time goes, from the last round's two histories.
    const last = { direct: direct[direct.length - 1].workflowId, code: viaCode[viaCode.length - 1].workflowId };
    const [directEvents, codeEvents] = await fetchEvents(client, [last.direct, last.code]);
    console.log(`\nper call: direct ${counts([directEvents], SUB_CALLS)}`);
    console.log(`  as a sub-call ${counts([codeEvents], SUB_CALLS)}`);
    printGaps('a batch of direct calls, between consecutive events', 'call', gaps([directEvents], SUB_CALLS));
    printGaps('one program of sub-calls, between consecutive events', 'call', gaps([codeEvents], SUB_CALLS));
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
