// How a worker process holds its V8 heap. By default V8 lets a heap grow well past what is live
// and gives the garbage back only when it next collects: a worker that started a thousand batches
// waiting for approval kept about 150 MiB of such garbage in its workflow thread until it was busy
// again (docs/performance.md, "A compact heap for many waiting batches"). V8's --optimize-for-size
// collects sooner and keeps the heaps small, at a steep price in CPU, so it is off by default.
// Node does not take that flag in NODE_OPTIONS, so `sluice worker` sets it itself when asked
// (SLUICE_WORKER_HEAP=compact).
import * as v8 from 'node:v8';

type WorkerHeap = 'default' | 'compact';

/** SLUICE_WORKER_HEAP: `compact` or `default` (unset); anything else is an error a person can fix. */
export function workerHeap(env: NodeJS.ProcessEnv = process.env): WorkerHeap {
  const v = env.SLUICE_WORKER_HEAP?.trim();
  if (!v || v === 'default') return 'default';
  if (v === 'compact') return 'compact';
  throw new Error(
    `SLUICE_WORKER_HEAP must be "compact" (a smaller heap, for more CPU) or "default", not ${JSON.stringify(v)}`,
  );
}

/**
 * Makes the heaps of this process compact. V8 reads the flag when it makes an isolate, so call it
 * before Worker.create: the workflow threads it starts (where the batches' garbage is) all get it,
 * and the main thread's heap grows by smaller steps from then on.
 */
export function useCompactHeap(): void {
  v8.setFlagsFromString('--optimize-for-size');
}
