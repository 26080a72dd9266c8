// The approval protocol of a SluiceClient, as its sub-client `sluice.approvals` (as Temporal's
// Client has `client.workflow`): what waits for a person, deciding it (by update with a worker up,
// queued by signal without one), what became of a decision, reconciling an unknown outcome, and
// handing an approval to someone else. Every read comes from the server (memo, visibility, the
// result of a finished batch), so none needs a worker.
import { createHash } from 'node:crypto';
import { type Client, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { decodeMapFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import { endedRefusal } from '../pipeline/approval-rules';
import { definedFields } from '../pipeline/ask';
import { isEvent } from '../pipeline/events';
import { type BatchOutputWire, expandBatchOutput } from '../codec/output';
import {
  RECONCILE_UPDATE,
  RECONCILE_WORKFLOW,
  type ReconcileDecision,
  type Reconciliation,
} from '../pipeline/reconcile';
import type {
  ApprovalDecision,
  ApprovalOutcome,
  ApprovalsMemo,
  BatchInput,
  BatchOutput,
  BatchState,
  DecidedApproval,
  DecisionApplied,
  DecisionRefusal,
  PendingApproval,
} from '../pipeline/types';
import {
  APPROVALS_MEMO,
  BATCH_WORKFLOW,
  DECISION_REFUSED,
  decideSignal,
  decideUpdate,
  reassignSignal,
  stateQuery,
} from '../workflows/definitions';
import { DecisionRefusedError, NotFoundError, SluiceError } from '../support/errors';
import { type SealKey, sealIdentity, sealKeyFromEnv } from './identity';

/** How long a read that needs no worker may take before the client says it cannot tell. */
export const SERVER_DEADLINE_MS = 10_000;
/** How many recent batches a decision for an approval no longer waiting looks through for how it ended. */
const DECIDED_SCAN = 2_000;
/** How many recently closed reconcile cards a decision for a card no longer waiting looks through. */
const RECONCILED_SCAN = 200;
/** How long a batch's worker has to answer before a decision is queued by signal instead. */
export const DEFAULT_PROBE_MS = 3_000;
/** How long an update may take to be confirmed once a worker answered. */
const CONFIRM_DEADLINE_MS = 20_000;

/** What waits for a person, and the batches the client could not read (it never guesses "nothing"). */
export interface ApprovalsOverview {
  pending: PendingApproval[];
  unreadable: { workflowId: string; problem: string }[];
}

/** Narrows the approvals listed to one task queue (a team's workers) or one session. */
export interface ApprovalsScope {
  taskQueue?: string;
  sessionId?: string;
}

/** Where a decision went: applied by a running worker, or queued on the server until one runs. */
export type DecisionSubmitted =
  | ({ status: 'applied'; workflowId: string } & DecisionApplied)
  | {
      status: 'queued';
      workflowId: string;
      approvalId: string;
      requestId: string;
      argsDigest?: string;
      /** The call the decision is for, as the memo showed it (absent when it no longer waits). */
      pending?: PendingApproval;
      message: string;
    };

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
  async overview(scope: ApprovalsScope = {}): Promise<ApprovalsOverview> {
    const listed: string[] = [];
    const quote = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
    const query = [
      'SluiceAwaitingApproval = true',
      "ExecutionStatus = 'Running'",
      ...(scope.taskQueue ? [`TaskQueue = ${quote(scope.taskQueue)}`] : []),
      ...(scope.sessionId ? [`SluiceSessionId = ${quote(scope.sessionId)}`] : []),
    ].join(' AND ');
    try {
      // The raw listing, not workflow.list(): that one decodes every batch's memo on the way, so a
      // single memo this client cannot decode (another team's key) failed the whole listing.
      // Each batch's memo is read below, on its own.
      await this.temporal.withDeadline(Date.now() + SERVER_DEADLINE_MS, async () => {
        let nextPageToken: Uint8Array | undefined;
        do {
          const page = await this.temporal.workflowService.listWorkflowExecutions({
            namespace: this.temporal.options.namespace,
            query,
            ...(nextPageToken?.length ? { nextPageToken } : {}),
          });
          for (const e of page.executions ?? []) if (e.execution?.workflowId) listed.push(e.execution.workflowId);
          nextPageToken = page.nextPageToken ?? undefined;
        } while (nextPageToken?.length);
      });
    } catch (err) {
      throw new SluiceError(
        `cannot tell whether any call waits for approval: listing the waiting batches failed (${(err as Error).message}). Check the connection to Temporal (--address, TEMPORAL_ADDRESS).`,
      );
    }
    const out: ApprovalsOverview = { pending: [], unreadable: [] };
    await Promise.all(
      listed.map(async (workflowId) => {
        try {
          const read = await this.read(workflowId);
          if (read.running) out.pending.push(...read.pending);
        } catch (err) {
          const message = (err as Error).message;
          out.unreadable.push({
            workflowId,
            problem: /encoding|decrypt|codec|key id/i.test(message)
              ? `its memo cannot be decoded by this client (${message}): it was written with a payload codec or key this client does not have (SLUICE_CODEC_KEYS), likely by another team's workers on the namespace`
              : message,
          });
        }
      }),
    );
    out.pending.sort((a, b) => a.expiresAt.localeCompare(b.expiresAt));
    return out;
  }

  /**
   * A batch's approvals as the server holds them: its memo (no worker needed), or for a batch
   * started before the memo existed, its query (bounded: a worker must answer within the probe).
   */
  async read(workflowId: string): Promise<{ running: boolean; pending: PendingApproval[]; memo?: ApprovalsMemo }> {
    const handle = this.temporal.workflow.getHandle(workflowId);
    const desc = await this.temporal.withDeadline(Date.now() + SERVER_DEADLINE_MS, () => handle.describe());
    const running = desc.status.name === 'RUNNING';
    const memo = desc.memo?.[APPROVALS_MEMO] as ApprovalsMemo | undefined;
    if (memo && memo.v === 1) return { running, pending: running ? memo.pending : [], memo };
    if (!running) return { running, pending: [] };
    try {
      const state = await this.temporal.withDeadline(Date.now() + DEFAULT_PROBE_MS, () => handle.query(stateQuery));
      return { running, pending: state.pending };
    } catch (err) {
      throw new SluiceError(
        `this batch predates the approvals memo and no worker answered its query within ${DEFAULT_PROBE_MS / 1000}s (${(err as Error).message}); start a worker to read it`,
      );
    }
  }

  /** Finds the batch that waits on an approval id, from search attributes alone (no worker needed). */
  async find(approvalId: string): Promise<string> {
    // Search attributes reach visibility a moment after the ask: look again briefly before
    // telling a person their id is unknown.
    for (let attempt = 0; attempt < 4; attempt++) {
      if (attempt) await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
      for await (const wf of this.temporal.workflow.list({
        query: `SluicePendingApprovals = '${approvalId.replace(/'/g, '')}'`,
      })) {
        return wf.workflowId;
      }
    }
    // Not waiting: if a batch's memo records it as decided or expired, that is the answer (a
    // second approve is refused `decided`, as documented), not "unknown id".
    const ended = await this.findDecided(approvalId);
    if (ended) throw ended;
    throw new NotFoundError(
      `no batch is waiting on approval ${approvalId}: it may have been decided or expired already. List pending ones with \`npx sluice approvals\`.`,
    );
  }

  /**
   * The refusal for an approval some batch's memo records as ended (decided or expired), from the
   * newest batches first (at most DECIDED_SCAN of them, running or closed). Memos come from the
   * listing itself, decoded one by one, so a batch this client cannot decode is skipped.
   */
  private async findDecided(approvalId: string): Promise<DecisionRefusedError | undefined> {
    let nextPageToken: Uint8Array | undefined;
    let seen = 0;
    try {
      do {
        const page = await this.temporal.withDeadline(Date.now() + SERVER_DEADLINE_MS, () =>
          this.temporal.workflowService.listWorkflowExecutions({
            namespace: this.temporal.options.namespace,
            query: `WorkflowType = '${BATCH_WORKFLOW}'`,
            pageSize: 200,
            ...(nextPageToken?.length ? { nextPageToken } : {}),
          }),
        );
        for (const e of page.executions ?? []) {
          seen++;
          const fields = e.memo?.fields;
          if (!fields?.[APPROVALS_MEMO]) continue;
          const memo = (
            await decodeMapFromPayloads(this.temporal.options.loadedDataConverter, fields).catch(() => undefined)
          )?.[APPROVALS_MEMO] as ApprovalsMemo | undefined;
          const done = memo?.decided?.find((d) => d.approvalId === approvalId);
          if (!done || !e.execution?.workflowId) continue;
          return new DecisionRefusedError(endedRefusal(approvalId, done, ` (batch ${e.execution.workflowId})`));
        }
        nextPageToken = page.nextPageToken ?? undefined;
      } while (nextPageToken?.length && seen < DECIDED_SCAN);
    } catch {
      // Visibility unreachable: the caller's NotFoundError still says what to do.
    }
    return undefined;
  }

  /**
   * Decides an approval through the update, so the answer is confirmed: the outcome, or a
   * DecisionRefusedError saying why it was refused (expired, decided, unknown, arguments changed).
   * Pass the argsDigest the person was shown; without one, the digest pending right now is used,
   * which binds the decision to the call but not to what anybody saw.
   */
  async decide(decision: DecisionInput): Promise<DecisionApplied> {
    const workflowId = decision.workflowId ?? (await this.find(decision.approvalId));
    const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
    // From the memo: readable with no worker, so a missing digest never turns into `digest-missing`.
    const pending = await this.read(workflowId).then(
      (r) => r.pending.find((p) => p.approvalId === decision.approvalId),
      () => undefined,
    );
    if (pending?.kind === 'reconcile') throw notAnApproval(pending.approvalId);
    if (!payload.argsDigest && pending) payload.argsDigest = pending.argsDigest;
    await sealInto(payload, identityToken, sealKey);
    return this.applyByUpdate(workflowId, payload);
  }

  /**
   * Decides an approval whether or not a worker runs its batch. When the batch's worker answers
   * within `probeMs`, the decision goes by update and the outcome is returned; when none does,
   * it is queued by signal, bound to the digest shown (`argsDigest`, else the memo's), and
   * applied when a worker runs the batch. `awaitDecision` then waits for what became of it.
   */
  async submit(decision: DecisionInput, opts: { probeMs?: number } = {}): Promise<DecisionSubmitted> {
    const workflowId = decision.workflowId ?? (await this.find(decision.approvalId));
    const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
    payload.requestId ??= `req-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
    let read: Awaited<ReturnType<ApprovalsClient['read']>> | undefined;
    try {
      read = await this.read(workflowId);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw await this.refusalAfterClose(workflowId, decision.approvalId);
      // An old batch with no memo and no worker: the signal below still reaches it.
    }
    if (read && !read.running) throw await this.refusalAfterClose(workflowId, decision.approvalId);
    const pending = read?.pending.find((p) => p.approvalId === decision.approvalId);
    if (pending?.kind === 'reconcile') throw notAnApproval(pending.approvalId);
    if (!payload.argsDigest && pending) payload.argsDigest = pending.argsDigest;
    await sealInto(payload, identityToken, sealKey);

    const handle = this.temporal.workflow.getHandle(workflowId);
    const probeMs = opts.probeMs ?? DEFAULT_PROBE_MS;
    const workerAnswers = await this.temporal
      .withDeadline(Date.now() + probeMs, () => handle.query(stateQuery))
      .then(
        () => true,
        () => false,
      );
    if (workerAnswers) {
      try {
        const applied = await this.temporal.withDeadline(Date.now() + CONFIRM_DEADLINE_MS, () =>
          this.applyByUpdate(workflowId, payload),
        );
        return { status: 'applied', workflowId, ...applied };
      } catch (err) {
        if (err instanceof SluiceError) throw err;
        return {
          status: 'queued',
          workflowId,
          approvalId: decision.approvalId,
          requestId: payload.requestId,
          ...(payload.argsDigest ? { argsDigest: payload.argsDigest } : {}),
          ...(pending ? { pending } : {}),
          message: `the batch did not confirm within ${CONFIRM_DEADLINE_MS / 1000}s (${(err as Error).message}); its worker may have stopped. The server holds the decision and the batch applies it when a worker runs it; check with \`npx sluice approvals\``,
        };
      }
    }
    await handle.signal(decideSignal, payload);
    return {
      status: 'queued',
      workflowId,
      approvalId: decision.approvalId,
      requestId: payload.requestId,
      ...(payload.argsDigest ? { argsDigest: payload.argsDigest } : {}),
      ...(pending ? { pending } : {}),
      message: `no worker answered batch ${workflowId} within ${probeMs / 1000}s: the decision is queued on the server${payload.argsDigest ? `, bound to digest ${payload.argsDigest},` : ''} and the batch applies or refuses it when a worker runs it${pending ? ` (before the deny timeout at ${pending.expiresAt}, or it is refused as expired)` : ''}`,
    };
  }

  /**
   * Waits for what became of a queued decision, from the batch's memo (no worker needed to read
   * it): its outcome, or a DecisionRefusedError saying why the batch refused it. Throws a
   * SluiceError when `timeoutMs` passes first (the decision stays queued).
   */
  async waitFor(
    q: { workflowId: string; approvalId: string; requestId: string },
    opts: { timeoutMs?: number; pollMs?: number } = {},
  ): Promise<DecisionApplied> {
    const until = Date.now() + (opts.timeoutMs ?? 10 * 60_000);
    for (;;) {
      let read: Awaited<ReturnType<ApprovalsClient['read']>> | undefined;
      try {
        read = await this.read(q.workflowId);
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) throw await this.refusalAfterClose(q.workflowId, q.approvalId);
      }
      const refused = read?.memo?.refused.find((r) => r.requestId === q.requestId);
      if (refused) throw new DecisionRefusedError({ code: refused.code, message: refused.message });
      // A quorum vote that left the ask waiting for more: recorded, with the tally.
      const tally = read?.memo?.pending.find((p) => p.approvalId === q.approvalId)?.quorum;
      if (tally && [...tally.approvals, ...tally.rejections].some((v) => v.requestId === q.requestId))
        return { approvalId: q.approvalId, outcome: 'pending', quorum: tally };
      const done = read?.memo?.decided.find((d) => d.approvalId === q.approvalId);
      if (done) {
        if (done.requestId === q.requestId)
          return definedFields({ approvalId: q.approvalId, outcome: done.outcome, by: done.by || undefined });
        throw new DecisionRefusedError(endedRefusal(q.approvalId, done));
      }
      if (read && !read.running) throw await this.refusalAfterClose(q.workflowId, q.approvalId);
      if (Date.now() >= until)
        throw new SluiceError(
          `no outcome for approval ${q.approvalId} yet: the decision stays queued on batch ${q.workflowId} until a worker runs it`,
        );
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 500));
    }
  }

  private async applyByUpdate(workflowId: string, payload: ApprovalDecision): Promise<DecisionApplied> {
    const handle = this.temporal.workflow.getHandle(workflowId);
    const decision = payload;
    try {
      return await handle.executeUpdate(decideUpdate, {
        args: [payload],
        updateId: decideUpdateId(payload),
      });
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) {
        const cause = err.cause;
        if (cause instanceof ApplicationFailure && cause.type === DECISION_REFUSED && cause.details?.[0])
          throw new DecisionRefusedError(cause.details[0] as DecisionRefusal);
        throw new SluiceError(`decision refused: ${cause?.message ?? err.message}`);
      }
      if (err instanceof WorkflowNotFoundError) throw await this.refusalAfterClose(workflowId, decision.approvalId);
      throw err;
    }
  }

  /**
   * Reconciles an unknown outcome (a reconcile card from `approvals`): done, with the evidence
   * that it ran; not done; or run again (the body runs once more and its result is returned).
   * Recorded with who and why in the reconcile workflow's history, which the audit shows.
   */
  async reconcile(
    decision: ReconcileDecision & { workflowId?: string; identityToken?: string; sealKey?: SealKey },
  ): Promise<Reconciliation> {
    const workflowId = decision.workflowId ?? (await this.findReconcile(decision.reconcileId));
    const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
    await this.sealReconcileIdentity(workflowId, payload, identityToken, sealKey);
    const handle = this.temporal.workflow.getHandle(workflowId);
    try {
      return await handle.executeUpdate<Reconciliation, [ReconcileDecision]>(RECONCILE_UPDATE, { args: [payload] });
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError)
        throw new SluiceError(`not reconciled: ${err.cause?.message ?? err.message}`);
      if (err instanceof WorkflowNotFoundError)
        throw await this.reconcileRefusalAfterClose(workflowId, decision.reconcileId);
      throw err;
    }
  }

  /**
   * A verified approver's token, sealed to the reconcile card and the call's digest (as for an
   * approval) into `payload.signedIdentity`; nothing without a token.
   */
  private async sealReconcileIdentity(
    workflowId: string,
    payload: ReconcileDecision,
    identityToken: string | undefined,
    sealKey: SealKey | undefined,
  ): Promise<void> {
    if (!identityToken) return;
    const card = (await this.read(workflowId)).pending.find((p) => p.approvalId === payload.reconcileId);
    const key = sealKey ?? sealKeyFromEnv();
    if (!card) throw new SluiceError(`no unknown outcome ${payload.reconcileId} is waiting in ${workflowId}`);
    if (!key)
      throw new SluiceError(
        "a signed identity is sealed to the workers' public key before it is sent: set SLUICE_SEAL_KEY or pass sealKey",
      );
    payload.signedIdentity = await sealIdentity(
      identityToken,
      { approvalId: payload.reconcileId, argsDigest: card.argsDigest },
      key,
    );
  }

  /**
   * Reconciles whether or not a worker runs the card's workflow: by update when its worker answers
   * within `probeMs` (the reconciliation is returned), else queued by signal (the server holds it;
   * the workflow applies or refuses it when a worker is back). `awaitReconcile` waits for which.
   */
  async submitReconcile(
    decision: ReconcileDecision & {
      workflowId?: string;
      identityToken?: string;
      sealKey?: SealKey;
      requestId?: string;
    },
    opts: { probeMs?: number } = {},
  ): Promise<
    | ({ status: 'applied' } & Reconciliation)
    | { status: 'queued'; workflowId: string; reconcileId: string; requestId: string; message: string }
  > {
    const workflowId = decision.workflowId ?? (await this.findReconcile(decision.reconcileId));
    const probeMs = opts.probeMs ?? DEFAULT_PROBE_MS;
    const handle = this.temporal.workflow.getHandle(workflowId);
    const workerAnswers = await this.temporal
      .withDeadline(Date.now() + probeMs, () => handle.query(stateQuery))
      .then(
        () => true,
        () => false,
      );
    if (workerAnswers) return { status: 'applied', ...(await this.reconcile({ ...decision, workflowId })) };
    const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
    const requestId = payload.requestId ?? `req-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
    await this.sealReconcileIdentity(workflowId, payload, identityToken, sealKey);
    try {
      await handle.signal(RECONCILE_UPDATE, { ...payload, requestId });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError)
        throw await this.reconcileRefusalAfterClose(workflowId, decision.reconcileId);
      throw err;
    }
    return {
      status: 'queued',
      workflowId,
      reconcileId: decision.reconcileId,
      requestId,
      message: `no worker answered ${workflowId} within ${probeMs / 1000}s: the decision (${decision.decision}) is queued on the server and applied or refused when a worker runs it`,
    };
  }

  /** What became of a queued reconcile decision: the reconciliation, or a SluiceError saying why not. */
  async waitForReconcile(
    q: { workflowId: string; reconcileId: string; requestId: string },
    opts: { timeoutMs?: number; pollMs?: number } = {},
  ): Promise<Reconciliation> {
    const until = Date.now() + (opts.timeoutMs ?? 10 * 60_000);
    const handle = this.temporal.workflow.getHandle(q.workflowId);
    for (;;) {
      const read = await this.read(q.workflowId).catch(() => undefined);
      const refused = read?.memo?.refused.find((r) => r.requestId === q.requestId);
      if (refused) throw new SluiceError(`not reconciled: ${refused.message}`);
      if (read && !read.running) return (await handle.result()) as Reconciliation;
      if (Date.now() >= until)
        throw new SluiceError(
          `no outcome for ${q.reconcileId} yet: the decision stays queued on ${q.workflowId} until a worker runs it`,
        );
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 500));
    }
  }

  /**
   * Hands a pending approval to someone else (the `sluice.reassign` signal): works with no worker
   * up; the batch records `approval/reassigned` and notifies when a worker runs it.
   */
  async reassign(r: { approvalId: string; to: string; by?: string; reason?: string; workflowId?: string }): Promise<{
    workflowId: string;
  }> {
    if (!r.to?.trim()) throw new SluiceError('say who the approval goes to ("to")');
    const workflowId = r.workflowId ?? (await this.find(r.approvalId));
    const read = await this.read(workflowId).catch(() => undefined);
    const p = read?.pending.find((x) => x.approvalId === r.approvalId);
    if (read && !p)
      throw new SluiceError(`approval ${r.approvalId} is not waiting in ${workflowId}: nothing to reassign`);
    if (p?.kind === 'reconcile')
      throw new SluiceError(`${r.approvalId} is an unknown outcome, not an approval: reconcile it`);
    const { workflowId: _omit, ...payload } = r;
    await this.temporal.workflow.getHandle(workflowId).signal(reassignSignal, payload);
    return { workflowId };
  }

  /**
   * Why a reconcile decision came too late: its workflow has finished (visibility can still list
   * it as waiting for a moment after), so the answer is how it was reconciled, from its result.
   */
  private async reconcileRefusalAfterClose(workflowId: string, reconcileId: string): Promise<SluiceError> {
    const r = await this.reconciliationOf(workflowId);
    if (!r?.outcome)
      return new SluiceError(`no unknown outcome ${reconcileId} is waiting (workflow ${workflowId} not found)`);
    return alreadyReconciled(r);
  }

  /** A closed reconcile card's result; undefined when it did not complete or the server cannot tell in time. */
  private reconciliationOf(workflowId: string): Promise<Reconciliation | undefined> {
    return this.temporal
      .withDeadline(Date.now() + SERVER_DEADLINE_MS, () => this.temporal.workflow.getHandle(workflowId).result())
      .then(
        (x) => x as Reconciliation,
        () => undefined,
      );
  }

  /**
   * The workflow of the card waiting on `reconcileId`. A card reconciled already is waiting no more,
   * so a second decision hears how it was reconciled (from the closed card), not "no batch is waiting".
   */
  private async findReconcile(reconcileId: string): Promise<string> {
    try {
      return await this.find(reconcileId);
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      throw (await this.findReconciled(reconcileId)) ?? err;
    }
  }

  /** The refusal for a card some recently completed reconcile workflow settled (newest first, at most RECONCILED_SCAN). */
  private async findReconciled(reconcileId: string): Promise<SluiceError | undefined> {
    let seen = 0;
    try {
      for await (const wf of this.temporal.workflow.list({
        query: `WorkflowType = '${RECONCILE_WORKFLOW}' AND ExecutionStatus = 'Completed'`,
      })) {
        const r = await this.reconciliationOf(wf.workflowId);
        if (r?.reconcileId === reconcileId) return alreadyReconciled(r);
        if (++seen >= RECONCILED_SCAN) break;
      }
    } catch {
      // Visibility unreachable: the caller's NotFoundError still says what to do.
    }
    return undefined;
  }

  /** Why a decision came too late for a batch that has finished: how its ask ended, from the result. */
  private async refusalAfterClose(workflowId: string, approvalId: string): Promise<SluiceError> {
    let output: BatchOutput;
    try {
      output = expandBatchOutput(
        await this.temporal.workflow.getHandle<(input: BatchInput) => Promise<BatchOutputWire>>(workflowId).result(),
      );
    } catch {
      return new SluiceError(`batch ${workflowId} does not exist or did not complete; nothing can be decided there`);
    }
    const decided = output.events.filter((e) => isEvent(e, 'approval/decided')).find((e) => e.data.id === approvalId);
    if (!decided)
      return new DecisionRefusedError({
        code: 'unknown',
        message: `batch ${workflowId} has finished, and it never asked approval ${approvalId}`,
      });
    const d = decided.data;
    return new DecisionRefusedError(endedRefusal(approvalId, { ...d, decidedAt: decided.time }));
  }

  /** Fire-and-forget decision by signal: accepted by the server even while no worker runs (see signalOutcome). */
  async signal(decision: DecisionInput): Promise<void> {
    const workflowId = decision.workflowId ?? (await this.find(decision.approvalId));
    const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
    await sealInto(payload, identityToken, sealKey);
    await this.temporal.workflow.getHandle(workflowId).signal(decideSignal, payload);
  }

  /**
   * What became of a decision sent by signal, as far as it can be known within `waitMs`: applied,
   * refused (and why), or unknown when no worker answered (the server keeps the signal; the batch
   * takes or refuses it when a worker is back, and `sluice audit` shows which).
   */
  async signalOutcome(decision: ApprovalDecision, workflowId: string, waitMs = 5000): Promise<SignalOutcome> {
    const handle = this.temporal.workflow.getHandle(workflowId);
    const deadline = Date.now() + waitMs;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const description = await handle.describe().catch(() => undefined);
      if (description && description.status.name !== 'RUNNING') {
        const raw = (await handle.result().catch(() => undefined)) as BatchOutputWire | undefined;
        return outcomeInClosedBatch(decision, workflowId, raw);
      }
      const state = await Promise.race([
        handle.query(stateQuery).catch(() => undefined),
        new Promise<undefined>((r) => setTimeout(r, Math.min(left, 2000))),
      ]);
      const known = state && outcomeInRunningBatch(decision, workflowId, state);
      if (known) return known;
      await new Promise((r) => setTimeout(r, 200));
    }
    return {
      status: 'unknown',
      message: `no worker answered within ${Math.round(waitMs / 1000)} s; the server keeps the signal and the batch applies or refuses it when a worker runs it (\`npx sluice audit ${workflowId}\` shows which)`,
    };
  }

  approve(approvalId: string, opts: { by?: string; reason?: string; workflowId?: string; argsDigest?: string } = {}) {
    return this.decide({ approvalId, decision: 'approve', ...opts });
  }

  deny(approvalId: string, opts: { by?: string; reason?: string; workflowId?: string; argsDigest?: string } = {}) {
    return this.decide({ approvalId, decision: 'deny', ...opts });
  }
}

