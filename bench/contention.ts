// The grid under contention (issue 49): with anything else on the cores, each hop through the
// server (a workflow task, an activity task, a local activity) waits its turn for a core, and a
// system that takes more hops loses more rounds. This section runs the grid with a fixed harness
// beside it — as many busy loops as cores by default, started and stopped here, the same for both
// systems — Sluice and bare alternating within each repetition, and reports every repetition on
// its own: the cell's figure is its worst repetition, not an average. From the histories sampled
// in each cell it counts the hops per batch of each system and where their time went (bench/hops.ts).
import { type ChildProcess, spawn } from 'node:child_process';
import * as os from 'node:os';
import type { temporal } from '@temporalio/proto';
import { hopsPerBatch } from './hops';
import type { ContentionCell, ContentionFigures, ContentionRun } from './result';
import { percentile, pool, round } from './stats';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type System = 'sluice' | 'bare';

export interface ContentionSettings {
  /** Busy loops beside the grid (0 skips the section). */
  loops: number;
  reps: number;
  /** Batches per cell, system and repetition, capped at maxCalls calls, at least the number in flight. */
  batches: number;
  maxCalls: number;
  sizes: number[];
  concurrency: number[];
  /** Histories read per cell, system and repetition for the hop counts. */
  historySamples: number;
}

/** What the section needs of the bench: run a batch, the ids run so far, their histories, the worker's CPU. */
export interface ContentionDeps {
  run(system: System, cell: string, i: number, size: number): Promise<void>;
  ids(system: System): string[];
  events(ids: string[]): Promise<HistoryEvent[][]>;
  workerCpuUs(): Promise<number>;
  log(line: string): void;
  /** Called as each cell finishes, with the cells so far: the run keeps them if it dies later. */
  measured?(cells: ContentionCell[]): void;
}

/** The busy loops: each a node process spinning, yielding to its event loop every 50 ms to hear its parent go. */
export interface BusyLoops {
  count: number;
  /** The loops' process ids: the test that they end with the bench reads them. */
  pids: number[];
  stop(): Promise<void>;
}

// Spins in slices so the IPC channel is read between them: when the bench ends (or dies), the
// channel closes and the loop exits, rather than spinning on as an orphan on a shared machine.
const SPIN = `process.on('disconnect', () => process.exit(0));
const spin = () => { const end = Date.now() + 50; while (Date.now() < end); setImmediate(spin); };
process.send('spinning', spin);`;

