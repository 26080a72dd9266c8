// The approval inbox: one plain HTML page and a small JSON/SSE API on node:http. It decides
// through the `sluice.decide` update, so the person sees what the batch did with the decision;
// while no worker runs the batch, the decision is queued by signal, bound to the digest shown.
// Each session has its page too (servers/inbox/sessions.ts). Every request passes the same gate
// first: the Host it was sent to, then, behind a proxy, the proxy's address, secret and approver.
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import { type AddressInfo, isIP } from 'node:net';
import * as path from 'node:path';
import type { SluiceClient } from '../../client/client';
import { ConfigError } from '../../support/errors';
import type { SealKey } from '../../client/identity';
import { ClientRelays } from './client-relay';
import { type DecisionDeps, decisionRoute, identityOf, whoDecides } from './decisions';
import { InboxFeed, type InboxSnapshot } from './feed';
import {
  crossSiteProblem,
  headerValue,
  jsonBody,
  plainAddress,
  readPage,
  SECURITY_HEADERS,
  send,
  sendPage,
} from './http';
import { type LinkDeps, linkRoute } from './links';
import { type SessionDeps, type SessionSource, sessionRoute } from './sessions';

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
  /**
   * The workers' session store (files or PostgreSQL, `openStores`): a session's timeline is read
   * from it when it has the session, and its page follows the session's events (and, through the
   * store's live channel, the model's text as it streams) from it.
   */
  store?: SessionSource;
}

export interface Inbox {
  url: string;
  close(): Promise<void>;
}

const PAGE = path.join(__dirname, 'page.html');
/** The header a proxy in front of the inbox sends its shared secret in (see proxySecret). */
export const PROXY_SECRET_HEADER = 'X-Sluice-Proxy-Secret';
const sha256 = (s: string) => crypto.createHash('sha256').update(s, 'utf8').digest();

/** Who the inbox answers: the trusted proxy settings, checked once at start. */
interface Gate {
  /** The approver header, lower-cased; unset: the name typed in the page. */
  userHeader?: string;
  proxies: string[];
  secretDigest?: Buffer;
  /** Known once the server listens (port 0 picks one). */
  hosts?: HostRule;
}

export async function startInbox(opts: InboxOptions): Promise<Inbox> {
  const feed = new InboxFeed(opts.client, opts.recentLimit ?? 20, opts.store, opts.taskQueue);
  const stream = new SnapshotStream(feed, Math.max(100, opts.refreshMs ?? 1000));
  const gate = checkGate(opts);
  const decisions: DecisionDeps = {
    client: opts.client,
    ...(opts.trustedUserHeader ? { trustedUserHeader: opts.trustedUserHeader } : {}),
    ...(opts.identityTokenHeader ? { identityTokenHeader: opts.identityTokenHeader } : {}),
    ...(opts.sealKey ? { sealKey: opts.sealKey } : {}),
    poke: () => stream.poke(),
  };
  const sessions: SessionDeps = {
    client: opts.client,
    feed,
    store: opts.store,
    streams: new Set(),
    relays: new ClientRelays(opts.client),
  };
  // One-time approval links (servers/inbox/links.ts): behind the same Host and proxy checks as every route.
  const links: LinkDeps = {
    client: opts.client,
    key: opts.linkKey ?? process.env.SLUICE_LINK_KEY,
    headerMode: !!gate.userHeader,
    securityHeaders: SECURITY_HEADERS,
    send,
    jsonBody,
    crossSiteProblem,
    whoDecides: (req, res, body) => whoDecides(decisions, req, res, body, 'approver'),
    identityOf: (req) => identityOf(decisions, req),
    poke: () => stream.poke(),
    log: (line) => process.stderr.write(`sluice inbox: ${line}\n`),
  };

  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // Before anything is read or decided: the page's own name (DNS rebinding), then its proxy.
    if (refused(gate, opts, req, res)) return;
    const url = new URL(req.url ?? '/', 'http://inbox');
    if (await readRoute(feed, stream, gate, opts, req, res, url)) return;
    if (await decisionRoute(decisions, req, res, url)) return;
    if (await sessionRoute(sessions, req, res, url)) return;
    if (await linkRoute(links, req, res, url)) return;
    send(res, 404, { status: 'not-found', message: `no such page: ${req.method} ${url.pathname}` });
  }

  const server = http.createServer((req, res) => {
    route(req, res).catch((err) => send(res, 500, { status: 'error', message: (err as Error).message }));
  });
  const { address, port } = await listen(server, opts);
  gate.hosts = hostRule(opts.host ?? DEFAULT_INBOX_HOST, address, port, opts.allowedHosts ?? []);
  return {
    url: `http://${bracketed(address)}:${port}/`,
    async close() {
      stream.close();
      for (const s of sessions.streams) s.abort();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await sessions.relays.close();
    },
  };
}