function notAnApproval(id: string): SluiceError {
  return new SluiceError(
    `${id} is not an approval but an unknown outcome to reconcile: the call may or may not have run. Check its effect, then \`npx sluice reconcile ${id} --done --evidence "..."\`, \`--not-done\` or \`--run-again\`.`,
  );
}

/** A closed batch's result: the signal's refusal, else the approval's decision; else it does not say. */
function outcomeInClosedBatch(
  decision: ApprovalDecision,
  workflowId: string,
  raw: BatchOutputWire | undefined,
): SignalOutcome {
  const output = raw && expandBatchOutput(raw);
  const refused = output?.events
    .filter((e) => isEvent(e, 'approval/refused'))
    .find(
      (e) =>
        e.data.id === decision.approvalId &&
        e.data.via === 'signal' &&
        e.data.decision === decision.decision &&
        (e.data.by ?? undefined) === decision.by,
    );
  if (refused)
    return {
      status: 'refused',
      refusal: { code: refused.data.code, message: refused.data.problem },
    };
  const decided = output?.events
    .filter((e) => isEvent(e, 'approval/decided'))
    .find((e) => e.data.id === decision.approvalId);
  if (decided) {
    const { callId, outcome, by, expired } = decided.data;
    return outcomeOfDecided(
      decision,
      definedFields({ approvalId: decision.approvalId, decidedAt: decided.time, callId, outcome, by, expired }),
    );
  }
  return { status: 'unknown', message: `batch ${workflowId} has closed and its result does not say` };
}

