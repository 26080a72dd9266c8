// The bench, run small (one cell, a few batches, every part) so it never rots: it must finish and
// write its tables, breakdowns and plot. No figure is judged: timings on a test machine mean nothing.
// Nothing here is bound by time but the outer limit, which is generous: the run is bound by its
// counts (one cell, 3 batches, 1–3 samples), and at load 10–18 it took over 170 s where alone it
// takes ~26 s (issue 22 item 14), so the limit is several times that.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import type { BenchResult } from '../bench/result';

const RUN_LIMIT_MS = 600_000;
const TEST_MS = RUN_LIMIT_MS + 30_000;

describe('bench smoke run', () => {
  it(
    'runs one cell, Code Mode, client latency and the approval path, and writes the json, markdown and svg',
    async () => {
      const dir = fs.mkdtempSync(path.join(inject('runDir'), 'bench-'));
      const root = path.join(__dirname, '..');
      // --quick with every setting given: the flag is parsed and the settings still win. The run is
      // compared with a committed result of round two (no CPU figures, no rounds): what an old file
      // lacks reads as absent, not as a failure.
      const args = ['--require', 'tsx/cjs', path.join(root, 'bench', 'run.ts'), '--quick'];
      await promisify(execFile)(process.execPath, args, {
        cwd: root,
        env: {
          ...process.env,
          BENCH_BEFORE: path.join(root, 'bench', 'results', 'latest.json'),
          BENCH_ADDRESS: inject('temporalAddress'),
          BENCH_DIR: dir,
          BENCH_OUT: 'smoke',
          BENCH_SIZES: '2',
          BENCH_CONCURRENCY: '1',
          BENCH_BATCHES: '3',
          BENCH_ROUNDS: '1',
          BENCH_WARMUP: '1',
          BENCH_HISTORY_SAMPLES: '1',
          BENCH_APPROVAL_SAMPLES: '1',
          BENCH_PENDING: '3',
          BENCH_SETTLE_SEC: '1',
          BENCH_CODE_MODE: '2',
          BENCH_SUB_CALLS: '2',
          BENCH_LOCAL: '2',
          BENCH_CLIENT: '2',
          // One busy loop (the machine running the tests is busy enough), two repetitions.
          BENCH_CONTENTION: '1',
          BENCH_CONTENTION_REPS: '2',
          BENCH_CONTENTION_BATCHES: '2',
        },
        timeout: RUN_LIMIT_MS,
      });
      const result = JSON.parse(fs.readFileSync(path.join(dir, 'smoke.json'), 'utf8')) as BenchResult;
      expect(result.grid).toHaveLength(1);
      const [cell] = result.grid;
      expect(cell).toMatchObject({ batchSize: 2, concurrency: 1, batches: 3 });
      expect(result.meta.quick).toBe(true);
      for (const system of [cell.sluice, cell.bare]) {
        expect(system.p50Ms).toBeGreaterThan(0);
        // The worker's CPU while the system ran: a batch costs the worker something.
        expect(system.workerCpuMsPerCall).toBeGreaterThan(0);
        expect(system.historyBytesPerCall).toBeGreaterThan(0);
        // The per-type byte breakdown adds up to the whole history (protobuf framing aside).
        const sum = Object.values(system.eventBytesPerCall ?? {}).reduce((a, b) => a + b.bytes, 0);
        expect(sum).toBeGreaterThan(system.historyBytesPerCall! * 0.9);
        expect(sum).toBeLessThanOrEqual(system.historyBytesPerCall! + 1);
      }
      expect(Object.keys(cell.sluice.payloadBytesPerCall ?? {})).toContain('ACTIVITY_TASK_SCHEDULED input');
      expect(cell.ratio.workerCpuPerCall).toBeGreaterThan(0);
      expect(cell.roundRatios?.workerCpuPerCall).toHaveLength(1);
      expect(result.localBodies?.sluice.workerCpuMsPerCall).toBeGreaterThan(0);
      // Every section with the load average as it started and ended.
      expect(result.meta.sections?.map((s) => s.name)).toEqual([
        'warm-up',
        'grid: batch of 2 × 1 in flight',
        'contention',
        'localBodies',
        'codeMode',
        'clientLatency',
        'approval',
      ]);
      for (const s of result.meta.sections!) {
        expect(s.loadAvgStart).toBeGreaterThanOrEqual(0);
        expect(s.loadAvgEnd).toBeGreaterThanOrEqual(0);
        expect(s.seconds).toBeGreaterThan(0);
      }
      expectContentionShape(result);
      expect(result.codeMode?.trivialInBody.samples).toBe(2);
      expect(result.localBodies).toMatchObject({ batchSize: 10, batches: 2 });
      // A local body leaves no activity events: fewer events per call than the grid's echo.
      expect(result.localBodies!.sluice.eventsPerCall).toBeLessThan(cell.sluice.eventsPerCall!);
      expect(result.codeMode?.subCalls.ratio).toBeGreaterThan(0);
      expect(result.approval?.bulk.batches).toBe(3);
      // Client latency, worker and client in one process: runBatch starts eagerly there by default,
      // bare's plain execute does not; each way round too.
      const client = result.clientLatency!;
      expect(client.samples).toBe(2);
      expect(client.systems.sluice.eagerStarts).toBe(2);
      expect(client.systems.bareEager.eagerStarts).toBe(2);
      expect(client.systems.bare.eagerStarts).toBe(0);
      expect(client.systems.sluicePlain.eagerStarts).toBe(0);
      expect(client.systems.sluice.phasesP50Ms['workflow tasks']).toBeGreaterThanOrEqual(2);
      expect(client.ratio).toBeGreaterThan(0);
      // The approval path against a bare workflow waiting on a signal: both timed, both drained.
      expect(result.approval?.bare?.signalToResult.samples).toBe(1);
      expect(result.approval?.signalToResultRatio).toBeGreaterThan(0);
      expect(result.approval?.bare?.bulk?.batches).toBe(3);
      // The workflow threads' heaps are read through the inspector: a sandbox is there, so not 0.
      expect(result.approval?.bulk.workflowHeapAwaitingAfterGcMiB).toBeGreaterThan(0);
      expect(result.approval?.bulk.workerRssAboveIdleMiB).toBeTypeOf('number');
      expect(result.targets.map((t) => t.name)).toEqual(
        expect.arrayContaining([
          'p50 Sluice/bare, 2 call(s) × 1 in flight',
          'history bytes per call Sluice/bare, batch of 2 (worst cell)',
          'Code Mode: sub-call / the same call made directly',
          'client: 1-call runBatch p50 / bare execute p50 (worker and client in one process)',
          'approval: decision by signal → batch result p50, Sluice/bare',
          'approval: drain after a bulk approve of 3, batches/s',
          'worker RSS with 3 batches waiting, MiB above idle',
          'worker CPU per call Sluice/bare, 2 call(s) × 1 in flight',
          'busy: p50 Sluice/bare, 2 call(s) × 1 in flight, 1 busy loop(s), worst of 2',
          'busy: throughput Sluice/bare, 2 call(s) × 1 in flight, 1 busy loop(s), worst of 2',
          'busy: worker CPU per call Sluice/bare, 2 call(s) × 1 in flight, 1 busy loop(s), worst of 2',
        ]),
      );
      const md = fs.readFileSync(path.join(dir, 'smoke.md'), 'utf8');
      expect(md).toContain('Where the history bytes go, per call');
      expect(md).toContain('| Code Mode | figure |');
      expect(md).toContain('Under contention: the grid with 1 busy loop(s) beside it');
      expect(md).toContain('Hops per batch in the grid');
      expect(md).toContain('Hops per batch under contention');
      expect(md).toContain('Client latency: one-call batches');
      expect(md).toContain('| section | seconds | load average (1 min) at start → end |');
      // BENCH_BEFORE: the change of every figure the committed run also has, with its noise band.
      expect(md).toMatch(/Change against \S+/);
      expect(md).toMatch(/\| 2×1 p50 Sluice\/bare \| – \| [\d.]+ \|/);
      expect(md).toMatch(/\| Code Mode sub-call \/ direct call \| [\d.]+ \| [\d.]+ \| [+-]\d+% \|/);
      expect(fs.readFileSync(path.join(dir, 'smoke.svg'), 'utf8')).toMatch(/^<svg/);
      // Each section wrote what it measured as it finished, and the finished run says it is done.
      const partial = JSON.parse(fs.readFileSync(path.join(dir, 'smoke.partial.json'), 'utf8')) as {
        running?: string;
        done: string[];
        grid: unknown[];
      };
      expect(partial.running).toBeUndefined();
      expect(partial.done).toEqual([
        'warm-up',
        'grid: batch of 2 × 1 in flight',
        'contention',
        'localBodies',
        'codeMode',
        'clientLatency',
        'approval',
      ]);
      expect(partial.grid).toEqual(result.grid);
      expect(partial).toMatchObject({
        contention: result.contention,
        localBodies: result.localBodies,
        codeMode: result.codeMode,
        clientLatency: result.clientLatency,
        approval: result.approval,
      });
    },
    TEST_MS,
  );
});

