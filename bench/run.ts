// `npm run bench`: what durability costs. On one embedded dev server and one worker process, the
// Sluice pipeline, a bare Temporal workflow running the same body as one activity per call, and
// the body called in-process, over a grid of batch sizes and batches in flight; then the
// approval path, each timing against a bare workflow waiting on a signal (bench/bare-workflow.ts).
// Writes bench/results/<BENCH_OUT>.json, .svg and .md.
//
// Settings (env): BENCH_BATCHES batches per grid cell and system (default 40; 0 skips the grid), capped at
// BENCH_MAX_CALLS calls per cell and system (500), and at least the number in flight;
// BENCH_ROUNDS Sluice/bare alternations per cell (2), BENCH_SIZES (1,10,50),
// BENCH_CONCURRENCY (1,8,32), BENCH_HISTORY_SAMPLES histories fetched per cell (5),
// BENCH_APPROVAL_SAMPLES decisions timed one at a time (30), BENCH_PENDING batches awaiting
// approval at once (1000; 0 skips), BENCH_SETTLE_SEC seconds the worker sits idle before its
// memory is read, idle and with them all waiting (20), BENCH_WORKER_NODE_OPTIONS extra node/V8
// flags for the bench worker process (e.g. --max-semi-space-size=2), BENCH_DB `file` (SQLite in a temp folder, as the embedded
// server keeps it) or `memory`, BENCH_MAX_CACHED and BENCH_EAGER (both workers' sticky cache size
// and eager activity reservations per workflow task; Temporal's defaults when unset),
// BENCH_WARMUP batches per system and size before measuring (12), BENCH_LOCAL batches of 10 calls
// of a local-body tool against bare (20; 0 skips), BENCH_CODE_MODE trivial run_code programs timed (30; 0 skips Code Mode), BENCH_SUB_CALLS sub-calls
// per program against as many direct calls (20), BENCH_CLIENT one-call batches per system for the
// client-latency section (worker and client in one process; 40; 0 skips), BENCH_OUT result name (latest), BENCH_DIR where
// results go (bench/results), BENCH_BEFORE the result compared against (before), BENCH_ADDRESS a
// Temporal server to use instead of starting one (the smoke test's), BENCH_LABEL free text,
// BENCH_FAIL_IN a section name to fail on purpose (the test that a dying run keeps what it measured),
// BENCH_HISTORIES a folder to write each cell's last sampled history to, per system (as JSON events).
// Under contention (issue 49): BENCH_CONTENTION busy loops beside the grid (one per core by
// default; 0 skips the section), BENCH_CONTENTION_REPS repetitions of the grid with them (3),
// BENCH_CONTENTION_BATCHES batches per cell, system and repetition (20) capped at
// BENCH_CONTENTION_MAX_CALLS calls (250) and at least the number in flight; the same sizes and
// numbers in flight as the grid.
// As each section finishes, what was measured so far goes to <BENCH_OUT>.partial.json.
//
// `npm run bench -- --quick`: the developer's loop (about a minute on a quiet machine): batches of 1
// and 10 × 1 and 8 in flight, fewer batches and samples, 100 waiting batches, written as `quick`
// unless BENCH_OUT says otherwise. Any setting above still overrides. Compare two runs with
// BENCH_BEFORE=<name in bench/results, or a path to a result file>: the report lists the change of
// every figure beside its noise band (how far the figure moved between the rounds of each run).
import { temporal } from '@temporalio/proto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type BatchHandle, SluiceClient } from '../client/client';
import type { BatchOutput, PendingApproval } from '../pipeline/types';
import { stateQuery } from '../workflows/definitions';
import { DEFAULT_MAX_CACHED_BATCHES } from '../worker/worker';
import { approvalStarter, drainBySignal, startWaiting, waitingMemory } from './approval-bulk';
import { bareDecisionSignal, bareWaitingQuery } from './bare-workflow';
import { echo, echoBody, localEcho, serialEcho } from './config';
import { historyBreakdown } from './breakdown';
import { fetchEvents } from './history-gaps';
import { busyLoopCount, runContention } from './contention';
import { hopsPerBatch } from './hops';
import { runClientLatency } from './client-latency';
import { markdownReport } from './report';
import { plotSvg } from './plot';
import type {
  ApprovalFigures,
  BareBulkFigures,
  BenchResult,
  Cell,
  ClientLatencyFigures,
  CodeModeFigures,
  ContentionFigures,
  LocalBodyFigures,
  SectionLoad,
  SystemFigures,
} from './result';
import {
  BARE_QUEUE,
  MiB,
  SLUICE_QUEUE,
  memoryLine,
  retryTransient,
  transientErrors,
  gitCommit,
  settled,
  startBenchStack,
  type WorkerProcess,
} from './bench-stack';
import { mean, percentile, pool, round } from './stats';

