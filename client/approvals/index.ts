// The approval protocol of a SluiceClient, as its sub-client `sluice.approvals` (as Temporal's
// Client has `client.workflow`): what waits for a person, deciding it (by update with a worker up,
// queued by signal without one), what became of a decision, reconciling an unknown outcome, and
// handing an approval to someone else. Every read comes from the server (memo, visibility, the
// result of a finished batch), so none needs a worker. This file is the public surface; each
// concern is a file of its own: listing.ts (what waits, and where), deciding.ts (approve, deny,
// queue, hand over), signal-outcome.ts (what became of a signal), reconcile.ts (unknown
// outcomes), identity.ts (a verified approver's sealed identity).
import type { Client } from '@temporalio/client';
import type { ClientWait } from '../../pipeline/client-tools';
import type { ReconcileDecision, Reconciliation } from '../../pipeline/reconcile';
import type { ApprovalDecision, DecisionApplied, PendingApproval } from '../../pipeline/types';
import type { SealKey } from '../identity';
import * as deciding from './deciding';
import type { DecisionInput, DecisionSubmitted } from './deciding';
import * as listing from './listing';
import type { ApprovalsOverview, ApprovalsScope, BatchApprovals } from './listing';
import * as reconciling from './reconcile';
import type { ReconcileSubmission, ReconcileSubmitted } from './reconcile';
import { type SignalOutcome, signalOutcome } from './signal-outcome';

export { type DecisionInput, type DecisionSubmitted, decideUpdateId } from './deciding';
export { type ApprovalsOverview, type ApprovalsScope, DEFAULT_PROBE_MS, SERVER_DEADLINE_MS } from './listing';
export type { SignalOutcome } from './signal-outcome';

/**
 * `sluice.approvals`: the approval protocol of a SluiceClient, on its connection and task queue.
 */
export class ApprovalsClient {
  constructor(
    /** The Temporal client of the SluiceClient this belongs to. */
    readonly temporal: Client,
    /** The task queue `list()` reads by default. */
    readonly taskQueue: string,
  ) {}

  /**
   * Every approval waiting for a person on this client's task queue (`scope.taskQueue` for
   * another, `allTaskQueues: true` for the whole namespace). A batch whose approvals this client
   * cannot read (another team's memo, encrypted with a key it does not hold; an old batch no
   * worker answers for) does not hide the others: the readable ones are returned, and the array's
   * `unreadable` lists the rest with the reason. Check it before concluding nothing waits.
   */
  async list(
    scope: ApprovalsScope & { allTaskQueues?: boolean } = {},
  ): Promise<PendingApproval[] & { unreadable: ApprovalsOverview['unreadable'] }> {
    const { allTaskQueues, ...rest } = scope;
    const { pending, unreadable } = await this.overview(
      allTaskQueues || rest.taskQueue ? rest : { ...rest, taskQueue: this.taskQueue },
    );
    return Object.assign(pending, { unreadable });
  }

  /**
   * Every approval waiting for a person, from the server alone: visibility finds the batches, and
   * each batch's memo (read with describe, strongly consistent) holds its cards and digests. No
   * worker is needed. Batches started before the memo existed are queried, with a deadline.
   */
  overview(scope: ApprovalsScope = {}): Promise<ApprovalsOverview> {
    return listing.overview(this.temporal, scope);
  }

  /**
   * The calls waiting for the user's device (client tools no client of their session has taken
   * yet), from the running batches' memos: no worker needed. Nobody decides them; each ends when
   * the session's client takes it, or CLIENT_UNAVAILABLE at its `expiresAt`.
   */
  clientWaits(scope: ApprovalsScope = {}): Promise<ClientWait[]> {
    return listing.clientWaits(this.temporal, scope);
  }

  /**
   * A batch's approvals as the server holds them: its memo (no worker needed), or for a batch
   * started before the memo existed, its query (bounded: a worker must answer within the probe).
   */
  read(workflowId: string): Promise<BatchApprovals> {
    return listing.readBatch(this.temporal, workflowId);
  }

  /** Finds the batch that waits on an approval id, from search attributes alone (no worker needed). */
  find(approvalId: string): Promise<string> {
    return listing.find(this.temporal, approvalId);
  }

