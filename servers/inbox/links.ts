// One-time approval links in the inbox: `GET /link/<token>` shows a confirm page for the one
// approval the token is for (a GET never decides: link previews and scanners fetch URLs), and the
// page's button posts `/api/link`. The inbox checks the token's signature (a forged or altered
// link decides nothing and is logged); the batch checks the rest (for this approval, before its
// expiry, not used before) and records the refusal or the link id with the decision it takes.
import type * as http from 'node:http';
import { readLinkToken } from '../../activities/approval-links';
import type { PendingApproval } from '../../pipeline/types';
import { DecisionRefusedError, SluiceError, type SluiceClient } from '../../client/client';
import type { DecisionInput } from '../../client/client';

export interface LinkDeps {
  client: SluiceClient;
  /** The HMAC key the workers sign links with (SLUICE_LINK_KEY); links are off without it. */
  key?: string;
  /** Whether the approver comes from a trusted proxy header (no name box on the page). */
  headerMode: boolean;
  securityHeaders: Record<string, string>;
  send(res: http.ServerResponse, status: number, body: unknown): void;
  jsonBody(req: http.IncomingMessage, res: http.ServerResponse): Promise<Record<string, unknown> | undefined>;
  crossSiteProblem(req: http.IncomingMessage): string | undefined;
  whoDecides(req: http.IncomingMessage, res: http.ServerResponse, body: Record<string, unknown>): string | undefined;
  identityOf(req: http.IncomingMessage): Pick<DecisionInput, 'identityToken' | 'sealKey'>;
  poke(): void;
  /** Where refusals the inbox itself makes (forged links) are written: they name no batch to record them in. */
  log(line: string): void;
}

/** Handles the link routes; false when the request is not one of them. */
export async function linkRoute(
  deps: LinkDeps,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  url: URL,
): Promise<boolean> {
  if (req.method === 'GET' && url.pathname.startsWith('/link/')) {
    await confirmPage(deps, req, res, decodeURIComponent(url.pathname.slice('/link/'.length)));
    return true;
  }
  if (req.method === 'POST' && url.pathname === '/api/link') {
    const problem = deps.crossSiteProblem(req);
    if (problem) deps.send(res, 403, { status: 'forbidden', message: problem });
    else await decideByLink(deps, req, res);
    return true;
  }
  return false;
}

type PageState =
  | { state: 'pending'; pending: PendingApproval; expiresAt: string }
  | { state: 'refused'; code: string; message: string };

async function confirmPage(deps: LinkDeps, req: http.IncomingMessage, res: http.ServerResponse, token: string) {
  let view: PageState;
  const checked = deps.key ? readLinkToken(deps.key, token) : undefined;
  if (!checked) view = { state: 'refused', code: 'links-off', message: 'this inbox has no approval link key' };
  else if (!checked.ok) {
    deps.log(`approval link refused (link-forged) from ${req.socket.remoteAddress}: ${checked.message}`);
    view = { state: 'refused', code: checked.code, message: checked.message };
  } else {
    const c = checked.claims;
    const read = await deps.client.readApprovals(c.workflowId).catch(() => undefined);
    const pending = read?.pending.find((p) => p.approvalId === c.approvalId);
    const done = read?.memo?.decided.find((d) => d.approvalId === c.approvalId);
    // What the page says before anyone clicks; the batch decides (and records) on the click.
    if (read?.memo?.linksUsed?.includes(c.linkId))
      view = {
        state: 'refused',
        code: 'link-used',
        message: 'this approval link was already used (links decide once)',
      };
    else if (c.expiresAt <= Date.now())
      view = {
        state: 'refused',
        code: 'link-expired',
        message: `this approval link expired at ${new Date(c.expiresAt).toISOString()}`,
      };
    else if (pending && pending.argsDigest === c.argsDigest)
      view = { state: 'pending', pending, expiresAt: new Date(c.expiresAt).toISOString() };
    else
      view = {
        state: 'refused',
        code: done ? 'decided' : 'unknown',
        message: done
          ? `approval ${c.approvalId} was already decided: ${done.outcome}${done.by ? ` by ${done.by}` : ''}`
          : `approval ${c.approvalId} is not waiting (its batch ${read ? 'no longer asks it' : 'cannot be read'})`,
      };
  }
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-robots-tag': 'noindex',
    ...deps.securityHeaders,
  });
  res.end(pageHtml({ ...view, token, headerMode: deps.headerMode }));
}

