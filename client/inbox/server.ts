// The approval inbox: one plain HTML page and a small JSON/SSE API on node:http. It decides
// through the `sluice.decide` update, so the person sees what the batch did with the decision;
// while no worker runs the batch, the decision is queued by signal, bound to the digest shown.
import type { ArgumentPin } from '../../pipeline/grants';
import { ConfigError } from '../../support/errors';
import * as crypto from 'node:crypto';
import type { SealKey } from '../identity';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { type AddressInfo, isIP } from 'node:net';
import * as path from 'node:path';
import { DecisionRefusedError, SluiceError, type SluiceClient } from '../client';
import type { SluiceStores } from '../../stores/stores';
import { InboxFeed, type InboxSnapshot } from './feed';
import { type LinkDeps, linkRoute } from './links';

export const DEFAULT_INBOX_HOST = '127.0.0.1';
export const DEFAULT_INBOX_PORT = 8234;

export interface InboxOptions {
  client: SluiceClient;
  /**
   * Only batches of this task queue: one team's inbox on a shared namespace, where other teams'
   * batches (encrypted with keys this inbox lacks) would otherwise be listed. Default: every batch.
   */
  taskQueue?: string;
  /** Bind address; default 127.0.0.1 (this machine only). */
  host?: string;
  /** Default 8234; 0 picks a free port. */
  port?: number;
  /**
   * A header set by a trusted reverse proxy (e.g. `X-Forwarded-User`) that names the approver.
   * When set, the inbox answers only requests that come from a trusted proxy (`trustedProxies`)
   * and carry the header, reads included; the name typed in the page is ignored.
   */
  trustedUserHeader?: string;
  /**
   * With `trustedUserHeader`: the addresses the proxy connects from. Default the loopback
   * addresses (a proxy on this machine). A request from anywhere else is refused, since whoever
   * reaches the inbox directly could set the header to any name.
   */
  trustedProxies?: string[];
  /**
   * With `trustedUserHeader`: a secret shared with the proxy, which sends it on every request in
   * the `X-Sluice-Proxy-Secret` header (at least 16 characters; compared in constant time). The
   * source address alone cannot tell the proxy from any other process on its machine, each of
   * which could set the user header to any name; the secret can. Required in header mode unless
   * `insecureProxyWithoutSecret` is set.
   */
  proxySecret?: string;
  /**
   * Header mode without a shared secret: any process that connects from a trusted proxy address
   * decides under any name it puts in the header. Only where nothing else runs on the proxy's
   * machine (or for a local trial); documented in docs/approvals.md.
   */
  insecureProxyWithoutSecret?: boolean;
  /**
   * Host names the page may be reached under besides the address it listens on (`name` for any
   * port, or `name:port`): the name a proxy forwards when it keeps the browser's Host. Any other
   * Host is refused (421), so a hostile site cannot reach the inbox under its own name (DNS rebinding).
   */
  allowedHosts?: string[];
  /**
   * Verified approvers: the header that carries the signed-in approver's JWT (e.g.
   * `Authorization`, as `Bearer <jwt>`, or `X-Forwarded-Access-Token` set by an auth proxy). The
   * inbox seals it to the workers' key (`sealKey`, else SLUICE_SEAL_KEY) with each decision, so
   * the worker verifies who decided; the token itself never reaches Temporal.
   */
  identityTokenHeader?: string;
  sealKey?: SealKey;
  /** How often the page's stream re-reads Temporal. Default 1000 ms. */
  refreshMs?: number;
  /** Finished batches shown. Default 20. */
  recentLimit?: number;
  /** The key one-time approval links are signed with (the workers' too); default SLUICE_LINK_KEY. */
  linkKey?: string;
  /** The workers' session store (files or PostgreSQL): a session's timeline is read from it when it has the session. */
  store?: Pick<SluiceStores, 'hasSession' | 'events'>;
}

export interface Inbox {
  url: string;
  close(): Promise<void>;
}

