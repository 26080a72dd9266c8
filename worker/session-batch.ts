// The activity that starts a session step's batch and waits, a few seconds at most, for its output.
// It sits with the worker, above workflows/, because it starts a workflow by its names there.
import { Context } from '@temporalio/activity';
import { type Client, ServiceError, type WorkflowHandle, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { BatchOutputWire } from '../codec/output';
import { FailureTypes } from '../pipeline/errors';
import type { BatchInput } from '../pipeline/types';
import { hasVersionedWorker } from '../temporal/eager-start';
import { APPROVALS_MEMO, BATCH_WORKFLOW, EMPTY_APPROVALS_MEMO, SESSION_ID } from '../workflows/definitions';
import {
  type BatchStillRunning,
  SESSION_STEP_MEMO,
  type SessionBatchActivities,
  type SessionStepOwner,
} from '../workflows/session-definitions';

/**
 * A session step's batch, started and awaited by an activity of the session rather than as its
 * child: started eagerly on this worker (its first workflow task comes back with the start, no
 * trip through the server's queues), and its end read by a long poll on its history (no
 * child-completion report through the server). Two hops of the six a child batch takes remain:
 * the batch's own last task, and this activity's completion (docs/performance.md, "Sessions: the
 * batch started by an activity"). It waits a few seconds only: a batch still running then waits on
 * a person or a device, and the activity hands its slot back (BatchStillRunning).
 *
 * With model steps as activities, the step runs it first as a local activity, in the workflow task
 * that has the model's reply: then its completion is no trip at all, and it waits
 * SESSION_BATCH_LOCAL_WAIT_MS only. Run again (a worker lost mid-wait replays the step and runs it
 * anew, or the step falls back to the activity), it finds the batch its session run started and
 * waits on that one.
 */
export function createSessionBatchActivities(): SessionBatchActivities {
  return {
    async sluiceSessionBatch({ input, workflowId, staticSummary, takenMessage }) {
      const ctx = Context.current();
      const { client } = ctx;
      const session = ctx.info.workflowExecution;
      const owner: SessionStepOwner = { workflowId: session?.workflowId ?? '', runId: session?.runId ?? '' };
      const every = Math.max(500, Math.floor((ctx.info.heartbeatTimeoutMs ?? 30_000) / 3));
      // A local activity has no heartbeat: the session's open workflow task is its liveness.
      const beat = ctx.info.isLocal ? undefined : setInterval(() => ctx.heartbeat(), every);
      const handle = client.workflow.getHandle<(i: BatchInput) => Promise<BatchOutputWire>>(workflowId);
      try {
        try {
          await client.workflow.start(BATCH_WORKFLOW, {
            taskQueue: ctx.info.taskQueue,
            workflowId,
            args: [input],
            workflowIdConflictPolicy: 'FAIL',
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
            // As SluiceClient.startBatch: approvals readable with no worker, findable by session.
            memo: { [APPROVALS_MEMO]: EMPTY_APPROVALS_MEMO, [SESSION_STEP_MEMO]: owner },
            typedSearchAttributes: [{ key: SESSION_ID, value: input.sessionId }],
            staticSummary,
            // Never beside a versioned worker of this process: it would pin the batch to its version.
            ...(hasVersionedWorker(client.options.namespace, ctx.info.taskQueue) ? {} : { requestEagerStart: true }),
          });
        } catch (err) {
          if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
          // This run's batch (an earlier attempt of this activity started it): wait for it. Any
          // other is not this step's, and waiting could answer the model with another's results.
          const memo = (await handle.describe()).memo?.[SESSION_STEP_MEMO] as SessionStepOwner | undefined;
          if (memo?.workflowId !== owner.workflowId || memo.runId !== owner.runId)
            throw ApplicationFailure.nonRetryable(takenMessage, FailureTypes.BATCH_FAILED);
        }
        const got = await waitBounded(client, handle, ctx);
        // Closed within the wait (terminated), the session never starts the watch whose
        // parent-close policy would cancel the batch: the batch drains now instead.
        if ('stillRunning' in got && !(await stillRuns(client, owner))) await handle.cancel().catch(() => undefined);
        return got;
      } catch (err) {
        // The session is gone (terminated, or timed out) while its batch runs: the batch drains,
        // as a child's parent-close policy asked of it.
        if (ctx.cancellationSignal.aborted) await handle.cancel().catch(() => undefined);
        if (err instanceof WorkflowFailedError)
          throw ApplicationFailure.nonRetryable(
            `batch ${workflowId} ended without an output: ${err.cause?.message ?? err.message}`,
            FailureTypes.BATCH_FAILED,
          );
        throw err;
      } finally {
        if (beat) clearInterval(beat);
      }
    },
  };
}

/**
 * How long the activity waits for its batch before it leaves its worker slot. A batch of machine
 * calls ends well within it, even on a loaded worker, and pays nothing more; one that waits on a
 * person or a device (hours, maybe) would otherwise hold one of the worker's activity slots for all
 * of that time, and a hundred such sessions would leave no slot for a model call or a tool body.
 */
const SESSION_BATCH_WAIT_MS = 5_000;

/**
 * How long the same wait lasts as a local activity (the step's first try: its answer reaches the
 * session in the workflow task that asked, no trip through the server). While it waits, the
 * session's workflow task stays open and a signal (an interrupt, a cancel, a message) reaches the
 * session only after it: this bounds that delay. A batch of machine calls ends well within it (a
 * few ms to a few hundred on a loaded worker); past it, the step falls back to the activity above.
 * Well under the workflow task timeout's heartbeat (80 % of 10 s), so one wait never needs one.
 */
const SESSION_BATCH_LOCAL_WAIT_MS = 1_500;

/**
 * The batch's output, or BatchStillRunning once SESSION_BATCH_WAIT_MS has passed. The long poll
 * carries that deadline, so it ends with the wait and holds no request open after it (a worker's
 * connection honours a deadline, not an abort signal).
 */
async function waitBounded(
  client: Client,
  handle: WorkflowHandle<(i: BatchInput) => Promise<BatchOutputWire>>,
  ctx: Context,
): Promise<BatchOutputWire | BatchStillRunning> {
  const deadline = Date.now() + (ctx.info.isLocal ? SESSION_BATCH_LOCAL_WAIT_MS : SESSION_BATCH_WAIT_MS);
  try {
    return await Promise.race([client.withDeadline(deadline, () => handle.result()), ctx.cancelled]);
  } catch (err) {
    // Only the poll's deadline: a batch that failed, or this activity cancelled, is said as before.
    const pollTimedOut =
      err instanceof ServiceError &&
      ((err.cause as { code?: number } | undefined)?.code === DEADLINE_EXCEEDED || Date.now() >= deadline);
    if (pollTimedOut && !ctx.cancellationSignal.aborted) return { stillRunning: true };
    throw err;
  }
}

/** gRPC's status code for a call past its deadline. */
const DEADLINE_EXCEEDED = 4;

/** Whether the session run is still open; when that cannot be read, taken as open (no cancel on a doubt). */
async function stillRuns(client: Client, owner: SessionStepOwner): Promise<boolean> {
  try {
    return (await client.workflow.getHandle(owner.workflowId, owner.runId).describe()).status.name === 'RUNNING';
  } catch {
    return true;
  }
}
