// Quorum approvals on the real dev server: N distinct approvers, never the session's own user,
// each vote recorded as it comes; met from the inbox (Chromium) and the CLI by two verified
// subjects; refused for one subject twice, for the same person under two typed names, for the
// session's user and for another call's digest; denied at the first rejection (or by majority);
// expired by the deny timeout; a policy rule's ask may name a quorum too.
import * as fs from 'node:fs';
import type { JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import type { DecisionRefusedError } from '../client/client';
import { startInbox } from '../servers/inbox/server';
import { defineConfig, defineTool } from '../define/config';
import { launchBrowser } from './chromium';
import { batch, type Harness, startHarness, text } from './harness';
import { type TestIdp, testIdp } from './idp';
import { pendingApproval } from './eventually';
import { runCli } from './run-cli';

let h: Harness;
let idp: TestIdp;
let sealPublic: JWK;

beforeAll(async () => {
  idp = await testIdp('quorum-idp');
  sealPublic = idp.sealPublic;
  h = await startHarness(
    'quorum',
    defineConfig({
      tools: [
        defineTool({
          name: 'deploy',
          description: 'deploys (two verified SREs)',
          input: z.object({ env: z.string() }),
          approvers: { quorum: 2, groups: ['sre'] },
          execute: ({ env }) => `deployed ${env}`,
        }),
        defineTool({
          name: 'rotate',
          description: 'rotates a key (two people, typed names)',
          input: z.object({ key: z.string() }),
          approvers: { quorum: 2 },
          execute: ({ key }) => `rotated ${key}`,
        }),
        defineTool({
          name: 'purge',
          description: 'purges a cache (three people; denied when most reject)',
          input: z.object({ what: z.string() }),
          approvers: { quorum: 3, rejectBy: 'majority' },
          execute: ({ what }) => `purged ${what}`,
        }),
        defineTool({
          name: 'drop',
          description: 'drops a table (two people, within seconds)',
          input: z.object({ table: z.string() }),
          approvers: { quorum: 2 },
          approvalTimeoutMs: 4_000,
          execute: ({ table }) => `dropped ${table}`,
        }),
        defineTool({
          name: 'shell',
          description: 'runs a command; a policy rule asks two people for rm',
          input: z.object({ command: z.string() }),
          execute: ({ command }) => `ran ${command}`,
        }),
      ],
      preExecute: [
        {
          name: 'two-person rule for rm',
          handler: (ctx) =>
            ctx.call.name === 'shell' && String(ctx.call.args.command).startsWith('rm ')
              ? { kind: 'ask' as const, reason: 'rm needs two people', approvers: { quorum: 2 } }
              : undefined,
        },
      ],
      approvers: { ...idp.approvers },
    }),
  );
});
afterAll(() => h?.close());

const token = (sub: string, groups: string[]) => idp.token(sub, groups);

const pendingOf = (workflowId: string, callId: string) =>
  pendingApproval(h.client, workflowId, (x) => x.callId === callId);

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e) => (e as DecisionRefusedError).refusal,
  );

const cli = (args: string[]) => runCli(args, { address: inject('temporalAddress') });

