// Notices of an ask through the worker's notifiers (activities/notify.ts): asked, reminded,
// escalated, reassigned. The notice is a view of the ask (pipeline/ask.ts); only asks whose tool
// has notifiers schedule it, so histories without them replay unchanged.
import { log, proxyActivities } from '@temporalio/workflow';
import { type NoticeEvent, type NotifyActivities, noticeOf } from '../../pipeline/ask';
import type { NoticeKind } from '../../pipeline/lifecycle';
import type { PendingApproval } from '../../pipeline/types';

const notifier = proxyActivities<NotifyActivities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 5, initialInterval: '1s', maximumInterval: '30s' },
});

/** Sends a notice; a failure is the activity's to retry, never the ask's. */
export function notify(p: PendingApproval, kind: NoticeKind, happened: Omit<NoticeEvent, 'kind' | 'at'> = {}): void {
  void notifier
    .notifyApprovers(noticeOf(p, { kind, ...happened, at: new Date().toISOString() }))
    .catch((err) => log.warn('approval notice not delivered', { kind, err: String(err) }));
}
