// The inbox's decisions: approve or deny (`/api/decide`, through the `sluice.decide` update, so
// the person sees what the batch did with it; queued by signal while no worker runs the batch),
// settle an unknown outcome (`/api/reconcile`), and hand an ask to someone else (`/api/reassign`).
// Each is bound to what the page showed (the digest) and names who decided.
import type * as http from 'node:http';
import type { ArgumentPin } from '../../pipeline/grants';
import { DecisionRefusedError, SluiceError, type SluiceClient } from '../../client/client';
import type { SealKey } from '../../client/identity';
import { crossSiteProblem, headerValue, jsonBody, send } from './http';

export interface DecisionDeps {
  client: SluiceClient;
  /** The header a trusted proxy names the approver in (as configured); unset: the name typed in the page. */
  trustedUserHeader?: string;
  identityTokenHeader?: string;
  sealKey?: SealKey;
  /** Re-reads what the open pages show (after a decision). */
  poke(): void;
}

/** Handles the decision routes; false when the request is not one of them. */
export async function decisionRoute(
  deps: DecisionDeps,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  url: URL,
): Promise<boolean> {
  const handler =
    req.method !== 'POST'
      ? undefined
      : ({ '/api/decide': decide, '/api/reconcile': reconcile, '/api/reassign': reassign } as const)[
          url.pathname as '/api/decide'
        ];
  if (!handler) return false;
  const problem = crossSiteProblem(req);
  if (problem) send(res, 403, { status: 'forbidden', message: problem });
  else await handler(deps, req, res);
  return true;
}

/** The signed-in approver's JWT from the identity header, to be sealed with the decision. */
export function identityOf(
  deps: DecisionDeps,
  req: http.IncomingMessage,
): { identityToken?: string; sealKey?: SealKey } {
  if (!deps.identityTokenHeader) return {};
  const v = req.headers[deps.identityTokenHeader.toLowerCase()];
  const token = (Array.isArray(v) ? v[0] : v)
    ?.replace(/^Bearer\s+/i, '')
    .trim()
    .slice(0, 16_000);
  return token ? { identityToken: token, ...(deps.sealKey ? { sealKey: deps.sealKey } : {}) } : {};
}

/**
 * Who decides: the name the trusted proxy puts in the identity header when the inbox has one,
 * else the name typed at the top of the page. Without either, answers the request with what to
 * do and returns undefined.
 */
export function whoDecides(
  deps: DecisionDeps,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  body: Record<string, unknown>,
  role: 'approver' | 'operator',
): string | undefined {
  if (deps.trustedUserHeader) {
    const fromProxy = headerValue(req, deps.trustedUserHeader.toLowerCase());
    if (!fromProxy)
      send(res, 401, {
        status: 'unauthenticated',
        message: `this inbox takes the ${role} from the ${deps.trustedUserHeader} header, and the request has none; open it through the proxy that sets it`,
      });
    return fromProxy || undefined;
  }
  const typed = typeof body.by === 'string' ? body.by.trim() : '';
  if (!typed)
    send(res, 400, {
      status: 'invalid',
      message: 'enter your name at the top of the page: it is recorded with your decision',
    });
  return typed || undefined;
}

