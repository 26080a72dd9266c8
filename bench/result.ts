// The shape of a bench result file (bench/results/*.json).
import type { HopFigures } from './hops';

export interface SystemFigures {
  p50Ms: number;
  p99Ms: number;
  batchesPerSec: number;
  callsPerSec: number;
  /**
   * The worker process's CPU (user + system, every thread) while this system ran the cell, divided
   * by its calls, in ms. Unlike latency it hardly moves with the machine's load. (Since round three.)
   */
  workerCpuMsPerCall?: number;
  /** Averages over the sampled histories of the cell. */
  eventsPerCall?: number;
  historyBytesPerCall?: number;
  /** Worker process RSS after the cell, and the highest sampled during it, in MiB. */
  workerRssMiB?: number;
  workerPeakRssMiB?: number;
  /** Event types of one sampled history, divided by calls: where the events come from. */
  eventTypesPerCall?: Record<string, number>;
  /** Encoded bytes of that history per event type, and of the payloads those events carry, divided by calls. */
  eventBytesPerCall?: Record<string, { bytes: number; payloadBytes: number }>;
  /** Encoded bytes of each payload (event type and field, e.g. `ACTIVITY_TASK_SCHEDULED input`), divided by calls. */
  payloadBytesPerCall?: Record<string, number>;
  /** The JSON inside the larger payloads, by top-level key (`<payload> .<key>`), in bytes of JSON text per call. */
  payloadKeyBytesPerCall?: Record<string, number>;
  /** Hops per batch and where their time went, over the sampled histories (issue 49 on). */
  hops?: HopFigures;
}

export interface Cell {
  batchSize: number;
  concurrency: number;
  batches: number;
  sluice: SystemFigures;
  bare: SystemFigures;
  inProcess: SystemFigures;
  /** Sluice divided by bare Temporal. */
  ratio: {
    p50: number;
    p99: number;
    throughput: number;
    eventsPerCall: number;
    historyBytesPerCall: number;
    /** Sluice's worker CPU per call over bare's (round three on). */
    workerCpuPerCall?: number;
  };
  /** The same ratios for each round of the cell alone: their spread is the cell's noise band (round three on). */
  roundRatios?: { p50: number[]; throughput: number[]; workerCpuPerCall: number[] };
}

/** One system's batches of a cell in one repetition under contention. */
export interface ContentionRun {
  p50Ms: number;
  p95Ms: number;
  batchesPerSec: number;
  workerCpuMsPerCall: number;
}

/** A cell of the grid run with busy loops beside it (issue 49), every repetition on its own. */
export interface ContentionCell {
  batchSize: number;
  concurrency: number;
  /** Batches per system and repetition. */
  batches: number;
  reps: {
    /** The 1-minute load average as the repetition's cell ended (the busy loops count in it). */
    loadAvg: number;
    /** Which system ran first in this repetition. */
    first: 'sluice' | 'bare';
    sluice: ContentionRun;
    bare: ContentionRun;
    /** Sluice over bare. */
    ratio: { p50: number; p95: number; throughput: number; workerCpuPerCall: number };
  }[];
  /** The worst repetition's ratio of each: the cell's figure (highest p50, p95 and CPU, lowest throughput). */
  worst: { p50: number; p95: number; throughput: number; workerCpuPerCall: number };
  /** Hops per batch over the histories sampled in every repetition. */
  hops?: { sluice: HopFigures; bare: HopFigures };
}

export interface ContentionFigures {
  /** Busy loops spinning beside the grid (BENCH_CONTENTION; one per core by default). */
  busyLoops: number;
  reps: number;
  cells: ContentionCell[];
}

/** A section of a run: how long it took and the 1-minute load average as it started and ended. */
export interface SectionLoad {
  name: string;
  loadAvgStart: number;
  loadAvgEnd?: number;
  seconds?: number;
}

