// An unknown outcome on the session page, in a real headless Chromium against the real dev server:
// a session's at-most-once call is lost (its body runs past its time limit), the batch ends it
// OUTCOME_UNKNOWN and opens a reconcile card (workflows/reconcile.ts), and the page shows that
// card in the call's own card, with the inbox's buttons and rules: "Mark done" needs evidence,
// and a decision sent from the page settles the card's workflow under the name typed on the page.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../agent/adapters/scripted';
import type { ModelRequest } from '../agent/models';
import { defineConfig, defineTool } from '../define/config';
import { poll } from './eventually';
import sessionConfig from './fixtures/session.config';
import { useSessionPage } from './session-page-setup';

// Conditions, not times: generous bounds for a machine at load 16.
const eventually = <T>(fn: () => Promise<T> | T) => poll(fn, { timeoutMs: 90_000, intervalMs: 250 });

/** The model asks for one deploy, then says the outcome is unknown. */
const deployModel = scriptedModel((req: ModelRequest) =>
  req.step === 1
    ? { text: 'Deploying.', calls: [{ id: 'd', name: 'deploy', args: { env: 'prod' } }] }
    : { text: 'Whether prod was deployed is unknown; an operator was asked.' },
);

const fx = useSessionPage('session-page-reconcile', {
  config: defineConfig({
    ...sessionConfig,
    tools: [
      ...sessionConfig.tools,
      defineTool({
        name: 'deploy',
        description: 'Deploys: must never run twice.',
        input: z.object({ env: z.string() }),
        atMostOnce: true,
        // The body hangs until its time limit: the attempt is lost after it may have started.
        timeoutMs: 3_000,
        execute: (_args, ctx) =>
          new Promise<string>((_resolve, reject) =>
            ctx.signal.addEventListener('abort', () => reject(new Error('cut'))),
          ),
      }),
    ],
    models: { ...sessionConfig.models, deployer: deployModel },
  }),
});

describe('an unknown outcome on the session page', () => {
  it("shows the reconcile card in its call's card; done needs evidence; the decision sent from the page settles it", async () => {
    const s = await fx.start('deployer');
    const page: Page = await fx.open(s, 'alice');
    expect((await s.send('deploy prod')).reason).toBe('done');
    const call = page.locator('article.call[data-call-id="d"]');
    await eventually(() => call.getAttribute('data-state')).toBe('failed');
    expect(await call.locator('.result pre').textContent()).toContain('The outcome of this deploy call is unknown');

    // The card the inbox shows, inside the call's card on the session page.
    const card = call.locator('.approval article.card.reconcile');
    await card.waitFor({ timeout: 90_000 });
    expect(await card.locator('.title').textContent()).toBe('Outcome unknown: deploy');
    expect(await card.locator('.why').textContent()).toContain(
      'deploy started, then it did not finish within its time limit',
    );
    expect(await card.locator('button').allTextContents()).toEqual(['Mark done', 'Not done', 'Run again']);
    const workflowId = await card.getAttribute('data-workflow-id');
    expect(workflowId).toBeTruthy();

    // Done needs evidence: the card says so and sends nothing.
    await card.locator('button[data-decision="done"]').click();
    expect(await card.locator('.status').textContent()).toBe(
      'Marking it done needs evidence: what shows the call ran.',
    );
    expect((await fx.h.client.readApprovals(workflowId!)).running).toBe(true);

    await card.locator('textarea.evidence').fill('release 42 is live');
    await card.locator('input.reason').fill('checked the dashboard');
    await card.locator('button[data-decision="done"]').click();
    await eventually(() => card.locator('.status').textContent()).toBe(
      'Reconciled done by alice: checked the dashboard',
    );
    expect(await card.getAttribute('data-state')).toBe('reconciled');
    expect(await card.locator('button').count()).toBe(0);
    expect(await fx.h.client.temporal.workflow.getHandle(workflowId!).result()).toMatchObject({
      outcome: 'done',
      by: 'alice',
      evidence: 'release 42 is live',
    });
    await page.close();
  }, 240_000);
});
