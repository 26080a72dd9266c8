// An unknown outcome's card (a reconcileCall workflow waiting for a person), opened the way a batch
// opens one when an at-most-once body's attempt is lost: shared by the tests that settle one from
// the CLI and from the inbox page.
import { type ReconcileInput, reconcileWorkflowId } from '../pipeline/reconcile';
import { APPROVALS_MEMO, AWAITING_APPROVAL, PENDING_APPROVALS, SESSION_ID } from '../workflows/definitions';
import { eventually } from './eventually';
import type { Harness } from './harness';

/** A card for a lost `deploy` call ({ env: 'prod' }, titled "Deploy prod"), once its memo lists it. */
export async function openReconcileCard(h: Harness, tag: string) {
  const batchId = `sluice-batch:rq-${tag}-${Date.now()}:1:1`;
  const reconcileId = `rc-${tag}-${Date.now()}`;
  const input: ReconcileInput = {
    reconcileId,
    batchWorkflowId: batchId,
    sessionId: `rq-${tag}`,
    turn: 1,
    step: 1,
    callId: 'c1',
    toolName: 'deploy',
    ref: {
      workflowId: batchId,
      sessionId: `rq-${tag}`,
      turn: 1,
      step: 1,
      callId: 'c1',
      name: 'deploy',
      args: { env: 'prod' },
      argsDigest: 'sha256:00',
      idempotencyKey: `${batchId}/c1`,
      state: {},
    },
    profile: {
      concurrencySafe: false,
      timeoutMs: 10_000,
      heartbeatTimeoutMs: 10_000,
      retry: {},
      approval: 'auto',
      finalizes: false,
      atMostOnce: true,
    },
    card: { title: 'Deploy prod' },
    problem: 'the worker running it was lost',
  };
  const workflowId = reconcileWorkflowId(batchId, 'c1');
  const handle = await h.client.temporal.workflow.start('reconcileCall', {
    taskQueue: h.taskQueue,
    workflowId,
    args: [input],
    typedSearchAttributes: [
      { key: SESSION_ID, value: input.sessionId },
      { key: AWAITING_APPROVAL, value: true },
      { key: PENDING_APPROVALS, value: [reconcileId] },
    ],
    memo: { [APPROVALS_MEMO]: { v: 1, pending: [], decided: [], refused: [] } },
  });
  await eventually('the card in the memo', async () =>
    (await h.client.readApprovals(workflowId)).pending.some((p) => p.approvalId === reconcileId),
  );
  return { handle, workflowId, reconcileId };
}
