// What the policy saw, on the approval card: an email over a Cedar limit that asks a person (an
// `@ask` permit reading a session fact), with a shadow candidate that would deny it. The card in
// a real headless Chromium, `sluice approvals` and the `approval/asked` event all carry the facts
// the policy read (`emailsLastHour = 1`) and the candidate's verdict, so the person who decides
// sees what the policy saw.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { expect, inject, it } from 'vitest';
import { z } from 'zod';
import { main } from '../cli';
import { defineConfig, defineTool } from '../define/config';
import { policyRules, shadowPolicy } from '../hooks';
import type { Inbox } from '../servers/inbox/server';
import { pendingApproval } from './eventually';
import { batch, type Harness } from './harness';
import { useInboxSetup } from './inbox-setup';

const SCHEMA = `action "send_email" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { to: String }, session: { emailsLastHour: Long } }
};
`;
const FACTS = JSON.stringify({ emailsLastHour: { count: { tool: 'send_email', window: '1h' } } });

/** A workspace with one Cedar policy file over the email schema and facts. */
function workspace(name: string, policy: string): string {
  const ws = fs.mkdtempSync(path.join(inject('runDir'), `inbox-facts-${name}-`));
  fs.mkdirSync(path.join(ws, '.cedar'));
  fs.writeFileSync(path.join(ws, '.cedar', 'schema.cedarschema'), SCHEMA);
  fs.writeFileSync(path.join(ws, '.cedar', 'limit.cedar'), policy);
  fs.writeFileSync(path.join(ws, '.cedar', 'facts.json'), FACTS);
  return ws;
}

const enforced = policyRules({
  workspace: workspace(
    'enforced',
    `@id("second-email-asks")
@ask
permit (principal, action == Action::"send_email", resource)
when { context.session.emailsLastHour >= 1 };

permit (principal, action == Action::"send_email", resource)
when { context.session.emailsLastHour < 1 };
`,
  ),
});
const candidate = policyRules({
  workspace: workspace(
    'candidate',
    `@id("one-email-an-hour")
@reason("one email an hour")
forbid (principal, action == Action::"send_email", resource)
when { context.session.emailsLastHour >= 1 };
`,
  ),
});

let h: Harness;
let inbox: Inbox;
let browser: BrowserContext;
useInboxSetup(
  'inbox-facts',
  defineConfig({
    tools: [
      defineTool({
        name: 'send_email',
        description: 'Sends an email.',
        input: z.object({ to: z.string() }),
        execute: ({ to }) => `sent to ${to}`,
      }),
    ],
    preExecute: [shadowPolicy({ enforced, candidate }), ...enforced.preExecute],
  }),
  (s) => {
    ({ h, inbox, browser } = s);
  },
);

it('the card shows the facts the policy read and the shadow candidate verdict; so do `sluice approvals` and approval/asked', async () => {
  const factsScope = `user:ada-${process.pid}-${Date.now()}`;
  const first = await h.client.runBatch(batch([{ id: 'e1', name: 'send_email', args: { to: 'a' } }], { factsScope }));
  expect(first.results[0].result.isError).toBe(false);
  const handle = await h.client.startBatch(
    batch([{ id: 'e2', name: 'send_email', args: { to: 'b' } }], {
      factsScope,
      options: { approvalTimeoutMs: 300_000 },
    }),
  );
  const pending = await pendingApproval(h.client, handle.workflowId, (p) => p.callId === 'e2');
  expect(pending.facts).toEqual({ emailsLastHour: 1 });
  expect(pending.shadow).toMatchObject({ decision: 'deny', policyId: 'one-email-an-hour', line: 1 });

  const page = await browser.newPage();
  await page.goto(inbox.url);
  const card = page.locator(`article.card[data-workflow-id="${handle.workflowId}"][data-call-id="e2"]`);
  await card.waitFor();
  expect(await card.locator('.why.facts').textContent()).toBe('The policy saw: emailsLastHour = 1');
  expect(await card.locator('.why.shadow').textContent()).toMatch(
    /^Shadow: the candidate policy would deny by \.cedar\/limit\.cedar:1 \(one-email-an-hour\): one email an hour; it read emailsLastHour = 1$/,
  );
  await page.close();

  const lines: string[] = [];
  const code = await main(
    ['approvals', '--address', inject('temporalAddress'), '--task-queue', h.taskQueue, '--session', pending.sessionId],
    (s) => lines.push(s),
  );
  expect(code).toBe(0);
  const text = lines.join('\n');
  expect(text).toContain('│ the policy saw: emailsLastHour = 1');
  expect(text).toContain('│ shadow: the candidate policy would deny by .cedar/limit.cedar:1 (one-email-an-hour)');

  await h.client.approvals.deny(pending.approvalId, {
    workflowId: handle.workflowId,
    argsDigest: pending.argsDigest,
    by: 'reviewer',
  });
  const out = await handle.result();
  const asked = out.events.find((e) => e.type === 'approval/asked' && e.data.callId === 'e2')?.data;
  expect(asked).toMatchObject({ facts: { emailsLastHour: 1 }, shadow: { decision: 'deny' } });
});