/**
 * A running batch's state: the approval decided, or no longer pending, or pending with other
 * arguments than the decider was shown; undefined while it waits for the signal.
 */
function outcomeInRunningBatch(
  decision: ApprovalDecision,
  workflowId: string,
  state: BatchState,
): SignalOutcome | undefined {
  const done = state.decided.find((d) => d.approvalId === decision.approvalId);
  if (done) return outcomeOfDecided(decision, done);
  const pending = state.pending.find((p) => p.approvalId === decision.approvalId);
  if (!pending)
    return {
      status: 'refused',
      refusal: {
        code: 'unknown',
        message: `no approval ${decision.approvalId} is pending in batch ${workflowId}; list pending ones with \`npx sluice approvals\``,
      },
    };
  if (decision.argsDigest && decision.argsDigest !== pending.argsDigest)
    return {
      status: 'refused',
      refusal: {
        code: 'digest-mismatch',
        message: `the arguments you were shown (digest ${decision.argsDigest.slice(0, 80)}) are not the ones this call would run with (${pending.argsDigest}); reload and decide again`,
        callId: pending.callId,
      },
    };
  return undefined;
}

/** Applied when the decision made is this one (same decider, same outcome, not expired); else refused. */
function outcomeOfDecided(decision: ApprovalDecision, done: DecidedApproval): SignalOutcome {
  const expected =
    decision.decision !== 'approve' ? 'rejected' : decision.scope === 'session' ? 'allowed-session' : 'allowed-once';
  return (decision.signedIdentity ? done.verified !== undefined : done.by === decision.by) &&
    done.outcome === expected &&
    !done.expired
    ? definedFields({ status: 'applied' as const, outcome: done.outcome, by: done.by || undefined })
    : { status: 'refused', refusal: endedRefusal(decision.approvalId, done) };
}

