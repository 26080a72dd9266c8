// Approval: the four outcomes, one-shot decisions, policy `deny`, no channel, digest binding,
// and the search attributes and query that let any UI find what waits.
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { toBatchInput } from '../client/client';
import { expandBatchOutput } from '../codec/output';
import type { BatchOutput, PendingApproval, SessionEvent } from '../pipeline/types';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';
import { eventually } from './eventually';
import { APPROVALS_MEMO, BATCH_WORKFLOW, batchWorkflowId, SESSION_ID } from '../workflows/definitions';

const ran: string[] = [];
const config = defineConfig({
  tools: [
    defineTool({
      name: 'deploy',
      description: 'deploys',
      input: z.object({ env: z.string() }),
      approval: 'ask',
      presentCall: ({ env }) => ({ title: `Deploy to ${env}`, summary: 'risky' }),
      execute: ({ env }, ctx) => (ran.push(ctx.call.id), `deployed ${env}`),
    }),
    defineTool({
      name: 'forbidden',
      description: 'never approved',
      input: z.object({}),
      approval: 'deny',
      execute: (_a, ctx) => (ran.push(ctx.call.id), 'ran'),
    }),
    defineTool({
      name: 'maybe',
      description: 'asks via pre-execute',
      input: z.object({ level: z.number() }),
      execute: (_a, ctx) => (ran.push(ctx.call.id), 'ran'),
    }),
    defineTool({
      name: 'fast_ask',
      description: 'asks with its own deny timeout',
      input: z.object({}),
      approval: 'ask',
      approvalTimeoutMs: 1_000,
      execute: (_a, ctx) => (ran.push(ctx.call.id), 'ran'),
    }),
  ],
  preExecute: [
    (ctx) => {
      if (ctx.call.name === 'maybe' && (ctx.call.args as { level: number }).level > 5)
        return { kind: 'ask', reason: 'level above 5' };
    },
  ],
  guards: [
    (ctx) =>
      ctx.call.name === 'deploy' && (ctx.call.args as { env: string }).env === 'prod-eu'
        ? 'prod-eu is frozen'
        : undefined,
  ],
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness('approval', config);
});
afterAll(() => h?.close());

function waitForPending(workflowId: string, count = 1): Promise<PendingApproval[]> {
  return eventually(`${count} pending approval(s) in ${workflowId}`, async () => {
    const { pending } = await h.client.batchState(workflowId);
    return pending.length >= count && pending;
  });
}

const decidedEvent = (events: SessionEvent[]) => events.find((e) => e.type === 'approval/decided')!.data;

