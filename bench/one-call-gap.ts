// What a one-call batch's extra worker CPU is made of (issue 29: "profile where Sluice's extra CPU
// goes"). The CPU profile (bench/cpu-profile.ts) splits a call's CPU by thread and code, but not
// what Temporal's core and V8 spend beyond JavaScript on Sluice's behalf. This measures it whole:
// one worker process (this one) on its own dev server runs one-call workflows of five systems in
// turn, the load coming from a client in a child process, and the worker's CPU (user + system,
// every thread) is read around each system's share:
//
//   bare                 bench/bare-workflow.ts's one-call batch: one activity, the tool body
//   + promises           the same, making as many more workflow promises as a Sluice one-call
//                        batch does (36 against bare's 13, `cpu-profile.ts 1 8 80 --promises`;
//                        the 86 this took before came from counts that counted Sluice's promises
//                        twice, docs/performance.md); the SDK captures a stack trace for each
//   + local activity     the same, with one local activity before the body (Sluice's claim and
//                        preflight; its reply a short list)
//   + both
//   Sluice               a one-call batch of the bench's echo tool (bench/config.ts)
//   Sluice, scheduler    the same batch through the model-order scheduler, as a batch recorded
//                        before runs (a second Sluice worker whose first round's result loses
//                        `straight`, pipeline/seq-claim.ts FirstRound)
//
//   npx tsx bench/one-call-gap.ts [rounds = 5] [workflows a round = 60] [in flight = 8] [promises = 23]
//
// Writes bench/results/one-call-gap.{json,md}. About four minutes on a quiet machine with the
// defaults; the committed result took 9 rounds of 100 (about eight).
import { Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { type ChildProcess, fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SluiceClient } from '../client/client';
import { startDevServer } from '../temporal/dev-server';
import { createSluiceWorker, DEFAULT_MAX_CACHED_BATCHES, SluicePlugin } from '../worker/worker';
import { publishedWorkflowBundle } from './bench-stack';
import config, { echo, echoBody } from './config';
import type { GapInput } from './one-call-gap-workflows';
import { round } from './stats';

const SYSTEMS = [
  'bare',
  'bare + promises',
  'bare + local activity',
  'bare + both',
  'Sluice',
  'Sluice, scheduler',
] as const;
type System = (typeof SYSTEMS)[number];
const SLUICE_QUEUE = 'gap-sluice';
const BARE_QUEUE = 'gap-bare';
const SCHEDULER_QUEUE = 'gap-sluice-scheduler';

type ToClient = { kind: 'run'; system: System; workflows: number; inFlight: number; promises: number };
type ToWorker = { kind: 'ready' } | { kind: 'done' } | { kind: 'failed'; error: string };

/** A first round's result as a worker of the build before writes it: without `straight`. */
function withoutStraight(result: unknown): unknown {
  if (!result || typeof result !== 'object' || !('straight' in result)) return result;
  const { straight: _straight, ...rest } = result as Record<string, unknown>;
  return rest;
}

/** The client: starts each system's workflows on demand and says when they are all done. */
async function client(address: string): Promise<void> {
  const connection = await Connection.connect({ address });
  const sluice = new SluiceClient({ connection, taskQueue: SLUICE_QUEUE });
  const scheduler = new SluiceClient({ connection, taskQueue: SCHEDULER_QUEUE });
  let n = 0;
  const one = async (m: ToClient) => {
    const key = `${process.pid}-${n++}`;
    const args = JSON.stringify({ text: key });
    if (m.system.startsWith('Sluice')) {
      const out = await (m.system === 'Sluice' ? sluice : scheduler).runBatch({
        sessionId: `gap-${key}`,
        turn: 1,
        step: 1,
        calls: [{ id: 'c0', name: echo.name, arguments: args }],
      });
      if (out.results[0]?.result.isError) throw new Error(`batch ${key} failed: ${JSON.stringify(out.results)}`);
      return;
    }
    const input: GapInput = {
      arguments: args,
      promises: m.system.endsWith('promises') || m.system.endsWith('both') ? m.promises : 0,
      local: m.system.endsWith('activity') || m.system.endsWith('both'),
    };
    await sluice.temporal.workflow.execute('gapBatch', {
      taskQueue: BARE_QUEUE,
      workflowId: `gap-${key}`,
      args: [input],
    });
  };
  const send = (m: ToWorker) => process.send?.(m);
  process.on('message', async (m: ToClient) => {
    try {
      let left = m.workflows;
      await Promise.all(
        Array.from({ length: m.inFlight }, async () => {
          while (left-- > 0) await one(m);
        }),
      );
      send({ kind: 'done' });
    } catch (err) {
      send({ kind: 'failed', error: String((err as Error)?.stack ?? err) });
    }
  });
  send({ kind: 'ready' });
}

async function main(): Promise<void> {
  const [rounds = 5, workflows = 60, inFlight = 8, promises = 23] = process.argv.slice(2).map(Number);
  if (![rounds, workflows, inFlight].every((x) => Number.isInteger(x) && x > 0) || !(promises >= 0))
    throw new Error('usage: npx tsx bench/one-call-gap.ts [rounds] [workflows a round] [in flight] [promises]');
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const log = (line: string) => console.log(`[one-call-gap ${new Date().toISOString().slice(11, 19)}] ${line}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-one-call-gap-'));
  const server = await startDevServer({ stateDir: dir, headless: true, log: () => {} });
  let child: ChildProcess | undefined;
  try {
    const connection = await NativeConnection.connect({ address: server.address });
    const quiet = new DefaultLogger('WARN');
    const bare = await bundleWorkflowCode({
      workflowsPath: require.resolve('./one-call-gap-workflows'),
      logger: quiet,
    });
    const sluiceWorker = await createSluiceWorker({
      connection,
      taskQueue: SLUICE_QUEUE,
      config,
      stateDir: dir,
      workflowBundle: await publishedWorkflowBundle(),
    });
    const bareWorker = await Worker.create({
      connection,
      taskQueue: BARE_QUEUE,
      workflowBundle: bare,
      activities: {
        async runBody(args: string) {
          return echoBody(JSON.parse(args));
        },
        async preflight(refs: string[]) {
          return refs.map((_, i) => `c${i}`);
        },
      },
    });
    // The same workflows and activities; only the first round's `straight` is dropped on its way
    // back, so the batch takes the scheduler.
    const schedulerWorker = await Worker.create({
      connection,
      taskQueue: SCHEDULER_QUEUE,
      plugins: [new SluicePlugin({ config, stateDir: dir })],
      workflowBundle: await publishedWorkflowBundle(),
      maxCachedWorkflows: DEFAULT_MAX_CACHED_BATCHES,
      interceptors: {
        activity: [() => ({ inbound: { execute: async (input, next) => withoutStraight(await next(input)) } })],
      },
    });
    const running = Promise.all([sluiceWorker.run(), bareWorker.run(), schedulerWorker.run()]);

    const c = fork(__filename, ['--client', server.address], { execArgv: ['--require', 'tsx/cjs'] });
    child = c;
    const replies: ((m: ToWorker) => void)[] = [];
    c.on('message', (m: ToWorker) => replies.shift()?.(m));
    const reply = () => new Promise<ToWorker>((resolve) => replies.push(resolve));
    if ((await reply()).kind !== 'ready') throw new Error('the client did not start');
    const run = async (system: System, count: number): Promise<number> => {
      const before = process.cpuUsage();
      c.send({ kind: 'run', system, workflows: count, inFlight, promises } satisfies ToClient);
      const m = await reply();
      if (m.kind === 'failed') throw new Error(`${system}: ${m.error}`);
      const spent = process.cpuUsage(before);
      return (spent.user + spent.system) / 1000 / count;
    };

    log(`warm-up, then ${rounds} rounds of ${workflows} workflows a system, ${inFlight} in flight`);
    for (const s of SYSTEMS) await run(s, 12);
    const msPerWorkflow = new Map<System, number[]>(SYSTEMS.map((s) => [s, []]));
    const loadStart = os.loadavg()[0];
    for (let r = 0; r < rounds; r++) {
      // Each system in each place of the order, as far as the rounds go: the machine's drift falls on all.
      const order = SYSTEMS.map((_, i) => SYSTEMS[(i + r) % SYSTEMS.length]);
      for (const s of order) {
        const ms = await run(s, workflows);
        msPerWorkflow.get(s)?.push(ms);
        log(`round ${r + 1} ${s}: ${ms.toFixed(2)} ms of worker CPU a workflow`);
      }
    }
    const loadEnd = os.loadavg()[0];
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const figures = SYSTEMS.map((s) => ({
      system: s,
      medianMs: round(median(msPerWorkflow.get(s) ?? []), 2),
      runs: (msPerWorkflow.get(s) ?? []).map((x) => round(x, 2)),
    }));
    const base = figures[0].medianMs;
    const result = {
      meta: {
        date: new Date().toISOString(),
        node: process.version,
        cores: os.cpus().length,
        loadAvg: [round(loadStart, 2), round(loadEnd, 2)],
        rounds,
        workflows,
        inFlight,
        promises,
      },
      figures,
    };
    const md = [
      `Worker CPU of one-call workflows, ${rounds} rounds of ${workflows} a system, ${inFlight} in flight; ${promises} promises more in the "promises" systems; load average ${result.meta.loadAvg[0]} → ${result.meta.loadAvg[1]}, ${result.meta.cores} cores, ${result.meta.date}.`,
      '',
      '| system | ms of worker CPU a workflow (median) | over bare | each round |',
      '|---|---:|---:|---|',
      ...figures.map(
        (f) =>
          `| ${f.system} | ${f.medianMs.toFixed(2)} | ${f.system === 'bare' ? '' : `+${(f.medianMs - base).toFixed(2)}`} | ${f.runs.map((x) => x.toFixed(2)).join(', ')} |`,
      ),
      '',
    ].join('\n');
    const out = path.join(__dirname, 'results');
    fs.writeFileSync(path.join(out, 'one-call-gap.json'), `${JSON.stringify(result, null, 2)}\n`);
    fs.writeFileSync(path.join(out, 'one-call-gap.md'), md);
    console.log(`\n${md}`);
    sluiceWorker.shutdown();
    bareWorker.shutdown();
    schedulerWorker.shutdown();
    await running;
  } finally {
    child?.kill();
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--client')
  client(process.argv[3]).catch((err) => {
    console.error(err);
    process.exit(1);
  });
else
  main().catch((err) => {
    console.error(`one-call-gap failed: ${err?.stack ?? err}`);
    process.exit(1);
  });