describe('quorum approvals', () => {
  it('two verified subjects meet a quorum of 2, one from the CLI and one from the inbox in Chromium; one subject twice and the session user are refused', async () => {
    const handle = await h.client.startBatch(
      batch([{ id: 'd', name: 'deploy', args: { env: 'prod' } }], { options: { sessionUser: 'sam@example.com' } }),
    );
    const p = await pendingOf(handle.workflowId, 'd');
    expect(p).toMatchObject({
      identityRequired: true,
      approverGroups: ['sre'],
      quorum: { needed: 2, rejectBy: 'first', groups: ['sre'], sessionUser: 'sam@example.com', approvals: [] },
    });
    const dir = fs.mkdtempSync(`${inject('runDir')}/quorum-`);
    const tokenFile = async (sub: string, groups: string[]) => {
      const file = `${dir}/${sub}.jwt`;
      fs.writeFileSync(file, await token(sub, groups));
      return file;
    };
    process.env.SLUICE_SEAL_KEY = JSON.stringify(sealPublic);
    try {
      const ada = await tokenFile('ada@example.com', ['sre']);
      const first = await cli(['approve', p.approvalId, '--token-file', ada, '--digest', p.argsDigest]);
      expect(first.code, first.output).toBe(0);
      expect(first.output).toContain('vote recorded, still waiting (quorum 1 of 2: ada@example.com approved');
      // The same subject again, under another typed name: refused, recorded.
      const again = await cli(['approve', p.approvalId, '--token-file', ada, '--by', 'someone-else']);
      expect(again.code).toBe(1);
      expect(again.output).toContain('ada@example.com already approved this call');
      // The session's own user, verified and in the group: the two-person rule refuses it.
      const sam = await tokenFile('sam@example.com', ['sre']);
      const self = await cli(['approve', p.approvalId, '--token-file', sam]);
      expect(self.code).toBe(1);
      expect(self.output).toContain("is this session's user and may not approve its own call");
      // The CLI listing shows the tally.
      const listed = await cli(['approvals', '--task-queue', h.taskQueue]);
      expect(listed.output).toContain('quorum 1 of 2: ada@example.com approved; verified approvers in sre');
    } finally {
      delete process.env.SLUICE_SEAL_KEY;
    }

    const inbox = await startInbox({
      client: h.client,
      port: 0,
      refreshMs: 300,
      taskQueue: h.taskQueue,
      identityTokenHeader: 'Authorization',
      sealKey: sealPublic,
    });
    const { browser, close } = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.setExtraHTTPHeaders({ authorization: `Bearer ${await token('erin@example.com', ['sre'])}` });
      await page.goto(inbox.url);
      await page.fill('#approver', 'erin');
      const card = page.locator(`article.card[data-workflow-id="${handle.workflowId}"][data-call-id="d"]`);
      await card.waitFor({ timeout: 50_000 });
      expect(await card.locator('.quorum').textContent()).toContain('1 of 2: ada@example.com approved');
      expect(await card.locator('button.session').count()).toBe(0);
      await card.locator('button.approve').click();
      const out = await handle.result();
      expect(text(out.results[0].result)).toBe('deployed prod');
      const votes = out.events.filter((e) => e.type === 'approval/vote').map((e) => e.data);
      expect(votes).toMatchObject([
        {
          by: 'ada@example.com',
          decision: 'approve',
          approvals: 1,
          quorum: 2,
          verified: { subject: 'ada@example.com' },
        },
        {
          by: 'erin@example.com',
          decision: 'approve',
          approvals: 2,
          quorum: 2,
          verified: { subject: 'erin@example.com' },
        },
      ]);
      expect(out.events.find((e) => e.type === 'approval/asked')?.data).toMatchObject({ quorum: 2 });
      expect(out.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({
        outcome: 'allowed-once',
        by: 'ada@example.com, erin@example.com',
        approvers: ['ada@example.com', 'erin@example.com'],
      });
      const refused = out.events.filter((e) => e.type === 'approval/refused').map((e) => e.data);
      expect(refused).toMatchObject([
        { code: 'same-approver', by: 'ada@example.com' },
        { code: 'self-approval', by: 'sam@example.com' },
      ]);
      // The audit shows each vote under the call's approval.
      const audit = await cli(['audit', handle.workflowId]);
      expect(audit.output).toContain('approved by ada@example.com (verified) via update: 1 of 2 approvals');
      expect(audit.output).toContain('approved by erin@example.com (verified) via update: 2 of 2 approvals');
    } finally {
      await close();
      await inbox.close();
    }
  });

  it("typed names: the same person under two spellings, the session user and another call's digest are refused and recorded; the memo shows the tally", async () => {
    const handle = await h.client.startBatch(
      batch(
        [
          { id: 'r', name: 'rotate', args: { key: 'api' } },
          { id: 'r2', name: 'rotate', args: { key: 'db' } },
        ],
        { options: { sessionUser: 'Sam' } },
      ),
    );
    const p = await pendingOf(handle.workflowId, 'r');
    const other = await pendingOf(handle.workflowId, 'r2');
    const base = { workflowId: handle.workflowId, approvalId: p.approvalId, argsDigest: p.argsDigest };
    const voted = await h.client.decide({ ...base, decision: 'approve', by: 'Alice', reason: 'checked' });
    expect(voted).toMatchObject({ outcome: 'pending', quorum: { needed: 2, approvals: [{ by: 'Alice' }] } });
    // Case, spacing, full-width letters and a zero-width space do not make another approver.
    for (const alias of [' alice ', 'ＡＬＩＣＥ', 'ali\u200bce']) {
      const r = await refusal(h.client.decide({ ...base, decision: 'approve', by: alias }));
      expect(r, alias).toMatchObject({ code: 'same-approver' });
      expect(r!.message).toContain('as "Alice"');
    }
    expect(await refusal(h.client.decide({ ...base, decision: 'approve', by: 'sam' }))).toMatchObject({
      code: 'self-approval',
    });
    // A vote by signal carrying the other call's digest: refused and recorded, not counted.
    await h.client.signalDecision({ ...base, argsDigest: other.argsDigest, decision: 'approve', by: 'mallory' });
    const memo = async () => (await h.client.readApprovals(handle.workflowId)).memo!;
    for (;;) {
      if ((await memo()).refused.some((r) => r.code === 'digest-mismatch')) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const shown = (await memo()).pending.find((x) => x.approvalId === p.approvalId)!;
    expect(shown.quorum).toMatchObject({
      needed: 2,
      sessionUser: 'Sam',
      approvals: [{ by: 'Alice', reason: 'checked' }],
    });
    expect(shown.quorum!.approvals).toHaveLength(1);
    // "Allow for this session" is not a way around the quorum.
    const grant = await refusal(
      h.client.decide({ ...base, decision: 'approve', by: 'bob', scope: 'session', pins: [] }),
    );
    expect(grant).toMatchObject({ code: 'malformed' });
    expect(grant!.message).toContain('approve this call once');

    expect(await h.client.decide({ ...base, decision: 'approve', by: 'bob' })).toMatchObject({
      outcome: 'allowed-once',
      by: 'Alice, bob',
    });
    // The second call: denied at the first rejection.
    const b2 = { workflowId: handle.workflowId, approvalId: other.approvalId, argsDigest: other.argsDigest };
    expect(await h.client.decide({ ...b2, decision: 'approve', by: 'carol' })).toMatchObject({ outcome: 'pending' });
    expect(await h.client.decide({ ...b2, decision: 'deny', by: 'dave', reason: 'not now' })).toMatchObject({
      outcome: 'rejected',
      by: 'dave',
    });
    const out = await handle.result();
    expect(text(out.results[0].result)).toBe('rotated api');
    expect(out.results[1].result.isError).toBe(true);
    expect(text(out.results[1].result)).toContain('not now');
    const refused = out.events.filter((e) => e.type === 'approval/refused').map((e) => e.data.code);
    expect(refused).toEqual([
      'same-approver',
      'same-approver',
      'same-approver',
      'self-approval',
      'digest-mismatch',
      'malformed',
    ]);
  });

  it('rejectBy majority: one rejection of three leaves it waiting, the second denies', async () => {
    const handle = await h.client.startBatch(batch([{ id: 'p', name: 'purge', args: { what: 'cdn' } }]));
    const p = await pendingOf(handle.workflowId, 'p');
    const base = { workflowId: handle.workflowId, approvalId: p.approvalId, argsDigest: p.argsDigest };
    expect(await h.client.decide({ ...base, decision: 'deny', by: 'carol' })).toMatchObject({
      outcome: 'pending',
      quorum: { needed: 3, rejectBy: 'majority', rejections: [{ by: 'carol' }] },
    });
    expect(await h.client.decide({ ...base, decision: 'approve', by: 'erin' })).toMatchObject({ outcome: 'pending' });
    expect(await h.client.decide({ ...base, decision: 'deny', by: 'dave' })).toMatchObject({
      outcome: 'rejected',
      by: 'carol, dave',
    });
    const out = await handle.result();
    expect(out.results[0].result.isError).toBe(true);
  });

  it('a quorum not met expires by the deny timeout; a late vote is refused as expired', async () => {
    const handle = await h.client.startBatch(batch([{ id: 'x', name: 'drop', args: { table: 'users' } }]));
    const p = await pendingOf(handle.workflowId, 'x');
    const base = { workflowId: handle.workflowId, approvalId: p.approvalId, argsDigest: p.argsDigest };
    expect(await h.client.decide({ ...base, decision: 'approve', by: 'alice' })).toMatchObject({ outcome: 'pending' });
    const out = await handle.result();
    expect(out.results[0].result.isError).toBe(true);
    expect(out.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({
      outcome: 'unavailable',
      expired: true,
    });
    expect(await refusal(h.client.decide({ ...base, decision: 'approve', by: 'bob' }))).toMatchObject({
      code: 'expired',
    });
  });

  it("a policy rule's ask names a quorum: two people for rm, one person's approval does not run it", async () => {
    const handle = await h.client.startBatch(batch([{ id: 'c', name: 'shell', args: { command: 'rm -rf build' } }]));
    const p = await pendingOf(handle.workflowId, 'c');
    expect(p).toMatchObject({ reason: 'rm needs two people', quorum: { needed: 2 } });
    const base = { workflowId: handle.workflowId, approvalId: p.approvalId, argsDigest: p.argsDigest };
    expect(await h.client.decide({ ...base, decision: 'approve', by: 'alice' })).toMatchObject({ outcome: 'pending' });
    expect(await h.client.decide({ ...base, decision: 'approve', by: 'bob' })).toMatchObject({
      outcome: 'allowed-once',
    });
    expect(text((await handle.result()).results[0].result)).toBe('ran rm -rf build');
  });
});
