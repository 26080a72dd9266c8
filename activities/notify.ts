// Notifiers as an activity: each notice goes to every configured notifier; a failed delivery
// throws, so Temporal retries the activity (a receiver sees a notice at least once: use
// `approvalId` + `kind` to drop repeats). A webhook gets the notice as JSON, signed with
// HMAC-SHA256 over the raw body in `X-Sluice-Signature: sha256=<hex>`; a chat incoming webhook
// gets `{"text": ...}` (Slack, Mattermost, Google Chat and Teams' incoming webhooks read `text`).
import { log } from '@temporalio/activity';
import { createHmac } from 'node:crypto';
import type { ApprovalNotice } from '../pipeline/lifecycle';
import { policyText } from '../pipeline/policy-binding';
import { type ApprovalLinkSettings, approvalLink, linkKeyProblem } from './approval-links';
import type { NotifierSettings } from '../define/config';

export const SIGNATURE_HEADER = 'x-sluice-signature';

export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

// What a chat notice may show of text Sluice did not write (the call id and title come from the
// model; assignee, from and by from whoever sent a signal). Chat incoming webhooks render markup:
// Slack, Google Chat and Mattermost read `<!here>`, `<!channel>` and `<url|label>`, Mattermost
// and Teams read `@here`/`@channel` and Markdown `[label](url)`. So the text is one line (control
// characters, newlines, bidi overrides and zero-width characters become spaces), `&`, `<` and `>`
// are entity-escaped (Slack's own rule; it leaves no `<…>` sequence), `@` is followed by a word
// joiner (no mention), `](` is split (no Markdown link), and it is cut at `max` characters saying
// how much was hidden. It is shown quoted, never inside the suggested command.
export function chatSafe(value: unknown, max = 200): string {
  let s = String(value ?? '')
    // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
    .replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g, ' ')
    .replace(/ {2,}/g, ' ')
    .trim();
  if (s.length > max) s = `${s.slice(0, max)}… (${s.length - max} more characters)`;
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/@/g, '@\u2060')
    .replace(/\]\(/g, '] (');
}

// The suggested command carries only what Sluice minted: the approval id (from the workflow's
// seeded randomness) and the digest the worker computed. Anything else shaped otherwise (a
// notice built by hand, a future field) leaves the command out rather than quote it.
const SAFE_APPROVAL_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const SAFE_DIGEST = /^(hmac-)?sha256:[0-9a-f]{16,128}$/;

export function chatText(n: ApprovalNotice): string {
  const q = (v: unknown) => `"${chatSafe(v)}"`;
  const what = {
    asked: 'asks for approval',
    reminder: `still waits for approval; it is denied at ${chatSafe(n.expiresAt, 40)}`,
    escalated: `was escalated${n.from ? ` from ${q(n.from)}` : ''} to ${n.assignee ? q(n.assignee) : '?'}`,
    reassigned: `was reassigned${n.from ? ` from ${q(n.from)}` : ''} to ${n.assignee ? q(n.assignee) : '?'}${n.by ? ` by ${q(n.by)}` : ''}`,
  }[n.kind];
  const assigned =
    n.assignee && n.kind !== 'escalated' && n.kind !== 'reassigned' ? ` Assigned to ${q(n.assignee)}.` : '';
  const cli =
    SAFE_APPROVAL_ID.test(n.approvalId) && SAFE_DIGEST.test(n.argsDigest)
      ? `npx sluice approve ${n.approvalId} --digest ${n.argsDigest}`
      : undefined;
  // The link is Sluice's own (the configured inbox address and a signed token), never model text.
  const command = n.link
    ? `Decide: ${n.link} (opens a confirm page; one use)${cli ? ` or ${cli}` : ''}`
    : cli
      ? `Decide: ${cli}`
      : 'Decide in the inbox (sluice ui) or with sluice approvals.';
  // Sluice's own line first; the model's text only on the second, quoted, on one line. The policy
  // line last: rule texts come from files in the workspace, so they are made safe like model text.
  const policy = n.policy ? `\nPolicy: ${chatSafe(policyText(n.policy), 400)}` : '';
  return `Sluice approval ${SAFE_APPROVAL_ID.test(n.approvalId) ? n.approvalId : '(unreadable id)'} ${what}.${assigned} ${command}\nTool ${chatSafe(n.toolName, 80)}, call ${q(n.callId)}: ${q(n.title)}${policy}`;
}

export function createNotifyActivities(notifiers: NotifierSettings[] = [], links?: ApprovalLinkSettings) {
  // A worker told to send links without a usable key stops at start, rather than send none.
  const keyProblem = links ? linkKeyProblem(links.key ?? process.env.SLUICE_LINK_KEY) : undefined;
  if (keyProblem) throw new Error(`approvalLinks in the worker config: ${keyProblem}`);
  return {
    async notifyApprovers(asked: ApprovalNotice): Promise<{ sent: number }> {
      // A one-time link for the person away from a terminal, when the worker has an inbox address and key.
      const link = approvalLink(links, asked);
      const { targets, ...rest } = asked;
      const notice: ApprovalNotice = link ? { ...rest, link } : rest;
      // A batch that names its notifiers gets only those; a name the worker lacks is said, not skipped quietly.
      const unknown = (targets ?? []).filter((t) => !notifiers.some((n) => n.name === t));
      if (unknown.length)
        log.warn(
          `approval notice: the batch names notifiers this worker lacks (${unknown.join(', ')}); give them a name in the worker's notifiers`,
        );
      const chosen = targets ? notifiers.filter((n) => n.name !== undefined && targets.includes(n.name)) : notifiers;
      for (const n of chosen) {
        const body = n.kind === 'chat' ? JSON.stringify({ text: chatText(notice) }) : JSON.stringify(notice);
        const headers: Record<string, string> = { 'content-type': 'application/json', 'x-sluice-event': notice.kind };
        if (n.kind === 'webhook' && n.secret) headers[SIGNATURE_HEADER] = signBody(n.secret, body);
        const res = await fetch(n.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
        if (!res.ok)
          throw new Error(`notifier ${n.name ?? n.url} answered ${res.status} to the ${notice.kind} notice; retrying`);
      }
      return { sent: chosen.length };
    },
  };
}
