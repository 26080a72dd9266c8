// `sluice.approvals`, the approval protocol as a sub-client (as Temporal's Client has
// client.workflow), and the methods of 1.0 kept as its aliases: both reach the same batches and
// the same decisions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApprovalsClient, DecisionRefusedError } from '../client/client';
import { defineConfig } from '../define/config';
import { eventually, pendingApproval } from './eventually';
import { batch, startHarness, type Harness } from './harness';
import { deployTool } from './fixtures/deploy-tool';

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    'approvals-client',
    defineConfig({
      tools: [deployTool()],
    }),
  );
});
afterAll(async () => {
  await h?.close();
});

describe('sluice.approvals', () => {
  it('lists, finds and decides; the 1.0 methods are aliases that reach the same approvals', async () => {
    const sluice = h.client;
    expect(sluice.approvals).toBeInstanceOf(ApprovalsClient);
    expect(sluice.approvals.taskQueue).toBe(h.taskQueue);

    const first = await sluice.startBatch(batch([{ name: 'deploy', args: { env: 'staging' } }]));
    const p = await pendingApproval(sluice, first.workflowId);
    // Listed from visibility and the memo, by the sub-client and by the alias alike.
    const listed = await eventually('the approval listed', async () =>
      (await sluice.approvals.list()).find((x) => x.approvalId === p.approvalId),
    );
    expect(listed).toMatchObject({ workflowId: first.workflowId, argsDigest: p.argsDigest });
    expect((await sluice.pendingApprovals()).map((x) => x.approvalId)).toContain(p.approvalId);
    expect((await sluice.approvals.overview({ taskQueue: h.taskQueue })).pending.map((x) => x.approvalId)).toContain(
      p.approvalId,
    );
    expect(await sluice.approvals.find(p.approvalId)).toBe(first.workflowId);
    expect(await sluice.findApproval(p.approvalId)).toBe(first.workflowId);
    expect((await sluice.approvals.read(first.workflowId)).pending.map((x) => x.approvalId)).toEqual([p.approvalId]);

    const applied = await sluice.approvals.approve(p.approvalId, { by: 'ana', argsDigest: p.argsDigest });
    expect(applied).toMatchObject({ outcome: 'allowed-once', by: 'ana' });
    // The alias decides through the same protocol: a second decision is refused as decided.
    const again = await sluice.deny(p.approvalId, { by: 'bo', workflowId: first.workflowId }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(DecisionRefusedError);
    expect((again as DecisionRefusedError).refusal).toMatchObject({ code: 'decided', by: 'ana' });
    const out = await first.result();
    expect(out.results[0].result.isError).toBeFalsy();
    expect(out.results[0].result.content).toEqual([{ type: 'text', text: 'deployed staging' }]);

    // submit + waitFor: with the worker up the decision is applied at once.
    const second = await sluice.startBatch(batch([{ name: 'deploy', args: { env: 'prod' } }]));
    const q = await pendingApproval(sluice, second.workflowId);
    const submitted = await sluice.approvals.submit({
      approvalId: q.approvalId,
      decision: 'deny',
      by: 'ana',
      reason: 'not today',
      argsDigest: q.argsDigest,
    });
    expect(submitted).toMatchObject({ status: 'applied', outcome: 'rejected', workflowId: second.workflowId });
    const denied = await second.result();
    expect(denied.results[0].result.isError).toBe(true);
  });
});
