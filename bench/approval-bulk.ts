// Many batches waiting for a person at once, then approved in bulk by signal: the measure
// bench/run.ts's approval section takes for one size and bench/drain-scale.ts takes for several.
import type { BatchHandle, SluiceClient } from '../client/client';
import type { PendingApproval } from '../pipeline/types';
import { heapOf, MiB, memoryLine, retryTransient, settled, type WorkerProcess } from './bench-stack';
import { round, pool } from './stats';

/** Starts a one-call batch of `approved_echo` (bench/config.ts) that waits up to `timeoutMs` for its decision. */
export const approvalStarter =
  (client: SluiceClient, tag: string, timeoutMs = 30 * 60_000) =>
  (key: string): Promise<BatchHandle> =>
    client.startBatch({
      sessionId: `bench-approval-${tag}-${key}`,
      turn: 1,
      step: 1,
      calls: [{ id: 'c0', name: 'approved_echo', arguments: JSON.stringify({ text: key }) }],
      options: { approvalTimeoutMs: timeoutMs },
    });

/**
 * Starts n batches, 32 at a time (a start that meets a transient server error is sent again: the
 * same batch attaches), then reads each one's pending approval. Times from the first start to the
 * last start, and to the last batch waiting.
 */
export async function startWaiting(
  n: number,
  client: SluiceClient,
  start: (key: string) => Promise<BatchHandle>,
  log: (line: string) => void,
  prefix = 'bulk',
) {
  const handles: BatchHandle[] = [];
  const t0 = performance.now();
  await pool(n, 32, async (i) => {
    handles[i] = await retryTransient(`start ${prefix}-${i}`, () => start(`${prefix}-${i}`));
    if ((i + 1) % 2000 === 0) log(`  ${i + 1} started`);
  });
  const startMs = performance.now() - t0;
  const approvalIds: string[] = [];
  await pool(n, 32, async (i) => {
    approvalIds[i] = (await awaitingApproval(client, handles[i].workflowId)).approvalId;
  });
  return { handles, approvalIds, startMs, allPendingMs: performance.now() - t0 };
}

/**
 * A bulk batch's pending approval, from its memo as the inbox reads it (describe: the server
 * answers, no worker), so reading ten thousand does not pull evicted batches back into the cache.
 */
async function awaitingApproval(client: SluiceClient, workflowId: string): Promise<PendingApproval> {
  for (let attempt = 0; ; attempt++) {
    const read = await client.readApprovals(workflowId).catch((err) => {
      if (attempt > 50) throw err;
      return undefined;
    });
    if (read?.pending.length) return read.pending[0];
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The worker's memory with every bulk batch waiting: as it is (the figure judged), then after a
 * full GC of every isolate, which tells live workflow state apart from garbage not yet collected.
 */
export async function waitingMemory(
  worker: WorkerProcess,
  idle: Awaited<ReturnType<typeof settled>>,
  settleSec: number,
  log: (line: string) => void,
) {
  await new Promise((r) => setTimeout(r, 1000));
  const first = await worker.memoryDetail(false);
  log(`  all waiting, 1 s after: ${memoryLine(first)}`);
  // Batches wait for minutes to hours: what they cost is the worker's memory once it is idle
  // with them, as the idle figure is read (V8 gives back the heap it grew while starting them).
  const awaiting = await settled(worker, settleSec);
  const collected = await worker.memoryDetail(true);
  log(`  all waiting, ${settleSec} s after: ${memoryLine(awaiting)}`);
  log(`  then after a full GC: ${memoryLine(collected)}`);
  return {
    awaiting,
    figures: {
      workerRssAboveIdleMiB: round((awaiting.rss - idle.rss) / MiB, 1),
      workerRssJustAfterMiB: round(first.rss / MiB, 1),
      workerRssAwaitingAfterGcMiB: round(collected.rss / MiB, 1),
      workflowHeapIdleMiB: round(heapOf(idle, 'heapUsed') / MiB, 1),
      workflowHeapAwaitingMiB: round(heapOf(awaiting, 'heapUsed') / MiB, 1),
      workflowHeapAwaitingAfterGcMiB: round(heapOf(collected, 'heapUsed') / MiB, 1),
      mainHeapAwaitingAfterGcMiB: round(collected.mainHeapUsed / MiB, 1),
    },
  };
}

/**
 * Approves the waiting batches from `skip` on by signal, 32 at a time, then waits for every
 * result (64 at a time). drainMs runs from the first signal to the last result.
 */
export async function drainBySignal(
  client: SluiceClient,
  handles: BatchHandle[],
  approvalIds: string[],
  skip = 0,
): Promise<{ signalsSentMs: number; drainMs: number }> {
  const n = handles.length;
  const t1 = performance.now();
  await pool(n, 32, async (i) => {
    if (i < skip) return;
    await retryTransient(`approve ${handles[i].workflowId}`, () =>
      client.signalDecision({
        workflowId: handles[i].workflowId,
        approvalId: approvalIds[i],
        decision: 'approve',
        by: 'bench',
      }),
    );
  });
  const signalsSentMs = performance.now() - t1;
  await pool(n, 64, async (i) => {
    if (i < skip) return;
    const out = await retryTransient(`result of ${handles[i].workflowId}`, () => handles[i].result());
    if (out.results[0].result.isError)
      throw new Error(`bulk-approved batch failed: ${JSON.stringify(out.results[0].result)}`);
  });
  return { signalsSentMs, drainMs: performance.now() - t1 };
}
