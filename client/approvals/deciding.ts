// Deciding an approval: by update when the batch's worker answers (the outcome is confirmed), by
// signal when none does (the server holds the decision until a worker runs the batch), what
// became of a queued decision, why a decision came too late for a finished batch, and handing an
// approval to someone else.
import { createHash } from 'node:crypto';
import { type Client, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { endedRefusal } from '../../pipeline/approval-rules';
import { definedFields } from '../../pipeline/ask';
import { isEvent } from '../../pipeline/events';
import { type BatchOutputWire, expandBatchOutput } from '../../codec/output';
import type {
  ApprovalDecision,
  BatchInput,
  BatchOutput,
  DecisionApplied,
  DecisionRefusal,
  PendingApproval,
} from '../../pipeline/types';
import { DECISION_REFUSED, decideSignal, decideUpdate, reassignSignal, stateQuery } from '../../workflows/definitions';
import { DecisionRefusedError, SluiceError } from '../../support/errors';
import { executeUpdate } from '../../temporal/update';
import type { SealKey } from '../identity';
import { sealInto } from './identity';
import { DEFAULT_PROBE_MS, find, readBatch, type BatchApprovals } from './listing';

/** How long an update may take to be confirmed once a worker answered. */
const CONFIRM_DEADLINE_MS = 20_000;

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
 * Decides an approval through the update, so the answer is confirmed: the outcome, or a
 * DecisionRefusedError saying why it was refused (expired, decided, unknown, arguments changed).
 * Pass the argsDigest the person was shown; without one, the digest pending right now is used,
 * which binds the decision to the call but not to what anybody saw.
 */
export async function decide(temporal: Client, decision: DecisionInput): Promise<DecisionApplied> {
  const workflowId = decision.workflowId ?? (await find(temporal, decision.approvalId));
  const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
  // From the memo: readable with no worker, so a missing digest never turns into `digest-missing`.
  const pending = await readBatch(temporal, workflowId).then(
    (r) => r.pending.find((p) => p.approvalId === decision.approvalId),
    () => undefined,
  );
  if (pending?.kind === 'reconcile') throw notAnApproval(pending.approvalId);
  if (!payload.argsDigest && pending) payload.argsDigest = pending.argsDigest;
  await sealInto(payload, identityToken, sealKey);
  return applyByUpdate(temporal, workflowId, payload);
}

/**
 * Decides an approval whether or not a worker runs its batch. When the batch's worker answers
 * within `probeMs`, the decision goes by update and the outcome is returned; when none does,
 * it is queued by signal, bound to the digest shown (`argsDigest`, else the memo's), and
 * applied when a worker runs the batch. `awaitDecision` then waits for what became of it.
 */
export async function submit(
  temporal: Client,
  decision: DecisionInput,
  opts: { probeMs?: number } = {},
): Promise<DecisionSubmitted> {
  const workflowId = decision.workflowId ?? (await find(temporal, decision.approvalId));
  const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
  const requestId = (payload.requestId ??= `req-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`);
  let read: BatchApprovals | undefined;
  try {
    read = await readBatch(temporal, workflowId);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw await refusalAfterClose(temporal, workflowId, decision.approvalId);
    // An old batch with no memo and no worker: the signal below still reaches it.
  }
  if (read && !read.running) throw await refusalAfterClose(temporal, workflowId, decision.approvalId);
  const pending = read?.pending.find((p) => p.approvalId === decision.approvalId);
  if (pending?.kind === 'reconcile') throw notAnApproval(pending.approvalId);
  if (!payload.argsDigest && pending) payload.argsDigest = pending.argsDigest;
  await sealInto(payload, identityToken, sealKey);

  const handle = temporal.workflow.getHandle(workflowId);
  const probeMs = opts.probeMs ?? DEFAULT_PROBE_MS;
  const workerAnswers = await temporal
    .withDeadline(Date.now() + probeMs, () => handle.query(stateQuery))
    .then(
      () => true,
      () => false,
    );
  if (workerAnswers) {
    try {
      const applied = await temporal.withDeadline(Date.now() + CONFIRM_DEADLINE_MS, () =>
        applyByUpdate(temporal, workflowId, payload),
      );
      return { status: 'applied', workflowId, ...applied };
    } catch (err) {
      if (err instanceof SluiceError) throw err;
      return queued(
        `the batch did not confirm within ${CONFIRM_DEADLINE_MS / 1000}s (${(err as Error).message}); its worker may have stopped. The server holds the decision and the batch applies it when a worker runs it; check with \`npx sluice approvals\``,
      );
    }
  }
  await handle.signal(decideSignal, payload);
  return queued(
    `no worker answered batch ${workflowId} within ${probeMs / 1000}s: the decision is queued on the server${payload.argsDigest ? `, bound to digest ${payload.argsDigest},` : ''} and the batch applies or refuses it when a worker runs it${pending ? ` (before the deny timeout at ${pending.expiresAt}, or it is refused as expired)` : ''}`,
  );

  /** The decision left with the server, and why it is not applied yet. */
  function queued(message: string): DecisionSubmitted {
    return {
      status: 'queued',
      workflowId,
      approvalId: decision.approvalId,
      requestId,
      ...(payload.argsDigest ? { argsDigest: payload.argsDigest } : {}),
      ...(pending ? { pending } : {}),
      message,
    };
  }
}

/**
 * Waits for what became of a queued decision, from the batch's memo (no worker needed to read
 * it): its outcome, or a DecisionRefusedError saying why the batch refused it. Throws a
 * SluiceError when `timeoutMs` passes first (the decision stays queued).
 */
export async function waitFor(
  temporal: Client,
  q: { workflowId: string; approvalId: string; requestId: string },
  opts: { timeoutMs?: number; pollMs?: number } = {},
): Promise<DecisionApplied> {
  const until = Date.now() + (opts.timeoutMs ?? 10 * 60_000);
  for (;;) {
    let read: BatchApprovals | undefined;
    try {
      read = await readBatch(temporal, q.workflowId);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw await refusalAfterClose(temporal, q.workflowId, q.approvalId);
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
    if (read && !read.running) throw await refusalAfterClose(temporal, q.workflowId, q.approvalId);
    if (Date.now() >= until)
      throw new SluiceError(
        `no outcome for approval ${q.approvalId} yet: the decision stays queued on batch ${q.workflowId} until a worker runs it`,
      );
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 500));
  }
}

