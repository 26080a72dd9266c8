// What became of a decision sent by signal, read from the batch as far as it can be known: its
// state while it runs, its result once it has closed.
import type { Client } from '@temporalio/client';
import { endedRefusal } from '../../pipeline/approval-rules';
import { definedFields } from '../../pipeline/ask';
import { isEvent } from '../../pipeline/events';
import { type BatchOutputWire, expandBatchOutput } from '../../codec/output';
import type {
  ApprovalDecision,
  ApprovalOutcome,
  BatchState,
  DecidedApproval,
  DecisionRefusal,
} from '../../pipeline/types';
import { stateQuery } from '../../workflows/definitions';

/**
 * What became of a decision sent by signal, as far as it can be known within `waitMs`: applied,
 * refused (and why), or unknown when no worker answered (the server keeps the signal; the batch
 * takes or refuses it when a worker is back, and `sluice audit` shows which).
 */
export async function signalOutcome(
  temporal: Client,
  decision: ApprovalDecision,
  workflowId: string,
  waitMs = 5000,
): Promise<SignalOutcome> {
  const handle = temporal.workflow.getHandle(workflowId);
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

/** What became of a decision sent by signal (`SluiceClient.signalOutcome`). */
export type SignalOutcome =
  | { status: 'applied'; outcome: ApprovalOutcome; by?: string }
  | { status: 'refused'; refusal: DecisionRefusal }
  | { status: 'unknown'; message: string };

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
