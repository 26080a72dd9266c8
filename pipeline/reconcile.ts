// Unknown outcomes (docs/reliability.md): a tool whose body must not run twice (`atMostOnce`)
// lost its attempt after it may have started. The call ends OUTCOME_UNKNOWN, and a reconcile
// workflow holds an operator card until a person says what happened: done (with evidence), not
// done, or run again. Shared by the workflows, the client, the inbox and the audit.
import { FailureTypes } from './errors';
import type { CallRef, ToolProfile } from './stages';
import type { Card } from './types';

export const RECONCILE_WORKFLOW = 'reconcileCall';
/** The update a person reconciles with; refusals fail it with this type. */
export const RECONCILE_UPDATE = 'sluice.reconcile';
export const RECONCILE_REFUSED = FailureTypes.RECONCILE_REFUSED;

export type ReconcileChoice = 'done' | 'not-done' | 'run-again';
export const RECONCILE_CHOICES: readonly ReconcileChoice[] = ['done', 'not-done', 'run-again'];

export interface ReconcileInput {
  reconcileId: string;
  batchWorkflowId: string;
  sessionId: string;
  turn: number;
  step: number;
  callId: string;
  toolName: string;
  parentCallId?: string;
  /** What the lost attempt ran on: a run-again runs the body with exactly these arguments. */
  ref: CallRef;
  profile: ToolProfile;
  card: Card;
  /** What was lost, in words. */
  problem: string;
}

export interface ReconcileDecision {
  reconcileId: string;
  decision: ReconcileChoice;
  by?: string;
  reason?: string;
  /** What shows the body ran (a log line, a receipt): required to mark it done. */
  evidence?: string;
  /**
   * The approver's JWT sealed to the workers' key for this reconcile id and the call's digest
   * (as for an approval): required to run again a tool only verified approvers may decide.
   */
  signedIdentity?: string;
}

export interface Reconciliation {
  reconcileId: string;
  batchWorkflowId: string;
  sessionId: string;
  callId: string;
  toolName: string;
  /** done / not-done: a person's word; ran-again: the body ran again and this is how it ended. */
  outcome: 'done' | 'not-done' | 'ran-again';
  by: string;
  reason?: string;
  evidence?: string;
  decidedAt: string;
  /** For ran-again: the new attempt's result. */
  rerun?: { isError: boolean; text: string; code?: string };
}

/** One reconcile workflow per lost call. */
export function reconcileWorkflowId(batchWorkflowId: string, callId: string): string {
  return `sluice-reconcile:${batchWorkflowId}:${callId}`;
}

/** Who may be recorded, why and with what evidence: bounded, trimmed strings. */
export function normalizeReconcile(d: ReconcileDecision): ReconcileDecision {
  const s = (v: unknown, max: number) => (typeof v === 'string' && v.trim() ? v.trim().slice(0, max) : undefined);
  const by = s(d.by, 200);
  const reason = s(d.reason, 2000);
  const evidence = s(d.evidence, 4000);
  return {
    reconcileId: d.reconcileId,
    decision: d.decision,
    ...(by ? { by } : {}),
    ...(reason ? { reason } : {}),
    ...(evidence ? { evidence } : {}),
    ...(typeof d.signedIdentity === 'string' && d.signedIdentity ? { signedIdentity: d.signedIdentity } : {}),
  };
}

/** Why a reconcile decision cannot be taken as sent, or undefined. */
export function reconcileProblem(d: unknown, reconcileId: string): string | undefined {
  const x = d as Partial<ReconcileDecision> | null;
  if (!x || typeof x !== 'object')
    return 'send {"reconcileId", "decision": "done"|"not-done"|"run-again", "by", "reason"?, "evidence"?}';
  if (x.reconcileId !== reconcileId) return `this card is ${reconcileId}, not ${String(x.reconcileId)}`;
  if (!RECONCILE_CHOICES.includes(x.decision as ReconcileChoice))
    return `"decision" must be "done", "not-done" or "run-again" (got ${JSON.stringify(x.decision)})`;
  if (x.signedIdentity !== undefined && (typeof x.signedIdentity !== 'string' || x.signedIdentity.length > 16_384))
    return '"signedIdentity" must be a sealed identity (a compact JWE string)';
  for (const k of ['by', 'reason', 'evidence'] as const)
    if (x[k] !== undefined && typeof x[k] !== 'string') return `"${k}" must be a string`;
  if (!x.by?.trim()) return 'say who reconciles ("by"): it is recorded with the decision';
  if (x.decision === 'done' && !x.evidence?.trim())
    return 'marking a call done needs evidence: what shows it ran (a log line, an id, a receipt)';
  return undefined;
}