const int = (name: string, fallback: number) => {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name}=${v} must be a whole number`);
  return n;
};
const ints = (name: string, fallback: string) =>
  (process.env[name] || fallback).split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n < 1)
      throw new Error(`${name} must be a comma-separated list of positive whole numbers, not ${process.env[name]}`);
    return n;
  });

const quick = process.argv.slice(2).includes('--quick');
const unknownArgs = process.argv.slice(2).filter((a) => a !== '--quick');
if (unknownArgs.length)
  throw new Error(
    `bench: unknown argument(s) ${unknownArgs.join(' ')}; the only one is --quick (settings are BENCH_* variables)`,
  );
/** The full grid's default, or the quick run's. */
const q = <T>(full: T, fast: T): T => (quick ? fast : full);

const settings = {
  quick,
  batches: int('BENCH_BATCHES', q(40, 8)),
  maxCalls: int('BENCH_MAX_CALLS', q(500, 80)),
  sizes: ints('BENCH_SIZES', q('1,10,50', '1,10')),
  concurrency: ints('BENCH_CONCURRENCY', q('1,8,32', '1,8')),
  rounds: Math.max(1, int('BENCH_ROUNDS', 2)),
  historySamples: int('BENCH_HISTORY_SAMPLES', q(5, 2)),
  approvalSamples: int('BENCH_APPROVAL_SAMPLES', q(30, 6)),
  codeMode: int('BENCH_CODE_MODE', q(30, 6)),
  warmup: int('BENCH_WARMUP', q(12, 4)),
  local: int('BENCH_LOCAL', q(20, 6)),
  client: int('BENCH_CLIENT', q(40, 8)),
  subCalls: Math.max(1, int('BENCH_SUB_CALLS', q(20, 10))),
  pending: int('BENCH_PENDING', q(1000, 100)),
  settleSec: int('BENCH_SETTLE_SEC', q(20, 3)),
  db: process.env.BENCH_DB || 'file',
  maxCached: process.env.BENCH_MAX_CACHED ? int('BENCH_MAX_CACHED', 0) : undefined,
  eager: process.env.BENCH_EAGER ? int('BENCH_EAGER', 0) : undefined,
  out: process.env.BENCH_OUT || q('latest', 'quick'),
  before: process.env.BENCH_BEFORE || 'before',
  address: process.env.BENCH_ADDRESS || '',
  dir: path.resolve(process.env.BENCH_DIR || path.join(__dirname, 'results')),
  label: process.env.BENCH_LABEL || '',
  contention: {
    loops: busyLoopCount(process.env.BENCH_CONTENTION ? int('BENCH_CONTENTION', 0) : undefined),
    reps: Math.max(1, int('BENCH_CONTENTION_REPS', q(3, 2))),
    batches: int('BENCH_CONTENTION_BATCHES', q(20, 6)),
    maxCalls: int('BENCH_CONTENTION_MAX_CALLS', q(250, 60)),
  },
};
const MAX_PARALLEL = 10;

const log = (line: string) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);

async function main(): Promise<void> {
  const started = performance.now();
  const commit = gitCommit(); // the code the worker loads now, not whatever is checked out at the end
  const loadAvgStart = os.loadavg();
  const before = readBefore(settings.out, settings.before); // a wrong BENCH_BEFORE fails now, not after the run
  const base = path.join(settings.dir, settings.out);
  fs.mkdirSync(path.dirname(base), { recursive: true });
  progress.file = `${base}.partial.json`;
  progress.write();
  const stack = await startBenchStack({
    address: settings.address,
    db: settings.db,
    maxCached: settings.maxCached,
    eager: settings.eager,
    log,
  });
  try {
    const { server, worker, connection, runDir, sluiceBundle, bareBundle } = stack;
    const client = new SluiceClient({ connection, taskQueue: SLUICE_QUEUE });
    const systems = new Systems(client, `${Date.now().toString(36)}`);

    await progress.section('warm-up', async () => {
      for (const size of [1, 10]) {
        await pool(settings.warmup, 4, (i) => systems.sluice(`warm-${size}`, i, size));
        await pool(settings.warmup, 4, (i) => systems.bare(`warm-${size}`, i, size));
      }
    });

    const maxCachedWorkflows = worker.maxCachedWorkflows;
    const grid: Cell[] = [];
    for (const size of settings.batches > 0 ? settings.sizes : []) {
      for (const concurrency of settings.concurrency) {
        const cell = await progress.section(`grid: batch of ${size} × ${concurrency} in flight`, () =>
          runCell(systems, worker, size, concurrency),
        );
        grid.push(cell);
        progress.measured.grid = grid;
        progress.write();
      }
    }
    const contention =
      settings.contention.loops > 0 && settings.contention.batches > 0
        ? await progress.section('contention', () => runBusyGrid(systems, worker))
        : undefined;
    const localBodies =
      settings.local > 0 ? await progress.section('localBodies', () => runLocalBodies(systems, worker)) : undefined;
    const codeMode = settings.codeMode > 0 ? await progress.section('codeMode', () => runCodeMode(systems)) : undefined;
    const clientLatency =
      settings.client > 0
        ? await progress.section('clientLatency', () =>
            runClientLatency({
              connection,
              sluiceBundle,
              bareBundle,
              stateDir: path.join(runDir, 'client-state'),
              samples: settings.client,
              log,
            }),
          )
        : undefined;
    const write = (approval?: ApprovalFigures) => {
      const result = resultOf(grid, approval);
      fs.writeFileSync(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`);
      return result;
    };
    const resultOf = (grid: Cell[], approval?: ApprovalFigures): BenchResult => ({
      meta: {
        date: new Date().toISOString(),
        commit,
        label: settings.label,
        quick: settings.quick,
        node: process.version,
        cpus: os.cpus().length,
        loadAvgStart: loadAvgStart.map((x) => round(x)),
        loadAvgEnd: os.loadavg().map((x) => round(x)),
        server: `temporal server start-dev (${path.basename(server.cli)}), SQLite ${settings.db === 'memory' ? 'in memory' : 'file in a temp folder'}, headless`,
        worker:
          'one child process running the Sluice worker and the bare worker (two task queues); the load generator and the in-process runs are in the parent',
        maxCachedWorkflows,
        eagerActivitiesPerTask: settings.eager ?? 3,
        maxParallel: MAX_PARALLEL,
        batchesPerCell: settings.batches,
        maxCallsPerCell: settings.maxCalls,
        historySamples: settings.historySamples,
        durationSec: round((performance.now() - started) / 1000, 1),
        sections: progress.sections,
        transientErrors: { ...transientErrors },
      },
      grid,
      ...(approval ? { approval } : {}),
      ...(codeMode ? { codeMode } : {}),
      ...(localBodies ? { localBodies } : {}),
      ...(clientLatency ? { clientLatency } : {}),
      ...(contention ? { contention } : {}),
      targets: [
        ...targetsOf(grid, codeMode, localBodies, clientLatency),
        ...contentionTargets(contention),
        ...approvalSpeedTargets(approval),
        ...waitingTargets(approval),
      ],
    });
    write(); // the grid is kept even if the approval part fails
    const approval =
      settings.approvalSamples > 0 || settings.pending > 0
        ? await progress.section('approval', () => runApproval(systems, worker))
        : undefined;
    const result = write(approval);
    progress.running = undefined;
    progress.write();
    fs.writeFileSync(`${base}.svg`, plotSvg(result, before));
    const md = markdownReport(result, before);
    fs.writeFileSync(`${base}.md`, md);
    console.log(`\n${md}`);
    log(`wrote ${path.relative(process.cwd(), base)}.{json,svg,md} in ${result.meta.durationSec}s`);
  } finally {
    await stack.stop();
  }
}

