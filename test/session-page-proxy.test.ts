// The session page behind a sign-in proxy, in a real headless Chromium against the real dev
// server: a small reverse proxy in the test stands for the one a team puts in front of the inbox.
// It strips what the browser sends under the approver header and the proxy-secret header, adds
// its own user's name and the secret it shares with the inbox, and forwards everything else as is
// (the page, its API calls, its event streams). Through it the page shows the session and its
// approval card, and a click records the decision under the proxy's user, not under a name the
// browser tries; straight to the inbox, without the secret, the same decision is refused and the
// call stays asked. "Allow for this session" narrowed by a pin, given through the proxy, lets a
// later call the pin covers run unasked, and one it does not cover asks again.
import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { PROXY_SECRET_HEADER } from '../servers/inbox/server';
import type { SessionHandle } from '../client/session';
import { poll } from './eventually';
import { type ForwardingProxy, startForwardingProxy } from './forwarding-proxy';
import { useSessionPage } from './session-page-setup';

const USER_HEADER = 'X-Forwarded-User';
const PROXY_SECRET = randomBytes(24).toString('base64');
/** Whom the proxy signed in: every request through it carries this name. */
const PROXY_USER = 'carol@example.com';

let proxy: ForwardingProxy;

// Conditions, not times: generous bounds for a machine at load 16.
const eventually = <T>(fn: () => Promise<T> | T) => poll(fn, { timeoutMs: 90_000, intervalMs: 250 });

/**
 * A sign-in proxy as docs/approvals.md asks for one: it replaces the approver and secret headers
 * whatever the browser sent.
 */
function startProxy(user: string, secret: string): Promise<ForwardingProxy> {
  return startForwardingProxy({
    headers(incoming) {
      const headers = { ...incoming };
      delete headers[USER_HEADER.toLowerCase()];
      delete headers[PROXY_SECRET_HEADER.toLowerCase()];
      headers[USER_HEADER.toLowerCase()] = user;
      headers[PROXY_SECRET_HEADER.toLowerCase()] = secret;
      return headers;
    },
  });
}

// The proxy first: the inbox must allow the Host the browser reaches it under.
const fx = useSessionPage(
  'session-page-proxy',
  async () => {
    proxy = await startProxy(PROXY_USER, PROXY_SECRET);
    // The proxy runs on this machine (the default trusted addresses: loopback), so the address
    // alone cannot tell it from any other local process: only the shared secret does.
    return {
      inbox: { trustedUserHeader: USER_HEADER, proxySecret: PROXY_SECRET, allowedHosts: [`127.0.0.1:${proxy.port}`] },
    };
  },
  (setup) => {
    proxy.target = new URL(setup.inbox.url);
  },
);
// Registered after the set-up, so it runs before the set-up closes (after-hooks run in reverse).
afterAll(() => proxy?.close());
const start = () => fx.start();

/** The session page through the proxy, live and signed in as the proxy's user. */
async function open(s: SessionHandle): Promise<Page> {
  const page = await fx.browser.newPage();
  // What a browser might try: a name of its own in the approver header. The proxy replaces it.
  await page.setExtraHTTPHeaders({ [USER_HEADER]: 'mallory', [PROXY_SECRET_HEADER]: 'guessed-guessed-guessed' });
  await page.goto(`${proxy.url}sessions/${encodeURIComponent(s.sessionId)}`);
  await eventually(() => page.locator('#me').textContent()).toBe(`Signed in as ${PROXY_USER}`);
  await eventually(() => page.locator('#conn').textContent()).toBe('live');
  return page;
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill('#message', text);
  await page.click('#send');
  await eventually(() => page.locator('#message').inputValue()).toBe('');
}

