// A session step whose batch runs long (it waits on a person's approval or on a user's device)
// waits for the batch's end here, holding no worker slot: the batch activity waits a few seconds
// only, then leaves its slot (worker/session-batch.ts). The watch asks the batch to signal it when
// it ends, and ends then; the step runs the batch activity again, which attaches to the ended batch
// and hands back its output. The output only ever comes from that activity, so however the races
// fall (the batch ends while the activity returns, before the ask, after it) the step gets it once.
//
// The watch is the session's child with REQUEST_CANCEL: when the session closes while it waits
// (terminated, timed out), the server cancels the watch, and the watch asks the batch to cancel, so
// the batch drains as a child batch did under the same policy.
import {
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { batchEndedSignal, batchEndWantedSignal } from './session-definitions';

/**
 * How long a watch waits before the step looks at its batch again: a batch closed without
 * signalling (an operator terminated it) ends its step at the next look.
 */
const RECHECK_MS = 60 * 60_000;

/** Whether the batch has ended ('ended') or the watch's wait ran out first ('recheck'). */
export async function sluiceSessionBatchWatch({ batchId }: { batchId: string }): Promise<'ended' | 'recheck'> {
  let ended = false;
  setHandler(batchEndedSignal, (s) => {
    if (s.batchId === batchId) ended = true;
  });
  const batch = getExternalWorkflowHandle(batchId);
  try {
    try {
      await batch.signal(batchEndWantedSignal, { workflowId: workflowInfo().workflowId });
    } catch (err) {
      if (isCancellation(err)) throw err;
      // The batch has closed already (it ended while the activity returned): its output is there.
      return 'ended';
    }
    return (await condition(() => ended, RECHECK_MS)) ? 'ended' : 'recheck';
  } catch (err) {
    if (!isCancellation(err)) throw err;
    await CancellationScope.nonCancellable(() => batch.cancel().catch(() => undefined));
    throw err;
  }
}

/**
 * The batch's side: remembers who asked to hear of its end (batchEndWantedSignal), and tells it
 * when the batch ends, however it ends. Nobody asked: no command, and the batch's history is as
 * before. Set up before the batch's first await, so an ask is never missed.
 */
export function batchEndWatch(): { tell(): Promise<void> | undefined } {
  const asking = new Set<string>();
  setHandler(batchEndWantedSignal, (s) => {
    asking.add(s.workflowId);
  });
  const batchId = workflowInfo().workflowId;
  return {
    tell() {
      if (!asking.size) return undefined;
      // Outside any cancellation (a cancelled batch still says it ended); a watch already gone
      // (its session closed) is nobody to tell.
      return CancellationScope.nonCancellable(async () => {
        for (const id of asking)
          await getExternalWorkflowHandle(id)
            .signal(batchEndedSignal, { batchId })
            .catch(() => undefined);
      });
    },
  };
}
