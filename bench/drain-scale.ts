// Waiting batches drained, by how many wait (issue 29: 10,000 waiting batches drain at no less than
// 0.8× the rate of 1,000). On one dev server and one worker process (bench/bench-stack.ts, as
// `npm run bench` runs them), for each size in turn: start that many one-call batches of
// approved_echo, wait until every one is pending, read the worker's memory, then approve them all by
// signal (32 at a time) and wait for every result. The drain is timed from the first signal to the
// last result, over all of them: batches evicted from the sticky cache while they waited replay
// their history before they finish, and that is part of draining them.
// Writes bench/results/drain-scale.{json,md,svg} after each size, so a run that dies keeps what it
// measured; the svg plots drain rate (and start rate, and RSS) against the batches waiting.
//
// Run: `npx tsx bench/drain-scale.ts [sizes…]` (default `1000 10000 1000`: the second 1,000
// brackets the big one, so a drift in the machine's load shows). About 60-90 min on a shared
// 2-core machine for the default. `npx tsx bench/drain-scale.ts --plot` writes the md and svg again
// from the json, without running anything.
// Env: BENCH_FAST_QUEUE=1 starts the dev server with its transfer queue fast (bench/session-bench.ts;
// the default queue compares with bench/run.ts), BENCH_SETTLE_SEC seconds the worker sits idle
// before its memory is read, idle and with them all waiting (20), BENCH_DIR where results go
// (bench/results).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SluiceClient } from '../client/client';
import { TRANSFER_QUEUE_FAST } from '../temporal/dev-server';
import { approvalStarter, drainBySignal, startWaiting, waitingMemory } from './approval-bulk';
import {
  gitCommit,
  MiB,
  memoryLine,
  SLUICE_QUEUE,
  settled,
  startBenchStack,
  transientErrors,
  type WorkerProcess,
} from './bench-stack';
import { xyPanelsSvg } from './plot';
import { FAST_QUEUE } from './session-bench';
import { round } from './stats';

const SETTLE_SEC = Number(process.env.BENCH_SETTLE_SEC || 20);
const OUT = path.resolve(process.env.BENCH_DIR || path.join(__dirname, 'results'));
const BASE = path.join(OUT, 'drain-scale');
const WARMUP = 32;
/** Long enough that the first batch started still waits when the last of 10,000 is approved. */
const APPROVAL_TIMEOUT_MS = 4 * 3600_000;
const TARGET = 0.8;

const load1 = () => round(os.loadavg()[0]);
const log = (line: string) => console.log(`[drain ${new Date().toISOString().slice(11, 19)}] ${line}`);

interface DrainRun {
  batches: number;
  startedAt: string;
  /** The first start to the last start, and to the last batch pending. */
  startMs: number;
  allPendingMs: number;
  startBatchesPerSec: number;
  signalsSentMs: number;
  drainMs: number;
  drainBatchesPerSec: number;
  /** Batches out of the sticky cache when the drain began (about: all but the last `maxCachedWorkflows` started). */
  outOfCacheAtDrain: number;
  workerRssIdleMiB: number;
  workerRssAwaitingMiB: number;
  workerPeakRssStartMiB: number;
  workerPeakRssDrainMiB: number;
  waiting: Awaited<ReturnType<typeof waitingMemory>>['figures'];
  /** The 1-minute load average as the size began, as its drain began, and as it ended. */
  loadAvg: { start: number; drainStart: number; end: number };
  seconds: number;
}

interface DrainScale {
  meta: {
    date: string;
    commit: string;
    command: string;
    node: string;
    cpus: number;
    transferQueue: 'default' | 'fast';
    maxCachedWorkflows: number;
    settleSec: number;
    sizes: number[];
    transientErrors: Record<string, number>;
    error?: string;
  };
  runs: DrainRun[];
}

