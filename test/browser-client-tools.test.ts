// Client tools served from a web page, in a real headless Chromium against the real dev server:
// the page makes the session's client key (WebCrypto Ed25519, kept in IndexedDB), the session is
// started with its public half, and the inbox relays the session's client calls to the page while
// it is attached. A tool reads a value only the page has and the model's next step sees it; a call
// waits while no page is attached (the inbox's session page says "waiting for the user's device"
// until its result) and the page that opens later runs it; a page closed mid-body
// ends as a killed client (an idempotent call runs again on the next page, an at-most-once one ends
// OUTCOME_UNKNOWN); another key's page takes nothing, and a process that knows the session (even
// its public key) can neither attach nor answer.
import { generateKeyPairSync, sign } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Connection } from '@temporalio/client';
import { SluiceClient } from '../client/client';
import { type SessionHandle, startSession } from '../client/session';
import { type ClientBinding, clientKeyId } from '../pipeline/client-tools';
import { attachSignedText } from '../servers/inbox/client-relay';
import { type Inbox, startInbox } from '../servers/inbox/server';
import { openStores, type SluiceStores } from '../stores/stores';
import { launchBrowser } from './chromium';
import { eventually, poll } from './eventually';
import config from './fixtures/browser-client.config';
import { type Harness, startHarness } from './harness';

/** The page: it opens the key named in its address and, given a session, serves its client tools. */
const PAGE = `<!doctype html>
<meta charset="utf-8">
<p id="status">loading</p><p id="client">detached</p>
<script type="module">
  import { connectSession, openClientKey } from '/assets/sluice-browser.js';
  const q = new URLSearchParams(location.search);
  const key = await openClientKey(q.get('key'));
  window.__binding = key.binding;
  window.__started = [];
  window.__problems = [];
  const sessionId = q.get('session');
  if (sessionId) {
    const session = connectSession({ sessionId, clientKey: key, approvals: false });
    session.on('client', (on) => (document.getElementById('client').textContent = on ? 'attached' : 'detached'));
    session.on('problem', (m) => window.__problems.push(m));
    session.clientTools.serve('secret', (_args, ctx) => {
      window.__started.push('secret:' + ctx.attempt);
      return { secret: window.__secret };
    });
    // The first attempt works until the page is closed; a later one (on another page) finishes.
    const hang = (name) => (_args, ctx) => {
      window.__started.push(name + ':' + ctx.attempt);
      return ctx.attempt > 1 ? name + ' finished on attempt ' + ctx.attempt : new Promise(() => {});
    };
    session.clientTools.serve('hold', hang('hold'));
    session.clientTools.serve('pay', hang('pay'));
  }
  document.getElementById('status').textContent = 'ready';
</script>`;

