// Verified approvers: a decision carries the approver's JWT sealed to the workers' key; a worker
// activity opens and verifies it; the verified subject and groups are recorded; per-tool groups;
// unverified, expired, wrong-key and wrong-group decisions are refused and recorded; the token
// never reaches history in clear.
import { generateKeyPair, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { main } from '../cli';
import { startInbox } from '../servers/inbox/server';
import { launchBrowser } from './chromium';
import type { DecisionRefusedError } from '../client/client';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';
import { type TestIdp, type TokenOptions, testIdp } from './idp';
import { pendingApproval } from './eventually';

const SHARED = 'a-shared-secret-for-hs256-tokens-in-the-test';
let h: Harness;
let idp: TestIdp;
let otherKey: CryptoKey;
let sealPublic: JWK;

beforeAll(async () => {
  idp = await testIdp('test-idp-1');
  sealPublic = idp.sealPublic;
  otherKey = (await generateKeyPair('ES256')).privateKey;
  h = await startHarness(
    'verified',
    defineConfig({
      tools: [
        defineTool({
          name: 'deploy',
          description: 'deploys (release group only)',
          input: z.object({ env: z.string() }),
          approval: 'ask',
          approverGroups: ['release'],
          execute: ({ env }) => `deployed ${env}`,
        }),
        defineTool({
          name: 'note',
          description: 'writes a note (asks; anyone may decide)',
          input: z.object({ text: z.string() }),
          approval: 'ask',
          execute: ({ text }) => `noted ${text}`,
        }),
      ],
      approvers: { ...idp.approvers, sharedKey: SHARED },
    }),
  );
});
afterAll(() => h?.close());

const token = (sub: string, groups: string[], opts?: TokenOptions) => idp.token(sub, groups, opts);

const pendingOf = (workflowId: string, callId: string) =>
  pendingApproval(h.client, workflowId, (x) => x.callId === callId);

describe('verified approvers', () => {
  it('refuses unverified, expired, wrong-key and wrong-group decisions, records each, and takes a verified one under its subject', async () => {
    const handle = await h.client.startBatch(batch([{ id: 'd', name: 'deploy', args: { env: 'prod' } }]));
    const p = await pendingOf(handle.workflowId, 'd');
    expect(p).toMatchObject({ identityRequired: true, approverGroups: ['release'] });
    const base = {
      workflowId: handle.workflowId,
      approvalId: p.approvalId,
      argsDigest: p.argsDigest,
      decision: 'approve' as const,
      sealKey: sealPublic,
    };
    const refusal = (d: Parameters<Harness['client']['decide']>[0]) =>
      h.client.decide(d).then(
        () => undefined,
        (e) => (e as DecisionRefusedError).refusal,
      );

    const typed = await refusal({ ...base, by: 'mallory' });
    expect(typed).toMatchObject({ code: 'unverified' });
    expect(typed!.message).toContain('a typed name is not enough');
    const expired = await refusal({
      ...base,
      identityToken: await token('ada@example.com', ['release'], { exp: Math.floor(Date.now() / 1000) - 60 }),
    });
    expect(expired).toMatchObject({ code: 'unverified' });
    expect(expired!.message).toContain('expired');
    const wrongKey = await refusal({
      ...base,
      identityToken: await token('eve@example.com', ['release'], { key: otherKey }),
    });
    expect(wrongKey!.message).toContain('signature does not verify');
    const wrongGroup = await refusal({ ...base, identityToken: await token('bob@example.com', ['dev']) });
    expect(wrongGroup).toMatchObject({ code: 'wrong-group', by: 'bob@example.com' });
    expect(wrongGroup!.message).toContain('needs one of release');
    // A sealed identity copied from another approval is no good here.
    const other = await h.client.startBatch(batch([{ id: 'n', name: 'note', args: { text: 'x' } }]));
    const np = await pendingOf(other.workflowId, 'n');
    const { sealIdentity } = await import('../client/identity');
    const stolen = await sealIdentity(
      await token('ada@example.com', ['release']),
      { approvalId: np.approvalId, argsDigest: np.argsDigest },
      sealPublic,
    );
    const replayed = await refusal({ ...base, signedIdentity: stolen });
    expect(replayed!.message).toContain('sealed for another approval');

    const good = await token('ada@example.com', ['release', 'dev']);
    const applied = await h.client.decide({ ...base, by: 'typed-name-ignored', identityToken: good });
    expect(applied).toMatchObject({ outcome: 'allowed-once', by: 'ada@example.com' });
    const out = await handle.result();
    expect(text(out.results[0].result)).toBe('deployed prod');
    expect(out.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({
      by: 'ada@example.com',
      verified: { subject: 'ada@example.com', groups: ['release', 'dev'], issuer: 'https://idp.test' },
    });
    const refused = out.events.filter((e) => e.type === 'approval/refused').map((e) => e.data.code);
    expect(refused).toEqual(['unverified', 'unverified', 'unverified', 'wrong-group', 'unverified']);

    // No token in history in clear (nor base64-encoded): only the sealed form and the claims.
    const history = JSON.stringify(await handle.fetchHistory());
    for (const t of [good, good.split('.')[1]]) {
      expect(history).not.toContain(t);
      expect(history).not.toContain(Buffer.from(t).toString('base64'));
    }

    // The other tool takes an HS256 token against the shared key, through the CLI.
    const hs = await token('carol@example.com', [], { key: new TextEncoder().encode(SHARED), alg: 'HS256' });
    const lines: string[] = [];
    const file = `${inject('runDir')}/carol.jwt`;
    (await import('node:fs')).writeFileSync(file, hs);
    process.env.SLUICE_SEAL_KEY = JSON.stringify(sealPublic);
    try {
      const code = await main(
        [
          'approve',
          np.approvalId,
          '--token-file',
          file,
          '--digest',
          np.argsDigest,
          '--address',
          inject('temporalAddress'),
        ],
        (s) => lines.push(s),
      );
      expect(code, lines.join('\n')).toBe(0);
    } finally {
      delete process.env.SLUICE_SEAL_KEY;
    }
    expect(lines.join('\n')).toContain('allowed-once by carol@example.com');
    const out2 = await other.result();
    expect(out2.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({
      by: 'carol@example.com',
      verified: { subject: 'carol@example.com' },
    });
  });

  it('a signal carrying a signed identity is verified the same way (what an integration sends with no worker up)', async () => {
    const handle = await h.client.startBatch(batch([{ id: 'd', name: 'deploy', args: { env: 'staging' } }]));
    const p = await pendingOf(handle.workflowId, 'd');
    const base = {
      workflowId: handle.workflowId,
      approvalId: p.approvalId,
      argsDigest: p.argsDigest,
      sealKey: sealPublic,
    };
    await h.client.signalDecision({
      ...base,
      decision: 'approve',
      identityToken: await token('dan@example.com', ['dev']),
    });
    await h.client.signalDecision({
      ...base,
      decision: 'approve',
      identityToken: await token('ada@example.com', ['release']),
    });
    const out = await handle.result();
    expect(text(out.results[0].result)).toBe('deployed staging');
    expect(out.events.find((e) => e.type === 'approval/refused')?.data).toMatchObject({
      code: 'wrong-group',
      by: 'dan@example.com',
      via: 'signal',
    });
    expect(out.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({
      by: 'ada@example.com',
      verified: { subject: 'ada@example.com', groups: ['release'] },
    });
  });

  it('the inbox behind a sign-in proxy seals the bearer token it is given; the page shows who may decide', async () => {
    const inbox = await startInbox({
      client: h.client,
      port: 0,
      refreshMs: 300,
      // Only this file's batches: on the shared test server other files keep hundreds waiting.
      taskQueue: h.taskQueue,
      identityTokenHeader: 'Authorization',
      sealKey: sealPublic,
    });
    const { browser, close } = await launchBrowser();
    try {
      const handle = await h.client.startBatch(batch([{ id: 'd', name: 'deploy', args: { env: 'eu' } }]));
      const page = await browser.newPage();
      await page.setExtraHTTPHeaders({ authorization: `Bearer ${await token('erin@example.com', ['release'])}` });
      await page.goto(inbox.url);
      await page.fill('#approver', 'someone-else');
      const card = page.locator(`article.card[data-workflow-id="${handle.workflowId}"][data-call-id="d"]`);
      // The page re-reads every batch of the shared test server: under a full run that takes a while.
      await card.waitFor({ timeout: 50_000 });
      expect(await card.locator('.verified-only').textContent()).toContain('Only a verified approver in release');
      await card.locator('button.approve').click();
      const out = await handle.result();
      expect(text(out.results[0].result)).toBe('deployed eu');
      expect(out.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({
        by: 'erin@example.com',
        verified: { subject: 'erin@example.com' },
      });
    } finally {
      await close();
      await inbox.close();
    }
  });
});
