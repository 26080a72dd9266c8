// How cost grows (issue 29): one session of many steps (history a step adds, the worker's RSS, the
// pause at each continue-as-new) and one batch of many calls (time per call against a batch of 50).
// Writes bench/results/scale.{json,md,svg}: steps or calls on x, cost on y.
// Run: `npx tsx bench/scale.ts [steps=2000] [maxCalls=500]`; BENCH_FAST_QUEUE=1 as in bench/session.ts;
// `npx tsx bench/scale.ts --plot` redraws the plot from scale.json.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { SluiceClient } from '../client/client';
import { startSession } from '../client/session';
import { type LiveCursor, readJsonlSince } from '../stores/live';
import { readSessionLog, sessionLogPath } from '../stores/sink';
import { type XyPanel, xyPanelsSvg } from './plot';
import { FAST_QUEUE, startSessionBench } from './session-bench';

const STEPS = Number(process.argv[2] ?? 2_000);
const MAX_CALLS = Number(process.argv[3] ?? 500);
const CAN_AFTER = 1_000;
const OUT = path.join(__dirname, 'results');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;
const load = () => os.loadavg()[0].toFixed(1);
const say = (m: string) => console.log(`[scale ${new Date().toISOString().slice(11, 19)}] ${m}`);

interface StepPoint {
  step: number;
  run: number;
  bytesAdded?: number;
  rssMiB?: number;
}

async function main() {
  const { stateDir, client, close } = await startSessionBench('scale');
  const tag = Date.now().toString(36);
  const startLoad = load();
  try {
    const session = await longSession(client, stateDir, `scale-${tag}`);
    const batches = await batchSizes(client, `scale-batch-${tag}`);
    const result = {
      run: new Date().toISOString(),
      node: process.version,
      cores: os.cpus().length,
      loadAverage: { start: startLoad, end: load() },
      transferQueue: FAST_QUEUE ? 'fast' : 'default',
      session,
      batches,
    };
    fs.writeFileSync(path.join(OUT, 'scale.json'), `${JSON.stringify(result, null, 2)}\n`);
    fs.writeFileSync(path.join(OUT, 'scale.md'), report(result));
    fs.writeFileSync(path.join(OUT, 'scale.svg'), plot(session.points, batches));
    say('wrote bench/results/scale.{json,md,svg}');
  } finally {
    await close();
  }
}

/** One session of STEPS steps (one call each), continuing-as-new every CAN_AFTER events. */
async function longSession(client: SluiceClient, stateDir: string, sessionId: string) {
  say(`session: ${STEPS} steps, continue-as-new after ${CAN_AFTER} events (load ${load()})`);
  // RSS of this process (the worker and the client), sampled against the steps logged so far.
  const rss: { step: number; rssMiB: number }[] = [];
  const stepsLogged = stepCounter(sessionLogPath(stateDir, sessionId));
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      rss.push({ step: await stepsLogged(), rssMiB: mib(process.memoryUsage().rss) });
      await new Promise((r) => setTimeout(r, 2_000));
    }
  })();
  const began = Date.now();
  const s = await startSession(client, {
    sessionId,
    model: 'bench',
    endWhenIdle: true,
    maxStepsPerTurn: STEPS + 5,
    continueAsNewAfterEvents: CAN_AFTER,
  });
  await s.post(String(STEPS), { id: 'go' });
  const out = await s.result();
  sampling = false;
  await sampler;
  if (out.lastTurn?.text !== 'done') throw new Error(`the session ended with ${JSON.stringify(out.lastTurn)}`);
  const wallMs = Date.now() - began;
  const steps = (await readSessionLog(stateDir, sessionId))
    .filter((e) => e.type === 'model/message')
    .map((e) => ({ ...(e.data as { step: number; run: number; historyBytes: number }), at: Date.parse(e.time) }));
  const points: StepPoint[] = steps.map((e, i) => ({
    step: e.step,
    run: e.run,
    ...(i > 0 && steps[i - 1].run === e.run ? { bytesAdded: e.historyBytes - steps[i - 1].historyBytes } : {}),
  }));
  for (const r of rss) points.push({ step: r.step, run: 0, rssMiB: r.rssMiB });
  // Bytes a step adds, median per 100 steps: flat means the last bucket within 5 % of the first.
  const buckets = new Map<number, number[]>();
  for (const p of points)
    if (p.bytesAdded !== undefined)
      buckets.set(Math.floor(p.step / 100), [...(buckets.get(Math.floor(p.step / 100)) ?? []), p.bytesAdded]);
  const perBucket = [...buckets]
    .sort(([a], [b]) => a - b)
    .map(([k, xs]) => ({ fromStep: k * 100, bytesPerStep: median(xs) }));
  // The pause at a continue-as-new: the gap (workflow time) between the last step of a run and the
  // first of the next, against the median gap between steps.
  const gaps = steps.slice(1).map((e, i) => ({ gap: e.at - steps[i].at, newRun: e.run !== steps[i].run }));
  const stepGapMs = median(gaps.filter((g) => !g.newRun).map((g) => g.gap));
  const canPausesMs = gaps.filter((g) => g.newRun).map((g) => g.gap);
  const rssValues = rss.filter((r) => r.step >= 50).map((r) => r.rssMiB);
  const summary = {
    steps: steps.length,
    runs: new Set(steps.map((e) => e.run)).size,
    wallMs,
    msPerStep: Math.round((wallMs / steps.length) * 10) / 10,
    stepGapMs,
    bytesPerStep: perBucket,
    bytesFlatWithin:
      Math.round((perBucket[perBucket.length - 1].bytesPerStep / perBucket[0].bytesPerStep - 1) * 1000) / 10,
    canPausesMs,
    rssMiB: {
      min: Math.min(...rssValues),
      max: Math.max(...rssValues),
      spread: Math.round((Math.max(...rssValues) - Math.min(...rssValues)) * 10) / 10,
    },
    points,
  };
  say(
    `session: ${summary.steps} steps in ${summary.runs} runs, ${summary.msPerStep} ms a step; bytes a step adds ${perBucket[0].bytesPerStep} → ${perBucket[perBucket.length - 1].bytesPerStep} (${summary.bytesFlatWithin} %); continue-as-new pauses ${canPausesMs.join(', ')} ms (a step: ${stepGapMs} ms); RSS ${summary.rssMiB.min}-${summary.rssMiB.max} MiB (load ${load()})`,
  );
  return summary;
}

