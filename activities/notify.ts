// Notifiers as an activity: each notice goes to every configured notifier; a failed delivery
// throws, so Temporal retries the activity (a receiver sees a notice at least once: use
// `approvalId` + `kind` to drop repeats). A webhook gets the notice as JSON, signed with
// HMAC-SHA256 over the raw body in `X-Sluice-Signature: sha256=<hex>`; a chat incoming webhook
// gets `{"text": ...}` (Slack, Mattermost, Google Chat and Teams' incoming webhooks read `text`).
import { createHmac } from 'node:crypto';
import type { ApprovalNotice } from '../pipeline/lifecycle';
import type { NotifierSettings } from '../worker/config';

export const SIGNATURE_HEADER = 'x-sluice-signature';

export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export function chatText(n: ApprovalNotice): string {
  const what = {
    asked: 'asks for approval',
    reminder: `still waits for approval; it is denied at ${n.expiresAt}`,
    escalated: `was escalated${n.from ? ` from ${n.from}` : ''} to ${n.assignee ?? '?'}`,
    reassigned: `was reassigned${n.from ? ` from ${n.from}` : ''} to ${n.assignee ?? '?'}${n.by ? ` by ${n.by}` : ''}`,
  }[n.kind];
  return `${n.title} (${n.toolName}, call ${n.callId}) ${what}.${n.assignee && n.kind !== 'escalated' && n.kind !== 'reassigned' ? ` Assigned to ${n.assignee}.` : ''} Decide: npx sluice approve ${n.approvalId} --digest ${n.argsDigest}`;
}

export function createNotifyActivities(notifiers: NotifierSettings[] = []) {
  return {
    async notifyApprovers(notice: ApprovalNotice): Promise<{ sent: number }> {
      for (const n of notifiers) {
        const body = n.kind === 'chat' ? JSON.stringify({ text: chatText(notice) }) : JSON.stringify(notice);
        const headers: Record<string, string> = { 'content-type': 'application/json', 'x-sluice-event': notice.kind };
        if (n.kind === 'webhook' && n.secret) headers[SIGNATURE_HEADER] = signBody(n.secret, body);
        const res = await fetch(n.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
        if (!res.ok)
          throw new Error(`notifier ${n.name ?? n.url} answered ${res.status} to the ${notice.kind} notice; retrying`);
      }
      return { sent: notifiers.length };
    },
  };
}
