// The session page of the inbox in a real headless Chromium, against the real dev server and a
// local provider that streams: the model's text shows before the step ends (the provider holds
// the rest back until the page has shown the first piece), a page that joins late shows the
// earlier events once, a call is approved from the page and its result shows in its card, a
// message typed in the page starts a turn, and Interrupt ends one. A step under way says so (in
// words, for a screen reader too); a waiting card is the state line's "waiting for approval" at
// once; new content scrolls into view while the reader is at the end, and only then.
// SLUICE_SESSION_SCREENSHOT=docs/images/session-page.png also saves a picture of the page (and
// SLUICE_SESSION_STREAMING_SCREENSHOT, SLUICE_SESSION_SCROLL_SCREENSHOT of a step streaming, and of
// a reader scrolled up told of more below).
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { poll } from './eventually';
import { useSessionPage } from './session-page-setup';
import { ANSWER } from './stream-provider';

const fx = useSessionPage('session-page', { provider: true });
const { start, open } = fx;

const stepText = (page: Page, turn: number, step: number) =>
  page.locator(`.msg.model[data-turn="${turn}"][data-step="${step}"] .text`).textContent();

describe('the session page', () => {
  it('shows the model text as it streams, before the step ends; a page that joins late shows what came before once', async () => {
    const gate = `gate-page-${process.pid}`;
    const s = await start(`openai:${gate}`);
    const page = await open(s);
    const turn = s.send('say hello');
    // The provider sends the rest only once released: the first piece on the page means the step still runs.
    await poll(() => stepText(page, 1, 1)).toBe(ANSWER[0]);
    const box = page.locator('.msg.model[data-turn="1"][data-step="1"]');
    expect(await box.getAttribute('data-recorded')).toBeNull();
    // Streaming shows: the words in a live region, the box busy, a cursor after the text.
    expect(await box.getAttribute('class')).toContain('streaming');
    expect(await box.getAttribute('aria-busy')).toBe('true');
    expect(await box.locator('.answering').textContent()).toBe('answering…');
    expect(await box.locator('.answering').getAttribute('aria-live')).toBe('polite');
    expect(await box.locator('.text').evaluate((t) => getComputedStyle(t, '::after').content)).toBe('"▍"');
    if (process.env.SLUICE_SESSION_STREAMING_SCREENSHOT)
      await page.screenshot({ path: process.env.SLUICE_SESSION_STREAMING_SCREENSHOT });

    const late = await open(s);
    await poll(() => stepText(late, 1, 1)).toBe(ANSWER[0]);
    expect(await late.locator('.msg.user').allTextContents()).toEqual(['you · turn 1say hello']);

    fx.provider.release(gate);
    expect(await turn).toMatchObject({ reason: 'done', text: ANSWER.join('') });
    for (const p of [page, late]) {
      await poll(() => p.locator('.turn-end').allTextContents()).toEqual(['turn 1 ended: done']);
      expect(await stepText(p, 1, 1)).toBe(ANSWER.join(''));
      // Recorded: no longer streaming.
      const done = p.locator('.msg.model[data-turn="1"][data-step="1"]');
      expect(await done.getAttribute('class')).not.toContain('streaming');
      expect(await done.getAttribute('aria-busy')).toBe('false');
      expect(await done.locator('.answering').textContent()).toBe('');
      expect(await done.locator('.text').evaluate((t) => getComputedStyle(t, '::after').content)).toBe('none');
      expect(await p.locator('.msg.model').count()).toBe(1);
      expect(await p.locator('.msg.user').count()).toBe(1);
      await p.close();
    }
  });

  it('a message typed in the page starts a turn; a call it makes is approved from the page and its result shows', async () => {
    const s = await start('scripted');
    const page = await open(s, 'alice');
    await page.fill('#message', 'publish');
    await page.click('#send');
    // (The "Queued" note goes when the answer comes, which here may be at once: the no-worker
    // test in session-page-approvals.test.ts sees it shown.)
    await poll(() => page.locator('.msg.user').allTextContents()).toEqual(['you · turn 1publish']);
    const card = page.locator('article.call[data-call-id="p"]');
    await card.locator('.ask button.approve').waitFor();
    expect(await card.getAttribute('data-state')).toBe('asked');
    // The card waits: so does the session, says the state line, without waiting for a poll.
    expect(await page.locator('#state').textContent()).toMatch(/^waiting for approval/);
    expect(await card.locator('.call-head .title').textContent()).toBe('Publish notes');
    // The digest the page sends is the one it shows, as in the inbox.
    const pending = await s.pendingApprovals();
    expect(await card.locator('.ask').getAttribute('data-digest')).toBe(pending[0].argsDigest);
    await card.locator('.ask button.approve').click();
    await poll(() => card.getAttribute('data-state')).toBe('done');
    expect(await card.locator('.result pre').textContent()).toBe('published notes');
    // The generic completed card (no presentResult) does not undo the call's own title.
    expect(await card.locator('.call-head .title').textContent()).toBe('Publish notes');
    expect(await card.locator('.approval').textContent()).toContain('approved by alice');
    await poll(() => stepText(page, 1, 2)).toBe('published notes');
    await poll(() => page.locator('#state').textContent()).toMatch(/^idle · turn 1 · step 2/);
    expect(await page.locator('#sent').textContent()).toBe('');
    if (process.env.SLUICE_SESSION_SCREENSHOT)
      await page.screenshot({ path: process.env.SLUICE_SESSION_SCREENSHOT, fullPage: true });
    await page.close();
  });

  it('new content scrolls into view while the reader is at the end; a reader who scrolled up stays, told there is more', async () => {
    const s = await start('scripted');
    const page = await open(s, 'alice');
    await page.setViewportSize({ width: 900, height: 500 });
    const gap = () =>
      page.evaluate(() => document.documentElement.scrollHeight - (window.scrollY + window.innerHeight));
    // Eight steps, each a message and a card: far taller than the window.
    await page.fill('#message', 'long:8');
    await page.click('#send');
    await poll(() => page.locator('.turn-end').allTextContents()).toEqual(['turn 1 ended: done']);
    expect(await page.evaluate(() => window.scrollY)).toBeGreaterThan(0);
    await poll(gap).toBeLessThanOrEqual(1);
    expect(await page.locator('#below').isHidden()).toBe(true);

    // Scrolled up to read: the next turn does not pull the reader down; a button offers it.
    await page.evaluate(() => window.scrollTo(0, 0));
    await poll(() => page.evaluate(() => window.scrollY)).toBe(0);
    await s.send('long:2');
    await poll(() => page.locator('.turn-end').count()).toBe(2);
    expect(await page.evaluate(() => window.scrollY)).toBe(0);
    await page.locator('#below').waitFor({ state: 'visible' });
    if (process.env.SLUICE_SESSION_SCROLL_SCREENSHOT)
      await page.screenshot({ path: process.env.SLUICE_SESSION_SCROLL_SCREENSHOT });
    await page.click('#below');
    await poll(gap).toBeLessThanOrEqual(1);
    expect(await page.locator('#below').isHidden()).toBe(true);
    await page.close();
  });

  it('Interrupt ends the turn under way', async () => {
    const s = await start('scripted');
    const page = await open(s, 'alice');
    await page.fill('#message', 'slow-model:60000');
    await page.click('#send');
    await poll(() => page.locator('#state').textContent()).toContain('model');
    await page.click('#interrupt');
    await poll(() => page.locator('.turn-end').allTextContents()).toEqual(['turn 1 ended: interrupted']);
    await page.close();
  });
});
