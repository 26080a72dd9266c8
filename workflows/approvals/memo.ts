// What a person needs to decide, kept where the server answers without a worker: the search
// attributes find the batch, the memo holds the cards, digests and expiries, and how recent
// decisions ended (for `sluice approve --wait`). Both are written when the workflow task
// completes, so they are current whenever no worker runs.
import { upsertMemo, upsertSearchAttributes } from '@temporalio/workflow';
import { definedFields } from '../../pipeline/ask';
import type { ApprovalsMemo, DecidedApproval, PendingApproval } from '../../pipeline/types';
import { APPROVALS_MEMO, AWAITING_APPROVAL, PENDING_APPROVALS } from '../definitions';
import type { ApprovalBook } from './book';
import { MEMO_RECENT } from './refusals';

/** Arguments larger than this reach the memo as a preview; the query and the events keep them whole. */
const MEMO_ARGUMENT_CHARS = 8_000;
/** One-time links the memo lists as used, newest last. */
const MEMO_LINKS = 50;

export function publish(book: ApprovalBook): void {
  const waiting = [...book.open.keys()];
  if (book.publishedIds === undefined || book.publishedIds.join(',') !== waiting.join(',')) {
    upsertSearchAttributes([
      { key: AWAITING_APPROVAL, value: waiting.length > 0 },
      { key: PENDING_APPROVALS, value: waiting },
    ]);
    book.publishedIds = waiting;
  }
  if (!book.flags.approvalsMemo) return;
  const memo: ApprovalsMemo = {
    v: 1,
    pending: book.pending.map(memoPending),
    decided: book.decided.slice(-MEMO_RECENT).map(memoDecided),
    refused: book.recentRefusals,
  };
  const { grants, uses } = book.grantsView();
  const given = book.decided.flatMap((d) => (d.grant ? [d.grant] : []));
  const all = [...grants, ...given.filter((g) => !grants.some((x) => x.id === g.id))];
  if (all.length) memo.grants = all.slice(-MEMO_RECENT);
  if (uses.length) memo.grantUses = uses.slice(-MEMO_RECENT);
  if (book.linksUsed.length) memo.linksUsed = book.linksUsed.slice(-MEMO_LINKS);
  upsertMemo({ [APPROVALS_MEMO]: memo });
}

/** The memo's copy of a pending ask: whole, except arguments too large for a memo. */
function memoPending(p: PendingApproval): PendingApproval {
  const args = JSON.stringify(p.arguments);
  if (args.length <= MEMO_ARGUMENT_CHARS) return p;
  return { ...p, arguments: `${args.slice(0, MEMO_ARGUMENT_CHARS)}…`, argumentsTruncated: true };
}

/** The memo's copy of how an ask ended: without the grant (the memo lists grants apart), the reason cut short. */
function memoDecided(d: DecidedApproval): DecidedApproval {
  return definedFields({
    approvalId: d.approvalId,
    callId: d.callId,
    outcome: d.outcome,
    decidedAt: d.decidedAt,
    by: d.by || undefined,
    reason: d.reason ? d.reason.slice(0, 500) : undefined,
    expired: d.expired,
    requestId: d.requestId,
    verified: d.verified,
    approvers: d.approvers,
  });
}
