// An unknown outcome, held for a person (docs/reliability.md): the batch ended the call
// OUTCOME_UNKNOWN and started this workflow, which outlives it. It shows one operator card —
// listed by `sluice approvals` and the inbox through the same search attributes, memo and state
// query as an approval — and waits for `sluice.reconcile`: done (with evidence), not done, or run
// again. Who decided, why and with what evidence stay in its history and its result (the audit
// reads both). A run again runs the body once more, never retried; lost again, the card returns.
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  defineSignal,
  defineUpdate,
  log,
  proxyActivities,
  setHandler,
  TimeoutFailure,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { StageActivities } from '../activities/stages';
import type { IdentityActivities } from '../pipeline/identity';
import { normalizeResult } from '../pipeline/normalize';
import { unpackBodyResult } from '../pipeline/stages';
import {
  normalizeReconcile,
  RECONCILE_REFUSED,
  RECONCILE_UPDATE,
  reconcileProblem,
  type ReconcileDecision,
  type ReconcileInput,
  type Reconciliation,
} from '../pipeline/reconcile';
import type { ApprovalsMemo, BatchState, MemoRefusal, PendingApproval } from '../pipeline/types';
import { APPROVALS_MEMO, AWAITING_APPROVAL, PENDING_APPROVALS, stateQuery } from './definitions';
import { bodyFailure } from './failures';

export const reconcileUpdate = defineUpdate<Reconciliation, [ReconcileDecision]>(RECONCILE_UPDATE);
/**
 * The same decision by signal: what a client sends when no worker answers (the server holds it
 * until one runs this workflow). Refusals go to the memo under the sender's requestId.
 */
export const reconcileSignal = defineSignal<[ReconcileDecision & { requestId?: string }]>(RECONCILE_UPDATE);

// Only a decision that carries a signed identity schedules it, so histories without one replay
// unchanged (the check that one is present is the update's validator, which replay does not run).
const identity = proxyActivities<IdentityActivities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 3, initialInterval: '1s' },
});

/** A reconcile card does not expire: it waits for a person however long that takes. */
const NEVER = '9999-12-31T23:59:59.000Z';