describe('the session page behind a sign-in proxy', () => {
  it('shows the session and its ask; straight to the inbox the decision is refused, through the proxy it is recorded under the proxy user', async () => {
    const s = await start();
    const page = await open(s);
    await send(page, 'publish');
    // The session as the page shows it through the proxy: the message, then the call's card.
    await eventually(() => page.locator('.msg.user').allTextContents()).toEqual(['you · turn 1publish']);
    const call = page.locator('article.call[data-turn="1"][data-call-id="p"]');
    const ask = call.locator('.ask');
    await ask.locator('button.approve').waitFor({ timeout: 90_000 });
    expect(await call.getAttribute('data-state')).toBe('asked');
    expect(await call.locator('.call-head .title').textContent()).toBe('Publish notes');
    const [pending] = await s.pendingApprovals();
    expect(await ask.getAttribute('data-digest')).toBe(pending.argsDigest);

    // Straight to the inbox, from this machine, with a name in the approver header but not the
    // proxy's secret: the page itself is refused, and so is the very decision the card would send.
    const bare = await fx.browser.newPage();
    const refusedPage = await bare.goto(`${fx.inbox.url}sessions/${encodeURIComponent(s.sessionId)}`);
    expect(refusedPage?.status()).toBe(403);
    const straight = await bare.evaluate(
      async ({ header, body }) => {
        const r = await fetch('/api/decide', {
          method: 'POST',
          headers: { 'content-type': 'application/json', [header]: 'mallory' },
          body: JSON.stringify(body),
        });
        return { status: r.status, body: await r.json() };
      },
      {
        header: USER_HEADER,
        body: {
          workflowId: pending.workflowId,
          approvalId: pending.approvalId,
          argsDigest: pending.argsDigest,
          decision: 'approve',
          by: 'mallory',
        },
      },
    );
    expect(straight.status).toBe(403);
    expect(straight.body.message).toContain('does not carry the secret the inbox shares with its proxy');
    await bare.close();
    // Nothing was decided: the ask is still pending, for the same call.
    expect((await s.pendingApprovals()).map((p) => p.approvalId)).toEqual([pending.approvalId]);
    expect(await call.getAttribute('data-state')).toBe('asked');

    // Through the proxy: a click approves, under the proxy's user.
    await ask.locator('button.approve').click();
    await eventually(() => call.getAttribute('data-state')).toBe('done');
    expect(await call.locator('.approval').textContent()).toContain(`approved by ${PROXY_USER}`);
    expect(await call.locator('.result pre').textContent()).toBe('published notes');
    await eventually(() => page.locator('.turn-end').allTextContents()).toEqual(['turn 1 ended: done']);
    // The record: one decision, by the proxy's user (not the name the browser put in the header).
    const decided = (await fx.stores.events(s.sessionId)).filter((e) => e.type === 'approval/decided');
    expect(decided.map((e) => e.data)).toMatchObject([
      { id: pending.approvalId, callId: 'p', outcome: 'allowed-once', by: PROXY_USER },
    ]);
    await page.close();
  }, 240_000);

  it('"Allow for this session" with a pin: the next call the pin covers runs unasked, one it does not cover asks again', async () => {
    const s = await start();
    const page = await open(s);
    await send(page, 'publish:notes');
    const first = page.locator('article.call[data-turn="1"][data-call-id="p"]');
    const ask = first.locator('.ask');
    await ask.locator('button.session').waitFor({ timeout: 90_000 });
    // Narrow the grant to publications named "notes" or "notes …" (a prefix pin ends at a word),
    // prefilled with this call's value.
    await ask.locator('details.pins summary').click();
    const pin = ask.locator('details.pins label[data-path="what"]');
    await pin.locator('input.pin-on').check();
    expect(await pin.locator('input.pin-prefix').inputValue()).toBe('notes');
    await ask.locator('button.session').click();
    await eventually(() => first.getAttribute('data-state')).toBe('done');
    expect(await first.locator('.approval').textContent()).toContain(`allowed for this session by ${PROXY_USER}`);
    await eventually(() => page.locator('.turn-end').allTextContents()).toEqual(['turn 1 ended: done']);

    // Covered by the pin: runs on the grant, nobody asked.
    await send(page, 'publish:notes for May');
    const covered = page.locator('article.call[data-turn="2"][data-call-id="p"]');
    await eventually(() => covered.getAttribute('data-state')).toBe('done');
    expect(await covered.locator('.result pre').textContent()).toBe('published notes for May');
    expect(await covered.locator('.ask').count()).toBe(0);
    await eventually(() => page.locator('.turn-end').allTextContents()).toEqual([
      'turn 1 ended: done',
      'turn 2 ended: done',
    ]);

    // Not covered: it asks again; denied from the page, under the proxy's user.
    await send(page, 'publish:drafts');
    const outside = page.locator('article.call[data-turn="3"][data-call-id="p"]');
    await outside.locator('.ask button.deny').waitFor({ timeout: 90_000 });
    expect(await outside.locator('.call-head .title').textContent()).toBe('Publish drafts');
    await outside.locator('.ask button.deny').click();
    await eventually(() => page.locator('.turn-end').count()).toBe(3);

    const decided = (await fx.stores.events(s.sessionId)).filter((e) => e.type === 'approval/decided');
    expect(decided.map((e) => e.data)).toMatchObject([
      {
        outcome: 'allowed-session',
        by: PROXY_USER,
        grant: { toolName: 'publish', pins: [{ path: 'what', prefix: 'notes' }], by: PROXY_USER },
      },
      { outcome: 'rejected', by: PROXY_USER },
    ]);
    await page.close();
  }, 240_000);
});
