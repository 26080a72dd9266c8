// The life of an open ask beyond its decision (pipeline/lifecycle.ts): escalation to another
// group and a reminder before the deny timeout, at their times while nobody decides, and
// reassignment by a person; each recorded, published and announced. Timers only for asks that
// have a lifecycle, so other histories replay unchanged.
import { condition, log } from '@temporalio/workflow';
import { definedFields } from '../../pipeline/ask';
import type { PendingApproval } from '../../pipeline/types';
import type { ApprovalBook, AskOptions } from './book';
import { publish } from './memo';
import { notify } from './notices';
import { text } from './shape';

/**
 * Waits out an ask with a lifecycle: escalates and reminds at their times (each recorded and
 * announced) while nobody decides, then waits for the deny timeout.
 */
export async function lifecycleWait(
  book: ApprovalBook,
  pending: PendingApproval,
  opts: AskOptions,
  settled: () => boolean,
): Promise<void> {
  const lc = opts.lifecycle;
  const askedAt = Date.parse(pending.askedAt);
  const expiresAt = Date.parse(pending.expiresAt);
  const steps: { at: number; kind: 'escalate' | 'remind' }[] = [];
  if (lc?.escalateAfterMs && lc.escalateTo && lc.escalateAfterMs < opts.timeoutMs)
    steps.push({ at: askedAt + lc.escalateAfterMs, kind: 'escalate' });
  if (lc?.remindBeforeMs && lc.remindBeforeMs < opts.timeoutMs)
    steps.push({ at: expiresAt - lc.remindBeforeMs, kind: 'remind' });
  steps.sort((a, b) => a.at - b.at);
  const targets = opts.notifyTargets;
  for (const step of steps) {
    if (await condition(settled, Math.max(1, step.at - Date.now()))) return;
    if (step.kind === 'escalate') {
      const from = pending.assignee || undefined;
      pending.assignee = lc!.escalateTo!;
      book.events.record(
        'approval/escalated',
        definedFields({
          id: pending.approvalId,
          callId: pending.callId,
          from,
          to: pending.assignee,
          afterMs: lc!.escalateAfterMs!,
        }),
      );
      publish(book);
      if (opts.notify) notify(pending, 'escalated', { from, targets });
    } else {
      book.events.record(
        'approval/reminded',
        definedFields({
          id: pending.approvalId,
          callId: pending.callId,
          expiresAt: pending.expiresAt,
          assignee: pending.assignee,
        }),
      );
      if (opts.notify) notify(pending, 'reminder', { targets });
    }
  }
  await condition(settled, Math.max(1, expiresAt - Date.now()));
}

/** A person's `reassign` signal: who the ask goes to, by whom, and why. */
interface Reassignment {
  approvalId: string;
  to: string;
  by?: string;
  reason?: string;
}

/** Hands a pending ask to someone else: recorded, published, announced. */
export function reassign(book: ApprovalBook, r: Reassignment): void {
  const entry = r && typeof r.approvalId === 'string' ? book.open.get(r.approvalId) : undefined;
  if (!entry || entry.decision || typeof r.to !== 'string' || !r.to.trim()) {
    log.warn('reassign signal ignored: no such pending approval, or no "to"', {});
    return;
  }
  const from = entry.pending.assignee || undefined;
  entry.pending.assignee = r.to.trim().slice(0, 200);
  book.events.record(
    'approval/reassigned',
    definedFields({
      id: entry.pending.approvalId,
      callId: entry.pending.callId,
      from,
      to: entry.pending.assignee,
      by: text(r.by, 200),
      reason: text(r.reason, 2000),
    }),
  );
  publish(book);
  if (entry.notify)
    notify(entry.pending, 'reassigned', { from, by: text(r.by, Infinity), targets: entry.notifyTargets });
}