export async function reconcileCall(input: ReconcileInput): Promise<Reconciliation> {
  const { workflowId } = workflowInfo();
  let problem = input.problem;
  let askedAt = new Date().toISOString();
  let decision: ReconcileDecision | undefined;
  let running = false;
  let verifying = false;
  let outcome: Reconciliation | undefined;
  // A run again runs the body once more: for a tool whose asks only verified approvers (in its
  // groups) may decide, so may its run again; a typed name would otherwise re-run it.
  const runAgainNeedsIdentity = input.profile.identityRequired === true;
  // Decisions by signal that were refused (only signals: an update's refusal is its failure).
  const refused: MemoRefusal[] = [];

  const pending = (): PendingApproval => ({
    approvalId: input.reconcileId,
    workflowId,
    sessionId: input.sessionId,
    turn: input.turn,
    step: input.step,
    callId: input.callId,
    toolName: input.toolName,
    reason: problem,
    card: input.card,
    arguments: input.ref.args,
    argsDigest: input.ref.argsDigest,
    askedAt,
    expiresAt: NEVER,
    kind: 'reconcile',
    ...(input.parentCallId ? { parentCallId: input.parentCallId } : {}),
  });
  const waiting = () => !decision && !outcome;
  const publish = () => {
    upsertSearchAttributes([
      { key: AWAITING_APPROVAL, value: waiting() },
      { key: PENDING_APPROVALS, value: waiting() ? [input.reconcileId] : [] },
    ]);
    const memo: ApprovalsMemo = {
      v: 1,
      pending: waiting() ? [pending()] : [],
      decided: [],
      refused: refused.slice(-20),
    };
    upsertMemo({ [APPROVALS_MEMO]: memo });
  };

  setHandler(
    stateQuery,
    (): BatchState => ({
      workflowId,
      sessionId: input.sessionId,
      turn: input.turn,
      step: input.step,
      status: waiting() ? 'awaiting-approval' : outcome ? 'completed' : 'running',
      cancelRequested: false,
      calls: [
        {
          callId: input.callId,
          name: input.toolName,
          stage: waiting() ? 'awaiting-approval' : outcome ? 'done' : 'executing',
          ...(input.parentCallId ? { parentCallId: input.parentCallId } : {}),
        },
      ],
      pending: waiting() ? [pending()] : [],
      decided: [],
      nextSeq: 0,
    }),
  );
  /** Why a decision cannot be taken now, or undefined: the update's validator and the signal's check. */
  const whyNot = (d: ReconcileDecision): string | undefined =>
    outcome
      ? `already reconciled: ${outcome.outcome} by ${outcome.by}`
      : decision || verifying
        ? `a decision is being applied already${decision ? ` (${decision.decision} by ${decision.by ?? '?'})` : ''}`
        : (reconcileProblem(d, input.reconcileId) ??
          (d.decision === 'run-again' && runAgainNeedsIdentity && !d.signedIdentity
            ? `${input.toolName} may only be run again by a verified approver${input.profile.approverGroups?.length ? ` in ${input.profile.approverGroups.join(' or ')}` : ''}: send the decision with a signed identity (\`npx sluice reconcile --run-again --token-file FILE\`); a typed name is not enough`
            : undefined));
  /** Takes a valid decision, verifying a signed identity first; returns why not when it does not verify. */
  const take = async (d: ReconcileDecision): Promise<string | undefined> => {
    const taken = normalizeReconcile(d);
    if (taken.decision === 'run-again' && runAgainNeedsIdentity && taken.signedIdentity) {
      verifying = true;
      const r = await identity
        .verifyApprover({
          sealed: taken.signedIdentity,
          approvalId: input.reconcileId,
          argsDigest: input.ref.argsDigest,
          groups: input.profile.approverGroups ?? [],
          toolName: input.toolName,
        })
        .finally(() => {
          verifying = false;
        });
      if (!r.ok) return `${r.problem}; nothing was run`;
      taken.by = r.subject;
    }
    delete taken.signedIdentity;
    decision = taken;
    return undefined;
  };
  setHandler(reconcileSignal, async (d) => {
    // A signal is in history before it is looked at: it must never throw, only be refused.
    const requestId = d && typeof d === 'object' && typeof d.requestId === 'string' ? d.requestId.slice(0, 100) : '';
    const early = whyNot(d);
    const code = early ? (outcome || decision || verifying ? 'decided' : 'malformed') : 'unverified';
    const why = early ?? (await take(d));
    if (!why) return;
    log.info('reconcile signal refused', { reconcileId: input.reconcileId });
    refused.push({
      approvalId: input.reconcileId,
      code,
      message: why,
      via: 'signal',
      at: new Date().toISOString(),
      ...(typeof d?.by === 'string' && d.by ? { by: d.by.slice(0, 200) } : {}),
      ...(requestId ? { requestId } : {}),
    });
    publish();
  });
  setHandler(
    reconcileUpdate,
    async (d) => {
      const refusedWhy = await take(d);
      if (refusedWhy)
        throw ApplicationFailure.create({ type: RECONCILE_REFUSED, nonRetryable: true, message: refusedWhy });
      await condition(() => outcome !== undefined || (!running && !decision));
      if (outcome) return outcome;
      // The run again was lost too: the card is back, and the sender is told.
      throw ApplicationFailure.create({ type: RECONCILE_REFUSED, nonRetryable: true, message: problem });
    },
    {
      validator: (d) => {
        const why = whyNot(d);
        if (why) throw ApplicationFailure.create({ type: RECONCILE_REFUSED, nonRetryable: true, message: why });
      },
    },
  );

  publish();
  for (;;) {
    await condition(() => decision !== undefined);
    const d = decision!;
    const decidedAt = new Date().toISOString();
    const base = {
      reconcileId: input.reconcileId,
      batchWorkflowId: input.batchWorkflowId,
      sessionId: input.sessionId,
      callId: input.callId,
      toolName: input.toolName,
      by: d.by ?? 'unknown',
      ...(d.reason ? { reason: d.reason } : {}),
      ...(d.evidence ? { evidence: d.evidence } : {}),
      decidedAt,
    };
    if (d.decision !== 'run-again') {
      outcome = { ...base, outcome: d.decision };
      break;
    }
    running = true;
    publish();
    const rerun = await runAgain(input);
    running = false;
    if (rerun.lost) {
      problem = `run again by ${base.by} at ${decidedAt} was lost too: ${rerun.text}`;
      askedAt = new Date().toISOString();
      decision = undefined;
      publish();
      continue;
    }
    outcome = {
      ...base,
      outcome: 'ran-again',
      rerun: { isError: rerun.isError, text: rerun.text, ...(rerun.code ? { code: rerun.code } : {}) },
    };
    break;
  }
  publish();
  // The update that decided it gets its answer before the workflow completes.
  await condition(allHandlersFinished);
  return outcome;
}

/** The body once more, with the lost attempt's arguments: one attempt, never retried. */
async function runAgain(
  input: ReconcileInput,
): Promise<{ lost: boolean; isError: boolean; text: string; code?: string }> {
  const p = input.profile;
  const { executeBody } = proxyActivities<StageActivities>({
    startToCloseTimeout: p.timeoutMs,
    heartbeatTimeout: p.heartbeatTimeoutMs,
    retry: { maximumAttempts: 1 },
    summary: `${input.toolName} ${input.callId} (run again)`,
  });
  try {
    const out = unpackBodyResult(await executeBody(input.ref));
    const r = normalizeResult(out.candidate);
    const text = r.content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('\n');
    return {
      lost: false,
      isError: r.isError,
      text: text.slice(0, 4000),
      ...(r.error?.code ? { code: r.error.code } : {}),
    };
  } catch (err) {
    if (attemptLost(err)) return { lost: true, isError: true, text: lostWords(input.toolName, err) };
    const c = bodyFailure(input.toolName, p.timeoutMs, err);
    return {
      lost: false,
      isError: true,
      text: c.error?.message ?? 'failed',
      ...(c.error?.code ? { code: c.error.code } : {}),
    };
  }
}

/** The attempt was started and then lost: its worker stopped heartbeating, or it ran out of time. */
export function attemptLost(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  return cause instanceof TimeoutFailure;
}

export function lostWords(toolName: string, err: unknown): string {
  const cause = (err as ActivityFailure).cause as TimeoutFailure;
  const how =
    cause.timeoutType === 'HEARTBEAT'
      ? 'the worker running it stopped answering (its heartbeat was lost: the worker was killed, crashed or cut off)'
      : 'it did not finish within its time limit';
  return `${toolName} started, then ${how}`;
}