async function decideByLink(deps: LinkDeps, req: http.IncomingMessage, res: http.ServerResponse) {
  const body = await deps.jsonBody(req, res);
  if (body === undefined) return;
  const { token, decision, reason } = body;
  if (typeof token !== 'string' || (decision !== 'approve' && decision !== 'deny'))
    return deps.send(res, 400, {
      status: 'invalid',
      message: 'send {"token", "decision": "approve"|"deny", "approvalId"?, "by"?, "reason"?}',
    });
  if (!deps.key) return deps.send(res, 404, { status: 'links-off', message: 'this inbox has no approval link key' });
  const checked = readLinkToken(deps.key, token);
  if (!checked.ok) {
    deps.log(`approval link refused (link-forged) from ${req.socket.remoteAddress}: ${checked.message}`);
    return deps.send(res, 403, { status: checked.code, code: checked.code, message: checked.message });
  }
  const c = checked.claims;
  const by = deps.whoDecides(req, res, body);
  if (by === undefined) return;
  // The approval asked for is the page's; the batch refuses it when the link is for another one.
  const approvalId = typeof body.approvalId === 'string' && body.approvalId ? body.approvalId : c.approvalId;
  try {
    const submitted = await deps.client.submitDecision({
      workflowId: c.workflowId,
      approvalId,
      argsDigest: c.argsDigest,
      decision,
      by,
      ...(typeof reason === 'string' && reason.trim() ? { reason: reason.trim() } : {}),
      link: { id: c.linkId, approvalId: c.approvalId, expiresAt: new Date(c.expiresAt).toISOString() },
      ...deps.identityOf(req),
    });
    deps.send(res, submitted.status === 'queued' ? 202 : 200, submitted);
  } catch (err) {
    if (err instanceof DecisionRefusedError) deps.send(res, 409, { status: err.refusal.code, ...err.refusal });
    else if (err instanceof SluiceError) deps.send(res, 409, { status: 'refused', message: err.message });
    else deps.send(res, 502, { status: 'error', message: `could not reach the batch: ${(err as Error).message}` });
  } finally {
    deps.poke();
  }
}