export async function startBusyLoops(count: number): Promise<BusyLoops> {
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGKILL');
          }),
      ),
    );
    process.off('exit', killAll);
  };
  const killAll = () => {
    for (const c of children) c.kill('SIGKILL');
  };
  process.on('exit', killAll);
  try {
    await Promise.all(
      Array.from({ length: count }, () => {
        const child = spawn(process.execPath, ['-e', SPIN], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
        children.push(child);
        return new Promise<void>((resolve, reject) => {
          child.once('message', () => resolve());
          child.once('exit', (code) => reject(new Error(`a busy loop exited (${code}) before it began to spin`)));
        });
      }),
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { count, pids: children.map((c) => c.pid!), stop };
}

/** The busy-loop count BENCH_CONTENTION asks for: unset means one per core. */
export function busyLoopCount(setting: number | undefined): number {
  return setting ?? os.cpus().length;
}

/** Every cell of the grid, each repetition with the busy loops spinning; the loops stop whatever happens. */
export async function runContention(s: ContentionSettings, deps: ContentionDeps): Promise<ContentionFigures> {
  const loops = await startBusyLoops(s.loops);
  deps.log(`contention: ${s.loops} busy loop(s) spinning; ${s.reps} repetition(s) of the grid`);
  const cells: CellInProgress[] = [];
  try {
    for (let rep = 0; rep < s.reps; rep++) {
      let k = 0;
      for (const size of s.sizes)
        for (const concurrency of s.concurrency) {
          const cell = (cells[k] ??= newCell(s, size, concurrency));
          // Which system goes first alternates by repetition and by cell.
          const order: System[] = (rep + k) % 2 === 0 ? ['sluice', 'bare'] : ['bare', 'sluice'];
          const runs = {} as Record<System, ContentionRun>;
          for (const system of order) runs[system] = await runSystem(s, deps, system, cell, rep, cell.sampled[system]);
          cell.reps.push({
            loadAvg: round(os.loadavg()[0]),
            first: order[0],
            sluice: runs.sluice,
            bare: runs.bare,
            ratio: {
              p50: round(runs.sluice.p50Ms / runs.bare.p50Ms),
              p95: round(runs.sluice.p95Ms / runs.bare.p95Ms),
              throughput: round(runs.sluice.batchesPerSec / runs.bare.batchesPerSec),
              workerCpuPerCall: round(runs.sluice.workerCpuMsPerCall / runs.bare.workerCpuMsPerCall),
            },
          });
          deps.log(
            `  rep ${rep + 1}, ${size} × ${concurrency}: p50 ${runs.sluice.p50Ms} / ${runs.bare.p50Ms} ms, ${runs.sluice.batchesPerSec} / ${runs.bare.batchesPerSec} batches/s, CPU ${runs.sluice.workerCpuMsPerCall} / ${runs.bare.workerCpuMsPerCall} ms a call (Sluice / bare)`,
          );
          k++;
        }
      deps.measured?.(cells.map(withoutIds));
    }
  } finally {
    await loops.stop();
  }
  for (const cell of cells) await finishCell(cell, deps);
  return { busyLoops: s.loops, reps: s.reps, cells: cells.map(withoutIds) };
}

/** A cell while it runs: the ids of the batches whose histories its hops are read from. */
type CellInProgress = ContentionCell & { sampled: Record<System, string[]> };

const withoutIds = ({ sampled: _, ...cell }: CellInProgress): ContentionCell => cell;

function newCell(s: ContentionSettings, size: number, concurrency: number): CellInProgress {
  return {
    batchSize: size,
    concurrency,
    batches: Math.max(concurrency, Math.min(s.batches, Math.floor(s.maxCalls / size)), 1),
    reps: [],
    worst: { p50: NaN, p95: NaN, throughput: NaN, workerCpuPerCall: NaN },
    sampled: { sluice: [], bare: [] },
  };
}

/** One system's batches of one cell in one repetition: latency, throughput, the worker's CPU per call. */
async function runSystem(
  s: ContentionSettings,
  deps: ContentionDeps,
  system: System,
  cell: ContentionCell,
  rep: number,
  sampled: string[],
): Promise<ContentionRun> {
  const name = `busy-r${rep}-b${cell.batchSize}-c${cell.concurrency}`;
  const before = deps.ids(system).length;
  const cpu0 = await deps.workerCpuUs();
  const { latencies, wallMs } = await pool(cell.batches, cell.concurrency, (i) =>
    deps.run(system, name, i, cell.batchSize),
  );
  const cpuUs = (await deps.workerCpuUs()) - cpu0;
  sampled.push(...deps.ids(system).slice(before).slice(-s.historySamples));
  return {
    p50Ms: round(percentile(latencies, 50), 1),
    p95Ms: round(percentile(latencies, 95), 1),
    batchesPerSec: round(cell.batches / (wallMs / 1000), 2),
    workerCpuMsPerCall: round(cpuUs / 1000 / (cell.batches * cell.batchSize), 3),
  };
}

/** The worst repetition's ratios, and the hops of the histories sampled over every repetition. */
async function finishCell(cell: CellInProgress, deps: ContentionDeps): Promise<void> {
  const ratios = cell.reps.map((r) => r.ratio);
  cell.worst = {
    p50: Math.max(...ratios.map((r) => r.p50)),
    p95: Math.max(...ratios.map((r) => r.p95)),
    throughput: Math.min(...ratios.map((r) => r.throughput)),
    workerCpuPerCall: Math.max(...ratios.map((r) => r.workerCpuPerCall)),
  };
  // Read after the loops stop: fetching is the bench's work, not the systems'.
  cell.hops = {
    sluice: hopsPerBatch(await deps.events(cell.sampled.sluice)),
    bare: hopsPerBatch(await deps.events(cell.sampled.bare)),
  };
}