/**
 * What the run has measured so far, written to <BENCH_OUT>.partial.json as each section (and each
 * grid cell) finishes (issue 22 item 14): a run that dies keeps what it measured, and the file and
 * the error say which section was running. `running` is absent once the run has finished; the
 * final <BENCH_OUT>.json keeps its own shape.
 */
const progress = {
  file: '',
  running: 'starting the dev server and the worker' as string | undefined,
  done: [] as string[],
  /** Each section's duration and the load average (1 min) as it started and ended: how busy the machine was. */
  sections: [] as SectionLoad[],
  measured: {} as Record<string, unknown>,
  error: undefined as string | undefined,
  write(): void {
    if (!this.file) return;
    const body = {
      running: this.running,
      done: this.done,
      sections: this.sections,
      ...(this.error ? { error: this.error } : {}),
      loadAvg: os.loadavg().map((x) => round(x)),
      ...this.measured,
    };
    // Written aside and renamed, so a run killed mid-write leaves the previous file whole.
    fs.writeFileSync(`${this.file}.tmp`, `${JSON.stringify(body, null, 2)}\n`);
    fs.renameSync(`${this.file}.tmp`, this.file);
  },
  async section<T>(name: string, run: () => Promise<T>): Promise<T> {
    this.running = name;
    const load: SectionLoad = { name, loadAvgStart: round(os.loadavg()[0]) };
    this.sections.push(load);
    log(`section: ${name} (load average ${load.loadAvgStart})`);
    this.write();
    const t0 = performance.now();
    if (process.env.BENCH_FAIL_IN === name)
      throw new Error(`BENCH_FAIL_IN=${name}: failing on purpose, as a run that dies in this section would`);
    const value = await run();
    load.loadAvgEnd = round(os.loadavg()[0]);
    load.seconds = round((performance.now() - t0) / 1000, 1);
    this.done.push(name);
    const key = name.startsWith('grid') ? undefined : name;
    if (key && value !== undefined) this.measured[key] = value;
    this.write();
    return value;
  },
};

/** The three systems under test, each running one batch of `size` echo calls per job. */
class Systems {
  readonly sluiceIds: string[] = [];
  readonly bareIds: string[] = [];

  constructor(
    readonly client: SluiceClient,
    private readonly tag: string,
  ) {}

  private calls(size: number, key: string) {
    return Array.from({ length: size }, (_, k) => ({
      id: `c${k}`,
      name: echo.name,
      arguments: JSON.stringify({ text: `${key}:${k}` }),
    }));
  }

  async sluice(cell: string, i: number, size: number, tool = echo.name): Promise<void> {
    const key = `${cell}-${i}`;
    // Resubmitting the same (session, turn, step) attaches to the batch: a retry never runs it twice.
    const out = await retryTransient(`sluice batch ${key}`, () =>
      this.client.runBatch({
        sessionId: `bench-${this.tag}-${key}`,
        turn: 1,
        step: 1,
        calls: this.calls(size, key).map((c) => ({ ...c, name: tool })),
        options: { maxParallel: MAX_PARALLEL },
      }),
    );
    checkSluice(out, size, key);
    this.sluiceIds.push(`sluice-batch:bench-${this.tag}-${key}:1:1`);
  }

  async bare(cell: string, i: number, size: number): Promise<void> {
    const key = `${cell}-${i}`;
    const workflowId = `bare-${this.tag}-${key}`;
    const out = (await retryTransient(`bare batch ${key}`, () =>
      this.client.temporal.workflow.execute('bareBatch', {
        taskQueue: BARE_QUEUE,
        workflowId,
        workflowIdConflictPolicy: 'USE_EXISTING',
        args: [{ calls: this.calls(size, key), maxParallel: MAX_PARALLEL }],
      }),
    )) as { content: string }[];
    if (out.length !== size || out.some((r, k) => r.content !== `${key}:${k}`))
      throw new Error(`bare batch ${key} returned wrong results`);
    this.bareIds.push(workflowId);
  }

  async inProcess(cell: string, i: number, size: number): Promise<void> {
    const key = `${cell}-${i}`;
    const out = await Promise.all(this.calls(size, key).map(async (c) => echoBody(JSON.parse(c.arguments))));
    if (out.length !== size) throw new Error('in-process batch lost calls');
  }
}

function checkSluice(out: BatchOutput, size: number, key: string): void {
  const bad = out.results.find(
    (r, k) =>
      r.result.isError ||
      r.result.content[0]?.type !== 'text' ||
      (r.result.content[0] as { text: string }).text !== `${key}:${k}`,
  );
  if (out.results.length !== size || bad)
    throw new Error(
      `sluice batch ${key} returned a wrong result: ${JSON.stringify(bad?.result ?? out.results.length)}`,
    );
}