/** The confirm page: the card, and buttons that post the decision. Data goes in as JSON, shown as text. */
function pageHtml(data: PageState & { token: string; headerMode: boolean }): string {
  const json = JSON.stringify(data)
    .replace(/</g, '\\u003c')
    .replace(/\u2028|\u2029/g, ' ');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><meta name="robots" content="noindex">
<title>Sluice approval</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 640px; padding: 16px; color: #1d232a; }
  h1 { font-size: 18px; } .muted { color: #5b6570; font-size: 13px; } code { word-break: break-all; }
  table { border-collapse: collapse; width: 100%; margin: 8px 0; } th, td { text-align: left; vertical-align: top; padding: 4px 6px; border-top: 1px solid #dde2e7; }
  td { white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: 13px; }
  input { width: 100%; box-sizing: border-box; padding: 8px; margin: 6px 0; }
  button { font-size: 16px; padding: 10px 18px; margin: 6px 8px 6px 0; border-radius: 8px; border: 1px solid #888; cursor: pointer; }
  button.approve { background: #1f7a3a; color: #fff; border-color: #1f7a3a; } button.deny { background: #fff; color: #a02828; border-color: #a02828; }
  .status { font-weight: 600; } .bad { color: #a02828; } .good { color: #1f7a3a; }
</style></head>
<body><main id="main"></main>
<script type="application/json" id="data">${json}</script>
<script>
const data = JSON.parse(document.getElementById('data').textContent);
const main = document.getElementById('main');
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) if (k === 'text') e.textContent = v; else e.setAttribute(k, v);
  for (const c of children) if (c) e.append(c);
  return e;
}
if (data.state !== 'pending') {
  main.append(el('h1', { text: 'Nothing to decide here' }), el('p', { class: 'status bad', 'data-code': data.code, text: data.message }),
    el('p', { class: 'muted', text: 'Decide in the inbox, or with npx sluice approvals.' }));
} else {
  const p = data.pending;
  const rows = Object.entries((p.card && p.card.fields) || (p.arguments && typeof p.arguments === 'object' ? p.arguments : {}))
    .map(([k, v]) => el('tr', {}, el('th', { text: k }), el('td', { text: typeof v === 'string' ? v : JSON.stringify(v, null, 1) })));
  const q = p.quorum;
  const name = data.headerMode ? null : el('input', { id: 'by', placeholder: 'Your name (recorded with your decision)', maxlength: '200' });
  if (name) name.value = localStorage.getItem('sluice.approver') || '';
  const reason = el('input', { id: 'reason', placeholder: 'Reason (optional)', maxlength: '2000' });
  const approve = el('button', { class: 'approve', text: 'Approve' });
  const deny = el('button', { class: 'deny', text: 'Deny' });
  const status = el('p', { class: 'status', role: 'status', id: 'status' });
  main.append(
    el('h1', { class: 'title', text: (p.card && p.card.title) || p.toolName }),
    p.card && p.card.summary ? el('p', { text: p.card.summary }) : null,
    rows.length ? el('table', {}, el('tbody', {}, ...rows)) : null,
    el('p', { class: 'muted', text: 'tool ' + p.toolName + ' · call ' + p.callId + ' · session ' + p.sessionId }),
    p.reason ? el('p', { text: 'Why asked: ' + p.reason }) : null,
    q ? el('p', { class: 'quorum', text: q.approvals.length + ' of ' + q.needed + (q.approvals.length ? ': ' + q.approvals.map((v) => v.by).join(', ') + ' approved' : '') }) : null,
    el('p', { class: 'muted' }, 'arguments digest ', el('code', { text: p.argsDigest })),
    el('p', { class: 'muted', text: 'This link decides once, only this approval, until ' + data.expiresAt + '.' }),
    name, reason, el('div', {}, approve, deny), status);
  async function go(decision) {
    const by = name ? name.value.trim() : undefined;
    if (name && !by) { status.textContent = 'Enter your name first: it is recorded with your decision.'; status.className = 'status bad'; return; }
    if (name) localStorage.setItem('sluice.approver', by);
    approve.disabled = deny.disabled = true;
    status.textContent = decision === 'approve' ? 'Approving…' : 'Denying…'; status.className = 'status';
    let a;
    try {
      const r = await fetch('/api/link', { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: data.token, approvalId: p.approvalId, decision, by, reason: reason.value }) });
      a = await r.json();
    } catch (err) { a = { status: 'error', message: 'the inbox did not answer: ' + err.message }; }
    const ok = a.status === 'applied' || a.status === 'queued';
    status.dataset.status = a.status;
    status.className = 'status ' + (ok ? 'good' : 'bad');
    status.textContent = a.status === 'applied'
      ? (a.outcome === 'pending' ? 'Your vote is recorded; more approvers are needed.' : (a.outcome === 'rejected' ? 'Denied' : 'Approved') + (a.by ? ' by ' + a.by : '') + '.')
      : a.status === 'queued' ? 'Queued: no worker runs this batch right now; it applies your decision when one starts.'
      : 'Not decided (' + (a.code || a.status) + '): ' + a.message;
  }
  approve.addEventListener('click', () => go('approve'));
  deny.addEventListener('click', () => go('deny'));
}
</script></body></html>`;
}
