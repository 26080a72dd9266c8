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
import { unpackBodyResult, withoutOwnDigest } from '../codec/stages';
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

const reconcileUpdate = defineUpdate<Reconciliation, [ReconcileDecision]>(RECONCILE_UPDATE);
/**
 * The same decision by signal: what a client sends when no worker answers (the server holds it
 * until one runs this workflow). Refusals go to the memo under the sender's requestId.
 */
const reconcileSignal = defineSignal<[ReconcileDecision & { requestId?: string }]>(RECONCILE_UPDATE);

// Only a decision that carries a signed identity schedules it, so histories without one replay
// unchanged (the check that one is present is the update's validator, which replay does not run).
const identity = proxyActivities<IdentityActivities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 3, initialInterval: '1s' },
});

/** A reconcile card does not expire: it waits for a person however long that takes. */
const NEVER = '9999-12-31T23:59:59.000Z';

export async function reconcileCall(input: ReconcileInput): Promise<Reconciliation> {
  const card = new ReconcileCard(input, workflowInfo().workflowId);
  setHandler(stateQuery, () => card.state());
  setHandler(reconcileSignal, (d) => card.signalled(d));
  setHandler(reconcileUpdate, (d) => card.updated(d), {
    validator: (d) => {
      const why = card.whyNot(d);
      if (why) throw ApplicationFailure.create({ type: RECONCILE_REFUSED, nonRetryable: true, message: why });
    },
  });

  card.publish();
  const outcome = await card.settle();
  card.publish();
  // The update that decided it gets its answer before the workflow completes.
  await condition(allHandlersFinished);
  return outcome;
}

/**
 * The card and its decision: what `sluice approvals` and the inbox see (search attributes, memo,
 * state query), which decisions it takes (whyNot, take), and the loop that applies the one taken
 * until the call is reconciled. Every field is workflow state: it changes only in handlers and in
 * the loop, never from I/O.
 */
class ReconcileCard {
  private problem: string;
  private askedAt = new Date().toISOString();
  private decision: ReconcileDecision | undefined;
  /** A run again's body is running: an update waits for it rather than answer early. */
  private running = false;
  /** A signed identity is being verified: a second decision meanwhile is refused as already decided. */
  private verifying = false;
  private outcome: Reconciliation | undefined;
  // A run again runs the body once more: for a tool whose asks only verified approvers (in its
  // groups) may decide, so may its run again; a typed name would otherwise re-run it.
  private readonly runAgainNeedsIdentity: boolean;
  /** Decisions by signal that were refused (only signals: an update's refusal is its failure). */
  private readonly refused: MemoRefusal[] = [];

  constructor(
    private readonly input: ReconcileInput,
    private readonly workflowId: string,
  ) {
    this.problem = input.problem;
    this.runAgainNeedsIdentity = input.profile.identityRequired === true;
  }

  private waiting(): boolean {
    return !this.decision && !this.outcome;
  }

  /** The card as a pending approval of kind `reconcile`, so every approval listing shows it. */
  private pending(): PendingApproval {
    const { input } = this;
    return {
      approvalId: input.reconcileId,
      workflowId: this.workflowId,
      sessionId: input.sessionId,
      turn: input.turn,
      step: input.step,
      callId: input.callId,
      toolName: input.toolName,
      reason: this.problem,
      card: input.card,
      arguments: input.ref.args,
      argsDigest: input.ref.argsDigest,
      askedAt: this.askedAt,
      expiresAt: NEVER,
      kind: 'reconcile',
      ...(input.parentCallId ? { parentCallId: input.parentCallId } : {}),
    };
  }

  /** Shows the card (or its absence) in the search attributes and the approvals memo. */
  publish(): void {
    const waiting = this.waiting();
    upsertSearchAttributes([
      { key: AWAITING_APPROVAL, value: waiting },
      { key: PENDING_APPROVALS, value: waiting ? [this.input.reconcileId] : [] },
    ]);
    const memo: ApprovalsMemo = {
      v: 1,
      pending: waiting ? [this.pending()] : [],
      decided: [],
      refused: this.refused.slice(-20),
    };
    upsertMemo({ [APPROVALS_MEMO]: memo });
  }

  /** The state query's answer: a batch of one call, in the shape every batch answers. */
  state(): BatchState {
    const { input } = this;
    const waiting = this.waiting();
    return {
      workflowId: this.workflowId,
      sessionId: input.sessionId,
      turn: input.turn,
      step: input.step,
      status: waiting ? 'awaiting-approval' : this.outcome ? 'completed' : 'running',
      cancelRequested: false,
      calls: [
        {
          callId: input.callId,
          name: input.toolName,
          stage: waiting ? 'awaiting-approval' : this.outcome ? 'done' : 'executing',
          ...(input.parentCallId ? { parentCallId: input.parentCallId } : {}),
        },
      ],
      pending: waiting ? [this.pending()] : [],
      decided: [],
      nextSeq: 0,
    };
  }