/**
 * The contention section's shape (issue 49): every repetition on its own, the worst one as the
 * cell's figure, and the hops of both systems read from their histories. No figure is judged.
 */
function expectContentionShape(result: BenchResult): void {
  const busy = result.contention!;
  expect(busy).toMatchObject({ busyLoops: 1, reps: 2 });
  expect(busy.cells).toHaveLength(1);
  const [cell] = busy.cells;
  expect(cell).toMatchObject({ batchSize: 2, concurrency: 1, batches: 2 });
  expect(cell.reps).toHaveLength(2);
  // Sluice and bare alternate which goes first.
  expect(cell.reps.map((r) => r.first).sort()).toEqual(['bare', 'sluice']);
  for (const rep of cell.reps) {
    for (const run of [rep.sluice, rep.bare]) {
      expect(run.p50Ms).toBeGreaterThan(0);
      expect(run.p95Ms).toBeGreaterThanOrEqual(run.p50Ms);
      expect(run.batchesPerSec).toBeGreaterThan(0);
      expect(run.workerCpuMsPerCall).toBeGreaterThan(0);
    }
    expect(rep.ratio.p50).toBeGreaterThan(0);
  }
  // The cell's figure is its worst repetition, not an average.
  expect(cell.worst.p50).toBe(Math.max(...cell.reps.map((r) => r.ratio.p50)));
  expect(cell.worst.throughput).toBe(Math.min(...cell.reps.map((r) => r.ratio.throughput)));
  expect(cell.worst.workerCpuPerCall).toBe(Math.max(...cell.reps.map((r) => r.ratio.workerCpuPerCall)));
  // Hops from the histories of both repetitions: one activity task a call for both systems, at
  // least one workflow task, and Sluice's claim-and-preflight local activity, which bare lacks.
  const { sluice, bare } = cell.hops!;
  expect(sluice.histories).toBe(2);
  expect(bare.histories).toBe(2);
  for (const h of [sluice, bare]) {
    expect(h.activityTasks).toBe(2);
    expect(h.workflowTasks).toBeGreaterThanOrEqual(1);
    expect(h.hops).toBe(h.workflowTasks + h.activityTasks + h.localActivities);
    expect(h.batchMs).toBeGreaterThan(0);
  }
  expect(sluice.localActivities).toBeGreaterThanOrEqual(1);
  expect(bare.localActivities).toBe(0);
  // The quiet grid's cells carry their hops too.
  expect(result.grid[0].sluice.hops?.activityTasks).toBe(2);
}