async function main(sizes: number[]): Promise<void> {
  const began = performance.now();
  const stack = await startBenchStack({ ...(FAST_QUEUE ? { dynamicConfig: TRANSFER_QUEUE_FAST } : {}), log });
  const result: DrainScale = {
    meta: {
      date: new Date().toISOString(),
      commit: gitCommit(),
      command: `npx tsx bench/drain-scale.ts ${sizes.join(' ')}`,
      node: process.version,
      cpus: os.cpus().length,
      transferQueue: FAST_QUEUE ? 'fast' : 'default',
      maxCachedWorkflows: stack.worker.maxCachedWorkflows,
      settleSec: SETTLE_SEC,
      sizes,
      transientErrors,
    },
    runs: [],
  };
  try {
    const client = new SluiceClient({ connection: stack.connection, taskQueue: SLUICE_QUEUE });
    const start = approvalStarter(client, Date.now().toString(36), APPROVAL_TIMEOUT_MS);
    log(`warm-up: ${WARMUP} batches waiting, then approved (load ${load1()})`);
    const warm = await startWaiting(WARMUP, client, start, log, 'warm');
    await drainBySignal(client, warm.handles, warm.approvalIds);
    for (const [k, n] of sizes.entries()) {
      result.runs.push(await drainRun(client, stack.worker, start, n, `r${k}`));
      write(result);
    }
    log(
      `done in ${Math.round((performance.now() - began) / 60_000)} min; wrote ${path.relative(process.cwd(), BASE)}.{json,md,svg}`,
    );
  } catch (err) {
    result.meta.error = String((err as Error)?.message ?? err);
    write(result);
    throw err;
  } finally {
    await stack.stop();
  }
}

async function drainRun(
  client: SluiceClient,
  worker: WorkerProcess,
  start: ReturnType<typeof approvalStarter>,
  n: number,
  prefix: string,
): Promise<DrainRun> {
  const t0 = performance.now();
  const startedAt = new Date().toISOString();
  const loadStart = load1();
  const idle = await settled(worker, SETTLE_SEC);
  log(`${n} batches waiting at once (load ${loadStart}); idle ${memoryLine(idle)}`);
  await worker.memory(); // the peak counts from here
  const { handles, approvalIds, startMs, allPendingMs } = await startWaiting(n, client, start, log, prefix);
  const startPeak = await worker.memory();
  log(`  ${n} started in ${Math.round(startMs / 1000)} s, all pending after ${Math.round(allPendingMs / 1000)} s`);
  const waiting = await waitingMemory(worker, idle, SETTLE_SEC, log);
  const loadDrain = load1();
  log(`  approving all ${n} by signal, 32 at a time (load ${loadDrain})`);
  const { signalsSentMs, drainMs } = await drainBySignal(client, handles, approvalIds);
  const drainPeak = await worker.memory();
  const run: DrainRun = {
    batches: n,
    startedAt,
    startMs: Math.round(startMs),
    allPendingMs: Math.round(allPendingMs),
    startBatchesPerSec: round(n / (allPendingMs / 1000), 1),
    signalsSentMs: Math.round(signalsSentMs),
    drainMs: Math.round(drainMs),
    drainBatchesPerSec: round(n / (drainMs / 1000), 2),
    outOfCacheAtDrain: Math.max(0, n - worker.maxCachedWorkflows),
    workerRssIdleMiB: round(idle.rss / MiB, 1),
    workerRssAwaitingMiB: round(waiting.awaiting.rss / MiB, 1),
    workerPeakRssStartMiB: round(startPeak.peakRss / MiB, 1),
    workerPeakRssDrainMiB: round(drainPeak.peakRss / MiB, 1),
    waiting: waiting.figures,
    loadAvg: { start: loadStart, drainStart: loadDrain, end: load1() },
    seconds: Math.round((performance.now() - t0) / 1000),
  };
  log(
    `  ${n} drained in ${Math.round(drainMs / 1000)} s (${run.drainBatchesPerSec}/s; signals sent in ${Math.round(signalsSentMs / 1000)} s); RSS idle ${run.workerRssIdleMiB}, waiting ${run.workerRssAwaitingMiB}, peak ${run.workerPeakRssStartMiB} starting / ${run.workerPeakRssDrainMiB} draining MiB; load ${run.loadAvg.start} → ${run.loadAvg.drainStart} → ${run.loadAvg.end}`,
  );
  return run;
}