  /** Why a decision cannot be taken now, or undefined: the update's validator and the signal's check. */
  whyNot(d: ReconcileDecision): string | undefined {
    const { input, outcome, decision } = this;
    if (outcome) return `already reconciled: ${outcome.outcome} by ${outcome.by}`;
    if (decision || this.verifying)
      return `a decision is being applied already${decision ? ` (${decision.decision} by ${decision.by ?? '?'})` : ''}`;
    return (
      reconcileProblem(d, input.reconcileId) ??
      (d.decision === 'run-again' && this.runAgainNeedsIdentity && !d.signedIdentity
        ? `${input.toolName} may only be run again by a verified approver${input.profile.approverGroups?.length ? ` in ${input.profile.approverGroups.join(' or ')}` : ''}: send the decision with a signed identity (\`npx sluice reconcile --run-again --token-file FILE\`); a typed name is not enough`
        : undefined)
    );
  }

  /** Takes a valid decision, verifying a signed identity first; returns why not when it does not verify. */
  private async take(d: ReconcileDecision): Promise<string | undefined> {
    const taken = normalizeReconcile(d);
    if (taken.decision === 'run-again' && this.runAgainNeedsIdentity && taken.signedIdentity) {
      this.verifying = true;
      const r = await identity
        .verifyApprover({
          sealed: taken.signedIdentity,
          approvalId: this.input.reconcileId,
          argsDigest: this.input.ref.argsDigest,
          groups: this.input.profile.approverGroups ?? [],
          toolName: this.input.toolName,
        })
        .finally(() => {
          this.verifying = false;
        });
      if (!r.ok) return `${r.problem}; nothing was run`;
      taken.by = r.subject;
    }
    delete taken.signedIdentity;
    this.decision = taken;
    return undefined;
  }

  /** A decision by signal. It is in history before it is looked at: it must never throw, only be refused. */
  async signalled(d: ReconcileDecision & { requestId?: string }): Promise<void> {
    const requestId = d && typeof d === 'object' && typeof d.requestId === 'string' ? d.requestId.slice(0, 100) : '';
    const early = this.whyNot(d);
    const code = early ? (this.outcome || this.decision || this.verifying ? 'decided' : 'malformed') : 'unverified';
    const why = early ?? (await this.take(d));
    if (!why) return;
    log.info('reconcile signal refused', { reconcileId: this.input.reconcileId });
    this.refused.push({
      approvalId: this.input.reconcileId,
      code,
      message: why,
      via: 'signal',
      at: new Date().toISOString(),
      ...(typeof d?.by === 'string' && d.by ? { by: d.by.slice(0, 200) } : {}),
      ...(requestId ? { requestId } : {}),
    });
    this.publish();
  }

  /** A decision by update (its validator ran whyNot): answered with the outcome once there is one. */
  async updated(d: ReconcileDecision): Promise<Reconciliation> {
    const refusedWhy = await this.take(d);
    if (refusedWhy)
      throw ApplicationFailure.create({ type: RECONCILE_REFUSED, nonRetryable: true, message: refusedWhy });
    await condition(() => this.outcome !== undefined || (!this.running && !this.decision));
    if (this.outcome) return this.outcome;
    // The run again was lost too: the card is back, and the sender is told.
    throw ApplicationFailure.create({ type: RECONCILE_REFUSED, nonRetryable: true, message: this.problem });
  }

  /**
   * Waits for a decision and applies it: done and not done settle the call at once; a run again
   * runs the body once more, and if that attempt is lost too the card comes back for the next one.
   */
  async settle(): Promise<Reconciliation> {
    for (;;) {
      await condition(() => this.decision !== undefined);
      const d = this.decision!;
      const decidedAt = new Date().toISOString();
      const base = {
        reconcileId: this.input.reconcileId,
        batchWorkflowId: this.input.batchWorkflowId,
        sessionId: this.input.sessionId,
        callId: this.input.callId,
        toolName: this.input.toolName,
        by: d.by ?? 'unknown',
        ...(d.reason ? { reason: d.reason } : {}),
        ...(d.evidence ? { evidence: d.evidence } : {}),
        decidedAt,
      };
      if (d.decision !== 'run-again') {
        this.outcome = { ...base, outcome: d.decision };
        return this.outcome;
      }
      this.running = true;
      this.publish();
      const rerun = await runAgain(this.input);
      this.running = false;
      if (rerun.lost) {
        this.problem = `run again by ${base.by} at ${decidedAt} was lost too: ${rerun.text}`;
        this.askedAt = new Date().toISOString();
        this.decision = undefined;
        this.publish();
        continue;
      }
      this.outcome = {
        ...base,
        outcome: 'ran-again',
        rerun: { isError: rerun.isError, text: rerun.text, ...(rerun.code ? { code: rerun.code } : {}) },
      };
      return this.outcome;
    }
  }
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
    // The digest a person saw travels; a workflow's own sha-256 (a reconcile of an older build) does not.
    const out = unpackBodyResult(await executeBody(withoutOwnDigest(input.ref)));
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