async function runCell(systems: Systems, worker: WorkerProcess, size: number, concurrency: number): Promise<Cell> {
  // Sluice and bare alternate in rounds, so a change in the machine's background load over the
  // cell weighs on both alike; each round keeps at least `concurrency` batches in flight.
  const wanted = Math.max(1, Math.min(settings.batches, Math.floor(settings.maxCalls / size)));
  const rounds = Math.max(1, Math.min(settings.rounds, Math.floor(wanted / concurrency)));
  const perRound = Math.max(Math.ceil(wanted / rounds), concurrency);
  const n = perRound * rounds;
  const cell = `b${size}-c${concurrency}`;
  log(`cell: ${n} batches of ${size} call(s), ${concurrency} in flight, in ${rounds} round(s)`);

  const runs = {
    sluice: { latencies: [] as number[], wallMs: 0 },
    bare: { latencies: [] as number[], wallMs: 0 },
    inProcess: { latencies: [] as number[], wallMs: 0 },
  };
  const mem = { sluice: { rss: 0, peakRss: 0 }, bare: { rss: 0, peakRss: 0 } };
  // Worker CPU (µs, user + system) spent while each system ran, in all and per round.
  const cpu = { sluice: 0, bare: 0 };
  const perRoundFigures = { sluice: [] as RoundFigures[], bare: [] as RoundFigures[] };
  const s0 = systems.sluiceIds.length;
  const b0 = systems.bareIds.length;
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? (['sluice', 'bare'] as const) : (['bare', 'sluice'] as const);
    for (const system of order) {
      const before = await worker.memory(); // resets the peak
      const run = await pool(perRound, concurrency, (i) => systems[system](cell, round * perRound + i, size));
      const m = await worker.memory();
      runs[system].latencies.push(...run.latencies);
      runs[system].wallMs += run.wallMs;
      mem[system] = { rss: m.rss, peakRss: Math.max(mem[system].peakRss, m.peakRss) };
      cpu[system] += m.cpuUs - before.cpuUs;
      perRoundFigures[system].push({
        p50Ms: percentile(run.latencies, 50),
        batchesPerSec: perRound / (run.wallMs / 1000),
        cpuMsPerCall: (m.cpuUs - before.cpuUs) / 1000 / (perRound * size),
      });
    }
    const run = await pool(perRound, concurrency, (i) => systems.inProcess(cell, round * perRound + i, size));
    runs.inProcess.latencies.push(...run.latencies);
    runs.inProcess.wallMs += run.wallMs;
  }
  const [sluiceRun, bareRun, inProcRun, sluiceMem, bareMem] = [
    runs.sluice,
    runs.bare,
    runs.inProcess,
    mem.sluice,
    mem.bare,
  ];

  const sluice = {
    ...figures(sluiceRun, n, size),
    workerCpuMsPerCall: round(cpu.sluice / 1000 / (n * size), 3),
    ...(await histories(systems, systems.sluiceIds.slice(s0), size)),
    workerRssMiB: round(sluiceMem.rss / MiB, 1),
    workerPeakRssMiB: round(sluiceMem.peakRss / MiB, 1),
  };
  const bare = {
    ...figures(bareRun, n, size),
    workerCpuMsPerCall: round(cpu.bare / 1000 / (n * size), 3),
    ...(await histories(systems, systems.bareIds.slice(b0), size)),
    workerRssMiB: round(bareMem.rss / MiB, 1),
    workerPeakRssMiB: round(bareMem.peakRss / MiB, 1),
  };
  const inProcess = figures(inProcRun, n, size, 4);
  const c: Cell = {
    batchSize: size,
    concurrency,
    batches: n,
    sluice,
    bare,
    inProcess,
    ratio: {
      p50: round(sluice.p50Ms / bare.p50Ms),
      p99: round(sluice.p99Ms / bare.p99Ms),
      throughput: round(sluice.batchesPerSec / bare.batchesPerSec),
      eventsPerCall: round(sluice.eventsPerCall! / bare.eventsPerCall!),
      historyBytesPerCall: round(sluice.historyBytesPerCall! / bare.historyBytesPerCall!),
      workerCpuPerCall: round(sluice.workerCpuMsPerCall / bare.workerCpuMsPerCall),
    },
    // Each round's Sluice/bare ratios: how far they move within one run is the noise band a
    // comparison with another run is read against.
    roundRatios: {
      p50: perRoundFigures.sluice.map((s, r) => round(s.p50Ms / perRoundFigures.bare[r].p50Ms, 3)),
      throughput: perRoundFigures.sluice.map((s, r) =>
        round(s.batchesPerSec / perRoundFigures.bare[r].batchesPerSec, 3),
      ),
      workerCpuPerCall: perRoundFigures.sluice.map((s, r) =>
        round(s.cpuMsPerCall / perRoundFigures.bare[r].cpuMsPerCall, 3),
      ),
    },
  };
  log(
    `  sluice p50 ${sluice.p50Ms} ms, ${sluice.batchesPerSec}/s, ${sluice.eventsPerCall} ev/call, ${sluice.workerCpuMsPerCall} ms CPU/call | bare p50 ${bare.p50Ms} ms, ${bare.batchesPerSec}/s, ${bare.eventsPerCall} ev/call, ${bare.workerCpuMsPerCall} ms CPU/call | ratio p50 ${c.ratio.p50}, throughput ${c.ratio.throughput}, CPU/call ${c.ratio.workerCpuPerCall}`,
  );
  return c;
}

interface RoundFigures {
  p50Ms: number;
  batchesPerSec: number;
  cpuMsPerCall: number;
}

function figures(run: { latencies: number[]; wallMs: number }, n: number, size: number, digits = 1): SystemFigures {
  const perSec = n / (run.wallMs / 1000);
  return {
    p50Ms: round(percentile(run.latencies, 50), digits),
    p99Ms: round(percentile(run.latencies, 99), digits),
    batchesPerSec: round(perSec, 1),
    callsPerSec: round(perSec * size, 1),
  };
}

/** Events and encoded bytes per call, over the last few histories of the cell. */
async function histories(
  systems: Systems,
  ids: string[],
  size: number,
): Promise<
  Pick<
    SystemFigures,
    | 'eventsPerCall'
    | 'historyBytesPerCall'
    | 'eventTypesPerCall'
    | 'eventBytesPerCall'
    | 'payloadBytesPerCall'
    | 'payloadKeyBytesPerCall'
    | 'hops'
  >
> {
  const sample = ids.slice(-settings.historySamples);
  if (sample.length === 0) return {};
  const events: number[] = [];
  const bytes: number[] = [];
  const all: temporal.api.history.v1.IHistoryEvent[][] = [];
  let last: temporal.api.history.v1.IHistory | undefined;
  for (const id of sample) {
    const history = await systems.client.temporal.workflow.getHandle(id).fetchHistory();
    all.push(history.events ?? []);
    events.push((history.events ?? []).length / size);
    bytes.push(temporal.api.history.v1.History.encode(history).finish().length / size);
    last = history;
  }
  if (process.env.BENCH_HISTORIES) {
    // The breakdown below is of this one history: keep it to read what the bytes are.
    fs.mkdirSync(process.env.BENCH_HISTORIES, { recursive: true });
    const file = path.join(process.env.BENCH_HISTORIES, `${sample.at(-1)!.replace(/[^\w.-]+/g, '_')}.json`);
    fs.writeFileSync(file, `${JSON.stringify(last!.events, null, 1)}\n`);
  }
  return {
    eventsPerCall: round(mean(events), 2),
    historyBytesPerCall: Math.round(mean(bytes)),
    ...historyBreakdown(last!, size),
    hops: hopsPerBatch(all),
  };
}