describe('approval outcomes', () => {
  it('allowed-once: approved through the update, the body runs, who decided is recorded', async () => {
    const handle = await h.client.startBatch(
      batch([{ id: 'a1', name: 'deploy', args: { env: 'staging' } }], { options: { approvalTimeoutMs: 60_000 } }),
    );
    const [p] = await waitForPending(handle.workflowId);
    expect(p).toMatchObject({
      callId: 'a1',
      toolName: 'deploy',
      card: { title: 'Deploy to staging', summary: 'risky' },
      arguments: { env: 'staging' },
    });
    expect(p.argsDigest).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    // any UI finds it by search attribute, with no knowledge of the workflow id
    expect(await h.client.findApproval(p.approvalId)).toBe(handle.workflowId);
    expect((await h.client.pendingApprovals()).map((x) => x.approvalId)).toContain(p.approvalId);

    const r = await h.client.approve(p.approvalId, { by: 'alice', reason: 'looks fine', argsDigest: p.argsDigest });
    expect(r).toEqual({ approvalId: p.approvalId, outcome: 'allowed-once', by: 'alice' });
    const out: BatchOutput = await handle.result();
    expect(text(out.results[0].result)).toBe('deployed staging');
    expect(decidedEvent(out.events)).toMatchObject({
      id: p.approvalId,
      outcome: 'allowed-once',
      by: 'alice',
      reason: 'looks fine',
    });
    expect(out.events.map((e) => e.type)).toEqual(['tool/call', 'approval/asked', 'approval/decided', 'tool/result']);
    // decided: no longer listed as waiting, and looking it up says it was decided (not "unknown")
    expect((await h.client.pendingApprovals()).map((x) => x.approvalId)).not.toContain(p.approvalId);
    await expect(h.client.findApproval(p.approvalId)).rejects.toMatchObject({ refusal: { code: 'decided' } });
    await expect(h.client.findApproval(p.approvalId)).rejects.toThrow(/already decided: allowed-once by alice/);
  });

  it('rejected: a deny sent as a signal, with its reason, becomes a denial result', async () => {
    const handle = await h.client.startBatch(batch([{ id: 'r1', name: 'deploy', args: { env: 'prod' } }]));
    const [p] = await waitForPending(handle.workflowId);
    await h.client.signalDecision({ approvalId: p.approvalId, decision: 'deny', by: 'bob', reason: 'not on a Friday' });
    const out = await handle.result();
    const r = out.results[0].result;
    expect(r.error?.code).toBe('DENIED');
    expect(text(r)).toMatch(/^Error: the call was rejected by bob: not on a Friday/);
    expect(decidedEvent(out.events)).toMatchObject({ outcome: 'rejected', by: 'bob' });
    expect(ran).not.toContain('r1');
  });

  it('unavailable: nobody answers before the deny timeout (the tool’s own timeout wins)', async () => {
    const out = await h.client.runBatch(
      batch([{ id: 't1', name: 'fast_ask' }], { options: { approvalTimeoutMs: 60_000 } }),
    );
    expect(text(out.results[0].result)).toMatch(
      /approval was required but not given \(no decision within 1s \(deny timeout\)\)/,
    );
    expect(decidedEvent(out.events)).toMatchObject({ outcome: 'unavailable' });
    expect(ran).not.toContain('t1');
  });

  it('cancelled: the batch is cancelled while a call waits', async () => {
    const handle = await h.client.startBatch(batch([{ id: 'c1', name: 'deploy', args: { env: 'qa' } }]));
    await waitForPending(handle.workflowId);
    await handle.cancel();
    const out = await handle.result();
    expect(out.cancelled).toBe(true);
    expect(decidedEvent(out.events)).toMatchObject({ outcome: 'cancelled' });
    expect(text(out.results[0].result)).toMatch(/cancelled while this call awaited approval/);
  });

  it('guards still run after a person approves, and can deny', async () => {
    const handle = await h.client.startBatch(batch([{ id: 'ge', name: 'deploy', args: { env: 'prod-eu' } }]));
    const [p] = await waitForPending(handle.workflowId);
    await h.client.approve(p.approvalId, { by: 'carol' });
    const out = await handle.result();
    expect(text(out.results[0].result)).toBe('Error: prod-eu is frozen');
    expect(ran).not.toContain('ge');
  });
});

describe('one-shot decisions', () => {
  it('the first decision wins; later, unknown and mismatched ones are refused without harm', async () => {
    const handle = await h.client.startBatch(
      batch([
        { id: 'o1', name: 'deploy', args: { env: 'dev' } },
        { id: 'o2', name: 'maybe', args: { level: 9 } },
      ]),
    );
    const [p1] = await waitForPending(handle.workflowId);
    await expect(
      h.client.approve(p1.approvalId, { workflowId: handle.workflowId, argsDigest: `sha256:${'0'.repeat(64)}` }),
    ).rejects.toThrow(/arguments you were shown .* are not the ones/);
    await expect(h.client.approve('no-such-id', { workflowId: handle.workflowId })).rejects.toThrow(
      /no approval no-such-id is pending/,
    );
    await h.client.temporal.workflow.getHandle(handle.workflowId).signal('sluice.decide', { garbage: true } as never);
    await h.client.approve(p1.approvalId, { by: 'first' });
    await expect(h.client.deny(p1.approvalId, { by: 'second', workflowId: handle.workflowId })).rejects.toThrow(
      /already decided: allowed-once by first/,
    );

    // the second call asks because a pre-execute handler said so
    const pending = await waitForPending(handle.workflowId);
    const p2 = pending.find((x) => x.callId === 'o2')!;
    expect(p2.reason).toBe('level above 5');
    await h.client.deny(p2.approvalId, { by: 'dave' });
    const out = await handle.result();
    expect(out.results.map((r) => r.result.isError)).toEqual([false, true]);
    expect(out.events.filter((e) => e.type === 'approval/decided').map((e) => e.data.by)).toEqual(['first', 'dave']);
  });
});

