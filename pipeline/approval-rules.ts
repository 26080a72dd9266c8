// The rules a decision meets before it counts, as pure functions: who may vote on a quorum ask
// (a name, once, never the session's user), a one-time link that decides once, and an answer
// relayed from an MCP client's elicitation form, which never counts where a quorum or a verified
// approver is required. The workflow (workflows/approvals/) takes decisions by them, and
// test/unit/approval-properties.test.ts checks them over generated asks and voters.
import { approverKey, type QuorumTally, type QuorumVote, rejectionsToDeny, tallyText } from './quorum';
import { definedFields } from './ask';
import type { ApprovalDecision, DecidedApproval, DecisionRefusal, PendingApproval } from './types';

/** A vote as the tally judges it: who (the verified subject, or the typed name), and what. */
interface VoteInput {
  by: string;
  decision: 'approve' | 'deny';
  scope?: 'once' | 'session';
}

/**
 * Why a vote cannot count on a quorum ask: no name, "for this session", an approver who already
 * voted (names compared normalised, verified approvers by subject), or the session's own user
 * approving (two-person rule). Undefined when it counts.
 */
export function voteRefusal(
  q: QuorumTally,
  v: VoteInput,
  toolName: string,
  callId: string,
): DecisionRefusal | undefined {
  const { by } = v;
  const key = approverKey(by);
  if (!key)
    return {
      code: 'anonymous',
      message: `${toolName} needs ${q.needed} distinct approvers, and a decision without a name cannot be told apart from another: send "by" (or a signed identity); nothing was counted`,
      callId,
    };
  if (v.scope === 'session')
    return {
      code: 'malformed',
      message: `${toolName} needs ${q.needed} distinct approvers for each call: "allow for this session" would let later calls skip them; approve this call once`,
      callId,
      by,
    };
  const earlier = [...q.approvals, ...q.rejections].find((x) => approverKey(x.by) === key);
  if (earlier)
    return {
      code: 'same-approver',
      message: `${by} already ${q.approvals.includes(earlier) ? 'approved' : 'rejected'} this call${earlier.by !== by ? ` as "${earlier.by}" (names are compared ignoring case, spacing and look-alike characters)` : ''}; ${q.needed} distinct approvers are needed, so another person must decide (${tallyText(q)})`,
      callId,
      by,
    };
  if (v.decision === 'approve' && q.sessionUser && approverKey(q.sessionUser) === key)
    return {
      code: 'self-approval',
      message: `${by} is this session's user and may not approve its own call (two-person rule): another approver must (${tallyText(q)})`,
      callId,
      by,
    };
  return undefined;
}

/**
 * Counts a vote voteRefusal let through, and says whether the ask is now decided: approved once
 * the quorum is met, rejected once the rejections deny it (QuorumSettings.rejectBy).
 */
export function countVote(
  q: QuorumTally,
  decision: 'approve' | 'deny',
  vote: QuorumVote,
): 'approve' | 'deny' | undefined {
  (decision === 'approve' ? q.approvals : q.rejections).push(vote);
  if (decision === 'approve' && q.approvals.length >= q.needed) return 'approve';
  if (decision === 'deny' && q.rejections.length >= rejectionsToDeny(q)) return 'deny';
  return undefined;
}

/**
 * A decision through a one-time link (its signature checked by the inbox): it must be for this
 * approval, before the link's expiry, and the first the link makes (`used`: the links the batch
 * already took a decision from).
 */
export function linkRefusal(
  used: readonly string[],
  link: NonNullable<ApprovalDecision['link']>,
  approvalId: string,
  now: number,
): DecisionRefusal | undefined {
  if (used.includes(link.id))
    return {
      code: 'link-used',
      message: `this approval link was already used (links decide once); nothing was decided. Ask for a new link, or decide in the inbox`,
    };
  if (link.approvalId !== approvalId)
    return {
      code: 'link-mismatch',
      message: `this approval link is for approval ${link.approvalId.slice(0, 80)}, not ${approvalId.slice(0, 80)}; nothing was decided`,
    };
  if (!(Date.parse(link.expiresAt) > now))
    return {
      code: 'link-expired',
      message: `this approval link expired at ${link.expiresAt.slice(0, 40)}; nothing was decided. Ask for a new link, or decide in the inbox`,
    };
  return undefined;
}

/** How a relayed elicitation answer is recorded: the client's own name for itself, marked unverified. */
export function elicitedBy(client: string): string {
  const name =
    client
      .replace(/[\p{C}\s]+/gu, ' ')
      .trim()
      .slice(0, 80) || 'unnamed';
  return `MCP client "${name}" (unverified elicitation answer)`;
}

/**
 * An answer relayed from an MCP client's elicitation form (`mcpClient` on the decision) proves
 * nothing about who gave it: the client may be the agent itself. It never counts toward a quorum,
 * nor where a verified approver is required. Undefined for any other decision.
 */
export function elicitedRefusal(
  d: Pick<ApprovalDecision, 'mcpClient'>,
  p: Pick<PendingApproval, 'toolName' | 'callId' | 'identityRequired' | 'quorum'>,
): DecisionRefusal | undefined {
  if (d.mcpClient === undefined || d.mcpClient === null) return undefined;
  if (!p.quorum && !p.identityRequired) return undefined;
  const need = p.quorum ? `${p.quorum.needed} distinct approvers` : 'a verified approver';
  return {
    code: 'unverified',
    message: `${p.toolName} needs ${need}, and an answer given in an MCP client's form (${elicitedBy(String(d.mcpClient))}) proves nothing about who gave it; nothing was counted. Decide in the inbox or with \`npx sluice approve\``,
    callId: p.callId,
  };
}

/**
 * Why a decision for an ask that has ended does not count: the deny timeout ended it, or another
 * decision did (which, and by whom). The batch refuses with it, and so does a client that finds
 * the ending in the memo or a finished batch's record; `where` follows each message (the batch).
 */
export function endedRefusal(
  approvalId: string,
  done: Pick<DecidedApproval, 'callId' | 'outcome' | 'by' | 'expired' | 'decidedAt'>,
  where = '',
): DecisionRefusal {
  return definedFields({
    code: done.expired ? ('expired' as const) : ('decided' as const),
    message: done.expired
      ? `approval ${approvalId} expired at ${done.decidedAt}: nobody decided before the deny timeout, so the call was denied${where}`
      : `approval ${approvalId} was already decided: ${done.outcome}${done.by ? ` by ${done.by}` : ''}${where}`,
    callId: done.callId,
    outcome: done.outcome,
    by: done.by || undefined,
  });
}