/** The grid again with busy loops beside it (bench/contention.ts): what each extra hop costs when cores are scarce. */
function runBusyGrid(systems: Systems, worker: WorkerProcess): Promise<ContentionFigures> {
  return runContention(
    {
      ...settings.contention,
      sizes: settings.sizes,
      concurrency: settings.concurrency,
      historySamples: Math.max(1, settings.historySamples),
    },
    {
      run: (system, cell, i, size) => systems[system](cell, i, size),
      ids: (system) => (system === 'sluice' ? systems.sluiceIds : systems.bareIds),
      events: (ids) => fetchEvents(systems.client, ids),
      workerCpuUs: async () => (await worker.memory()).cpuUs,
      log,
      measured: (cells) => {
        progress.measured.contention = { busyLoops: settings.contention.loops, cells };
        progress.write();
      },
    },
  );
}

/** A tool declaring a local body, batches of 10 one at a time, alternating with bare Temporal. */
async function runLocalBodies(systems: Systems, worker: WorkerProcess): Promise<LocalBodyFigures> {
  const size = 10;
  const n = settings.local;
  log(`local bodies: ${n} batches of ${size} ${localEcho.name} calls against bare, one in flight`);
  for (let i = 0; i < 3; i++) await systems.sluice('local-warm', i, size, localEcho.name);
  const s0 = systems.sluiceIds.length;
  const sluice: number[] = [];
  const bare: number[] = [];
  const cpuUs = { sluice: 0, bare: 0 };
  for (let i = 0; i < n; i++) {
    const order = i % 2 === 0 ? (['sluice', 'bare'] as const) : (['bare', 'sluice'] as const);
    for (const system of order) {
      const before = await worker.memory();
      const t0 = performance.now();
      if (system === 'sluice') await systems.sluice('local', i, size, localEcho.name);
      else await systems.bare('local', i, size);
      (system === 'sluice' ? sluice : bare).push(performance.now() - t0);
      cpuUs[system] += (await worker.memory()).cpuUs - before.cpuUs;
    }
  }
  const cpuMs = (us: number) => round(us / 1000 / (n * size), 3);
  const h = await histories(systems, systems.sluiceIds.slice(s0), size);
  const figures: LocalBodyFigures = {
    batchSize: size,
    batches: n,
    sluice: {
      p50Ms: round(percentile(sluice, 50), 1),
      p99Ms: round(percentile(sluice, 99), 1),
      eventsPerCall: h.eventsPerCall,
      historyBytesPerCall: h.historyBytesPerCall,
      workerCpuMsPerCall: cpuMs(cpuUs.sluice),
    },
    bare: {
      p50Ms: round(percentile(bare, 50), 1),
      p99Ms: round(percentile(bare, 99), 1),
      workerCpuMsPerCall: cpuMs(cpuUs.bare),
    },
    p50Ratio: round(percentile(sluice, 50) / percentile(bare, 50)),
    workerCpuRatio: round(cpuUs.sluice / cpuUs.bare),
  };
  log(`  local bodies p50 ${figures.sluice.p50Ms} ms, bare ${figures.bare.p50Ms} ms (${figures.p50Ratio}×)`);
  return figures;
}

/** Code Mode: a trivial program inside the body, and sub-calls against the same calls made directly. */
async function runCodeMode(systems: Systems): Promise<CodeModeFigures> {
  const client = systems.client;
  const tag = `${Date.now().toString(36)}`;
  let k = 0;
  const batch = async (calls: { name: string; arguments: Record<string, unknown> }[]) => {
    const key = `code-${tag}-${k++}`;
    const t0 = performance.now();
    const out = await retryTransient(`code mode batch ${key}`, () =>
      client.runBatch({
        sessionId: `bench-${key}`,
        turn: 1,
        step: 1,
        calls: calls.map((c, i) => ({ id: `c${i}`, name: c.name, arguments: JSON.stringify(c.arguments) })),
      }),
    );
    const ms = performance.now() - t0;
    const bad = out.results.find((r) => r.result.isError);
    if (bad) throw new Error(`code mode batch ${key} failed: ${JSON.stringify(bad.result)}`);
    return { ms, out };
  };
  const trivial = { name: 'run_code', arguments: { code: 'return 1', description: 'bench: a trivial program' } };
  const plain = { name: serialEcho.name, arguments: { text: 'x' } };
  log(`code mode: ${settings.codeMode} trivial programs, then ${settings.subCalls} sub-calls against direct calls`);
  // Warm the sandbox pool and the workflow caches first.
  for (let i = 0; i < 3; i++) await batch([trivial]);
  const inBody: number[] = [];
  const programBatch: number[] = [];
  const toolBatch: number[] = [];
  for (let i = 0; i < settings.codeMode; i++) {
    const { ms, out } = await batch([trivial]);
    programBatch.push(ms);
    inBody.push(Number((out.results[0].result.meta as { wallMs?: number } | undefined)?.wallMs));
    toolBatch.push((await batch([plain])).ms);
  }
  const n = settings.subCalls;
  const direct = Array.from({ length: n }, (_, i) => ({ name: serialEcho.name, arguments: { text: `d${i}` } }));
  const program = {
    name: 'run_code',
    arguments: {
      code: `for (let i = 0; i < ${n}; i++) await tools.${serialEcho.name}({ text: 'p' + i });\nreturn ${n};`,
      description: `bench: ${n} sub-calls`,
    },
  };
  const rounds = Math.max(2, Math.min(6, Math.round(settings.codeMode / 5)));
  let directMs = 0;
  let programMs = 0;
  for (let r = 0; r < rounds; r++) {
    // Alternating, so a change in the machine's load weighs on both.
    if (r % 2 === 0) {
      directMs += (await batch(direct)).ms;
      programMs += (await batch([program])).ms;
    } else {
      programMs += (await batch([program])).ms;
      directMs += (await batch(direct)).ms;
    }
  }
  const figures: CodeModeFigures = {
    trivialInBody: {
      samples: inBody.length,
      p50Ms: round(percentile(inBody, 50), 1),
      p99Ms: round(percentile(inBody, 99), 1),
    },
    trivialBatch: {
      p50Ms: round(percentile(programBatch, 50), 1),
      toolBatchP50Ms: round(percentile(toolBatch, 50), 1),
    },
    subCalls: {
      calls: n,
      rounds,
      directMsPerCall: round(directMs / rounds / n, 1),
      subCallMsPerCall: round(programMs / rounds / n, 1),
      ratio: round(programMs / directMs),
    },
  };
  log(
    `  trivial program in the body p50 ${figures.trivialInBody.p50Ms} ms; sub-call ${figures.subCalls.subCallMsPerCall} ms against ${figures.subCalls.directMsPerCall} ms direct (${figures.subCalls.ratio}×)`,
  );
  return figures;
}

