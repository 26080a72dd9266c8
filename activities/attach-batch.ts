// A child batch that finds its workflow id taken (another parent, the client or the CLI started it,
// running or finished) waits for that batch here instead of running it again. A workflow cannot
// read another workflow's result; an activity can, through the worker's client.
import { Context } from '@temporalio/activity';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { AttachActivities } from '../codec/output';
import { FailureTypes } from '../pipeline/errors';
import type { BatchOutputWire } from '../codec/output';

export function createAttachActivities(): AttachActivities {
  return {
    async sluiceAttachBatch(workflowId) {
      const ctx = Context.current();
      const every = Math.max(1_000, Math.floor((ctx.info.heartbeatTimeoutMs ?? 30_000) / 3));
      const beat = setInterval(() => ctx.heartbeat(), every);
      try {
        // A cancelled parent stops waiting; the batch itself runs on, as a resubmission expects.
        return (await Promise.race([
          ctx.client.workflow.getHandle(workflowId).result(),
          ctx.cancelled,
        ])) as BatchOutputWire;
      } catch (err) {
        // The batch ended without an output: waiting again cannot change that.
        if (err instanceof WorkflowFailedError)
          throw ApplicationFailure.nonRetryable(
            `batch ${workflowId} ended without an output: ${err.cause?.message ?? err.message}`,
            FailureTypes.BATCH_FAILED,
          );
        throw err;
      } finally {
        clearInterval(beat);
      }
    },
  };
}
