// Who may approve, every constraint together, on the real dev server: a tool's approverGroups and
// a handler's quorum groups must both hold (an on-call hotfix ask on `release` is not decided by
// on-call people outside release), as must a tool's quorum groups and a handler's (two DBAs do not
// deploy what needs SREs); the outsiders' votes are refused and recorded, and the body does not
// run. The worker takes each approver token once (approvers.oneTimeTokens): a token that voted in
// one batch is refused in another.
import type { JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { DecisionRefusedError } from '../client/client';
import { defineConfig, defineTool } from '../define/config';
import type { PendingApproval } from '../pipeline/types';
import { batch, type Harness, startHarness, text } from './harness';
import { type TestIdp, testIdp } from './idp';
import { pendingApproval } from './eventually';

let h: Harness;
let idp: TestIdp;
let sealPublic: JWK;
/** The bodies that ran, by tool and arguments. */
const ran: string[] = [];

beforeAll(async () => {
  idp = await testIdp('constraints-idp');
  sealPublic = idp.sealPublic;
  h = await startHarness(
    'constraints',
    defineConfig({
      tools: [
        defineTool({
          name: 'release',
          description: 'cuts a release (the release group decides)',
          input: z.object({ version: z.string(), hotfix: z.boolean().optional() }),
          approval: 'ask',
          approverGroups: ['release'],
          execute: ({ version }) => {
            ran.push(`release ${version}`);
            return `released ${version}`;
          },
        }),
        defineTool({
          name: 'deploy_sre',
          description: 'deploys (two verified SREs)',
          input: z.object({ env: z.string(), migration: z.boolean().optional() }),
          approvers: { quorum: 2, groups: ['sre'] },
          execute: ({ env }) => {
            ran.push(`deploy ${env}`);
            return `deployed ${env}`;
          },
        }),
      ],
      preExecute: [
        {
          name: 'hotfix needs two on-call',
          handler: (ctx) =>
            ctx.call.name === 'release' && ctx.call.args.hotfix
              ? { kind: 'ask' as const, reason: 'a hotfix', approvers: { quorum: 2, groups: ['oncall'] } }
              : undefined,
        },
        {
          name: 'a migration needs DBAs',
          handler: (ctx) =>
            ctx.call.name === 'deploy_sre' && ctx.call.args.migration
              ? { kind: 'ask' as const, reason: 'a migration', approvers: { quorum: 2, groups: ['dba'] } }
              : undefined,
        },
      ],
      approvers: { ...idp.approvers, oneTimeTokens: true },
    }),
  );
});
afterAll(() => h?.close());

/** A fresh token (its own jti) for `sub` in `groups`. */
const token = (sub: string, groups: string[]) => idp.token(sub, groups, { jti: true });

const pendingOf = (workflowId: string, callId: string) =>
  pendingApproval(h.client, workflowId, (x) => x.callId === callId);

/** A verified decision on `p`: what the batch answered, or its refusal. */
function decide(p: PendingApproval, decision: 'approve' | 'deny', identityToken: string) {
  return h.client
    .decide({
      workflowId: p.workflowId,
      approvalId: p.approvalId,
      argsDigest: p.argsDigest,
      decision,
      identityToken,
      sealKey: sealPublic,
    })
    .then(
      (applied) => ({ applied, refusal: undefined }),
      (e) => ({ applied: undefined, refusal: (e as DecisionRefusedError).refusal }),
    );
}

describe('every constraint on who may approve holds together', () => {
  it("release + a handler's on-call hotfix ask: two on-call people outside release are refused and it does not run; two in both release it", async () => {
    const handle = await h.client.startBatch(
      batch([{ id: 'r', name: 'release', args: { version: '2.0.1', hotfix: true } }]),
    );
    const p = await pendingOf(handle.workflowId, 'r');
    expect(p).toMatchObject({
      identityRequired: true,
      approverGroupSets: [['release'], ['oncall']],
      quorum: { needed: 2, groupSets: [['release'], ['oncall']], approvals: [] },
    });
    for (const who of ['olga@example.com', 'otto@example.com']) {
      const { refusal } = await decide(p, 'approve', await token(who, ['oncall']));
      expect(refusal).toMatchObject({ code: 'wrong-group', by: who });
      expect(refusal!.message).toMatch(/release/);
    }
    // One in release only is refused too: the hotfix ask's on-call holds as well.
    const releaseOnly = await decide(p, 'approve', await token('rita@example.com', ['release']));
    expect(releaseOnly.refusal).toMatchObject({ code: 'wrong-group' });
    expect(releaseOnly.refusal!.message).toContain('oncall');
    const tally = (await h.client.readApprovals(handle.workflowId)).pending[0]?.quorum;
    expect(tally?.approvals).toEqual([]);
    // Someone in both may decide: a rejection ends it, and the body never ran.
    expect((await decide(p, 'deny', await token('bea@example.com', ['release', 'oncall']))).refusal).toBeUndefined();
    const out = await handle.result();
    expect(out.results[0].result.isError).toBe(true);
    expect(ran).not.toContain('release 2.0.1');
    const refused = out.events.filter((e) => e.type === 'approval/refused').map((e) => [e.data.by, e.data.code]);
    expect(refused).toEqual([
      ['olga@example.com', 'wrong-group'],
      ['otto@example.com', 'wrong-group'],
      ['rita@example.com', 'wrong-group'],
    ]);

    // The intersection is answerable: two people in both release and on-call run it.
    const next = await h.client.startBatch(
      batch([{ id: 'r', name: 'release', args: { version: '2.0.2', hotfix: true } }]),
    );
    const q = await pendingOf(next.workflowId, 'r');
    expect((await decide(q, 'approve', await token('bea@example.com', ['release', 'oncall']))).applied).toMatchObject({
      outcome: 'pending',
    });
    expect((await decide(q, 'approve', await token('bo@example.com', ['oncall', 'release']))).applied).toMatchObject({
      outcome: 'allowed-once',
    });
    expect(text((await next.result()).results[0].result)).toBe('released 2.0.2');
  });

  it("deploy_sre + a handler's dba ask: two DBAs outside sre are refused and it does not run", async () => {
    const handle = await h.client.startBatch(
      batch([{ id: 'd', name: 'deploy_sre', args: { env: 'prod', migration: true } }]),
    );
    const p = await pendingOf(handle.workflowId, 'd');
    expect(p.approverGroupSets).toEqual([['sre'], ['dba']]);
    for (const who of ['dan@example.com', 'dora@example.com']) {
      const { refusal } = await decide(p, 'approve', await token(who, ['dba']));
      expect(refusal).toMatchObject({ code: 'wrong-group', by: who });
    }
    expect((await h.client.readApprovals(handle.workflowId)).pending[0]?.quorum?.approvals).toEqual([]);
    expect((await decide(p, 'deny', await token('sid@example.com', ['sre', 'dba']))).refusal).toBeUndefined();
    const out = await handle.result();
    expect(out.results[0].result.isError).toBe(true);
    expect(ran).not.toContain('deploy prod');
  });

  it('one approver token votes once: the token that voted in one batch is refused in another', async () => {
    const first = await h.client.startBatch(batch([{ id: 'd', name: 'deploy_sre', args: { env: 'stage-a' } }]));
    const second = await h.client.startBatch(batch([{ id: 'd', name: 'deploy_sre', args: { env: 'stage-b' } }]));
    const [p1, p2] = [await pendingOf(first.workflowId, 'd'), await pendingOf(second.workflowId, 'd')];
    const ada = await token('ada@example.com', ['sre']);
    expect((await decide(p1, 'approve', ada)).applied).toMatchObject({ outcome: 'pending' });
    const reused = await decide(p2, 'approve', ada);
    expect(reused.refusal).toMatchObject({ code: 'token-used', by: 'ada@example.com' });
    expect(reused.refusal!.message).toContain('each token decides once');
    // A new token of the same person votes in the second batch.
    expect((await decide(p2, 'approve', await token('ada@example.com', ['sre']))).applied).toMatchObject({
      outcome: 'pending',
    });
    for (const p of [p1, p2]) await decide(p, 'deny', await token('sid@example.com', ['sre']));
    await Promise.all([first.result(), second.result()]);
    expect(ran.filter((r) => r.startsWith('deploy stage'))).toEqual([]);
  });
});
