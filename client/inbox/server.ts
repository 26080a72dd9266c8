// The approval inbox: one plain HTML page and a small JSON/SSE API on node:http. It decides
// through the `sluice.decide` update, so the person sees what the batch did with the decision;
// while no worker runs the batch, the decision is queued by signal, bound to the digest shown.
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { DecisionRefusedError, SluiceError, type SluiceClient } from '../client';
import { InboxFeed, type InboxSnapshot } from './feed';

export const DEFAULT_INBOX_HOST = '127.0.0.1';
export const DEFAULT_INBOX_PORT = 8234;

export interface InboxOptions {
  client: SluiceClient;
  /** Bind address; default 127.0.0.1 (this machine only). */
  host?: string;
  /** Default 8234; 0 picks a free port. */
  port?: number;
  /**
   * A header set by a trusted reverse proxy (e.g. `X-Forwarded-User`) that names the approver.
   * When set, requests without it cannot decide, and the name typed in the page is ignored.
   */
  trustedUserHeader?: string;
  /** How often the page's stream re-reads Temporal. Default 1000 ms. */
  refreshMs?: number;
  /** Finished batches shown. Default 20. */
  recentLimit?: number;
}

export interface Inbox {
  url: string;
  close(): Promise<void>;
}

const PAGE = path.join(__dirname, 'page.html');
const MAX_BODY = 64 * 1024;

export async function startInbox(opts: InboxOptions): Promise<Inbox> {
  const feed = new InboxFeed(opts.client, opts.recentLimit ?? 20);
  const refreshMs = Math.max(100, opts.refreshMs ?? 1000);
  const userHeader = opts.trustedUserHeader?.toLowerCase();
  const stream = new SnapshotStream(feed, refreshMs);

  const server = http.createServer((req, res) => {
    route(req, res).catch((err) => send(res, 500, { status: 'error', message: (err as Error).message }));
  });

  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
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
    send(res, 404, { status: 'not-found', message: `no such page: ${req.method} ${url.pathname}` });
  }

  async function decide(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(await readBody(req));
    } catch (err) {
      return send(res, 400, {
        status: 'invalid',
        message: `the request body must be JSON (${(err as Error).message})`,
      });
    }
    const { workflowId, approvalId, argsDigest, decision, reason } = body;
    if (
      typeof workflowId !== 'string' ||
      typeof approvalId !== 'string' ||
      (decision !== 'approve' && decision !== 'deny')
    ) {
      return send(res, 400, {
        status: 'invalid',
        message: 'send {"workflowId", "approvalId", "argsDigest", "decision": "approve"|"deny", "reason"?, "by"?}',
      });
    }
    if (typeof argsDigest !== 'string' || !argsDigest) {
      return send(res, 400, {
        status: 'invalid',
        message: 'the decision must carry the argsDigest of the card you were shown; reload the page',
      });
    }
    let by: string;
    if (userHeader) {
      const fromProxy = headerValue(req, userHeader);
      if (!fromProxy)
        return send(res, 401, {
          status: 'unauthenticated',
          message: `this inbox takes the approver from the ${opts.trustedUserHeader} header, and the request has none; open it through the proxy that sets it`,
        });
      by = fromProxy;
    } else {
      by = typeof body.by === 'string' ? body.by.trim() : '';
      if (!by)
        return send(res, 400, {
          status: 'invalid',
          message: 'enter your name at the top of the page: it is recorded with your decision',
        });
    }
    try {
      const submitted = await opts.client.submitDecision({
        workflowId,
        approvalId,
        argsDigest,
        decision,
        by,
        ...(typeof reason === 'string' && reason.trim() ? { reason: reason.trim() } : {}),
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

function headerValue(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  const s = (Array.isArray(v) ? v[0] : v)?.trim();
  return s ? s.slice(0, 200) : undefined;
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return void res.end();
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
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
