// The shape of a bench result file (bench/results/*.json).

export interface SystemFigures {
  p50Ms: number;
  p99Ms: number;
  batchesPerSec: number;
  callsPerSec: number;
  /** Averages over the sampled histories of the cell. */
  eventsPerCall?: number;
  historyBytesPerCall?: number;
  /** Worker process RSS after the cell, and the highest sampled during it, in MiB. */
  workerRssMiB?: number;
  workerPeakRssMiB?: number;
  /** Event types of one sampled history, divided by calls: where the events come from. */
  eventTypesPerCall?: Record<string, number>;
}

export interface Cell {
  batchSize: number;
  concurrency: number;
  batches: number;
  sluice: SystemFigures;
  bare: SystemFigures;
  inProcess: SystemFigures;
  /** Sluice divided by bare Temporal. */
  ratio: { p50: number; p99: number; throughput: number; eventsPerCall: number; historyBytesPerCall: number };
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
    signalsSentMs: number;
    drainMs: number;
    drainBatchesPerSec: number;
    workerPeakRssDrainMiB: number;
  };
}

export interface BenchResult {
  meta: {
    date: string;
    commit: string;
    label: string;
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
  };
  grid: Cell[];
  approval?: ApprovalFigures;
  targets: { name: string; value: number; limit: string; met: boolean }[];
}