  /**
   * Decides an approval through the update, so the answer is confirmed: the outcome, or a
   * DecisionRefusedError saying why it was refused (expired, decided, unknown, arguments changed).
   * Pass the argsDigest the person was shown; without one, the digest pending right now is used,
   * which binds the decision to the call but not to what anybody saw.
   */
  decide(decision: DecisionInput): Promise<DecisionApplied> {
    return deciding.decide(this.temporal, decision);
  }

  /**
   * Decides an approval whether or not a worker runs its batch. When the batch's worker answers
   * within `probeMs`, the decision goes by update and the outcome is returned; when none does,
   * it is queued by signal, bound to the digest shown (`argsDigest`, else the memo's), and
   * applied when a worker runs the batch. `awaitDecision` then waits for what became of it.
   */
  submit(decision: DecisionInput, opts: { probeMs?: number } = {}): Promise<DecisionSubmitted> {
    return deciding.submit(this.temporal, decision, opts);
  }

  /**
   * Waits for what became of a queued decision, from the batch's memo (no worker needed to read
   * it): its outcome, or a DecisionRefusedError saying why the batch refused it. Throws a
   * SluiceError when `timeoutMs` passes first (the decision stays queued).
   */
  waitFor(
    q: { workflowId: string; approvalId: string; requestId: string },
    opts: { timeoutMs?: number; pollMs?: number } = {},
  ): Promise<DecisionApplied> {
    return deciding.waitFor(this.temporal, q, opts);
  }

  /** Fire-and-forget decision by signal: accepted by the server even while no worker runs (see signalOutcome). */
  signal(decision: DecisionInput): Promise<void> {
    return deciding.signal(this.temporal, decision);
  }

  /**
   * What became of a decision sent by signal, as far as it can be known within `waitMs`: applied,
   * refused (and why), or unknown when no worker answered (the server keeps the signal; the batch
   * takes or refuses it when a worker is back, and `sluice audit` shows which).
   */
  signalOutcome(decision: ApprovalDecision, workflowId: string, waitMs = 5000): Promise<SignalOutcome> {
    return signalOutcome(this.temporal, decision, workflowId, waitMs);
  }

  approve(approvalId: string, opts: { by?: string; reason?: string; workflowId?: string; argsDigest?: string } = {}) {
    return this.decide({ approvalId, decision: 'approve', ...opts });
  }

  deny(approvalId: string, opts: { by?: string; reason?: string; workflowId?: string; argsDigest?: string } = {}) {
    return this.decide({ approvalId, decision: 'deny', ...opts });
  }

  /**
   * Hands a pending approval to someone else (the `sluice.reassign` signal): works with no worker
   * up; the batch records `approval/reassigned` and notifies when a worker runs it.
   */
  reassign(r: { approvalId: string; to: string; by?: string; reason?: string; workflowId?: string }): Promise<{
    workflowId: string;
  }> {
    return deciding.reassign(this.temporal, r);
  }

  /**
   * Reconciles an unknown outcome (a reconcile card from `approvals`): done, with the evidence
   * that it ran; not done; or run again (the body runs once more and its result is returned).
   * Recorded with who and why in the reconcile workflow's history, which the audit shows.
   */
  reconcile(
    decision: ReconcileDecision & { workflowId?: string; identityToken?: string; sealKey?: SealKey },
  ): Promise<Reconciliation> {
    return reconciling.reconcile(this.temporal, decision);
  }

  /**
   * Reconciles whether or not a worker runs the card's workflow: by update when its worker answers
   * within `probeMs` (the reconciliation is returned), else queued by signal (the server holds it;
   * the workflow applies or refuses it when a worker is back). `awaitReconcile` waits for which.
   */
  submitReconcile(decision: ReconcileSubmission, opts: { probeMs?: number } = {}): Promise<ReconcileSubmitted> {
    return reconciling.submitReconcile(this.temporal, decision, opts);
  }

  /** What became of a queued reconcile decision: the reconciliation, or a SluiceError saying why not. */
  waitForReconcile(
    q: { workflowId: string; reconcileId: string; requestId: string },
    opts: { timeoutMs?: number; pollMs?: number } = {},
  ): Promise<Reconciliation> {
    return reconciling.waitForReconcile(this.temporal, q, opts);
  }
}
