// Where the worker's CPU goes, Sluice against bare Temporal, for one cell of the grid (issue 29's
// "profile where Sluice's extra CPU goes"). Runs bench/run.ts twice on that cell alone, once with
// a quarter of the batches, with the bench worker under V8's CPU profiler (one profile per
// thread: the main thread runs both systems' activities; each worker's workflow thread runs its
// workflows). The difference between the two runs, divided by the calls it adds, is the cost of a
// call with start-up, bundling and warm-up cancelled out. Node's profiler sees JavaScript only:
// what the process spent beyond it (Temporal's core in Rust, gRPC, V8's compiler threads) is the
// worker CPU bench/run.ts measures minus the JavaScript. A second pair of runs counts the promises
// each system's workflows create a call (bench/promise-count.ts): the SDK records a stack trace for
// each, and unlike time the count does not move with the machine's load.
//
//   npx tsx bench/cpu-profile.ts [calls per batch = 10] [in flight = 8] [batches = 80] [--promises]
//
// Writes bench/results/cpu-profile.{json,md}. Four runs of bench/run.ts: about four minutes.
// With --promises, only the two counting runs, printed and not written: a change's effect on the
// count in about a minute, for a developer's loop.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { BenchResult } from './result';
import { round } from './stats';

const PROMISES_ONLY = process.argv.includes('--promises');
const [size = 10, inFlight = 8, batches = 80] = process.argv
  .slice(2)
  .filter((a) => a !== '--promises')
  .map(Number);
if (![size, inFlight, batches].every((n) => Number.isInteger(n) && n > 0) || batches < 8)
  throw new Error('usage: npx tsx bench/cpu-profile.ts [calls per batch] [in flight] [batches, at least 8]');
const ROOT = path.resolve(__dirname, '..');
const OUT = path.join(__dirname, 'results');

/** A V8 .cpuprofile, as Node writes it. */
interface Profile {
  nodes: { id: number; callFrame: { functionName: string; url: string }; children?: number[] }[];
  samples: number[];
  startTime: number;
  endTime: number;
}

/** What a thread spent, by category, in ms of samples. */
type Spent = Record<string, number>;

/** Promises a workflow thread's workflows created, by the three innermost workflow functions. */
interface Promises {
  total: number;
  sites: Map<string, number>;
}

interface Run {
  calls: number;
  promises: { sluice?: Promises; bare?: Promises };
  cpuMsPerCall: { sluice: number; bare: number };
  /** Per thread kind: Sluice's workflow thread, bare's, and the main thread both share. */
  threads: { sluice: Spent; bare: Spent; main: Spent };
}

function runOnce(batchCount: number, measure: 'profile' | 'promises'): Run {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-cpu-profile-'));
  const env = {
    ...process.env,
    BENCH_SIZES: String(size),
    BENCH_CONCURRENCY: String(inFlight),
    BENCH_BATCHES: String(batchCount),
    BENCH_MAX_CALLS: String(batchCount * size),
    BENCH_ROUNDS: '1',
    BENCH_WARMUP: '6',
    BENCH_HISTORY_SAMPLES: '1',
    ...Object.fromEntries(
      // The contention section (on by default) would run its own grid, in both runs and under the profiler.
      [
        'BENCH_PENDING',
        'BENCH_APPROVAL_SAMPLES',
        'BENCH_CODE_MODE',
        'BENCH_LOCAL',
        'BENCH_CLIENT',
        'BENCH_CONTENTION',
      ].map((k) => [k, '0']),
    ),
    BENCH_WORKER_NODE_OPTIONS:
      measure === 'profile'
        ? `--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-interval=250`
        : `--require ${path.join(__dirname, 'promise-count.ts')}`,
    BENCH_PROMISE_COUNT_DIR: measure === 'promises' ? dir : '',
    BENCH_DIR: dir,
    BENCH_OUT: 'cell',
    BENCH_BEFORE: path.join(OUT, 'latest.json'),
  };
  const r = spawnSync(process.execPath, ['--require', 'tsx/cjs', path.join(__dirname, 'run.ts')], {
    env,
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`bench/run.ts failed (exit ${r.status}); run it alone to see why`);
  const result = JSON.parse(fs.readFileSync(path.join(dir, 'cell.json'), 'utf8')) as BenchResult;
  const cell = result.grid[0];
  const run: Run = {
    calls: cell.batches * size,
    cpuMsPerCall: { sluice: cell.sluice.workerCpuMsPerCall ?? NaN, bare: cell.bare.workerCpuMsPerCall ?? NaN },
    threads: { sluice: {}, bare: {}, main: {} },
    promises: {},
  };
  for (const f of fs.readdirSync(dir).filter((n) => /^\d+-\d+\.json$/.test(n))) {
    const read = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    const kind = read.bundle.startsWith('sluice') ? 'sluice' : 'bare';
    run.promises[kind] = { total: read.total, sites: new Map(read.sites) };
  }
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as Profile;
    // Node names a profile CPU.<date>.<time>.<pid>.<thread id>.<n>.cpuprofile; thread 0 is the main one.
    const { kind, spent } = classify(profile, f.split('.')[4] === '0');
    for (const [k, ms] of Object.entries(spent)) run.threads[kind][k] = (run.threads[kind][k] ?? 0) + ms;
  }
  fs.rmSync(dir, { recursive: true, force: true });
  return run;
}

