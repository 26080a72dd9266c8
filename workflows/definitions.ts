// Names a client, a page or the stock `temporal` CLI uses to talk to a running batch.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from './messages';
import { CODE_CALL_UPDATE, type CodeCallOutcome, type CodeCallRequest } from '../pipeline/code-mode';
import { FailureTypes } from '../pipeline/errors';
import type { ApprovalDecision, ApprovalsMemo, BatchState, DecisionApplied } from '../pipeline/types';

export const BATCH_WORKFLOW = 'toolBatch';
/** The task queue Sluice's workers poll unless told otherwise. */
export const DEFAULT_TASK_QUEUE = 'sluice';

/** Fire-and-forget decision: for integrations that must not depend on a worker being up. */
export const decideSignal = defineSignal<[ApprovalDecision]>('sluice.decide');
/** Hands a pending ask to someone else; recorded as approval/reassigned and announced. */
export const reassignSignal =
  defineSignal<[{ approvalId: string; to: string; by?: string; reason?: string }]>('sluice.reassign');
/**
 * Confirmed decision, bound to the argsDigest the person was shown. A decision that cannot be
 * taken fails the update with a `SluiceDecisionRefused` failure (details: a DecisionRefusal);
 * the refusal stays in the history and is recorded as `approval/refused`.
 */
export const decideUpdate = defineUpdate<DecisionApplied, [ApprovalDecision]>('sluice.decide');
export const DECISION_REFUSED = FailureTypes.DECISION_REFUSED;
/** A batch refused because another batch of its session claimed its seqs first; it ran nothing. */
export const SEQ_CONFLICT = FailureTypes.SEQ_CONFLICT;
/** Code Mode: the run_code body asks its batch to run one sub-call through the whole pipeline. */
export const codeCallUpdate = defineUpdate<CodeCallOutcome, [CodeCallRequest]>(CODE_CALL_UPDATE);
export const stateQuery = defineQuery<BatchState>('sluice.state');

/** True while any call of the batch waits for a person. */
export const AWAITING_APPROVAL = defineSearchAttributeKey('SluiceAwaitingApproval', SearchAttributeType.BOOL);
/** The ids of the approvals a batch waits on, so a decision finds its batch with no worker up. */
export const PENDING_APPROVALS = defineSearchAttributeKey('SluicePendingApprovals', SearchAttributeType.KEYWORD_LIST);
/** Memo key of the batch's ApprovalsMemo: pending asks and recent outcomes, readable with no worker. */
export const APPROVALS_MEMO = 'sluiceApprovals';
/** The batch's calls waiting for the user's device (pipeline/client-tools.ts ClientWait[]). */
export const CLIENT_WAITS_MEMO = 'sluiceClientWaits';
/**
 * The memo a batch starts with; its presence at start is what turns the memo (and asks together)
 * on, and `oneWritePerDecision` one memo write per decision by signal (workflows/approvals.ts).
 */
export const EMPTY_APPROVALS_MEMO: ApprovalsMemo = {
  v: 1,
  pending: [],
  decided: [],
  refused: [],
  oneWritePerDecision: true,
};
export const SESSION_ID = defineSearchAttributeKey('SluiceSessionId', SearchAttributeType.KEYWORD);

export { batchWorkflowId } from '../pipeline/batch-id';