/** What became of a decision sent by signal (`SluiceClient.signalOutcome`). */
export type SignalOutcome =
  | { status: 'applied'; outcome: ApprovalOutcome; by?: string }
  | { status: 'refused'; refusal: DecisionRefusal }
  | { status: 'unknown'; message: string };

/**
 * The same decision sent twice (a retry, a double click) is one update; the id says nothing of who
 * decided or of the digest, which Temporal stores in clear even when payloads are encrypted.
 */
export function decideUpdateId(d: ApprovalDecision): string {
  const hash = createHash('sha256')
    .update(
      JSON.stringify([
        d.approvalId,
        d.decision,
        d.by ?? '',
        d.argsDigest ?? '',
        // A session grant, its pins, or a signed identity make it another decision (absent: as before).
        ...(d.scope === 'session' || d.signedIdentity ? [d.scope ?? '', d.pins ?? [], d.signedIdentity ?? ''] : []),
        // A link decision is its own request: a second use of the same link must reach the batch
        // (which refuses it, link-used), not be answered with the first use's result.
        ...(d.link ? ['link', d.link.id, d.requestId ?? ''] : []),
      ]),
    )
    .digest('hex');
  return `decide:${d.approvalId}:${hash.slice(0, 32)}`;
}

/**
 * A decision as callers give it: `identityToken` is the approver's JWT, sealed here to the
 * workers' key (`sealKey`, else SLUICE_SEAL_KEY) and bound to the approval and its digest; only
 * the sealed form is sent.
 */
export type DecisionInput = ApprovalDecision & { workflowId?: string; identityToken?: string; sealKey?: SealKey };

async function sealInto(payload: ApprovalDecision, token: string | undefined, key: SealKey | undefined): Promise<void> {
  if (!token) return;
  const sealKey = key ?? sealKeyFromEnv();
  if (!sealKey)
    throw new SluiceError(
      "a signed identity is sealed to the workers' public key before it is sent: set SLUICE_SEAL_KEY (the JWK the workers' operator publishes) or pass sealKey",
    );
  if (!payload.argsDigest)
    throw new SluiceError(
      `a signed identity is bound to the arguments shown: pass the argsDigest of approval ${payload.approvalId} (--digest)`,
    );
  payload.signedIdentity = await sealIdentity(
    token,
    { approvalId: payload.approvalId, argsDigest: payload.argsDigest },
    sealKey,
  );
}

/** A second decision on a card already reconciled: how, by whom and when. */
function alreadyReconciled(r: Reconciliation): SluiceError {
  return new SluiceError(
    `not reconciled: already reconciled: ${r.outcome} by ${r.by}${r.reason ? ` (${r.reason})` : ''} at ${r.decidedAt}`,
  );
}