/**
 * The model steps a session log holds so far, counted as the log grows: each call reads only the
 * lines appended since the one before (the log is append-only), so sampling costs the same at step
 * 2,000 as at step 10, where reading the whole log each time read some 24,000 events by then.
 */
function stepCounter(file: string): () => Promise<number> {
  let cursor: LiveCursor | undefined;
  let steps = 0;
  return async () => {
    const read = await readJsonlSince<{ type?: string }>(file, cursor);
    cursor = read.cursor;
    steps += read.events.filter((e) => e.type === 'model/message').length;
    return steps;
  };
}

/** One batch of each size, twice: wall time per call, against the batch of 50. */
async function batchSizes(client: SluiceClient, prefix: string) {
  const sizes = [50, 100, 250, MAX_CALLS].filter((n, i, all) => n <= MAX_CALLS && all.indexOf(n) === i);
  const out: { calls: number; msPerCall: number; ratioTo50: number }[] = [];
  for (const calls of sizes) {
    const times: number[] = [];
    for (let round = 0; round < 2; round++) {
      const sessionId = `${prefix}-${calls}-${round}`;
      const began = performance.now();
      await client.runBatch({
        sessionId,
        turn: 1,
        step: 1,
        calls: Array.from({ length: calls }, (_, i) => ({ id: `c${i}`, name: 'echo', arguments: { n: i } })),
        startSeq: 0,
      });
      times.push(performance.now() - began);
    }
    const msPerCall = Math.round((Math.min(...times) / calls) * 100) / 100;
    out.push({ calls, msPerCall, ratioTo50: Math.round((msPerCall / (out[0]?.msPerCall ?? msPerCall)) * 100) / 100 });
    say(`batch of ${calls}: ${msPerCall} ms a call (the better of 2; load ${load()})`);
  }
  return out;
}

type Session = Awaited<ReturnType<typeof longSession>>;
type Batches = Awaited<ReturnType<typeof batchSizes>>;

function report(r: {
  run: string;
  loadAverage: { start: string; end: string };
  transferQueue: string;
  session: Session;
  batches: Batches;
}): string {
  const s = r.session;
  return `Run ${r.run}: load average ${r.loadAverage.start} at start, ${r.loadAverage.end} at end; dev server transfer queue ${r.transferQueue}.

| how cost grows (issue 29) | value | limit | met |
|---|---|---|---|
| session of ${s.steps} steps: bytes a step adds, last 100 steps against the first | ${s.bytesPerStep[0].bytesPerStep} → ${s.bytesPerStep[s.bytesPerStep.length - 1].bytesPerStep} (${s.bytesFlatWithin} %) | within 5 % | ${Math.abs(s.bytesFlatWithin) <= 5 ? 'yes' : '**no**'} |
| worker RSS over the session (from step 50) | ${s.rssMiB.min}-${s.rssMiB.max} MiB (spread ${s.rssMiB.spread}) | within 50 MiB | ${s.rssMiB.spread <= 50 ? 'yes' : '**no**'} |
| pause at each continue-as-new (${s.runs - 1}) | ${s.canPausesMs.join(', ')} ms (a step: ${s.stepGapMs} ms) | under 1,000 ms | ${s.canPausesMs.every((p) => p < 1_000) ? 'yes' : '**no**'} |
${r.batches.map((b) => `| batch of ${b.calls}: ms a call | ${b.msPerCall} (${b.ratioTo50}× the batch of 50) | ${b.calls === r.batches[r.batches.length - 1].calls ? 'within 1.5×' : '–'} | ${b.calls === r.batches[r.batches.length - 1].calls ? (b.ratioTo50 <= 1.5 ? 'yes' : '**no**') : '–'} |`).join('\n')}

The session ran ${s.steps} steps in ${s.runs} runs, ${s.msPerStep} ms a step (wall). Plot: scale.svg.
`;
}

/** Three panels: bytes a step adds and RSS against the step; ms a call against the batch size. */
function plot(points: StepPoint[], batches: Batches): string {
  const panels: XyPanel[] = [
    {
      title: 'history bytes a step adds (each step)',
      xLabel: 'step',
      points: points.filter((p) => p.bytesAdded !== undefined).map((p) => [p.step, p.bytesAdded!]),
    },
    {
      title: 'worker RSS, MiB (sampled every 2 s)',
      xLabel: 'step',
      points: points.filter((p) => p.rssMiB !== undefined).map((p) => [p.step, p.rssMiB!]),
    },
    {
      title: 'ms a call, by calls in the batch',
      xLabel: 'calls in the batch',
      points: batches.map((b) => [b.calls, b.msPerCall]),
    },
  ];
  return xyPanelsSvg(panels);
}

// `--plot` draws scale.svg again from scale.json, without running anything.
if (process.argv[2] === '--plot') {
  const r = JSON.parse(fs.readFileSync(path.join(OUT, 'scale.json'), 'utf8'));
  fs.writeFileSync(path.join(OUT, 'scale.svg'), plot(r.session.points, r.batches));
} else
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