/** docs/browser.md's complete page: its one html block. */
const DOC_PAGE = (() => {
  const doc = fs.readFileSync(path.join(__dirname, '..', 'docs', 'browser.md'), 'utf8');
  const blocks = [...doc.matchAll(/^```html\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  if (blocks.length !== 1)
    throw new Error(`docs/browser.md has ${blocks.length} html blocks; the test serves its one page`);
  return blocks[0];
})();

let h: Harness;
let stores: SluiceStores;
let inbox: Inbox;
let inboxConnection: Connection;
let app: { url: string; close(): Promise<void> };
let browser: { browser: BrowserContext; close(): Promise<void> };
const sessions: SessionHandle[] = [];

const until = <T>(fn: () => Promise<T> | T) => poll(fn, { timeoutMs: 120_000, intervalMs: 250 });

/** The page at `/`, everything else forwarded to the inbox with the browser's Host kept (one origin). */
async function startApp(target: () => URL): Promise<typeof app> {
  const server = http.createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://app').pathname;
    if (req.method === 'GET' && (pathname === '/' || pathname === '/doc')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(pathname === '/' ? PAGE : DOC_PAGE);
      return;
    }
    const t = target();
    const upstream = http.request(
      { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        res.flushHeaders();
        answer.pipe(res);
      },
    );
    upstream.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

beforeAll(async () => {
  const stateDir = fs.mkdtempSync(path.join(inject('runDir'), 'browser-client-'));
  stores = openStores({ stateDir });
  h = await startHarness('browser-client', config, { stores, stateDir });
  let inboxUrl: URL | undefined;
  app = await startApp(() => inboxUrl as URL);
  // The inbox on a plain client connection, as `sluice ui` runs it: it makes its own worker
  // connection to poll for the pages.
  inboxConnection = await Connection.connect({ address: inject('temporalAddress') });
  inbox = await startInbox({
    client: new SluiceClient({ connection: inboxConnection, taskQueue: h.taskQueue }),
    port: 0,
    refreshMs: 300,
    taskQueue: h.taskQueue,
    store: stores,
    allowedHosts: [new URL(app.url).host, `localhost:${new URL(app.url).port}`],
  });
  inboxUrl = new URL(inbox.url);
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  for (const s of sessions)
    await s
      .cancel()
      .then(() => s.result())
      .catch(() => undefined);
  for (const close of [() => browser?.close(), () => inbox?.close(), () => app?.close()])
    await close()?.catch(() => undefined);
  await h?.close();
  await inboxConnection?.close();
  await stores?.close();
});

/** A page of the app: with `session`, attached as its client with the key named `key`. */
async function openPage(key: string, session?: SessionHandle, secret?: string): Promise<Page> {
  const page = await browser.browser.newPage();
  if (secret !== undefined)
    await page.addInitScript((s) => {
      (window as unknown as { __secret: string }).__secret = s;
    }, secret);
  const q = new URLSearchParams({ key, ...(session ? { session: session.sessionId } : {}) });
  await page.goto(`${app.url}?${q}`);
  await until(() => page.locator('#status').textContent()).toBe('ready');
  if (session) await until(() => page.locator('#client').textContent()).toBe('attached');
  return page;
}

/** The binding of the key the browser keeps under `key` (made on first use). */
async function bindingOf(key: string): Promise<ClientBinding> {
  const page = await openPage(key);
  const binding = await page.evaluate(() => (window as unknown as { __binding: ClientBinding }).__binding);
  await page.close();
  return binding;
}

async function start(binding: ClientBinding): Promise<SessionHandle> {
  const s = await startSession(h.client, {
    sessionId: `browser-client-${process.pid}-${Date.now()}-${sessions.length}`,
    model: 'scripted',
    batch: { client: binding },
  });
  sessions.push(s);
  return s;
}

/** In the page: the binding of the key openClientKey keeps under `name`, once it is stored. */
function storedBinding(name: string): Promise<ClientBinding | undefined> {
  return new Promise((resolve) => {
    const open = indexedDB.open('sluice-client-keys');
    open.onerror = () => resolve(undefined);
    open.onsuccess = () => {
      const db = open.result;
      if (!db.objectStoreNames.contains('keys')) return resolve(undefined);
      const r = db.transaction('keys').objectStore('keys').get(name);
      r.onsuccess = () => resolve((r.result as { binding?: ClientBinding } | undefined)?.binding);
      r.onerror = () => resolve(undefined);
    };
  });
}

const started = (page: Page) => page.evaluate(() => (window as unknown as { __started: string[] }).__started);

/** Waits until the session's call is handed to its client: it waits for the user's device. */
async function waitingCall(s: SessionHandle, name: string): Promise<void> {
  await until(async () => (await s.clientCalls().catch(() => [])).map((c) => c.name)).toEqual([name]);
}

describe('client tools served from a page', () => {
  it("waits while no page is attached; the page that opens runs it with a value only it has, and the model's next step sees it", {
    timeout: 240_000,
  }, async () => {
    const key = `secret-${Date.now()}`;
    const s = await start(await bindingOf(key));
    const turn = s.send('use:secret');
    await waitingCall(s, 'secret');
    // The inbox's session page shows the wait, and its end. Opened under another name of the app:
    // a browser keeps six connections per host, and the pages here hold two streams each.
    const sessionPage = await browser.browser.newPage();
    await sessionPage.goto(`${app.url.replace('127.0.0.1', 'localhost')}sessions/${encodeURIComponent(s.sessionId)}`);
    const card = sessionPage.locator('article.call[data-call-id="c"]');
    await until(() => card.locator('.stage').textContent()).toBe("waiting for the user's device");
    await until(() => sessionPage.locator('#state strong').textContent()).toBe("waiting for the user's device");
    // Another key's page of the same session is attached first, and is handed nothing.
    const stranger = await openPage(`stranger-${Date.now()}`, s);
    const secret = `only-the-page-knows-${Math.random().toString(36).slice(2)}`;
    const page = await openPage(key, s, secret);
    const outcome = await turn;
    expect(outcome.text).toContain(secret);
    expect(await started(page)).toEqual(['secret:1']);
    expect(await started(stranger)).toEqual([]);
    await until(() => card.getAttribute('data-state')).toBe('done');
    expect(await card.locator('.result').textContent()).toContain(secret);
    await sessionPage.close();
    await stranger.close();
    await page.close();
  });

  it('a page closed mid-body: the idempotent call runs again on the next page', { timeout: 240_000 }, async () => {
    const key = `hold-${Date.now()}`;
    const s = await start(await bindingOf(key));
    const turn = s.send('use:hold');
    const first = await openPage(key, s);
    await until(() => started(first)).toEqual(['hold:1']);
    await first.close();
    const second = await openPage(key, s);
    const outcome = await turn;
    expect(outcome.text).toBe('saw hold finished on attempt 2');
    expect(await started(second)).toEqual(['hold:2']);
    await second.close();
  });

  it('a page closed mid-body: the at-most-once call ends OUTCOME_UNKNOWN, not run again', {
    timeout: 240_000,
  }, async () => {
    const key = `pay-${Date.now()}`;
    const s = await start(await bindingOf(key));
    const turn = s.send('use:pay');
    const first = await openPage(key, s);
    await until(() => started(first)).toEqual(['pay:1']);
    await first.close();
    const second = await openPage(key, s);
    const outcome = await turn;
    expect(outcome.text).toBe('saw error OUTCOME_UNKNOWN');
    expect(await started(second)).toEqual([]);
    await second.close();
  });

  it("docs/browser.md's complete page serves its client tool for a session started with its key", {
    timeout: 240_000,
  }, async () => {
    const sessionId = `browser-client-doc-${process.pid}-${Date.now()}`;
    const page = await browser.browser.newPage();
    await page.goto(`${app.url}doc?session=${encodeURIComponent(sessionId)}`);
    // The page made its key on opening; its binding is what the app's server starts the session with.
    const binding = await eventually('the key the page made', () => page.evaluate(storedBinding, sessionId), {
      timeoutMs: 120_000,
      intervalMs: 250,
    });
    const s = await startSession(h.client, { sessionId, model: 'scripted', batch: { client: binding } });
    sessions.push(s);
    // It attaches once the session exists (it asks again while the inbox does not know it).
    await until(() => page.locator('#device').textContent()).toBe(" · this page is the user's device");
    const outcome = await s.send('use:local_time');
    const zone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
    expect(outcome.text).toContain(`"timeZone": "${zone}"`);
    await until(() => page.locator('.result').allTextContents()).toContain("local_time: waiting for the user's device");
    await page.close();
  });

  it('a process that knows the session and its public key cannot attach, nor answer a call it was not handed', {
    timeout: 120_000,
  }, async () => {
    const key = `proof-${Date.now()}`;
    const binding = await bindingOf(key);
    const s = await start(binding);
    const api = `${app.url}api/sessions/${encodeURIComponent(s.sessionId)}/client`;
    const challenge = async () => ((await (await fetch(`${api}/challenge`)).json()) as { challenge: string }).challenge;
    const other = generateKeyPairSync('ed25519');
    const attach = (q: Record<string, string>) => fetch(`${api}/calls?${new URLSearchParams(q)}`);
    // The session's public key, with a signature of another key.
    const c1 = await challenge();
    const forged = sign(null, Buffer.from(attachSignedText(s.sessionId, binding.keyId, c1)), other.privateKey);
    const refused = await attach({ key: binding.publicKey.x, challenge: c1, signature: forged.toString('base64url') });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { message: string }).message).toContain('not signed by the key given');
    // The same challenge again: spent, even for a signature that would hold.
    const again = await attach({ key: binding.publicKey.x, challenge: c1, signature: forged.toString('base64url') });
    expect(again.status).toBe(403);
    expect(((await again.json()) as { message: string }).message).toContain('unknown, used or expired');
    // A challenge of another session, signed by its key holder, does not attach here.
    const x = String(other.publicKey.export({ format: 'jwk' }).x);
    const elsewhere = await start({ keyId: clientKeyId(x), publicKey: { kty: 'OKP', crv: 'Ed25519', x } });
    const c2 = (
      (await (
        await fetch(`${app.url}api/sessions/${encodeURIComponent(elsewhere.sessionId)}/client/challenge`)
      ).json()) as { challenge: string }
    ).challenge;
    const mine = sign(null, Buffer.from(attachSignedText(s.sessionId, clientKeyId(x), c2)), other.privateKey);
    expect((await attach({ key: x, challenge: c2, signature: mine.toString('base64url') })).status).toBe(403);
    // An answer for a call nobody handed it.
    const answer = await fetch(`${api}/answer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: 'guessed', answer: { keyId: binding.keyId, outcome: '{}', signature: 'x' } }),
    });
    expect(answer.status).toBe(404);
  });
});