async function decide(deps: DecisionDeps, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const body = await jsonBody(req, res);
  if (body === undefined) return;
  const { workflowId, approvalId, argsDigest, decision, reason } = body;
  if (
    typeof workflowId !== 'string' ||
    typeof approvalId !== 'string' ||
    (decision !== 'approve' && decision !== 'deny')
  ) {
    return send(res, 400, {
      status: 'invalid',
      message:
        'send {"workflowId", "approvalId", "argsDigest", "decision": "approve"|"deny", "reason"?, "by"?, "scope"?: "session", "pins"?: [{"path", "prefix"|"equals"}]}',
    });
  }
  if (typeof argsDigest !== 'string' || !argsDigest) {
    return send(res, 400, {
      status: 'invalid',
      message: 'the decision must carry the argsDigest of the card you were shown; reload the page',
    });
  }
  const by = whoDecides(deps, req, res, body, 'approver');
  if (by === undefined) return;
  try {
    const submitted = await deps.client.submitDecision({
      workflowId,
      approvalId,
      argsDigest,
      decision,
      by,
      ...(typeof reason === 'string' && reason.trim() ? { reason: reason.trim() } : {}),
      ...identityOf(deps, req),
      // "Allow for this session": the batch checks the pins against the call shown.
      ...(decision === 'approve' && body.scope === 'session'
        ? { scope: 'session' as const, pins: Array.isArray(body.pins) ? (body.pins as ArgumentPin[]) : [] }
        : {}),
    });
    // Queued: no worker runs the batch; the server holds the decision until one does.
    if (submitted.status === 'queued')
      send(res, 202, {
        status: 'queued',
        approvalId,
        requestId: submitted.requestId,
        argsDigest: submitted.argsDigest,
        message: submitted.message,
      });
    else send(res, 200, submitted);
  } catch (err) {
    if (err instanceof DecisionRefusedError) send(res, 409, { status: err.refusal.code, ...err.refusal });
    else if (err instanceof SluiceError) send(res, 409, { status: 'refused', message: err.message });
    else send(res, 502, { status: 'error', message: `could not reach the batch: ${(err as Error).message}` });
  } finally {
    deps.poke();
  }
}

/** An unknown outcome settled by a person: done (with evidence), not done, or run again. */
async function reconcile(deps: DecisionDeps, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const body = await jsonBody(req, res);
  if (body === undefined) return;
  const { workflowId, reconcileId, decision, reason, evidence } = body;
  if (
    typeof workflowId !== 'string' ||
    typeof reconcileId !== 'string' ||
    (decision !== 'done' && decision !== 'not-done' && decision !== 'run-again')
  )
    return send(res, 400, {
      status: 'invalid',
      message:
        'send {"workflowId", "reconcileId", "decision": "done"|"not-done"|"run-again", "evidence"?, "reason"?, "by"?}',
    });
  const by = whoDecides(deps, req, res, body, 'operator');
  if (by === undefined) return;
  const text = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : undefined);
  if (decision === 'done' && !text(evidence))
    return send(res, 400, {
      status: 'invalid',
      message: 'marking it done needs evidence: what shows the call ran (a log line, an id, a receipt)',
    });
  try {
    const r = await deps.client.submitReconcile({
      workflowId,
      reconcileId,
      decision,
      by,
      ...(text(reason) ? { reason: text(reason) } : {}),
      ...(text(evidence) ? { evidence: text(evidence) } : {}),
    });
    // Queued: no worker runs the card's workflow; the server holds the decision until one does.
    if (r.status === 'queued') send(res, 202, r);
    else send(res, 200, { ...r, status: 'reconciled' });
  } catch (err) {
    if (err instanceof SluiceError) send(res, 409, { status: 'refused', message: err.message });
    else send(res, 502, { status: 'error', message: `could not reach the card: ${(err as Error).message}` });
  } finally {
    deps.poke();
  }
}

/** Hands a pending approval to someone else: a signal, so it works with no worker up. */
async function reassign(deps: DecisionDeps, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const body = await jsonBody(req, res);
  if (body === undefined) return;
  const { workflowId, approvalId, to, reason } = body;
  if (typeof workflowId !== 'string' || typeof approvalId !== 'string' || typeof to !== 'string' || !to.trim())
    return send(res, 400, {
      status: 'invalid',
      message: 'send {"workflowId", "approvalId", "to", "reason"?, "by"?}',
    });
  const by = whoDecides(deps, req, res, body, 'approver');
  if (by === undefined) return;
  try {
    await deps.client.reassign({
      workflowId,
      approvalId,
      to: to.trim(),
      by,
      ...(typeof reason === 'string' && reason.trim() ? { reason: reason.trim() } : {}),
    });
    send(res, 202, { status: 'sent', approvalId, to: to.trim(), by });
  } catch (err) {
    if (err instanceof SluiceError) send(res, 409, { status: 'refused', message: err.message });
    else send(res, 502, { status: 'error', message: `could not reach the batch: ${(err as Error).message}` });
  } finally {
    deps.poke();
  }
}