/** Fire-and-forget decision by signal: accepted by the server even while no worker runs (see signalOutcome). */
export async function signal(temporal: Client, decision: DecisionInput): Promise<void> {
  const workflowId = decision.workflowId ?? (await find(temporal, decision.approvalId));
  const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
  await sealInto(payload, identityToken, sealKey);
  await temporal.workflow.getHandle(workflowId).signal(decideSignal, payload);
}

/**
 * Hands a pending approval to someone else (the `sluice.reassign` signal): works with no worker
 * up; the batch records `approval/reassigned` and notifies when a worker runs it.
 */
export async function reassign(
  temporal: Client,
  r: { approvalId: string; to: string; by?: string; reason?: string; workflowId?: string },
): Promise<{
  workflowId: string;
}> {
  if (!r.to?.trim()) throw new SluiceError('say who the approval goes to ("to")');
  const workflowId = r.workflowId ?? (await find(temporal, r.approvalId));
  const read = await readBatch(temporal, workflowId).catch(() => undefined);
  const p = read?.pending.find((x) => x.approvalId === r.approvalId);
  if (read && !p)
    throw new SluiceError(`approval ${r.approvalId} is not waiting in ${workflowId}: nothing to reassign`);
  if (p?.kind === 'reconcile')
    throw new SluiceError(`${r.approvalId} is an unknown outcome, not an approval: reconcile it`);
  const { workflowId: _omit, ...payload } = r;
  await temporal.workflow.getHandle(workflowId).signal(reassignSignal, payload);
  return { workflowId };
}

async function applyByUpdate(
  temporal: Client,
  workflowId: string,
  payload: ApprovalDecision,
): Promise<DecisionApplied> {
  const handle = temporal.workflow.getHandle(workflowId);
  const decision = payload;
  try {
    return await executeUpdate(handle, decideUpdate, { args: [payload], updateId: decideUpdateId(payload) });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) {
      const cause = err.cause;
      if (cause instanceof ApplicationFailure && cause.type === DECISION_REFUSED && cause.details?.[0])
        throw new DecisionRefusedError(cause.details[0] as DecisionRefusal);
      throw new SluiceError(`decision refused: ${cause?.message ?? err.message}`);
    }
    if (err instanceof WorkflowNotFoundError) throw await refusalAfterClose(temporal, workflowId, decision.approvalId);
    throw err;
  }
}

/** Why a decision came too late for a batch that has finished: how its ask ended, from the result. */
export async function refusalAfterClose(
  temporal: Client,
  workflowId: string,
  approvalId: string,
): Promise<SluiceError> {
  let output: BatchOutput;
  try {
    output = expandBatchOutput(
      await temporal.workflow.getHandle<(input: BatchInput) => Promise<BatchOutputWire>>(workflowId).result(),
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

function notAnApproval(id: string): SluiceError {
  return new SluiceError(
    `${id} is not an approval but an unknown outcome to reconcile: the call may or may not have run. Check its effect, then \`npx sluice reconcile ${id} --done --evidence "..."\`, \`--not-done\` or \`--run-again\`.`,
  );
}

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
