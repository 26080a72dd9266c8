// Why a decision cannot be taken, in words for the person who sent it, and the refusal kept where
// they look: `approval/refused` in the record (up to MAX_REFUSAL_EVENTS a batch), and the memo's
// recent refusals, so a sender waiting on its decision learns why it did not count.
import { log } from '@temporalio/workflow';
import { elicitedRefusal, endedRefusal, linkRefusal } from '../../pipeline/approval-rules';
import { definedFields } from '../../pipeline/ask';
import { pinsProblem } from '../../pipeline/grants';
import type { ApprovalDecision, DecisionRefusal } from '../../pipeline/types';
import type { ApprovalBook, Entry, Via } from './book';
import { text } from './shape';

/** Refusals recorded as events per batch; past this only the signal/update history keeps them. */
const MAX_REFUSAL_EVENTS = 50;
/** Refusals the memo keeps, newest last: enough for `--wait` to find its own. */
export const MEMO_RECENT = 20;

/** Why a decision cannot be taken; undefined if it can. */
export function refusalOf(
  book: ApprovalBook,
  d: ApprovalDecision,
  digestRequired: boolean,
): DecisionRefusal | undefined {
  // A decision through a one-time link: checked here, by the batch, so a restart of the inbox or
  // a second inbox cannot use a link twice (pipeline/approval-rules.ts).
  const linkRefused = d.link ? linkRefusal(book.linksUsed, d.link, d.approvalId, Date.now()) : undefined;
  if (linkRefused) return linkRefused;
  const done = book.decided.find((e) => e.approvalId === d.approvalId);
  if (done) return endedRefusal(d.approvalId, done);
  const entry = book.open.get(d.approvalId);
  if (!entry)
    return {
      code: 'unknown',
      message: `no approval ${d.approvalId} is pending in this batch; list pending ones with \`npx sluice approvals\``,
    };
  return openAskRefusal(d, entry, digestRequired);
}

/** Why a decision for an ask still open cannot be taken: decided already, or not for what was shown. */
function openAskRefusal(d: ApprovalDecision, entry: Entry, digestRequired: boolean): DecisionRefusal | undefined {
  const { callId, toolName, argsDigest } = entry.pending;
  if (entry.decision)
    return definedFields({
      code: 'decided' as const,
      message: `approval ${d.approvalId} was already decided by ${entry.decision.by ?? 'someone else'}`,
      callId,
      by: entry.decision.by,
    });
  const elicited = elicitedRefusal(d, entry.pending);
  if (elicited) return elicited;
  if (d.argsDigest === undefined || d.argsDigest === null || d.argsDigest === '') {
    if (!digestRequired) return grantRefusal(d, entry);
    return {
      code: 'digest-missing',
      message: `a decision sent as an update must carry the argsDigest of the arguments you were shown (${toolName} call ${callId}); read it from \`npx sluice approvals --json\` or the sluice.state query`,
      callId,
    };
  }
  if (d.argsDigest !== argsDigest && d.argsDigest !== entry.alsoAcceptsDigest)
    return {
      code: 'digest-mismatch',
      message: `the arguments you were shown (digest ${String(d.argsDigest).slice(0, 80)}) are not the ones this call would run with (${argsDigest}); reload and decide again`,
      callId,
    };
  return grantRefusal(d, entry);
}

/** A session grant whose pins would not hold for the call asked about (they may only narrow). */
function grantRefusal(d: ApprovalDecision, entry: Entry): DecisionRefusal | undefined {
  if (d.decision !== 'approve' || d.scope !== 'session') return undefined;
  const problem = pinsProblem(d.pins, entry.pending.arguments);
  if (!problem) return undefined;
  return {
    code: 'bad-pins',
    message: `cannot allow ${entry.pending.toolName} for this session: ${problem}`,
    callId: entry.pending.callId,
  };
}

/** Keeps a refusal for the memo, and records it as `approval/refused` while the batch is open. */
export function recordRefusal(book: ApprovalBook, d: ApprovalDecision, refusal: DecisionRefusal, via: Via): void {
  const id = d.approvalId.slice(0, 200);
  const by = text(d.by, 200);
  log.info(`approval ${via} refused`, { approvalId: id, code: refusal.code });
  book.recentRefusals = [
    ...book.recentRefusals,
    definedFields({
      approvalId: id,
      code: refusal.code,
      message: refusal.message,
      via,
      at: new Date().toISOString(),
      by,
      requestId: text(d.requestId, 100),
    }),
  ].slice(-MEMO_RECENT);
  if (book.events.isClosed || book.refusalsRecorded >= MAX_REFUSAL_EVENTS) return;
  book.refusalsRecorded++;
  book.events.record(
    'approval/refused',
    definedFields({
      id,
      callId: refusal.callId || undefined,
      decision: d.decision,
      by,
      argsDigest: text(d.argsDigest, 200),
      code: refusal.code,
      problem: refusal.message,
      via,
    }),
  );
}