/** The proxy settings, refused at start when they cannot work or would trust anyone. */
function checkGate(opts: InboxOptions): Gate {
  const userHeader = opts.trustedUserHeader?.toLowerCase();
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
  return {
    ...(userHeader ? { userHeader } : {}),
    proxies,
    ...(opts.proxySecret === undefined ? {} : { secretDigest: sha256(opts.proxySecret) }),
  };
}

/**
 * Answers a request the inbox will not serve (a foreign Host, a request around the proxy, one
 * without the proxy's secret or approver header) and returns true; false for one it serves.
 */
function refused(gate: Gate, opts: InboxOptions, req: http.IncomingMessage, res: http.ServerResponse): boolean {
  const misdirected = gate.hosts ? gate.hosts.problem(req.headers.host) : 'the inbox is starting';
  if (misdirected) {
    send(res, 421, { status: 'misdirected', message: misdirected });
    return true;
  }
  if (!gate.userHeader) return false;
  const from = plainAddress(req.socket.remoteAddress);
  if (!gate.proxies.includes(from)) {
    send(res, 403, {
      status: 'forbidden',
      message: `this inbox answers only through its proxy (${gate.proxies.join(', ')}), which names the approver in the ${opts.trustedUserHeader} header; this request came from ${from} directly, so its header cannot be trusted. Open the inbox through the proxy, or add the proxy's address with --trusted-proxy.`,
    });
    return true;
  }
  // Compared as digests: equal lengths for timingSafeEqual, and the time says nothing of the secret.
  const sent = req.headers[PROXY_SECRET_HEADER.toLowerCase()];
  if (gate.secretDigest && (typeof sent !== 'string' || !crypto.timingSafeEqual(sha256(sent), gate.secretDigest))) {
    send(res, 403, {
      status: 'forbidden',
      message: `this request does not carry the secret the inbox shares with its proxy (${PROXY_SECRET_HEADER}), so its ${opts.trustedUserHeader} header cannot be trusted. Open the inbox through the proxy.`,
    });
    return true;
  }
  if (!headerValue(req, gate.userHeader)) {
    send(res, 401, {
      status: 'unauthenticated',
      message: `this inbox takes the approver from the ${opts.trustedUserHeader} header, and the request has none; open it through the proxy that sets it (on every request, the page's own API calls included)`,
    });
    return true;
  }
  return false;
}

/** The inbox page and what it reads: who is signed in, the snapshot and its stream, a session's timeline. */
async function readRoute(
  feed: InboxFeed,
  stream: SnapshotStream,
  gate: Gate,
  opts: InboxOptions,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  url: URL,
): Promise<boolean> {
  if (req.method !== 'GET') return false;
  switch (url.pathname) {
    case '/':
      sendPage(res, readPage(PAGE));
      return true;
    case '/api/whoami': {
      const user = gate.userHeader ? headerValue(req, gate.userHeader) : undefined;
      send(res, 200, { ...(gate.userHeader ? { header: opts.trustedUserHeader } : {}), ...(user ? { user } : {}) });
      return true;
    }
    case '/api/snapshot':
      send(res, 200, await feed.snapshot());
      return true;
    case '/api/stream':
      stream.subscribe(req, res);
      return true;
    case '/api/session': {
      const id = url.searchParams.get('id');
      if (!id) {
        send(res, 400, { status: 'invalid', message: 'give the session id: /api/session?id=<sessionId>' });
        return true;
      }
      const unseen = await feed.sessionProblem(id);
      if (unseen) send(res, unseen.status, { status: 'not-found', message: unseen.message });
      else send(res, 200, await feed.session(id));
      return true;
    }
    default:
      return false;
  }
}

function listen(server: http.Server, opts: InboxOptions): Promise<AddressInfo> {
  return new Promise<AddressInfo>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(
              `the inbox cannot listen on ${opts.host ?? DEFAULT_INBOX_HOST}:${opts.port ?? DEFAULT_INBOX_PORT}: the port is in use; pick another with --inbox-port`,
            )
          : err,
      ),
    );
    server.listen(opts.port ?? DEFAULT_INBOX_PORT, opts.host ?? DEFAULT_INBOX_HOST, () =>
      resolve(server.address() as AddressInfo),
    );
  });
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