const HOOK = 'stack capture for each new promise (the SDK\u2019s promise hook)';
const BUNDLE = 'workflow code (the bundle, SDK and Sluice)';
const SANDBOX = 'activations, sandbox, payloads (outside the bundle)';
const SLUICE_JS = 'Sluice activities, sinks, stores';
const BARE_JS = 'bare activity';
const BODY = 'the tool body (both systems)';
const SDK_JS = 'SDK and Node (both systems)';
const GC = 'garbage collector';

/** Which thread a profile is (by the bundle its workflow frames come from) and where its samples went. */
function classify(p: Profile, mainThread: boolean): { kind: keyof Run['threads']; spent: Spent } {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const msPerSample = (p.endTime - p.startTime) / 1000 / p.samples.length;
  const urls = p.nodes.map((n) => n.callFrame.url);
  const kind = mainThread ? 'main' : urls.some((u) => u.includes('sluice-bundle')) ? 'sluice' : 'bare';
  const repo = `file://${ROOT}/`;
  const spent: Spent = {};
  for (const id of p.samples) {
    const leaf = byId.get(id)!.callFrame.functionName;
    if (leaf === '(idle)' || leaf === '(program)') continue;
    const stack: string[] = [];
    for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
      const { functionName, url } = byId.get(x)!.callFrame;
      stack.push(`${functionName}@${url}`);
    }
    const on = (test: (frame: string) => boolean) => stack.some(test);
    let what: string;
    if (leaf === '(garbage collector)') what = GC;
    else if (kind !== 'main')
      what = on((s) => s.startsWith('init@') && s.includes('vm-shared'))
        ? HOOK
        : on((s) => s.includes('-bundle.js'))
          ? BUNDLE
          : SANDBOX;
    else if (on((s) => s.includes(`${repo}bench/bare-activities`))) what = BARE_JS;
    else if (on((s) => s.includes(`${repo}bench/config`))) what = BODY;
    else if (on((s) => s.includes(repo) && !s.includes(`${repo}bench/`) && !s.includes('node_modules')))
      what = SLUICE_JS;
    else what = SDK_JS;
    spent[what] = (spent[what] ?? 0) + msPerSample;
  }
  return { kind, spent };
}

/** All of a thread's categories together, ms. */
const spentMs = (s: Spent) => Object.values(s).reduce((a, b) => a + b, 0);

/** ms per call a category adds between the small run and the large one. */
function perCall(small: Spent, large: Spent, calls: number): Spent {
  const keys = new Set([...Object.keys(small), ...Object.keys(large)]);
  return Object.fromEntries([...keys].map((k) => [k, round(((large[k] ?? 0) - (small[k] ?? 0)) / calls, 3)]));
}

/** Promises a call adds between the small run and the large one, in all and by the top sites. */
function promisesPerCall(small: Promises | undefined, large: Promises | undefined, calls: number) {
  if (!small || !large) throw new Error('bench/promise-count.ts wrote no counts: did the bench worker start?');
  const sites = [...large.sites]
    .map(([site, n]): [string, number] => [site, round((n - (small.sites.get(site) ?? 0)) / calls, 2)])
    .filter(([, n]) => n >= 0.5)
    .sort((a, b) => b[1] - a[1]);
  return { perCall: round((large.total - small.total) / calls, 2), sites: Object.fromEntries(sites) };
}