describe('policies without a person', () => {
  it('policy never: rejected at once, and the asked/decided pair is still recorded', async () => {
    const out = await h.client.runBatch(batch([{ id: 'n1', name: 'forbidden' }]));
    expect(out.events.map((e) => e.type)).toEqual(['tool/call', 'approval/asked', 'approval/decided', 'tool/result']);
    expect(decidedEvent(out.events)).toMatchObject({ outcome: 'rejected', by: 'policy' });
    expect(ran).not.toContain('n1');
  });

  it('no approval channel at all: an ask is denied with the ask’s reason (fail closed)', async () => {
    const out = await h.client.runBatch(
      batch([{ id: 'nc', name: 'maybe', args: { level: 7 } }], { options: { approvalChannel: false } }),
    );
    expect(decidedEvent(out.events)).toMatchObject({ outcome: 'unavailable', reason: 'level above 5' });
    expect(out.results[0].result.error?.code).toBe('DENIED');
    expect(ran).not.toContain('nc');
  });
});

describe('what a decision by signal writes', () => {
  /** The history's event types after the decision's signal, and whether the history replays. */
  async function afterSignal(workflowId: string): Promise<string[]> {
    const handle = h.client.temporal.workflow.getHandle(workflowId);
    const history = await handle.fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, workflowId);
    const types = (history.events ?? []).map((e) => temporal.api.enums.v1.EventType[e.eventType ?? 0]);
    return types.slice(types.indexOf('EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED'));
  }
  const count = (types: string[], type: string) => types.filter((t) => t === `EVENT_TYPE_${type}`).length;

  it('the memo and search attributes once, when the ask ends; a batch started without the flag as recorded before, and both replay', async () => {
    const decideBySignal = async (workflowId: string, by: string) => {
      const [p] = await waitForPending(workflowId);
      await h.client.signalDecision({ workflowId, approvalId: p.approvalId, decision: 'approve', by });
      const out = expandBatchOutput(await h.client.temporal.workflow.getHandle(workflowId).result());
      expect(text(out.results[0].result)).toBe('deployed staging');
      return p;
    };

    const handle = await h.client.startBatch(
      batch([{ id: 'w1', name: 'deploy', args: { env: 'staging' } }], { options: { approvalTimeoutMs: 60_000 } }),
    );
    const p = await decideBySignal(handle.workflowId, 'carol');
    const once = await afterSignal(handle.workflowId);
    expect(count(once, 'WORKFLOW_PROPERTIES_MODIFIED')).toBe(1);
    expect(count(once, 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES')).toBe(1);
    // That one write shows the decision: nothing pending, the outcome and who decided.
    const memo = (await handle.describe()).memo?.[APPROVALS_MEMO] as { pending: unknown[]; decided: unknown[] };
    expect(memo.pending).toEqual([]);
    expect(memo.decided).toEqual([
      expect.objectContaining({ approvalId: p.approvalId, outcome: 'allowed-once', by: 'carol' }),
    ]);

    // A batch started the way clients did before (the empty memo without the flag) keeps writing
    // in the signal handler too: its history has the commands that code recorded.
    const request = batch([{ id: 'w2', name: 'deploy', args: { env: 'staging' } }], {
      options: { approvalTimeoutMs: 60_000 },
    });
    const input = toBatchInput(request);
    const oldId = batchWorkflowId(input.sessionId, input.turn, input.step);
    await h.client.temporal.workflow.start(BATCH_WORKFLOW, {
      taskQueue: h.taskQueue,
      workflowId: oldId,
      args: [input],
      typedSearchAttributes: [{ key: SESSION_ID, value: input.sessionId }],
      memo: { [APPROVALS_MEMO]: { v: 1, pending: [], decided: [], refused: [] } },
    });
    await decideBySignal(oldId, 'carol');
    const twice = await afterSignal(oldId);
    expect(count(twice, 'WORKFLOW_PROPERTIES_MODIFIED')).toBe(2);
    expect(count(twice, 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES')).toBe(1);
  });
});
