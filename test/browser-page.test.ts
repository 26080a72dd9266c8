// The example page of docs/browser.md, taken from the doc itself, built on sluice/browser and
// driven in a real headless Chromium against the real dev server: served as a user serves it, by
// a proxy that puts the page and the inbox under one origin. A message typed in it starts a turn
// whose text streams; the worker running the step is killed mid-answer and another runs it again,
// and the page shows the answer once (every text it ever showed is a prefix of the answer); its
// stream, cut and refused once, is opened again after the last event it had; a call that asks is
// approved from the page, under the name typed there, and the turn ends.
import * as fs from 'node:fs';
import type * as http from 'node:http';
import * as path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SessionHandle, type SessionRequest, startSession } from '../client/session';
import { type Inbox, startInbox } from '../servers/inbox/server';
import { openStores, type SluiceStores } from '../stores/stores';
import { launchBrowser } from './chromium';
import { eventually, poll } from './eventually';
import { type ForwardingProxy, startForwardingProxy } from './forwarding-proxy';
import { type ChildWorker, type Harness, spawnWorker, startHarness } from './harness';
import { ANSWER, type StreamProvider, startStreamProvider } from './stream-provider';

const CONFIG = path.join(__dirname, 'fixtures', 'session.config.ts');
/** The doc's complete page: its one html block. */
const PAGE = (() => {
  const doc = fs.readFileSync(path.join(__dirname, '..', 'docs', 'browser.md'), 'utf8');
  const blocks = [...doc.matchAll(/^```html\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  if (blocks.length !== 1)
    throw new Error(`docs/browser.md has ${blocks.length} html blocks; the test serves its one page`);
  return blocks[0];
})();

let provider: StreamProvider;
let h: Harness;
let dir: string;
let stores: SluiceStores;
let app: App;
let inbox: Inbox;
let browser: { browser: BrowserContext; close(): Promise<void> };
const workers: ChildWorker[] = [];
/** The worker running now (one at a time: the first is killed mid-answer). */
let running: ChildWorker | undefined;
const sessions: SessionHandle[] = [];

// Conditions, not times: generous bounds for a loaded machine.
const until = <T>(fn: () => Promise<T> | T) => poll(fn, { timeoutMs: 120_000, intervalMs: 250 });

interface App extends ForwardingProxy {
  /** The session event streams asked for, by address (`?after=` when the page opened one again). */
  streams: string[];
  /** Ends every open event stream, and refuses the next one asked for (the browser then gives up on it). */
  cut(): void;
}

/**
 * The user's server as docs/browser.md asks for it: the page at `/`, everything else forwarded to
 * the inbox with the browser's Host kept (so the page's Origin is the inbox's), streamed unbuffered.
 */
async function startApp(): Promise<App> {
  const open = new Set<http.ServerResponse>();
  const streams: string[] = [];
  let refuse = 0;
  const proxy = await startForwardingProxy({
    serve(req, res) {
      const { pathname } = new URL(req.url ?? '/', 'http://app');
      if (req.method === 'GET' && pathname === '/') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
        return true;
      }
      if (req.headers.accept !== 'text/event-stream' || !pathname.endsWith('/events')) return false;
      streams.push(req.url ?? '');
      if (refuse > 0) {
        refuse--;
        res.writeHead(503, { 'content-type': 'text/plain' }).end('the proxy is restarting');
        return true;
      }
      open.add(res);
      res.on('close', () => open.delete(res));
      return false;
    },
  });
  return Object.assign(proxy, {
    streams,
    cut() {
      refuse = 1;
      for (const res of open) res.destroy();
    },
  });
}

function worker(): ChildWorker {
  const w = spawnWorker(CONFIG, h.taskQueue, dir, {
    SLUICE_TEST_DIR: dir,
    OPENAI_API_KEY: 'sk-test-browser-page',
    OPENAI_BASE_URL: `${provider.base}/v1`,
    ANTHROPIC_API_KEY: 'sk-ant-test-browser-page',
    ANTHROPIC_BASE_URL: provider.base,
  });
  workers.push(w);
  return w;
}

beforeAll(async () => {
  provider = await startStreamProvider();
  // This process starts sessions and serves the page; the workers are children, to be killed.
  h = await startHarness('browser-page', { tools: [] }, { autoStart: false });
  dir = path.join(h.stateDir, 'shared');
  fs.mkdirSync(dir, { recursive: true });
  stores = openStores({ stateDir: dir });
  app = await startApp();
  inbox = await startInbox({
    client: h.client,
    port: 0,
    refreshMs: 300,
    taskQueue: h.taskQueue,
    store: stores,
    allowedHosts: [`127.0.0.1:${app.port}`],
  });
  app.target = new URL(inbox.url);
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  for (const s of sessions)
    await s
      .cancel()
      .then(() => s.result())
      .catch(() => undefined);
  for (const w of workers) await w.kill();
  for (const close of [() => browser?.close(), () => inbox?.close(), () => app?.close(), () => stores?.close()])
    await close()?.catch(() => undefined);
  await h?.close();
  await provider?.close();
});

/** The example page for a session, once its stream is live; every text a step box shows is kept in `__shown`. */
async function openPage(s: SessionHandle): Promise<Page> {
  const page = await browser.browser.newPage();
  await page.addInitScript(() => {
    const w = window as unknown as { __shown: string[] };
    w.__shown = [];
    new MutationObserver(() => {
      for (const t of Array.from(document.querySelectorAll('.model .text'))) {
        const text = t.textContent ?? '';
        if (w.__shown[w.__shown.length - 1] !== text) w.__shown.push(text);
      }
    }).observe(document, { subtree: true, childList: true, characterData: true });
  });
  await page.goto(`${app.url}?session=${encodeURIComponent(s.sessionId)}`);
  await until(() => page.locator('#status').textContent()).toBe('live');
  return page;
}

async function say(page: Page, text: string): Promise<void> {
  await page.fill('#message', text);
  await page.click('#send');
  await until(() => page.locator('#said').textContent()).toBe('Queued: the session answers it in its turn.');
}

async function start(model: string, extra: Partial<SessionRequest> = {}) {
  const s = await startSession(h.client, {
    sessionId: `browser-page-${process.pid}-${Date.now()}-${sessions.length}`,
    model,
    ...extra,
  });
  sessions.push(s);
  return s;
}

describe('the example page of docs/browser.md', () => {
  it('loads sluice/browser from the inbox: a script of its origin, for no other origin', async () => {
    const r = await fetch(`${app.url}assets/sluice-browser.js`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
    expect(await r.text()).toMatch(/export\s*\{[^}]*\bconnectSession\b/);
  });

  it('streams a turn; its worker killed mid-answer, the step runs again elsewhere and the text shows once', {
    timeout: 300_000,
  }, async () => {
    const model = `gate-browser-${process.pid}`;
    const first = worker();
    running = first;
    await first.ready;
    // A local step: the worker killed is the one running it, and the next runs it from attempt 1.
    const s = await start(`anthropic:${model}`, { modelCall: { local: true } });
    const page = await openPage(s);
    await say(page, 'say hello');
    const step = page.locator('.model[data-step="1:1"]');
    await until(() => step.locator('.text').textContent()).toBe(ANSWER[0]);
    expect(await step.getAttribute('class')).toContain('streaming');
    expect(await step.getAttribute('data-recorded')).toBe('false');

    await first.kill('SIGKILL');
    const second = worker();
    running = second;
    await second.ready;
    await eventually('the step run again on the second worker', () => provider.requests(model) >= 2, {
      timeoutMs: 150_000,
    });
    provider.release(model);

    await until(() => page.locator('.turn-end').allTextContents()).toEqual(['turn 1 ended: done']);
    await until(() => step.getAttribute('data-recorded')).toBe('true');
    expect(await step.locator('.text').textContent()).toBe(ANSWER.join(''));
    expect(await step.getAttribute('class')).not.toContain('streaming');
    expect(await page.locator('.model').count()).toBe(1);
    expect(await page.locator('.user').allTextContents()).toEqual(['say hello']);
    // Everything the box ever showed was the answer so far: never a piece twice, never a lost run's.
    const shown = await page.evaluate(() => (window as unknown as { __shown: string[] }).__shown);
    expect(shown).toContain(ANSWER[0]);
    expect(shown.filter((t) => !ANSWER.join('').startsWith(t))).toEqual([]);
    await page.close();
  });

  it('a stream cut mid-answer and refused once: the page opens it again after the last event it had, nothing twice', {
    timeout: 240_000,
  }, async () => {
    running ??= worker();
    await running.ready;
    const model = `gate-browser-cut-${process.pid}`;
    const s = await start(`openai:${model}`);
    const page = await openPage(s);
    await say(page, 'say hello');
    const step = page.locator('.model[data-step="1:1"]');
    await until(() => step.locator('.text').textContent()).toBe(ANSWER[0]);
    const before = app.streams.length;
    app.cut();
    // The browser tries again by itself and is refused; the client asks again later, from where it was.
    await until(() => app.streams.slice(before).some((u) => /[?&]after=/.test(u))).toBe(true);
    await until(() => page.locator('#status').textContent()).toBe('live');
    provider.release(model);
    await until(() => page.locator('.turn-end').allTextContents()).toEqual(['turn 1 ended: done']);
    expect(await step.locator('.text').textContent()).toBe(ANSWER.join(''));
    expect(await page.locator('.user').allTextContents()).toEqual(['say hello']);
    expect(await page.locator('.model').count()).toBe(1);
    const shown = await page.evaluate(() => (window as unknown as { __shown: string[] }).__shown);
    expect(shown.filter((t) => !ANSWER.join('').startsWith(t))).toEqual([]);
    await page.close();
  });

  it('shows a call that asks, and approves it from the page under the name typed there', {
    timeout: 240_000,
  }, async () => {
    running ??= worker();
    await running.ready;
    const s = await start('scripted');
    const page = await openPage(s);
    await page.fill('#name', 'alice');
    await say(page, 'publish');
    const ask = page.locator('#approvals .ask');
    await ask.locator('button.approve').waitFor({ timeout: 120_000 });
    const [pending] = await s.pendingApprovals();
    expect(await ask.getAttribute('data-approval-id')).toBe(pending.approvalId);
    expect(await ask.textContent()).toContain('"what": "notes"');
    await ask.locator('button.approve').click();

    await until(() => page.locator('.turn-end').allTextContents()).toEqual(['turn 1 ended: done']);
    expect(await page.locator('.result').allTextContents()).toContain('allowed-once by alice');
    expect(await page.locator('.model[data-step="1:2"] .text').textContent()).toBe('published notes');
    await until(() => page.locator('#approvals .ask').count()).toBe(0);
    await page.close();
  });
});
