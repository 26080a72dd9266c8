// An update the server aborted because the workflow task carrying it failed. The commonest case
// needs no fault at all: an activity finishes while the worker completes, in the update's task, the
// workflow itself (a denied call ends its batch). The server refuses that completion (an unhandled
// command: there is a new event to read first), fails the task, and aborts the updates in it with
// FAILED_PRECONDITION ("unexpected workflow task failure"); the next task has the activity's result
// and no update. Nothing of an aborted update reached history, so sending it again is safe: the
// caller would otherwise tell a person their approval failed when nothing was decided.
import { type WorkflowHandle, WorkflowUpdateStage } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import type { UpdateDefinition } from '@temporalio/common';

/** gRPC's status code for a request the target's state refuses. */
const FAILED_PRECONDITION = 9;

/** How often an aborted update is sent again, and the pauses between (ms). */
const RETRY_PAUSES_MS = [50, 200, 500, 1_000, 2_000];

/**
 * `handle.executeUpdate`, sent again while the server aborts it for a failed workflow task.
 * `onTaken` is called once the workflow has accepted the update or refused it, before its outcome:
 * for a caller whose own next step must come after the workflow has the update (a Code Mode
 * program's end after its last call). Without it the update is one request, as the SDK sends it.
 */
export async function executeUpdate<Ret, Args extends [unknown, ...unknown[]]>(
  handle: WorkflowHandle,
  def: UpdateDefinition<Ret, Args> | string,
  options: { args: Args; updateId?: string; onTaken?: () => void },
): Promise<Ret> {
  const { onTaken, ...update } = options;
  // One id for every send: should the server ever abort an update it had accepted, it answers the
  // resend with the first one's outcome, by that id, instead of running it twice.
  const sent = { ...update, updateId: update.updateId ?? randomUUID() };
  for (let attempt = 0; ; attempt++) {
    try {
      if (!onTaken) return await handle.executeUpdate<Ret, Args>(def, sent);
      const started = await handle.startUpdate<Ret, Args>(def, { ...sent, waitForStage: WorkflowUpdateStage.ACCEPTED });
      onTaken();
      return await started.result();
    } catch (err) {
      if (attempt >= RETRY_PAUSES_MS.length || !abortedForTaskFailure(err)) throw err;
      await new Promise((r) => setTimeout(r, RETRY_PAUSES_MS[attempt]));
    }
  }
}

/** The server's abort of an update whose workflow task failed (the update was not accepted). */
export function abortedForTaskFailure(err: unknown): boolean {
  const cause = (err as { cause?: { code?: unknown; details?: unknown; message?: unknown } } | undefined)?.cause;
  if (cause?.code !== FAILED_PRECONDITION) return false;
  return /workflow task/i.test(`${cause.details || ''} ${cause.message || ''}`);
}