function main(): void {
  const say = (s: string) => console.log(`[cpu-profile ${new Date().toISOString().slice(11, 19)}] ${s}`);
  const load0 = os.loadavg()[0];
  const few = Math.round(batches / 4);
  if (PROMISES_ONLY) {
    say(`${size} calls × ${inFlight} in flight: ${few} batches, then ${batches}, counted`);
    const [smallCount, largeCount] = [runOnce(few, 'promises'), runOnce(batches, 'promises')];
    const calls = largeCount.calls - smallCount.calls;
    const counted = {
      sluice: promisesPerCall(smallCount.promises.sluice, largeCount.promises.sluice, calls),
      bare: promisesPerCall(smallCount.promises.bare, largeCount.promises.bare, calls),
    };
    console.log(promiseReport(counted).join('\n'));
    return;
  }
  say(`${size} calls × ${inFlight} in flight: ${few} batches, then ${batches}, profiled; then both again, counted`);
  const small = runOnce(few, 'profile');
  const large = runOnce(batches, 'profile');
  const added = large.calls - small.calls;
  const smallCount = runOnce(few, 'promises');
  const largeCount = runOnce(batches, 'promises');
  const addedCount = largeCount.calls - smallCount.calls;
  const per = {
    sluice: perCall(small.threads.sluice, large.threads.sluice, added),
    bare: perCall(small.threads.bare, large.threads.bare, added),
    main: perCall(small.threads.main, large.threads.main, added),
  };
  const result: Result = {
    meta: {
      at: new Date().toISOString(),
      size,
      inFlight,
      batches,
      loadAverage: [load0, os.loadavg()[0]].map((l) => round(l, 2)),
    },
    cpuMsPerCall: large.cpuMsPerCall,
    jsMsPerCall: per,
    // What the process spent beyond JavaScript: both systems together, a call of each.
    nativeMsPerCall: round(
      large.cpuMsPerCall.sluice + large.cpuMsPerCall.bare - spentMs(per.sluice) - spentMs(per.bare) - spentMs(per.main),
      3,
    ),
    promises: {
      sluice: promisesPerCall(smallCount.promises.sluice, largeCount.promises.sluice, addedCount),
      bare: promisesPerCall(smallCount.promises.bare, largeCount.promises.bare, addedCount),
    },
  };
  fs.writeFileSync(path.join(OUT, 'cpu-profile.json'), `${JSON.stringify(result, null, 2)}\n`);
  fs.writeFileSync(path.join(OUT, 'cpu-profile.md'), report(result));
  console.log(report(result));
  say('wrote bench/results/cpu-profile.{json,md}');
}

interface Result {
  meta: { at: string; size: number; inFlight: number; batches: number; loadAverage: number[] };
  cpuMsPerCall: { sluice: number; bare: number };
  jsMsPerCall: Record<'sluice' | 'bare' | 'main', Spent>;
  nativeMsPerCall: number;
  promises: Record<'sluice' | 'bare', { perCall: number; sites: Record<string, number> }>;
}

/** A figure per row, largest first. */
function rows(s: Record<string, number>, digits = 3): string[] {
  return Object.entries(s)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `| ${k} | ${v.toFixed(digits)} |`);
}

function report(r: Result): string {
  const table = (title: string, s: Spent) => [
    `| ${title} | ms a call |`,
    '|---|---:|',
    ...rows(s),
    `| **in all** | **${spentMs(s).toFixed(3)}** |`,
    '',
  ];
  return [
    `Worker CPU per call, ${r.meta.size} calls × ${r.meta.inFlight} in flight (${r.meta.batches} batches against a quarter as many; load average ${r.meta.loadAverage.join(' → ')}).`,
    '',
    `Measured by bench/run.ts: Sluice ${r.cpuMsPerCall.sluice} ms, bare ${r.cpuMsPerCall.bare} ms a call (${(r.cpuMsPerCall.sluice / r.cpuMsPerCall.bare).toFixed(2)}×).`,
    '',
    ...table('Sluice\u2019s workflow thread', r.jsMsPerCall.sluice),
    ...table('bare\u2019s workflow thread', r.jsMsPerCall.bare),
    ...table('the main thread (both systems\u2019 activities; a call of each)', r.jsMsPerCall.main),
    `Beyond JavaScript (Temporal\u2019s core, gRPC, V8\u2019s own threads), both systems together: ${r.nativeMsPerCall.toFixed(3)} ms a call of each.`,
    '',
    ...promiseReport(r.promises),
  ].join('\n');
}

function promiseReport({ sluice, bare }: Result['promises']): string[] {
  return [
    `Promises a call's workflow code creates (each gets a stack trace from the SDK's hook): Sluice ${sluice.perCall}, bare ${bare.perCall} (${(sluice.perCall / bare.perCall).toFixed(1)}×). Sluice's, by the workflow functions that create them (innermost first; 0.5 a call or more):`,
    '',
    '| where | promises a call |',
    '|---|---:|',
    ...rows(sluice.sites, 2),
    '',
  ];
}

main();
