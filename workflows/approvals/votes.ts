// Taking a decision for its ask: at once, or, for a quorum ask, as one approver's vote (recorded
// as `approval/vote` as it comes) that ends the ask when the quorum is met or the rejections deny
// it. The rules a vote meets are pipeline/approval-rules.ts's.
import { countVote, voteRefusal } from '../../pipeline/approval-rules';
import { definedFields } from '../../pipeline/ask';
import type { QuorumVote } from '../../pipeline/quorum';
import type { DecisionRefusal } from '../../pipeline/types';
import type { ApprovalBook, Entry, TakenDecision, Via } from './book';

/**
 * Takes a decision for its ask. Returns why a vote cannot count: no name, an approver who already
 * voted (names compared normalised, verified approvers by subject), or the session's own user
 * approving (two-person rule).
 */
export function take(book: ApprovalBook, entry: Entry, d: TakenDecision, via: Via): DecisionRefusal | undefined {
  const q = entry.pending.quorum;
  if (!q) {
    entry.decision = d;
    if (d.link) book.linksUsed.push(d.link.id);
    return undefined;
  }
  const { approvalId, callId, toolName } = entry.pending;
  const by = d.by ?? '';
  const refused = voteRefusal(
    q,
    definedFields({ by, decision: d.decision, scope: d.scope || undefined }),
    toolName,
    callId,
  );
  if (refused) return refused;
  const vote: QuorumVote = definedFields({
    by,
    at: new Date().toISOString(),
    verified: d.verified ? (true as const) : undefined,
    reason: d.reason || undefined,
    requestId: d.requestId || undefined,
  });
  const decided = countVote(q, d.decision, vote);
  if (d.link) book.linksUsed.push(d.link.id);
  book.events.record(
    'approval/vote',
    definedFields({
      id: approvalId,
      callId,
      decision: d.decision,
      by,
      reason: d.reason || undefined,
      verified: d.verified,
      approvals: q.approvals.length,
      rejections: q.rejections.length,
      quorum: q.needed,
      via,
      link: d.link?.id,
    }),
  );
  if (decided) entry.decision = ending(entry, d, decided === 'approve' ? q.approvals : q.rejections);
  return undefined;
}

/** The decision a quorum ask ends with: every approver whose vote counted, and their reasons. */
function ending(entry: Entry, d: TakenDecision, votes: QuorumVote[]): TakenDecision {
  const voters = votes.map((v) => v.by);
  const reasons = votes
    .filter((v) => v.reason)
    .map((v) => `${v.by}: ${v.reason}`)
    .join('; ');
  return definedFields({
    approvalId: entry.pending.approvalId,
    decision: d.decision,
    by: voters.join(', ').slice(0, 200),
    approvers: voters,
    reason: reasons ? reasons.slice(0, 2000) : undefined,
    requestId: d.requestId || undefined,
    link: d.link,
  });
}