function write(r: DrainScale): void {
  fs.mkdirSync(OUT, { recursive: true });
  fs.writeFileSync(`${BASE}.json`, `${JSON.stringify(r, null, 2)}\n`);
  fs.writeFileSync(`${BASE}.md`, report(r));
  fs.writeFileSync(`${BASE}.svg`, plot(r));
}

/** Each run of a larger size against each run of the smallest: the target's ratios. */
function ratios(r: DrainScale) {
  const smallest = Math.min(...r.meta.sizes);
  const base = r.runs.map((run, i) => ({ run, i })).filter(({ run }) => run.batches === smallest);
  return r.runs
    .map((run, i) => ({ run, i }))
    .filter(({ run }) => run.batches > smallest)
    .flatMap(({ run, i }) =>
      base.map((b) => ({
        big: i,
        small: b.i,
        ratio: round(run.drainBatchesPerSec / b.run.drainBatchesPerSec, 2),
      })),
    );
}

const n = (x: number) => x.toLocaleString('en-US');
const sec = (ms: number) => `${n(Math.round(ms / 1000))} s`;

function report(r: DrainScale): string {
  const smallest = Math.min(...r.meta.sizes);
  const largest = Math.max(...r.meta.sizes);
  const rs = ratios(r);
  const missing = r.meta.sizes.slice(r.runs.length);
  const baseLoads = r.runs
    .filter((x) => x.batches === smallest)
    .map((x) => x.loadAvg.drainStart)
    .join(', ');
  const verdict = !rs.length
    ? `not judged yet: no run of ${n(largest)} beside one of ${n(smallest)}`
    : rs.every((x) => x.ratio >= TARGET)
      ? `met against every ${n(smallest)} run`
      : rs.some((x) => x.ratio >= TARGET)
        ? `met against one ${n(smallest)} run, missed against another (load average at their drains: ${baseLoads})`
        : 'missed';
  const rows = r.runs.map(
    (x, i) =>
      `| ${i + 1} | ${n(x.batches)} | ${sec(x.startMs)} / ${sec(x.allPendingMs)} (${x.startBatchesPerSec}/s) | ${sec(x.signalsSentMs)} | ${sec(x.drainMs)} | **${x.drainBatchesPerSec}** | ${n(x.outOfCacheAtDrain)} | ${x.workerRssIdleMiB} → ${x.workerRssAwaitingMiB} (${x.waiting.workerRssAwaitingAfterGcMiB} after GC) | ${x.workerPeakRssStartMiB} / ${x.workerPeakRssDrainMiB} | ${x.loadAvg.start} / ${x.loadAvg.drainStart} / ${x.loadAvg.end} |`,
  );
  return `# Waiting batches drained, by how many wait (issue 29)

Run ${r.meta.date.slice(0, 16)} at ${r.meta.commit}: \`${r.meta.command}\`; node ${r.meta.node}, ${r.meta.cpus} cores; one dev server (transfer queue ${r.meta.transferQueue}), one worker process (sticky cache ${r.meta.maxCachedWorkflows}), sizes run in this order in one process.${r.meta.error ? `\n\n**The run stopped with an error before it finished:** ${r.meta.error}` : ''}${missing.length ? `\n\nNot run (yet): ${missing.map(n).join(', ')}.` : ''}

**Target:** ${n(largest)} waiting batches drain at ≥ ${TARGET}× the rate of ${n(smallest)}. **Result: ${verdict}.**

| target | ratio | limit | met |
|---|---|---|---|
${rs.map((x) => `| drain rate, run ${x.big + 1} (${n(r.runs[x.big].batches)}) / run ${x.small + 1} (${n(r.runs[x.small].batches)}) | ${x.ratio} | ≥ ${TARGET} | ${x.ratio >= TARGET ? 'yes' : '**no**'} |`).join('\n')}

| run | waiting | started / all pending (rate) | signals sent | drained in | drain, batches/s | out of cache at drain | worker RSS idle → waiting, MiB | peak RSS starting / draining, MiB | load (1 min) start / drain / end |
|---|---:|---|---:|---:|---:|---:|---|---|---|
${rows.join('\n')}

**What "drained" counts.** Every batch of the size, from the first approval signal to the last
result: none is decided ahead and left out (bench/run.ts decides the first 20 out-of-cache batches
one at a time before its bulk approve and leaves them out of its rate). A batch that left the sticky
cache while it waited (all but about the last ${r.meta.maxCachedWorkflows} started) replays its
history before it finishes: the share that replays grows with the size (${r.runs.map((x) => `${n(x.outOfCacheAtDrain)} of ${n(x.batches)}`).join(', ')}), and a deployment with that many
waiting pays the same, so it stays in. Signals go 32 at a time and results are awaited 64 at a
time, as bench/run.ts does. RSS "waiting" is read ${r.meta.settleSec} s after the last batch began
to wait, as idle is read after ${r.meta.settleSec} s idle; peaks are sampled every 100 ms. Plot: drain-scale.svg.
`;
}