async function runApproval(systems: Systems, worker: WorkerProcess): Promise<ApprovalFigures> {
  const client = systems.client;
  const tag = `${Date.now().toString(36)}`;
  const start = approvalStarter(client, tag);
  // A query can time out while the worker is busy with a thousand starts: ask again.
  const pendingId = async (workflowId: string): Promise<PendingApproval> => {
    for (let attempt = 0; ; attempt++) {
      const state = await client.batchState(workflowId).catch((err) => {
        if (attempt > 50) throw err;
        return undefined;
      });
      if (state && state.pending.length > 0) return state.pending[0];
      await new Promise((r) => setTimeout(r, state ? 10 : 200));
    }
  };
  const timedDecisions = async (kind: 'signal' | 'update') => {
    const latencies: number[] = [];
    for (let i = 0; i < settings.approvalSamples; i++) {
      const handle = await start(`${kind}-${i}`);
      const { approvalId, argsDigest } = await pendingId(handle.workflowId);
      const t0 = performance.now();
      if (kind === 'signal')
        await client.signalDecision({ workflowId: handle.workflowId, approvalId, decision: 'approve', by: 'bench' });
      else await client.approve(approvalId, { workflowId: handle.workflowId, by: 'bench', argsDigest });
      const out = await handle.result();
      latencies.push(performance.now() - t0);
      if (out.results[0].result.isError)
        throw new Error(`approved batch failed: ${JSON.stringify(out.results[0].result)}`);
    }
    return {
      samples: latencies.length,
      p50Ms: round(percentile(latencies, 50), 1),
      p99Ms: round(percentile(latencies, 99), 1),
    };
  };
  log(
    `approval: ${settings.approvalSamples} decisions by signal (alternating with a bare workflow's), then by update, one batch at a time`,
  );
  const bySignal = await signalDecisionsAgainstBare(client, tag, start, pendingId);
  const signalToResult = bySignal.sluice;
  const updateToResult = await timedDecisions('update');
  log(
    `  signal→result p50 ${signalToResult.p50Ms} ms p99 ${signalToResult.p99Ms} ms (bare ${bySignal.bare.p50Ms} / ${bySignal.bare.p99Ms} ms, ${bySignal.ratio}×); update→result p50 ${updateToResult.p50Ms} ms p99 ${updateToResult.p99Ms} ms`,
  );

  const n = settings.pending;
  const idle = await settled(worker, settings.settleSec);
  log(`approval: ${n} batches awaiting approval at once; idle ${memoryLine(idle)}`);
  const { handles, approvalIds, startMs, allPendingMs } = await startWaiting(n, client, start, log);
  const waiting = await waitingMemory(worker, idle, settings.settleSec, log);
  const awaiting = waiting.awaiting;
  // The first batches started are the longest out of the cache: decided one at a time, each
  // replays its history first. The bulk approve below leaves them out.
  const evicted = await evictedDecisions(client, handles, approvalIds);
  const skip = evicted.samples;

  log(`  all ${n} waiting; approving them by signal, 32 at a time`);
  const { signalsSentMs, drainMs } = await drainBySignal(client, handles, approvalIds, skip);
  const drained = await worker.memory();
  // A query on a finished batch must not be mistaken for one still pending.
  const state = n > 0 ? await client.temporal.workflow.getHandle(handles[0].workflowId).query(stateQuery) : undefined;
  if (state?.pending.length) throw new Error('a bulk-approved batch still lists a pending approval');
  const bulk = {
    batches: n,
    startMs: round(startMs, 0),
    allPendingMs: round(allPendingMs, 0),
    workerRssIdleMiB: round(idle.rss / MiB, 1),
    workerRssAwaitingMiB: round(awaiting.rss / MiB, 1),
    ...waiting.figures,
    signalsSentMs: round(signalsSentMs, 0),
    drainMs: round(drainMs, 0),
    drainBatchesPerSec: round((n - skip) / (drainMs / 1000), 1),
    workerPeakRssDrainMiB: round(drained.peakRss / MiB, 1),
    ...(skip ? { evictedSignalToResult: evicted } : {}),
  };
  log(
    `  ${n} pending: worker RSS ${bulk.workerRssAwaitingMiB} MiB (idle ${bulk.workerRssIdleMiB}); drained in ${bulk.drainMs} ms (${bulk.drainBatchesPerSec}/s)`,
  );
  const bareBulk = n > 0 ? await bareBulkDrain(client, tag, n) : undefined;
  return {
    signalToResult,
    updateToResult,
    bulk,
    bare: { signalToResult: bySignal.bare, ...(bareBulk ? { bulk: bareBulk } : {}) },
    signalToResultRatio: bySignal.ratio,
  };
}

type Latencies = { samples: number; p50Ms: number; p99Ms: number };
const latencies = (ms: number[]): Latencies => ({
  samples: ms.length,
  p50Ms: round(percentile(ms, 50), 1),
  p99Ms: round(percentile(ms, 99), 1),
});

/** Starts a bare approval workflow (bench/bare-workflow.ts) and waits until it waits for its decision. */
async function startBareApproval(client: SluiceClient, workflowId: string, text: string) {
  const handle = await client.temporal.workflow.start('bareApproval', {
    taskQueue: BARE_QUEUE,
    workflowId,
    args: [{ arguments: JSON.stringify({ text }), timeoutMs: 30 * 60_000 }],
  });
  return handle;
}

/** Asks until the bare workflow says it waits (a query before its first workflow task, or on a busy worker, can fail). */
async function bareWaiting(client: SluiceClient, workflowId: string): Promise<void> {
  const handle = client.temporal.workflow.getHandle(workflowId);
  for (let attempt = 0; ; attempt++) {
    const waiting = await handle.query(bareWaitingQuery).catch((err) => {
      if (attempt > 50) throw err;
      return undefined;
    });
    if (waiting) return;
    await new Promise((r) => setTimeout(r, waiting === false ? 10 : 200));
  }
}

