// The session routes of the inbox attacked over HTTP: a page reached under a foreign name (DNS
// rebinding), requests around a header-authenticating proxy or without its secret or approver
// header, an inbox of another team's task queue sharing the same store, and cross-site posts of a
// message or an interrupt. None may read the session's events (the model's words, the user's
// secret) or send it anything; the ordinary paths keep working.
import * as http from 'node:http';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInbox, type Inbox } from '../servers/inbox/server';
import { type SessionHandle, startSession } from '../client/session';
import { eventually } from './eventually';
import { useSessionPage } from './session-page-setup';

const SECRET = `ACCT-${randomBytes(6).toString('hex')}`;
const PROXY_SECRET = randomBytes(24).toString('base64');
const PROXY = '127.0.0.3';
const DIRECT = '127.0.0.2';

// The harness, the store and the open inbox (no browser: these are HTTP requests).
const fx = useSessionPage('session-page-attacks', { browser: false });
let open: Inbox;
let proxied: Inbox;
let otherTeam: Inbox;
let session: SessionHandle;

beforeAll(async () => {
  const { h, stores } = fx;
  open = fx.inbox;
  proxied = await startInbox({
    client: h.client,
    port: 0,
    taskQueue: h.taskQueue,
    store: stores,
    trustedUserHeader: 'X-Forwarded-User',
    trustedProxies: [PROXY],
    proxySecret: PROXY_SECRET,
  });
  // Another team's inbox: same server, same store, its own task queue.
  otherTeam = await startInbox({ client: h.client, port: 0, taskQueue: `${h.taskQueue}-other`, store: stores });
  session = await startSession(h.client, { sessionId: `attacks-${process.pid}-${Date.now()}`, model: 'scripted' });
  await session.send(`my account is ${SECRET}`);
}, 60_000);
afterAll(async () => {
  await session
    ?.cancel()
    .then(() => session.result())
    .catch(() => undefined);
  await Promise.all([proxied, otherTeam].map((i) => i?.close()));
});

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * One request with exactly the Host, headers and source address an attacker chooses. A stream is
 * read until `until` shows in it (or it ends); an answer that is not a stream is read whole.
 */
function call(
  inbox: Inbox,
  method: string,
  path: string,
  opts: { host?: string; headers?: Record<string, string>; from?: string; body?: string; until?: string } = {},
): Promise<Reply> {
  const port = Number(new URL(inbox.url).port);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        localAddress: opts.from ?? '127.0.0.1',
        headers: { host: opts.host ?? `127.0.0.1:${port}`, ...opts.headers },
      },
      (res) => {
        let body = '';
        const finish = () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        res.on('data', (c) => {
          body += c;
          if (opts.until && body.includes(opts.until)) {
            res.destroy();
            finish();
          }
        });
        res.on('end', finish);
        res.on('close', finish);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

const id = () => encodeURIComponent(session.sessionId);
const reads = () => [
  `/sessions/${id()}`,
  `/api/sessions/${id()}/events`,
  `/api/sessions/${id()}/state`,
  `/api/sessions/${id()}/client/challenge`,
  '/api/sessions',
];

describe('session routes under attack', () => {
  it('the ordinary path streams the session, with no header that would let another origin read it', async () => {
    const r = await call(open, 'GET', `/api/sessions/${id()}/events`, { until: SECRET });
    expect(r.status).toBe(200);
    expect(r.body).toContain(SECRET);
    expect(r.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(r.headers['access-control-allow-origin']).toBeUndefined();
    const page = await call(open, 'GET', `/sessions/${id()}`);
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    expect(page.headers['x-frame-options']).toBe('DENY');
    // The page is the same file for every session: nothing of the address is written into it.
    expect(page.body).not.toContain(session.sessionId);
  });

  it('a foreign Host (DNS rebinding) reads nothing', async () => {
    const evil = `rebind.attacker.example:${new URL(open.url).port}`;
    for (const path of reads()) {
      const r = await call(open, 'GET', path, { host: evil });
      expect(r.status, path).toBe(421);
      expect(r.body).not.toContain(SECRET);
    }
  });

  it('around the proxy, without its secret or without the approver header: nothing', async () => {
    const user = { 'x-forwarded-user': 'carol' };
    const secret = { 'x-sluice-proxy-secret': PROXY_SECRET };
    for (const path of reads()) {
      const direct = await call(proxied, 'GET', path, { from: DIRECT, headers: { ...user, ...secret } });
      expect(direct.status, path).toBe(403);
      const noSecret = await call(proxied, 'GET', path, { from: PROXY, headers: user });
      expect(noSecret.status, path).toBe(403);
      const noUser = await call(proxied, 'GET', path, { from: PROXY, headers: secret });
      expect(noUser.status, path).toBe(401);
      for (const r of [direct, noSecret, noUser]) expect(r.body).not.toContain(SECRET);
    }
    const ok = await call(proxied, 'GET', `/api/sessions/${id()}/events`, {
      from: PROXY,
      headers: { ...user, ...secret },
      until: SECRET,
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain(SECRET);
  });

  it("another task queue's inbox, on the same store, neither lists, reads nor posts to the session", async () => {
    for (const path of reads().slice(0, -1)) {
      const r = await call(otherTeam, 'GET', path);
      expect(r.status, path).toBe(404);
      expect(r.body).not.toContain(SECRET);
    }
    const listed = await call(otherTeam, 'GET', '/api/sessions');
    expect(listed.status).toBe(200);
    expect(listed.body).not.toContain(session.sessionId);
    expect((await call(otherTeam, 'GET', `/api/session?id=${id()}`)).status).toBe(404);
    const posted = await call(otherTeam, 'POST', `/api/sessions/${id()}/message`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'from another team' }),
    });
    expect(posted.status).toBe(404);
    // A session id that would change the visibility query is refused before any lookup.
    const injected = await call(
      otherTeam,
      'GET',
      `/api/sessions/${encodeURIComponent("x' OR SluiceSessionId != '")}/events`,
    );
    expect(injected.status).toBe(400);
  });

  it('a message or an interrupt from another site, or as a plain form post, is refused; from the page it is queued', async () => {
    const port = new URL(open.url).port;
    const post = (what: string, headers: Record<string, string>, text: string) =>
      call(open, 'POST', `/api/sessions/${id()}/${what}`, { headers, body: JSON.stringify({ text }) });
    const json = { 'content-type': 'application/json' };
    expect((await post('message', { ...json, origin: 'http://attacker.example' }, 'cross-site')).status).toBe(403);
    expect((await post('message', { 'content-type': 'text/plain' }, 'form post')).status).toBe(403);
    expect((await post('interrupt', { ...json, origin: 'http://attacker.example' }, '')).status).toBe(403);
    const ok = await post('message', { ...json, origin: `http://127.0.0.1:${port}` }, 'echo from the page');
    expect(ok.status, ok.body).toBe(202);
    const log = await eventually('the queued message answered', async () => {
      const events = await fx.stores.events(session.sessionId);
      return events.some((e) => e.type === 'session/turn-ended' && (e.data as { turn: number }).turn === 2) && events;
    });
    const users = log.filter((e) => e.type === 'session/user').map((e) => (e.data as { content: string }).content);
    expect(users).toEqual([`my account is ${SECRET}`, 'echo from the page']);
  });
});