function plot(r: DrainScale): string {
  const base = r.runs.filter((x) => x.batches === Math.min(...r.meta.sizes));
  const baseMean = base.reduce((a, x) => a + x.drainBatchesPerSec, 0) / (base.length || 1);
  return xyPanelsSvg([
    {
      title: 'drain after a bulk approve, batches/s (each point a run; #n: its order)',
      xLabel: 'batches waiting',
      points: r.runs.map((x) => [x.batches, x.drainBatchesPerSec]),
      dots: { labels: r.runs.map((x, i) => `#${i + 1}: ${x.drainBatchesPerSec}/s (load ${x.loadAvg.drainStart})`) },
      ...(base.length
        ? {
            reference: {
              y: round(TARGET * baseMean, 2),
              label: `target: ${TARGET}× the ${n(base[0].batches)} runs' mean`,
            },
          }
        : {}),
    },
    {
      title: 'start until all pending, batches/s',
      xLabel: 'batches waiting',
      points: r.runs.map((x) => [x.batches, x.startBatchesPerSec]),
      dots: { labels: r.runs.map((x, i) => `#${i + 1}: ${x.startBatchesPerSec}/s`) },
    },
    {
      title: 'worker RSS with all waiting, MiB',
      xLabel: 'batches waiting',
      points: r.runs.map((x) => [x.batches, x.workerRssAwaitingMiB]),
      dots: { labels: r.runs.map((x, i) => `#${i + 1}: ${x.workerRssAwaitingMiB} (idle ${x.workerRssIdleMiB})`) },
    },
  ]);
}

const args = process.argv.slice(2);
if (args[0] === '--plot') {
  const r = JSON.parse(fs.readFileSync(`${BASE}.json`, 'utf8')) as DrainScale;
  fs.writeFileSync(`${BASE}.md`, report(r));
  fs.writeFileSync(`${BASE}.svg`, plot(r));
} else {
  const sizes = args.length ? args.map(Number) : [1_000, 10_000, 1_000];
  const bad = sizes.find((x) => !Number.isInteger(x) || x < 1);
  if (bad !== undefined)
    throw new Error(
      `drain-scale: sizes are positive whole numbers of batches (e.g. 1000 10000 1000), not ${args.join(' ')}`,
    );
  main(sizes).catch((err) => {
    console.error(`drain-scale failed: ${err?.stack ?? err}`);
    process.exit(1);
  });
}
