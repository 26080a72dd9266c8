// The approval inbox in a real headless Chromium: asks appear without a reload, a click decides
// through the update, and each card ends in the form the batch gave it (completed, denied,
// expired, refused). SLUICE_INBOX_SCREENSHOT=docs/inbox.png also saves a picture of the page.
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInbox, type Inbox } from '../servers/inbox/server';
import demoConfig from '../sluice.config';
import { launchBrowser } from './chromium';
import { batch, startHarness, text, type Harness } from './harness';
import { pendingApproval, poll } from './eventually';

const email = {
  name: 'send_email',
  args: { to: 'ada@example.com', subject: 'Quarterly numbers', body: 'Revenue is up 12%.' },
};

/** The secret the inbox shares with its proxy; the test plays the proxy. */
const PROXY_SECRET = 'a-secret-shared-with-the-proxy-in-the-test';
let h: Harness;
let inbox: Inbox;
let proxied: Inbox;
let stale: Inbox;
let browser: BrowserContext;
let closeBrowser: (() => Promise<void>) | undefined;

beforeAll(async () => {
  h = await startHarness('inbox', demoConfig);
  inbox = await startInbox({ client: h.client, port: 0, refreshMs: 300, taskQueue: h.taskQueue });
  proxied = await startInbox({
    client: h.client,
    port: 0,
    refreshMs: 300,
    trustedUserHeader: 'X-Forwarded-User',
    proxySecret: PROXY_SECRET,
    taskQueue: h.taskQueue,
  });
  // A page that has not refreshed since it loaded: the card it shows may have expired meanwhile.
  stale = await startInbox({ client: h.client, port: 0, refreshMs: 600_000, taskQueue: h.taskQueue });
  ({ browser, close: closeBrowser } = await launchBrowser());
});

afterAll(async () => {
  await closeBrowser?.();
  await Promise.all([inbox?.close(), proxied?.close(), stale?.close()]);
  await h?.close();
});

async function open(url: string, name?: string): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(url);
  if (name) await page.fill('#approver', name);
  return page;
}

const cardOf = (page: Page, workflowId: string, callId: string) =>
  page.locator(`article.card[data-workflow-id="${workflowId}"][data-call-id="${callId}"]`);

const waitPending = (workflowId: string, callId: string) =>
  pendingApproval(h.client, workflowId, (p) => p.callId === callId);