const PAGE = path.join(__dirname, 'page.html');
/** The header a proxy in front of the inbox sends its shared secret in (see proxySecret). */
export const PROXY_SECRET_HEADER = 'X-Sluice-Proxy-Secret';
const sha256 = (s: string) => crypto.createHash('sha256').update(s, 'utf8').digest();
const MAX_BODY = 64 * 1024;

export async function startInbox(opts: InboxOptions): Promise<Inbox> {
  const feed = new InboxFeed(opts.client, opts.recentLimit ?? 20, opts.store, opts.taskQueue);
  const refreshMs = Math.max(100, opts.refreshMs ?? 1000);
  const userHeader = opts.trustedUserHeader?.toLowerCase();
  const stream = new SnapshotStream(feed, refreshMs);

  const proxies = userHeader ? (opts.trustedProxies?.length ? opts.trustedProxies : ['127.0.0.1', '::1']) : [];
  for (const p of proxies)
    if (!isIP(p))
      throw new ConfigError(
        `the trusted proxy ${JSON.stringify(p)} is not an IP address; give the address the proxy connects from`,
      );
  if (opts.trustedProxies?.length && !userHeader)
    throw new ConfigError('trusted proxies only matter with trustedUserHeader (--trusted-user-header): give both');
  if (opts.proxySecret !== undefined && !userHeader)
    throw new ConfigError(
      'a proxy secret only matters with trustedUserHeader (--trusted-user-header): give the header your proxy sets too',
    );
  if (opts.proxySecret !== undefined && opts.proxySecret.length < 16)
    throw new ConfigError(
      'the proxy secret must be at least 16 characters; make one with `openssl rand -base64 32` and give the same value to the proxy',
    );
  if (userHeader && opts.proxySecret === undefined && !opts.insecureProxyWithoutSecret)
    throw new ConfigError(
      `the inbox takes the approver from the ${opts.trustedUserHeader} header, which any process on the proxy's machine could set: give it a secret shared with the proxy (--proxy-secret-file FILE or SLUICE_INBOX_PROXY_SECRET; the proxy sends it in ${PROXY_SECRET_HEADER}), or pass --insecure-proxy-without-secret to trust every process there (see docs/approvals.md)`,
    );
  const secretDigest = opts.proxySecret === undefined ? undefined : sha256(opts.proxySecret);
  // Known once the server listens (port 0 picks one).
  let hosts: HostRule | undefined;

  const server = http.createServer((req, res) => {
    route(req, res).catch((err) => send(res, 500, { status: 'error', message: (err as Error).message }));
  });

  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // Before anything is read or decided: the page's own name (DNS rebinding), then its proxy.
    const misdirected = hosts ? hosts.problem(req.headers.host) : 'the inbox is starting';
    if (misdirected) return send(res, 421, { status: 'misdirected', message: misdirected });
    if (userHeader) {
      const from = plainAddress(req.socket.remoteAddress);
      if (!proxies.includes(from))
        return send(res, 403, {
          status: 'forbidden',
          message: `this inbox answers only through its proxy (${proxies.join(', ')}), which names the approver in the ${opts.trustedUserHeader} header; this request came from ${from} directly, so its header cannot be trusted. Open the inbox through the proxy, or add the proxy's address with --trusted-proxy.`,
        });
      // Compared as digests: equal lengths for timingSafeEqual, and the time says nothing of the secret.
      const sent = req.headers[PROXY_SECRET_HEADER.toLowerCase()];
      if (secretDigest && (typeof sent !== 'string' || !crypto.timingSafeEqual(sha256(sent), secretDigest)))
        return send(res, 403, {
          status: 'forbidden',
          message: `this request does not carry the secret the inbox shares with its proxy (${PROXY_SECRET_HEADER}), so its ${opts.trustedUserHeader} header cannot be trusted. Open the inbox through the proxy.`,
        });
      if (!headerValue(req, userHeader))
        return send(res, 401, {
          status: 'unauthenticated',
          message: `this inbox takes the approver from the ${opts.trustedUserHeader} header, and the request has none; open it through the proxy that sets it (on every request, the page's own API calls included)`,
        });
    }
    const url = new URL(req.url ?? '/', 'http://inbox');
    if (req.method === 'GET' && url.pathname === '/') {
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        ...SECURITY_HEADERS,
      });
      res.end(fs.readFileSync(PAGE));
      return;
    }
    if (req.method === 'GET' && url.pathname === '/api/whoami') {
      const user = userHeader ? headerValue(req, userHeader) : undefined;
      return send(res, 200, { ...(userHeader ? { header: opts.trustedUserHeader } : {}), ...(user ? { user } : {}) });
    }
    if (req.method === 'GET' && url.pathname === '/api/snapshot') return send(res, 200, await feed.snapshot());
    if (req.method === 'GET' && url.pathname === '/api/stream') return stream.subscribe(req, res);
    if (req.method === 'GET' && url.pathname === '/api/session') {
      const id = url.searchParams.get('id');
      if (!id)
        return send(res, 400, { status: 'invalid', message: 'give the session id: /api/session?id=<sessionId>' });
      return send(res, 200, await feed.session(id));
    }
    if (req.method === 'POST' && url.pathname === '/api/decide') {
      const problem = crossSiteProblem(req);
      if (problem) return send(res, 403, { status: 'forbidden', message: problem });
      return decide(req, res);
    }
    if (req.method === 'POST' && url.pathname === '/api/reconcile') {
      const problem = crossSiteProblem(req);
      if (problem) return send(res, 403, { status: 'forbidden', message: problem });
      return reconcile(req, res);
    }
    if (req.method === 'POST' && url.pathname === '/api/reassign') {
      const problem = crossSiteProblem(req);
      if (problem) return send(res, 403, { status: 'forbidden', message: problem });
      return reassign(req, res);
    }
    if (await linkRoute(links, req, res, url)) return;
    send(res, 404, { status: 'not-found', message: `no such page: ${req.method} ${url.pathname}` });
  }

  // One-time approval links (client/inbox/links.ts): behind the same Host and proxy checks as every route.
  const links: LinkDeps = {
    client: opts.client,
    key: opts.linkKey ?? process.env.SLUICE_LINK_KEY,
    headerMode: !!userHeader,
    securityHeaders: SECURITY_HEADERS,
    send,
    jsonBody,
    crossSiteProblem,
    whoDecides: (req, res, body) => whoDecides(req, res, body, 'approver'),
    identityOf,
    poke: () => stream.poke(),
    log: (line) => process.stderr.write(`sluice inbox: ${line}\n`),
  };

  /** The signed-in approver's JWT from the identity header, to be sealed with the decision. */
  function identityOf(req: http.IncomingMessage): { identityToken?: string; sealKey?: SealKey } {
    if (!opts.identityTokenHeader) return {};
    const v = req.headers[opts.identityTokenHeader.toLowerCase()];
    const token = (Array.isArray(v) ? v[0] : v)
      ?.replace(/^Bearer\s+/i, '')
      .trim()
      .slice(0, 16_000);
    return token ? { identityToken: token, ...(opts.sealKey ? { sealKey: opts.sealKey } : {}) } : {};
  }

  /**
   * Who decides: the name the trusted proxy puts in the identity header when the inbox has one,
   * else the name typed at the top of the page. Without either, answers the request with what to
   * do and returns undefined.
   */
  function whoDecides(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    body: Record<string, unknown>,
    role: 'approver' | 'operator',
  ): string | undefined {
    if (userHeader) {
      const fromProxy = headerValue(req, userHeader);
      if (!fromProxy)
        send(res, 401, {
          status: 'unauthenticated',
          message: `this inbox takes the ${role} from the ${opts.trustedUserHeader} header, and the request has none; open it through the proxy that sets it`,
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

  async function decide(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
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
    const by = whoDecides(req, res, body, 'approver');
    if (by === undefined) return;
    try {
      const submitted = await opts.client.submitDecision({
        workflowId,
        approvalId,
        argsDigest,
        decision,
        by,
        ...(typeof reason === 'string' && reason.trim() ? { reason: reason.trim() } : {}),
        ...identityOf(req),
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
      stream.poke();
    }
  }

  /** An unknown outcome settled by a person: done (with evidence), not done, or run again. */
  async function reconcile(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
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
    const by = whoDecides(req, res, body, 'operator');
    if (by === undefined) return;
    const text = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : undefined);
    if (decision === 'done' && !text(evidence))
      return send(res, 400, {
        status: 'invalid',
        message: 'marking it done needs evidence: what shows the call ran (a log line, an id, a receipt)',
      });
    try {
      const r = await opts.client.submitReconcile({
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
      stream.poke();
    }
  }

  /** Hands a pending approval to someone else: a signal, so it works with no worker up. */
  async function reassign(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = await jsonBody(req, res);
    if (body === undefined) return;
    const { workflowId, approvalId, to, reason } = body;
    if (typeof workflowId !== 'string' || typeof approvalId !== 'string' || typeof to !== 'string' || !to.trim())
      return send(res, 400, {
        status: 'invalid',
        message: 'send {"workflowId", "approvalId", "to", "reason"?, "by"?}',
      });
    const by = whoDecides(req, res, body, 'approver');
    if (by === undefined) return;
    try {
      await opts.client.reassign({
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
      stream.poke();
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(
              `the inbox cannot listen on ${opts.host ?? DEFAULT_INBOX_HOST}:${opts.port ?? DEFAULT_INBOX_PORT}: the port is in use; pick another with --inbox-port`,
            )
          : err,
      ),
    );
    server.listen(opts.port ?? DEFAULT_INBOX_PORT, opts.host ?? DEFAULT_INBOX_HOST, () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  hosts = hostRule(opts.host ?? DEFAULT_INBOX_HOST, address, port, opts.allowedHosts ?? []);
  const shownHost = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${shownHost}:${port}/`,
    async close() {
      stream.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * One poller for all open pages: it reads Temporal while somebody watches, and pushes a snapshot
 * over server-sent events whenever what the page shows has changed.
 */
class SnapshotStream {
  private readonly clients = new Set<http.ServerResponse>();
  private last?: { key: string; data: string };
  private timer?: NodeJS.Timeout;
  private running = false;
  private again = false;

  constructor(
    private readonly feed: InboxFeed,
    private readonly refreshMs: number,
  ) {}

  subscribe(req: http.IncomingMessage, res: http.ServerResponse): void {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    res.write('retry: 2000\n\n');
    this.clients.add(res);
    if (this.last) res.write(this.last.data);
    req.on('close', () => this.clients.delete(res));
    this.poke();
  }

  /** Re-reads now (after a decision, or for a new page), then keeps the rhythm. */
  poke(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    void this.tick();
  }

  private async tick(): Promise<void> {
    if (this.clients.size === 0) return;
    this.running = true;
    try {
      const snap: InboxSnapshot | { error: string } = await this.feed
        .snapshot()
        .catch((err) => ({ error: `cannot read from Temporal: ${(err as Error).message}` }));
      const { now: _now, ...rest } = snap as InboxSnapshot;
      const key = JSON.stringify(rest);
      if (key !== this.last?.key) {
        this.last = {
          key,
          data: `event: ${'error' in snap ? 'problem' : 'snapshot'}\ndata: ${JSON.stringify(snap)}\n\n`,
        };
        for (const c of this.clients) c.write(this.last.data);
      } else {
        for (const c of this.clients) c.write(': unchanged\n\n');
      }
    } finally {
      this.running = false;
    }
    if (this.again) {
      this.again = false;
      return this.tick();
    }
    if (this.clients.size > 0) this.timer = setTimeout(() => void this.tick(), this.refreshMs);
  }

  close(): void {
    clearTimeout(this.timer);
    for (const c of this.clients) c.end();
    this.clients.clear();
  }
}

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
};

/** A decision must come from this page: JSON (no plain form post) and, when named, our own origin. */
function crossSiteProblem(req: http.IncomingMessage): string | undefined {
  if (!(req.headers['content-type'] ?? '').startsWith('application/json'))
    return 'decisions are JSON requests from the inbox page';
  const origin = req.headers.origin;
  if (origin && origin !== 'null') {
    let host: string;
    try {
      host = new URL(origin).host;
    } catch {
      return 'unreadable Origin header';
    }
    if (host !== req.headers.host) return `a page at ${origin} may not decide through this inbox`;
  }
  return undefined;
}

interface HostRule {
  /** Why a request's Host header is not one this inbox answers to, or undefined. */
  problem(host: string | undefined): string | undefined;
}

/**
 * The names the inbox answers to: the address it listens on (with `localhost` and the other
 * loopback name when that is loopback; any IP address when it listens on all of them: DNS
 * rebinding needs a name the attacker controls), at its port, and the configured names.
 */
function hostRule(configured: string, bound: string, port: number, allowed: string[]): HostRule {
  const lower = (h: string) => h.toLowerCase().replace(/\.$/, '');
  const names = new Set([lower(bracketed(configured)), lower(bracketed(bound))]);
  const loopback =
    ['127.0.0.1', '::1', 'localhost'].includes(configured) || bound.startsWith('127.') || bound === '::1';
  if (loopback) for (const n of ['localhost', '127.0.0.1', '[::1]']) names.add(n);
  const anyAddress = bound === '0.0.0.0' || bound === '::';
  if (anyAddress) names.add('localhost');
  const extra = allowed.map((a) => {
    const m = /^(.*?)(?::(\d+))?$/.exec(a.trim()) as RegExpExecArray;
    return { name: lower(m[1]), port: m[2] };
  });
  const shown = [...names].map((n) => `${n}:${port}`);
  const answersTo = [...shown, ...(anyAddress ? [`any IP address:${port}`] : []), ...allowed].join(', ');
  return {
    problem(host) {
      if (!host) return `the request names no Host; this inbox answers to ${answersTo}`;
      let hostname: string;
      let hostPort: string;
      try {
        ({ hostname, port: hostPort } = new URL(`http://${host}`));
      } catch {
        return `unreadable Host header ${JSON.stringify(host.slice(0, 200))}; this inbox answers to ${answersTo}`;
      }
      hostname = lower(hostname);
      const samePort = hostPort === String(port) || (hostPort === '' && port === 80);
      const ip = isIP(hostname.replace(/^\[|\]$/g, '')) !== 0;
      if (samePort && (names.has(hostname) || (anyAddress && ip))) return undefined;
      if (extra.some((e) => e.name === hostname && (e.port === undefined || e.port === (hostPort || '80'))))
        return undefined;
      return (
        `this inbox answers to ${answersTo}, and this request was sent to ${JSON.stringify(host.slice(0, 200))}: ` +
        'a page reached under another name (DNS rebinding) may not read or decide here. ' +
        'If a proxy forwards the name people use, add it with --inbox-allowed-host (allowedHosts).'
      );
    },
  };
}

function bracketed(address: string): string {
  return address.includes(':') ? `[${address}]` : address;
}

/** The peer's address, IPv4 without the IPv6-mapped prefix. */
function plainAddress(a: string | undefined): string {
  if (!a) return 'an unknown address';
  return a.startsWith('::ffff:') && isIP(a.slice(7)) === 4 ? a.slice(7) : a;
}

function headerValue(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  const s = (Array.isArray(v) ? v[0] : v)?.trim();
  return s ? s.slice(0, 200) : undefined;
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return void res.end();
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(JSON.stringify(body));
}

/** The request's JSON body (as parsed, whatever it holds), or undefined after answering 400 when it is not JSON. */
async function jsonBody(
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<Record<string, unknown> | undefined> {
  try {
    return JSON.parse(await readBody(req));
  } catch (err) {
    send(res, 400, {
      status: 'invalid',
      message: `the request body must be JSON (${(err as Error).message})`,
    });
    return undefined;
  }
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error('the request body is too large'));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