export interface ApprovalFigures {
  /** From sending a decision to holding the batch result, one batch at a time. */
  signalToResult: { samples: number; p50Ms: number; p99Ms: number };
  updateToResult: { samples: number; p50Ms: number; p99Ms: number };
  /** Many batches waiting for a person at once, then approved in bulk by signal. */
  bulk: {
    batches: number;
    startMs: number;
    allPendingMs: number;
    workerRssIdleMiB: number;
    workerRssAwaitingMiB: number;
    /** Decision by signal → result on bulk batches that waited out of the sticky cache (they replay first), one at a time. */
    evictedSignalToResult?: { samples: number; p50Ms: number; p99Ms: number };
    /** RSS 1 s after the last batch began to wait (workerRssAwaitingMiB is read BENCH_SETTLE_SEC after, as idle is). */
    workerRssJustAfterMiB?: number;
    /** Awaiting minus idle: the target (issue 18) is at most 100 MiB. */
    workerRssAboveIdleMiB?: number;
    /** RSS with all waiting, after a full GC of every isolate. */
    workerRssAwaitingAfterGcMiB?: number;
    /** The workflow threads' V8 heap in use (the workflow sandboxes): idle, all waiting, and after a full GC. */
    workflowHeapIdleMiB?: number;
    workflowHeapAwaitingMiB?: number;
    workflowHeapAwaitingAfterGcMiB?: number;
    /** The main thread's heap in use with all waiting, after a full GC. */
    mainHeapAwaitingAfterGcMiB?: number;
    signalsSentMs: number;
    drainMs: number;
    drainBatchesPerSec: number;
    workerPeakRssDrainMiB: number;
  };
  /**
   * The floor for the same measures: a bare workflow that waits on a signal with a timeout, then
   * runs the same body (bench/bare-workflow.ts), on the same server and worker in the same run.
   */
  bare?: { signalToResult: { samples: number; p50Ms: number; p99Ms: number }; bulk?: BareBulkFigures };
  /** Sluice's signal → result p50 over bare's (issue 18: at most 1.2). */
  signalToResultRatio?: number;
}

/** Bare approval workflows waiting at once, approved by signal, until every result is in. */
export interface BareBulkFigures {
  batches: number;
  signalsSentMs: number;
  drainMs: number;
  drainBatchesPerSec: number;
}

export interface CodeModeFigures {
  /** `return 1` in run_code's body: the sandbox run alone (warm pool), from the result's meta.wallMs. */
  trivialInBody: { samples: number; p50Ms: number; p99Ms: number };
  /** The same program as a one-call batch, start to result, beside a one-call batch of the plain tool. */
  trivialBatch: { p50Ms: number; toolBatchP50Ms: number };
  /** A program making `calls` sub-calls of serial_echo, against a batch of the same calls made directly. */
  subCalls: { calls: number; rounds: number; directMsPerCall: number; subCallMsPerCall: number; ratio: number };
}

/** Batches of a tool with a local body against bare Temporal, one batch in flight. */
export interface LocalBodyFigures {
  batchSize: number;
  batches: number;
  sluice: {
    p50Ms: number;
    p99Ms: number;
    eventsPerCall?: number;
    historyBytesPerCall?: number;
    workerCpuMsPerCall?: number;
  };
  bare: { p50Ms: number; p99Ms: number; workerCpuMsPerCall?: number };
  p50Ratio: number;
  workerCpuRatio?: number;
}

/** The four ways a one-call batch is run in the client-latency section. */
export type ClientSystem = 'sluice' | 'bare' | 'sluicePlain' | 'bareEager';

/**
 * One-call batches, one at a time, with the worker in the client's process over one
 * NativeConnection: Sluice's runBatch (eager start, its default there) against bare Temporal's
 * plain `workflow.execute`; and Sluice without eager start, bare with it.
 */
export interface ClientLatencyFigures {
  samples: number;
  systems: Record<
    ClientSystem,
    {
      p50Ms: number;
      p99Ms: number;
      /** How many of the samples the server started eagerly. */
      eagerStarts: number;
      /** Medians of where the time went: the start call, each workflow task, the body, the result's way back. */
      phasesP50Ms: Record<string, number>;
    }
  >;
  /** runBatch p50 / bare execute p50: the issue 18 target (≤ 1.0). */
  ratio: number;
  /** runBatch p50 / bare execute with eager start p50. */
  ratioToBareEager: number;
  /** runBatch without eager start p50 / bare execute p50. */
  ratioPlainToBare: number;
}

export interface BenchResult {
  meta: {
    date: string;
    commit: string;
    label: string;
    /** `npm run bench -- --quick`: the developer's loop, fewer cells and samples. */
    quick?: boolean;
    node: string;
    cpus: number;
    loadAvgStart: number[];
    loadAvgEnd: number[];
    server: string;
    worker: string;
    maxCachedWorkflows: number;
    /** Eager activity reservations per workflow task, both workers (Temporal's default is 3). */
    eagerActivitiesPerTask: number;
    maxParallel: number;
    batchesPerCell: number;
    maxCallsPerCell: number;
    historySamples: number;
    durationSec: number;
    /** Every section with the load average as it started and ended (round three on). */
    sections?: SectionLoad[];
    /** Transient dev-server errors retried, by kind. */
    transientErrors?: Record<string, number>;
  };
  grid: Cell[];
  approval?: ApprovalFigures;
  codeMode?: CodeModeFigures;
  localBodies?: LocalBodyFigures;
  clientLatency?: ClientLatencyFigures;
  /** The grid with busy loops beside it (issue 49). */
  contention?: ContentionFigures;
  targets: { name: string; value: number; limit: string; met: boolean }[];
}