/**
 * Issue 18: decision → batch result by signal for Sluice, against the same measure for a bare
 * workflow waiting on a signal with a timeout and then running the same body. One batch at a
 * time, alternating which goes first, so a change in the machine's load weighs on both.
 */
async function signalDecisionsAgainstBare(
  client: SluiceClient,
  tag: string,
  start: (key: string) => ReturnType<SluiceClient['startBatch']>,
  pendingId: (workflowId: string) => Promise<PendingApproval>,
): Promise<{ sluice: Latencies; bare: Latencies; ratio: number }> {
  const sluice: number[] = [];
  const bare: number[] = [];
  const oneSluice = async (i: number) => {
    const handle = await start(`signal-${i}`);
    const { approvalId } = await pendingId(handle.workflowId);
    const t0 = performance.now();
    await client.signalDecision({ workflowId: handle.workflowId, approvalId, decision: 'approve', by: 'bench' });
    const out = await handle.result();
    sluice.push(performance.now() - t0);
    if (out.results[0].result.isError)
      throw new Error(`approved batch failed: ${JSON.stringify(out.results[0].result)}`);
  };
  const oneBare = async (i: number) => {
    const text = `bare-signal-${tag}-${i}`;
    const handle = await startBareApproval(client, text, text);
    await bareWaiting(client, handle.workflowId);
    const t0 = performance.now();
    await handle.signal(bareDecisionSignal, { approve: true });
    const out = (await handle.result()) as { content?: string };
    bare.push(performance.now() - t0);
    if (out.content !== text) throw new Error(`bare approval ${text} returned ${JSON.stringify(out)}`);
  };
  for (let i = 0; i < settings.approvalSamples; i++) {
    if (i % 2 === 0) {
      await oneSluice(i);
      await oneBare(i);
    } else {
      await oneBare(i);
      await oneSluice(i);
    }
  }
  const s = latencies(sluice);
  const b = latencies(bare);
  return { sluice: s, bare: b, ratio: round(s.p50Ms / b.p50Ms) };
}

/**
 * The floor for the bulk drain on this server and machine: as many bare approval workflows
 * waiting at once, approved by signal (32 at a time, as the Sluice batches were), until every
 * result is in.
 */
async function bareBulkDrain(client: SluiceClient, tag: string, n: number): Promise<BareBulkFigures> {
  log(`approval: ${n} bare workflows waiting on a signal at once`);
  const ids = Array.from({ length: n }, (_, i) => `bare-bulk-${tag}-${i}`);
  await pool(n, 32, async (i) => {
    await startBareApproval(client, ids[i], ids[i]);
  });
  await pool(n, 32, (i) => bareWaiting(client, ids[i]));
  log(`  all ${n} waiting; approving them by signal, 32 at a time`);
  const t1 = performance.now();
  await pool(n, 32, (i) => client.temporal.workflow.getHandle(ids[i]).signal(bareDecisionSignal, { approve: true }));
  const signalsSentMs = performance.now() - t1;
  await pool(n, 64, async (i) => {
    const out = (await client.temporal.workflow.getHandle(ids[i]).result()) as { content?: string };
    if (out.content !== ids[i]) throw new Error(`bare approval ${ids[i]} returned ${JSON.stringify(out)}`);
  });
  const drainMs = performance.now() - t1;
  const figures = {
    batches: n,
    signalsSentMs: round(signalsSentMs, 0),
    drainMs: round(drainMs, 0),
    drainBatchesPerSec: round(n / (drainMs / 1000), 1),
  };
  log(`  bare: drained ${n} in ${figures.drainMs} ms (${figures.drainBatchesPerSec}/s)`);
  return figures;
}

/**
 * Decision by signal → batch result for batches that waited out of the sticky cache (the first
 * of the bulk), one at a time: the same measure as signalToResult, plus the replay. At most 20,
 * and none when every bulk batch fits the cache.
 */
async function evictedDecisions(
  client: SluiceClient,
  handles: BatchHandle[],
  approvalIds: string[],
): Promise<{ samples: number; p50Ms: number; p99Ms: number }> {
  const k = Math.min(20, Math.max(0, handles.length - 1 - (settings.maxCached ?? DEFAULT_MAX_CACHED_BATCHES)));
  const ms: number[] = [];
  for (let i = 0; i < k; i++) {
    const t0 = performance.now();
    await client.signalDecision({
      workflowId: handles[i].workflowId,
      approvalId: approvalIds[i],
      decision: 'approve',
      by: 'bench',
    });
    const out = await handles[i].result();
    ms.push(performance.now() - t0);
    if (out.results[0].result.isError)
      throw new Error(`approved batch failed: ${JSON.stringify(out.results[0].result)}`);
  }
  const figures = { samples: k, p50Ms: round(percentile(ms, 50), 1), p99Ms: round(percentile(ms, 99), 1) };
  if (k)
    log(
      `  decision by signal → result on a batch out of the cache: p50 ${figures.p50Ms} ms p99 ${figures.p99Ms} ms (${k})`,
    );
  return figures;
}

/** Issue 18: batches waiting for a person cost the worker (almost) nothing. */
function waitingTargets(approval?: ApprovalFigures): BenchResult['targets'] {
  const b = approval?.bulk;
  if (!b || b.batches === 0) return [];
  const above = b.workerRssAboveIdleMiB ?? b.workerRssAwaitingMiB - b.workerRssIdleMiB;
  return [
    {
      name: `worker RSS with ${b.batches} batches waiting, MiB above idle`,
      value: above,
      limit: '≤ 100',
      met: above <= 100,
    },
  ];
}

/**
 * Issue 49's targets under contention, each on the cell's worst repetition: p50 within 1.25× bare
 * and throughput at least 0.8× in every repetition, and the worker's CPU a call within 1.3×.
 */
