// Notifiers as an activity: each notice goes to every configured notifier; a failed delivery
// throws, so Temporal retries the activity (a receiver sees a notice at least once: use
// `approvalId` + `kind` to drop repeats). A webhook gets the notice as JSON, signed with
// HMAC-SHA256 over `<timestamp>.<raw body>` (`X-Sluice-Timestamp`, `X-Sluice-Signature-Timed`), so
// a receiver that refuses stale timestamps refuses a notice captured and sent again later; a chat
// incoming webhook gets `{"text": ...}` (Slack, Mattermost, Google Chat and Teams' incoming
// webhooks read `text`).
import { log } from '@temporalio/activity';
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ApprovalNotice } from '../pipeline/ask';
import { policyText } from '../pipeline/policy-binding';
import { approvalLink, linkKeyProblem } from './approval-links';
import type { ApprovalLinkSettings, NotifierSettings } from '../define/config';

/**
 * The body's signature alone, as Sluice 1.0 sent it. It says nothing of when the notice was sent,
 * so a notice captured once verifies forever: kept so receivers written for 1.0 go on working,
 * until they check the timed signature instead.
 */
export const SIGNATURE_HEADER = 'x-sluice-signature';
/** When this delivery was signed, in whole seconds since the epoch (each retry signs anew). */
export const TIMESTAMP_HEADER = 'x-sluice-timestamp';
/** `v1=<hex HMAC-SHA256 of "<timestamp>.<raw body>">`. */
export const TIMED_SIGNATURE_HEADER = 'x-sluice-signature-timed';
/** How far from its clock a receiver should accept a notice's timestamp (docs/approvals.md). */
export const NOTICE_TOLERANCE_SEC = 300;

function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

function signTimed(secret: string, timestamp: number, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** The signature headers of one delivery of `body`, signed at `now`. */
export function signatureHeaders(secret: string, body: string, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    [TIMESTAMP_HEADER]: String(timestamp),
    [TIMED_SIGNATURE_HEADER]: signTimed(secret, timestamp, body),
    [SIGNATURE_HEADER]: signBody(secret, body),
  };
}

/**
 * What a receiver checks (the docs show the same in a few lines): the timed signature over the
 * exact bytes received, compared in constant time, and a timestamp within `toleranceSec` of its
 * own clock. Undefined when the notice holds; else why not.
 */
export function noticeProblem(
  secret: string,
  body: string,
  headers: { timestamp?: string; signature?: string },
  now = Date.now(),
  toleranceSec = NOTICE_TOLERANCE_SEC,
): string | undefined {
  const timestamp = Number(headers.timestamp);
  if (!headers.timestamp || !/^\d+$/.test(headers.timestamp)) return 'no timestamp';
  const expected = Buffer.from(signTimed(secret, timestamp, body));
  const given = Buffer.from(headers.signature ?? '');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'the signature does not match';
  if (Math.abs(now / 1000 - timestamp) > toleranceSec) return `the timestamp is more than ${toleranceSec} s away`;
  return undefined;
}

// What a chat notice may show of text Sluice did not write (the call id and title come from the
// model; assignee, from and by from whoever sent a signal). Chat incoming webhooks render markup:
// Slack, Google Chat and Mattermost read `<!here>`, `<!channel>` and `<url|label>`, Mattermost
// and Teams read `@here`/`@channel` and Markdown `[label](url)`. So the text is one line (control
// characters, newlines, bidi overrides and zero-width characters become spaces), `&`, `<` and `>`
// are entity-escaped (Slack's own rule; it leaves no `<…>` sequence), `@` is followed by a word
// joiner (no mention), `](` is split (no Markdown link), and it is cut at `max` characters saying
// how much was hidden. It is shown quoted, never inside the suggested command.
function chatSafe(value: unknown, max = 200): string {
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
        if (n.kind === 'webhook' && n.secret) Object.assign(headers, signatureHeaders(n.secret, body));
        const res = await fetch(n.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
        if (!res.ok)
          throw new Error(`notifier ${n.name ?? n.url} answered ${res.status} to the ${notice.kind} notice; retrying`);
      }
      return { sent: chosen.length };
    },
  };
}
