// The inbox's reconcile card and Reassign button, clicked in a real headless Chromium with every
// worker down (issue 27 item 3): the card's decision is queued and applied when a worker starts,
// "done" without evidence is refused on the card, and a reassignment sent from the page with no
// worker up moves the card's assignee once one runs and is recorded in the batch.
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Inbox } from '../servers/inbox/server';
import { defineConfig } from '../define/config';
import { poll } from './eventually';
import { batch, type Harness, text } from './harness';
import { type InboxSetup, startInboxSetup } from './inbox-setup';
import { openReconcileCard } from './reconcile-card';
import { deployTool } from './fixtures/deploy-tool';

let setup: InboxSetup | undefined;
let h: Harness;
let inbox: Inbox;
let browser: BrowserContext;

beforeAll(async () => {
  setup = await startInboxSetup(
    'inbox-reconcile-page',
    defineConfig({
      tools: [deployTool({ approvalLifecycle: { assignee: 'ops' } })],
    }),
  );
  ({ h, inbox, browser } = setup);
}, 120_000);
afterAll(() => setup?.close());

// Conditions, not times: generous bounds for a machine at load 16.
const slow = { timeoutMs: 90_000, intervalMs: 250 };

async function openInbox(): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(inbox.url);
  await page.fill('#approver', 'alice');
  return page;
}

/** Runs `body` with the worker stopped, and starts it again whatever happens. */
async function withoutWorker(body: () => Promise<void>): Promise<void> {
  await h.stopWorker();
  try {
    await body();
  } finally {
    await h.startWorker();
  }
}

describe('the inbox with every worker down, in Chromium', () => {
  it("the reconcile card refuses done without evidence, queues a decision, and the card's workflow applies it when a worker starts", async () => {
    const card = await openReconcileCard(h, `page-${process.pid}`);
    const page = await openInbox();
    const shown = page.locator(`article.card.reconcile[data-approval-id="${card.reconcileId}"]`);
    await shown.waitFor({ timeout: 90_000 });
    expect(await shown.locator('.title').textContent()).toBe('Outcome unknown: Deploy prod');
    expect(await shown.locator('.why').textContent()).toBe('What happened: the worker running it was lost');
    expect(await shown.locator('button').allTextContents()).toEqual(['Mark done', 'Not done', 'Run again']);

    await withoutWorker(async () => {
      // Done needs evidence: the card says so and sends nothing.
      await shown.locator('button[data-decision="done"]').click();
      expect(await shown.locator('.status').textContent()).toBe(
        'Marking it done needs evidence: what shows the call ran.',
      );
      await shown.locator('textarea.evidence').fill('release 42 is live');
      await shown.locator('button[data-decision="done"]').click();
      await poll(() => shown.locator('.status').textContent(), slow).toBe(
        "Queued: done by alice. No worker is running this card's workflow; it applies the decision when one starts.",
      );
      expect(await shown.getAttribute('data-state')).toBe('queued');
      expect(await shown.locator('button').count()).toBe(0);
      // Nothing applied while no worker runs.
      expect((await h.client.readApprovals(card.workflowId)).running).toBe(true);
    });
    expect(await card.handle.result()).toMatchObject({ outcome: 'done', by: 'alice', evidence: 'release 42 is live' });
    await page.close();
  }, 240_000);

  it('Reassign on a card with no worker up: the card shows the new assignee once a worker runs, and the batch records who reassigned', async () => {
    const handle = await h.client.startBatch(batch([{ id: 'd', name: 'deploy', args: { env: 'eu' } }]));
    const page = await openInbox();
    const shown = page.locator(`article.card[data-workflow-id="${handle.workflowId}"][data-call-id="d"]`);
    await shown.waitFor({ timeout: 90_000 });
    await poll(() => shown.locator('.assignee').textContent(), slow).toBe('Assigned to ops');

    await withoutWorker(async () => {
      // Who it goes to is needed first.
      await shown.locator('button.reassign').click();
      expect(await shown.locator('.status').textContent()).toBe('Say who it goes to.');
      await shown.locator('input.reassign-to').fill('dana');
      await shown.locator('input.reason').fill('on call');
      await shown.locator('button.reassign').click();
      await poll(() => shown.locator('.status').textContent(), slow).toBe('Reassigned to dana by alice.');
      expect(await shown.getAttribute('data-reassigned')).toBe('dana');
    });
    // The signal waited for the worker; the memo, then the card, show the new assignee.
    await poll(() => shown.locator('.assignee').textContent(), slow).toBe('Assigned to dana');
    await shown.locator('button.approve').click();
    const out = await handle.result();
    expect(text(out.results[0].result)).toBe('deployed eu');
    expect(out.events.find((e) => e.type === 'approval/reassigned')?.data).toMatchObject({
      from: 'ops',
      to: 'dana',
      by: 'alice',
      reason: 'on call',
    });
    await poll(() => shown.getAttribute('data-state'), slow).toBe('completed');
    await page.close();
  }, 240_000);
});
