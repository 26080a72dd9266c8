// A tool batch as a child of the user's own agent workflow: the same checks and the same workflow
// id as the client, so a batch runs once per (session, turn, step) whoever asks for it. A second
// parent (a reset, a retry, a continue-as-new, or the client first) attaches to the existing batch,
// running or finished, instead of running it again.
import { ApplicationFailure, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { proxyActivities, startChild, type ChildWorkflowOptions } from '@temporalio/workflow';
import { type BatchRequest, prepareBatch } from '../pipeline/batch-input';
import type { AttachActivities } from '../codec/output';
import { FailureTypes } from '../pipeline/errors';
import { expandBatchOutput } from '../codec/output';
import type { BatchInput, BatchOutput } from '../pipeline/types';
import type { toolBatch } from './batch';
import { BATCH_WORKFLOW, batchWorkflowId } from './definitions';

export interface ChildBatchOptions {
  /**
   * The task queue of the workers hosting Sluice. Default: the parent's own queue, as when
   * SluicePlugin runs in the parent's worker; name Sluice's queue (e.g. "sluice") otherwise.
   */
  taskQueue?: string;
  /**
   * What the batch does when this parent closes first. Default ABANDON: the batch runs on and a
   * resubmitting parent attaches to it, as with the client. REQUEST_CANCEL drains it instead.
   */
  parentClosePolicy?: ChildWorkflowOptions['parentClosePolicy'];
  /** How long an attaching parent waits for a batch another caller started (default 30 days). */
  attachTimeoutMs?: number;
}

/**
 * Runs a batch as a child workflow and returns its output. Throws an ApplicationFailure
 * (type SluiceInvalidBatch, not retryable) for a batch the client would refuse too.
 */
export async function toolBatchChild(request: BatchRequest, options: ChildBatchOptions = {}): Promise<BatchOutput> {
  const prepared = prepareBatch(request);
  if ('problem' in prepared) throw ApplicationFailure.nonRetryable(prepared.problem, FailureTypes.INVALID_BATCH);
  const input: BatchInput = prepared.input;
  const workflowId = batchWorkflowId(input.sessionId, input.turn, input.step);
  const taskQueue = options.taskQueue;
  try {
    const child = await startChild<typeof toolBatch>(BATCH_WORKFLOW, {
      workflowId,
      ...(taskQueue ? { taskQueue } : {}),
      args: [input],
      // A finished batch keeps its id: the start fails and this parent attaches instead.
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      parentClosePolicy: options.parentClosePolicy ?? 'ABANDON',
      staticSummary: `Tool batch: session ${input.sessionId}, turn ${input.turn}, step ${input.step}, ${input.calls.length} call(s)`,
    });
    return expandBatchOutput(await child.result());
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    const timeout = options.attachTimeoutMs ?? 30 * 24 * 3_600_000;
    const { sluiceAttachBatch } = proxyActivities<AttachActivities>({
      ...(taskQueue ? { taskQueue } : {}),
      startToCloseTimeout: timeout,
      heartbeatTimeout: 30_000,
      retry: { initialInterval: 1_000, maximumInterval: 30_000 },
      summary: `attach to ${workflowId}`,
    });
    return expandBatchOutput(await sluiceAttachBatch(workflowId));
  }
}