describe('approval inbox page', () => {
  it('shows a new ask without a reload; a click approves it and the card turns into its completed form', async () => {
    await h.client.runBatch(
      batch([
        { id: 'w', name: 'get_weather', args: { city: 'Lisbon' } },
        { id: 'q', name: 'fetch_quote', args: { symbol: 'TMPRL' } },
      ]),
    );
    const page = await open(inbox.url, 'alice');
    await poll(() => page.locator('#conn').textContent()).toBe('live');

    const handle = await h.client.startBatch(
      batch([{ id: 'mail', ...email }], { options: { approvalTimeoutMs: 120_000 } }),
    );
    const card = cardOf(page, handle.workflowId, 'mail');
    await card.waitFor();
    expect(await card.getAttribute('data-state')).toBe('pending');
    expect(await card.locator('h3').textContent()).toBe('Send email to ada@example.com');
    expect(await card.locator('.summary').textContent()).toBe('Quarterly numbers');
    expect(await card.locator('table.fields').textContent()).toContain('Revenue is up 12%.');
    // The expiry is workflow time and the page shows it against the server clock: a second either way.
    expect(await card.locator('.countdown').textContent()).toMatch(/^(1m \d+s|2m [01]s|\d+s) left$/);
    expect(await card.locator('.where').textContent()).toContain('turn 1 · step 1');
    const pending = await waitPending(handle.workflowId, 'mail');
    expect(await card.locator('.digest-value').textContent()).toBe(pending.argsDigest);

    if (process.env.SLUICE_INBOX_SCREENSHOT) {
      await page.waitForSelector('.batch .call');
      await page.screenshot({ path: process.env.SLUICE_INBOX_SCREENSHOT, fullPage: true });
    }

    await card.locator('button.approve').click();
    await poll(() => card.getAttribute('data-state')).toBe('completed');
    expect(await card.locator('h3').textContent()).toBe('Email sent to ada@example.com');
    expect(await card.locator('.status').textContent()).toBe('approved by alice');
    expect(await card.locator('pre.output').textContent()).toContain('sent to ada@example.com');

    const out = await handle.result();
    expect(text(out.results[0].result)).toContain('sent to ada@example.com');
    expect(out.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({
      outcome: 'allowed-once',
      by: 'alice',
    });

    // The session's page: its calls as cards, read here from Temporal (this inbox has no store).
    await card.locator('a.session').click();
    await page.waitForURL(/\/sessions\//);
    const call = page.locator('article.call[data-call-id="mail"]');
    await poll(() => call.getAttribute('data-state')).toBe('done');
    expect(await call.locator('.approval').textContent()).toContain('approved by alice');
    expect(await call.locator('.result').textContent()).toContain('sent to ada@example.com');
    expect(await page.locator('article.call').count()).toBe(1);
    await page.close();
  });

  it('denies with a reason, under the name a trusted proxy header gives', async () => {
    const page = await browser.newPage();
    // What the proxy adds to every request: the user's name and the secret it shares with the inbox.
    await page.setExtraHTTPHeaders({ 'X-Forwarded-User': 'carol', 'X-Sluice-Proxy-Secret': PROXY_SECRET });
    await page.goto(proxied.url);
    await poll(() => page.locator('#me').textContent()).toBe('Signed in as carol');

    const handle = await h.client.startBatch(
      batch([{ id: 'mail', ...email }], { options: { approvalTimeoutMs: 120_000 } }),
    );
    const card = cardOf(page, handle.workflowId, 'mail');
    await card.waitFor();
    await card.locator('input.reason').fill('not to customers on a Friday');
    await card.locator('button.deny').click();

    await poll(() => card.getAttribute('data-state')).toBe('completed');
    expect(await card.locator('.status').textContent()).toBe('denied by carol: not to customers on a Friday');
    expect(await card.locator('.badge').textContent()).toBe('failed');
    const out = await handle.result();
    expect(text(out.results[0].result)).toContain('rejected by carol: not to customers on a Friday');
    await page.close();

    // Straight to the proxied inbox, with neither the header nor the proxy's secret: no decision at all.
    const bare = await browser.newPage();
    await bare.goto(proxied.url);
    const res = await bare.evaluate(() =>
      fetch('/api/decide', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ workflowId: 'w', approvalId: 'a', argsDigest: 'd', decision: 'approve', by: 'mallory' }),
      }).then((r) => r.status),
    );
    expect(res).toBe(403);
    await bare.close();
  });

  it('deciding an approval that expired meanwhile shows that it expired', async () => {
    // The one inbox test about expiry, so a real deny timeout: long enough for a loaded machine to
    // open the page on the pending ask (which the test needs before the ask expires), short
    // enough to wait out. Nothing is asserted about how long anything took.
    const handle = await h.client.startBatch(
      batch([{ id: 'mail', ...email }], { options: { approvalTimeoutMs: 8_000 } }),
    );
    await waitPending(handle.workflowId, 'mail');
    const page = await open(stale.url, 'dave');
    const card = cardOf(page, handle.workflowId, 'mail');
    await card.waitFor();
    const out = await handle.result(); // the deny timeout passed: the call was denied
    expect(out.results[0].result.isError).toBe(true);
    expect(await card.getAttribute('data-state')).toBe('pending'); // this page has not refreshed

    await card.locator('button.approve').click();
    // The answer says it expired; once the page also learns how the batch ended, the card shows
    // its completed form and keeps saying what became of this decision.
    await poll(() => card.getAttribute('data-state')).toBe('completed');
    expect(await card.getAttribute('data-outcome')).toBe('expired');
    expect(await card.locator('h3').textContent()).toBe('Email to ada@example.com not sent');
    expect(await card.locator('.status').textContent()).toBe('expired (deny timeout), denied');
    expect(await card.locator('.note').textContent()).toBe(
      'Your decision: Expired: nobody decided before the deny timeout, so the call was denied. Your decision was not applied.',
    );
    await page.close();
  });

  it('refuses a decision whose digest is not that of the arguments pending, and records the refusal', async () => {
    const page = await open(inbox.url, 'erin');
    const handle = await h.client.startBatch(
      batch([{ id: 'mail', ...email }], { options: { approvalTimeoutMs: 120_000 } }),
    );
    const card = cardOf(page, handle.workflowId, 'mail');
    await card.waitFor();
    const shown = (await card.getAttribute('data-digest'))!;
    // As if the page had rendered other arguments than the ones the call runs with.
    await card.evaluate((el) => el.setAttribute('data-digest', `sha256:${'ab'.repeat(32)}`));
    await card.locator('button.approve').click();

    await poll(() => card.getAttribute('data-state')).toBe('refused');
    expect(await card.locator('.status').textContent()).toMatch(
      /^Refused: the arguments you were shown \(digest sha256:(ab)+\) are not the ones this call would run with/,
    );
    expect((await h.client.batchState(handle.workflowId)).pending).toHaveLength(1);

    await card.evaluate((el, d) => el.setAttribute('data-digest', d), shown);
    await card.locator('button.approve').click();
    await poll(() => card.getAttribute('data-state')).toBe('completed');
    const out = await handle.result();
    expect(out.events.filter((e) => e.type === 'approval/refused').map((e) => e.data)).toEqual([
      expect.objectContaining({
        code: 'digest-mismatch',
        via: 'update',
        by: 'erin',
        callId: 'mail',
        decision: 'approve',
      }),
    ]);
    expect(out.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({
      outcome: 'allowed-once',
      by: 'erin',
    });
    await page.close();
  });
});