describe('bench run that dies', () => {
  it(
    'keeps what it measured and says which section was running',
    async () => {
      const dir = fs.mkdtempSync(path.join(inject('runDir'), 'bench-dies-'));
      const root = path.join(__dirname, '..');
      // BENCH_FAIL_IN makes the Code Mode section fail as it starts, after the warm-up, the grid and
      // the local bodies have been measured: what a dev server dying there would do.
      const run = promisify(execFile)(process.execPath, ['--require', 'tsx/cjs', path.join(root, 'bench', 'run.ts')], {
        cwd: root,
        env: {
          ...process.env,
          BENCH_ADDRESS: inject('temporalAddress'),
          BENCH_DIR: dir,
          BENCH_OUT: 'dies',
          BENCH_SIZES: '1',
          BENCH_CONCURRENCY: '1',
          BENCH_BATCHES: '2',
          BENCH_ROUNDS: '1',
          BENCH_WARMUP: '1',
          BENCH_HISTORY_SAMPLES: '1',
          BENCH_LOCAL: '1',
          BENCH_CONTENTION: '0',
          BENCH_FAIL_IN: 'codeMode',
        },
        timeout: RUN_LIMIT_MS,
      });
      const err = (await run.then(
        () => undefined,
        (e: unknown) => e,
      )) as { stderr: string } | undefined;
      expect(err).toBeDefined();
      expect(err!.stderr).toContain('bench stopped in section "codeMode"');
      const partial = JSON.parse(fs.readFileSync(path.join(dir, 'dies.partial.json'), 'utf8')) as {
        running?: string;
        done: string[];
        error?: string;
        grid: unknown[];
        localBodies?: unknown;
      };
      expect(partial.running).toBe('codeMode');
      expect(partial.done).toEqual(['warm-up', 'grid: batch of 1 × 1 in flight', 'localBodies']);
      expect(partial.grid).toHaveLength(1);
      expect(partial.localBodies).toBeDefined();
      expect(partial.error).toContain('BENCH_FAIL_IN');
      expect(fs.existsSync(path.join(dir, 'dies.json'))).toBe(false);
    },
    RUN_LIMIT_MS + 30_000,
  );
});
