// Reconciling an unknown outcome (the card a lost at-most-once attempt opens): done, not done or
// run again, by update with a worker up or queued by signal without one, and why a decision came
// too late for a card already reconciled.
import { type Client, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import {
  RECONCILE_UPDATE,
  RECONCILE_WORKFLOW,
  type ReconcileDecision,
  type Reconciliation,
} from '../../pipeline/reconcile';
import { stateQuery } from '../../workflows/definitions';
import { NotFoundError, SluiceError } from '../../support/errors';
import { executeUpdate } from '../../temporal/update';
import type { SealKey } from '../identity';
import { sealReconcileIdentity } from './identity';
import { DEFAULT_PROBE_MS, find, readBatch, SERVER_DEADLINE_MS } from './listing';

/** How many recently closed reconcile cards a decision for a card no longer waiting looks through. */
const RECONCILED_SCAN = 200;

/** A reconcile decision as `submitReconcile` takes it: the card's workflow may be named or found. */
export type ReconcileSubmission = ReconcileDecision & {
  workflowId?: string;
  identityToken?: string;
  sealKey?: SealKey;
  requestId?: string;
};

/** Applied by a worker that answered, or queued on the server until one runs the card's workflow. */
export type ReconcileSubmitted =
  | ({ status: 'applied' } & Reconciliation)
  | { status: 'queued'; workflowId: string; reconcileId: string; requestId: string; message: string };

/**
 * Reconciles an unknown outcome (a reconcile card from `approvals`): done, with the evidence
 * that it ran; not done; or run again (the body runs once more and its result is returned).
 * Recorded with who and why in the reconcile workflow's history, which the audit shows.
 */
export async function reconcile(
  temporal: Client,
  decision: ReconcileDecision & { workflowId?: string; identityToken?: string; sealKey?: SealKey },
): Promise<Reconciliation> {
  const workflowId = decision.workflowId ?? (await findReconcile(temporal, decision.reconcileId));
  const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
  await sealReconcileIdentity(temporal, workflowId, payload, identityToken, sealKey);
  const handle = temporal.workflow.getHandle(workflowId);
  try {
    return await executeUpdate<Reconciliation, [ReconcileDecision]>(handle, RECONCILE_UPDATE, { args: [payload] });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError)
      throw new SluiceError(`not reconciled: ${err.cause?.message ?? err.message}`);
    if (err instanceof WorkflowNotFoundError)
      throw await reconcileRefusalAfterClose(temporal, workflowId, decision.reconcileId);
    throw err;
  }
}

/**
 * Reconciles whether or not a worker runs the card's workflow: by update when its worker answers
 * within `probeMs` (the reconciliation is returned), else queued by signal (the server holds it;
 * the workflow applies or refuses it when a worker is back). `awaitReconcile` waits for which.
 */
export async function submitReconcile(
  temporal: Client,
  decision: ReconcileSubmission,
  opts: { probeMs?: number } = {},
): Promise<ReconcileSubmitted> {
  const workflowId = decision.workflowId ?? (await findReconcile(temporal, decision.reconcileId));
  const probeMs = opts.probeMs ?? DEFAULT_PROBE_MS;
  const handle = temporal.workflow.getHandle(workflowId);
  const workerAnswers = await temporal
    .withDeadline(Date.now() + probeMs, () => handle.query(stateQuery))
    .then(
      () => true,
      () => false,
    );
  if (workerAnswers) return { status: 'applied', ...(await reconcile(temporal, { ...decision, workflowId })) };
  const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
  const requestId = payload.requestId ?? `req-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
  await sealReconcileIdentity(temporal, workflowId, payload, identityToken, sealKey);
  try {
    await handle.signal(RECONCILE_UPDATE, { ...payload, requestId });
  } catch (err) {
    if (err instanceof WorkflowNotFoundError)
      throw await reconcileRefusalAfterClose(temporal, workflowId, decision.reconcileId);
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
export async function waitForReconcile(
  temporal: Client,
  q: { workflowId: string; reconcileId: string; requestId: string },
  opts: { timeoutMs?: number; pollMs?: number } = {},
): Promise<Reconciliation> {
  const until = Date.now() + (opts.timeoutMs ?? 10 * 60_000);
  const handle = temporal.workflow.getHandle(q.workflowId);
  for (;;) {
    const read = await readBatch(temporal, q.workflowId).catch(() => undefined);
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
 * Why a reconcile decision came too late: its workflow has finished (visibility can still list
 * it as waiting for a moment after), so the answer is how it was reconciled, from its result.
 */
async function reconcileRefusalAfterClose(
  temporal: Client,
  workflowId: string,
  reconcileId: string,
): Promise<SluiceError> {
  const r = await reconciliationOf(temporal, workflowId);
  if (!r?.outcome)
    return new SluiceError(`no unknown outcome ${reconcileId} is waiting (workflow ${workflowId} not found)`);
  return alreadyReconciled(r);
}

/** A closed reconcile card's result; undefined when it did not complete or the server cannot tell in time. */
function reconciliationOf(temporal: Client, workflowId: string): Promise<Reconciliation | undefined> {
  return temporal
    .withDeadline(Date.now() + SERVER_DEADLINE_MS, () => temporal.workflow.getHandle(workflowId).result())
    .then(
      (x) => x as Reconciliation,
      () => undefined,
    );
}

/**
 * The workflow of the card waiting on `reconcileId`. A card reconciled already is waiting no more,
 * so a second decision hears how it was reconciled (from the closed card), not "no batch is waiting".
 */
async function findReconcile(temporal: Client, reconcileId: string): Promise<string> {
  try {
    return await find(temporal, reconcileId);
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
    throw (await findReconciled(temporal, reconcileId)) ?? err;
  }
}

/** The refusal for a card some recently completed reconcile workflow settled (newest first, at most RECONCILED_SCAN). */
async function findReconciled(temporal: Client, reconcileId: string): Promise<SluiceError | undefined> {
  let seen = 0;
  try {
    for await (const wf of temporal.workflow.list({
      query: `WorkflowType = '${RECONCILE_WORKFLOW}' AND ExecutionStatus = 'Completed'`,
    })) {
      const r = await reconciliationOf(temporal, wf.workflowId);
      if (r?.reconcileId === reconcileId) return alreadyReconciled(r);
      if (++seen >= RECONCILED_SCAN) break;
    }
  } catch {
    // Visibility unreachable: the caller's NotFoundError still says what to do.
  }
  return undefined;
}

/** A second decision on a card already reconciled: how, by whom and when. */
function alreadyReconciled(r: Reconciliation): SluiceError {
  return new SluiceError(
    `not reconciled: already reconciled: ${r.outcome} by ${r.by}${r.reason ? ` (${r.reason})` : ''} at ${r.decidedAt}`,
  );
}