function contentionTargets(c?: ContentionFigures): BenchResult['targets'] {
  if (!c) return [];
  const busy = `${c.busyLoops} busy loop(s), worst of ${c.reps}`;
  const out: BenchResult['targets'] = [];
  const each = (
    name: string,
    limit: string,
    pick: (w: ContentionFigures['cells'][number]['worst']) => number,
    met: (x: number) => boolean,
  ) => {
    for (const cell of c.cells) {
      const value = pick(cell.worst);
      out.push({
        name: `${name}, ${cell.batchSize} call(s) × ${cell.concurrency} in flight, ${busy}`,
        value,
        limit,
        met: met(value),
      });
    }
  };
  each(
    'busy: p50 Sluice/bare',
    '≤ 1.25',
    (w) => w.p50,
    (x) => x <= 1.25,
  );
  each(
    'busy: throughput Sluice/bare',
    '≥ 0.8',
    (w) => w.throughput,
    (x) => x >= 0.8,
  );
  each(
    'busy: worker CPU per call Sluice/bare',
    '≤ 1.3',
    (w) => w.workerCpuPerCall,
    (x) => x <= 1.3,
  );
  return out;
}

/** Issue 18's targets (round two); the approval path's are in the approval table. */
function targetsOf(
  grid: Cell[],
  codeMode?: CodeModeFigures,
  localBodies?: LocalBodyFigures,
  clientLatency?: ClientLatencyFigures,
): BenchResult['targets'] {
  const out: BenchResult['targets'] = [];
  for (const c of grid) {
    out.push({
      name: `p50 Sluice/bare, ${c.batchSize} call(s) × ${c.concurrency} in flight`,
      value: c.ratio.p50,
      limit: '≤ 1.1',
      met: c.ratio.p50 <= 1.1,
    });
  }
  for (const c of grid) {
    out.push({
      name: `throughput Sluice/bare, ${c.batchSize} call(s) × ${c.concurrency} in flight`,
      value: c.ratio.throughput,
      limit: '≥ 0.9',
      met: c.ratio.throughput >= 0.9,
    });
  }
  for (const c of grid) {
    const cpu = c.ratio.workerCpuPerCall ?? NaN;
    out.push({
      name: `worker CPU per call Sluice/bare, ${c.batchSize} call(s) × ${c.concurrency} in flight`,
      value: cpu,
      limit: '≤ 1.3',
      met: cpu <= 1.3,
    });
  }
  for (const size of [...new Set(grid.map((c) => c.batchSize))]) {
    const cells = grid.filter((c) => c.batchSize === size);
    const worst = Math.max(...cells.map((c) => c.sluice.eventsPerCall ?? NaN));
    out.push({
      name: `history events per call, batch of ${size} (worst cell)`,
      value: worst,
      limit: size === 10 ? '≤ 10' : 'reported',
      met: size !== 10 || worst <= 10,
    });
    const bytes = Math.max(...cells.map((c) => c.ratio.historyBytesPerCall));
    out.push({
      name: `history bytes per call Sluice/bare, batch of ${size} (worst cell)`,
      value: bytes,
      limit: size === 10 ? '≤ 1.5' : 'reported',
      met: size !== 10 || bytes <= 1.5,
    });
  }
  if (localBodies)
    out.push({
      name: `p50 Sluice with local bodies/bare, ${localBodies.batchSize} calls × 1 in flight`,
      value: localBodies.p50Ratio,
      limit: '≤ 0.6',
      met: localBodies.p50Ratio <= 0.6,
    });
  if (codeMode) {
    out.push({
      name: 'Code Mode: trivial program in the body, p50 ms',
      value: codeMode.trivialInBody.p50Ms,
      limit: '≤ 50',
      met: codeMode.trivialInBody.p50Ms <= 50,
    });
    out.push({
      name: 'Code Mode: sub-call / the same call made directly',
      value: codeMode.subCalls.ratio,
      limit: '≤ 1.2',
      met: codeMode.subCalls.ratio <= 1.2,
    });
  }
  if (clientLatency)
    out.push({
      name: 'client: 1-call runBatch p50 / bare execute p50 (worker and client in one process)',
      value: clientLatency.ratio,
      limit: '≤ 1.0',
      met: clientLatency.ratio <= 1.0,
    });
  return out;
}

/** Issue 18's approval-path speed targets: decision → result against bare, and the bulk drain. */
function approvalSpeedTargets(approval?: ApprovalFigures): BenchResult['targets'] {
  const out: BenchResult['targets'] = [];
  if (approval?.signalToResultRatio !== undefined)
    out.push({
      name: 'approval: decision by signal → batch result p50, Sluice/bare',
      value: approval.signalToResultRatio,
      limit: '≤ 1.2',
      met: approval.signalToResultRatio <= 1.2,
    });
  if (approval && approval.bulk.batches > 0) {
    out.push({
      name: `approval: drain after a bulk approve of ${approval.bulk.batches}, batches/s`,
      value: approval.bulk.drainBatchesPerSec,
      limit: '≥ 50',
      met: approval.bulk.drainBatchesPerSec >= 50,
    });
    const bare = approval.bare?.bulk;
    if (bare)
      out.push({
        name: `approval: drain after a bulk approve, bare workflows waiting on a signal (the floor here), batches/s`,
        value: bare.drainBatchesPerSec,
        limit: 'reported',
        met: true,
      });
  }
  return out;
}

/**
 * The result compared against: BENCH_BEFORE names one in bench/results (`before` by default) or is
 * a path to a result file. Named explicitly and missing is an error, not a silent skip.
 */
function readBefore(out: string, name: string): BenchResult | undefined {
  const asPath = name.endsWith('.json') || name.includes('/');
  const file = asPath ? path.resolve(name) : path.join(__dirname, 'results', `${name}.json`);
  if (!asPath && out === name) return undefined;
  if (!fs.existsSync(file)) {
    if (process.env.BENCH_BEFORE)
      throw new Error(`BENCH_BEFORE=${name}: no result file at ${file}; name one in bench/results or give a path`);
    return undefined;
  }
  return JSON.parse(fs.readFileSync(file, 'utf8')) as BenchResult;
}

main().catch((err) => {
  console.error(`bench failed: ${err?.stack ?? err}`);
  if (progress.running) {
    progress.error = String(err?.message ?? err);
    progress.write();
    console.error(
      `bench stopped in section "${progress.running}"; what it measured before (${progress.done.length} section(s)) is in ${progress.file ? path.relative(process.cwd(), progress.file) : 'no file (it stopped before its results folder was made)'}`,
    );
  }
  process.exit(1);
});
