// How an ask ends, and what its ending leaves: by its decision (an approval for the session makes
// a grant, which answers the other open asks it covers), by a cancel, by being abandoned, or at
// the deny timeout; kept as a DecidedApproval and recorded as `approval/decided`.
import { uuid4 } from '@temporalio/workflow';
import { definedFields } from '../../pipeline/ask';
import { cleanPins, grantCovers, type SessionGrant } from '../../pipeline/grants';
import type { DecidedApproval, PendingApproval } from '../../pipeline/types';
import type { ApprovalBook, AskEnding, AskOptions, Entry } from './book';
import { publish } from './memo';

/** How a waited-out ask ended. */
export function endingOf(book: ApprovalBook, entry: Entry, opts: AskOptions): AskEnding {
  const { pending } = entry;
  const d = entry.decision;
  const abandoned = opts.abandoned?.();
  if (d) {
    const approved = d.decision === 'approve';
    const session = approved && (d.scope === 'session' || d.grantId !== undefined);
    const ended: AskEnding = definedFields({
      outcome: approved ? (session ? 'allowed-session' : 'allowed-once') : 'rejected',
      by: d.by || undefined,
      reason: d.reason || undefined,
      requestId: d.requestId || undefined,
      grantId: d.grantId || undefined,
      verified: d.verified,
      approvers: d.approvers,
      link: d.link?.id,
    });
    if (session && !d.grantId) {
      ended.grant = definedFields({
        id: `grant-${uuid4()}`,
        toolName: pending.toolName,
        pins: cleanPins(d.pins),
        by: d.by || undefined,
        reason: d.reason || undefined,
        approvalId: pending.approvalId,
        callId: pending.callId,
        workflowId: pending.workflowId,
        grantedAt: new Date().toISOString(),
      });
      ended.grantId = ended.grant.id;
      coverOpenAsks(book, ended.grant);
    }
    return ended;
  }
  if (book.isCancelled()) return { outcome: 'cancelled' };
  if (abandoned !== undefined) return { outcome: 'cancelled', reason: abandoned };
  return {
    outcome: 'unavailable',
    reason: `no decision within ${Math.round(opts.timeoutMs / 1000)}s (deny timeout)`,
    expired: true,
  };
}

/** Keeps how the ask ended (the memo shows it) and records `approval/decided`. */
export function recordEnding(
  book: ApprovalBook,
  pending: PendingApproval,
  ended: AskEnding,
  opts: AskOptions,
): DecidedApproval {
  const decidedAt = new Date();
  const { link, ...outcome } = ended;
  const result: DecidedApproval = {
    approvalId: pending.approvalId,
    callId: pending.callId,
    ...outcome,
    decidedAt: decidedAt.toISOString(),
  };
  book.decided.push(result);
  if (opts.channel && opts.policy !== 'never') publish(book);
  book.events.record(
    'approval/decided',
    definedFields({
      id: pending.approvalId,
      callId: pending.callId,
      outcome: result.outcome,
      by: result.by || undefined,
      reason: result.reason || undefined,
      expired: result.expired,
      grant: result.grant,
      // An earlier grant that answered this ask: by its id (a grant given here is recorded whole).
      grantId: result.grant ? undefined : result.grantId || undefined,
      verified: result.verified,
      approvers: result.approvers,
      link: link || undefined,
      latencyMs: decidedAt.getTime() - Date.parse(pending.askedAt),
    }),
  );
  return result;
}

/** A new session grant also answers the asks already open in this batch that it covers. */
function coverOpenAsks(book: ApprovalBook, grant: SessionGrant): void {
  for (const [approvalId, entry] of book.open) {
    // A quorum ask is never answered by a grant: its approvers decide each call.
    if (entry.decision || entry.pending.quorum || !grantCovers(grant, entry.pending.toolName, entry.pending.arguments))
      continue;
    entry.decision = definedFields({
      approvalId,
      decision: 'approve' as const,
      by: grant.by || undefined,
      reason: `covered by session grant ${grant.id}`,
      grantId: grant.id,
    });
  }
}
