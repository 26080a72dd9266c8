// All asks of a batch at once: raised together, listed together (memo, CLI, inbox), decided in
// any order; calls still run and commit in model order, and a call whose pre-execute depends on
// an earlier body's effect is re-checked before it runs.
import { Worker } from '@temporalio/worker';
import type { BrowserContext } from 'playwright-core';
import { describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { main } from '../cli';
import type { Inbox } from '../servers/inbox/server';
import type { PendingApproval } from '../pipeline/types';
import { defineConfig, defineTool } from '../define/config';
import { batch, text, type Harness } from './harness';
import { pendingApprovals } from './eventually';
import { useInboxSetup } from './inbox-setup';

const config = defineConfig({
  tools: [
    defineTool({
      name: 'send',
      description: 'sends a message (asks first)',
      input: z.object({ to: z.string() }),
      approval: 'ask',
      execute: ({ to }) => `sent to ${to}`,
    }),
    defineTool({
      name: 'unlock',
      description: 'unlocks the door for this session',
      input: z.object({}),
      execute: (_args, ctx) => (ctx.setState('locks', 'door', 'open'), 'unlocked'),
    }),
    defineTool({
      name: 'door',
      description: 'goes through the door: asks while it is locked',
      input: z.object({}),
      execute: () => 'through the door',
    }),
  ],
  preExecute: [
    (ctx) =>
      ctx.call.name === 'door' && ctx.state.locks?.door !== 'open' ? { kind: 'ask', reason: 'locked' } : undefined,
  ],
});

let h: Harness;
let inbox: Inbox;
let browser: BrowserContext;
useInboxSetup('asks-together', config, (setup) => ({ h, inbox, browser } = setup));

const pendingOf = (workflowId: string, n: number): Promise<PendingApproval[]> =>
  pendingApprovals(h.client, workflowId, n);

/** The batch's history replays against the workflow bundle: the new command order is deterministic. */
async function replays(handle: { workflowId: string; fetchHistory(): Promise<unknown> }): Promise<void> {
  const history = (await handle.fetchHistory()) as Parameters<typeof Worker.runReplayHistory>[1];
  await Worker.runReplayHistory(
    { workflowBundle: { codePath: inject('workflowBundlePath') } },
    history,
    handle.workflowId,
  );
}

describe('all asks at once', () => {
  it('three asks are visible together, decided in reverse order, and the results stay in model order', async () => {
    const handle = await h.client.startBatch(
      batch([
        { id: 'a', name: 'send', args: { to: 'ada' } },
        { id: 'b', name: 'send', args: { to: 'bob' } },
        { id: 'c', name: 'send', args: { to: 'cy' } },
      ]),
    );
    const pending = await pendingOf(handle.workflowId, 3);
    expect(pending.map((p) => p.callId).sort()).toEqual(['a', 'b', 'c']);

    // The CLI and the inbox show all three before anything is decided.
    const lines: string[] = [];
    // Scoped to this file's task queue: other files' encrypted batches on the shared server are
    // unreadable here, and the listing rightly refuses to call them "not waiting".
    const args = ['approvals', '--json', '--address', inject('temporalAddress'), '--task-queue', h.taskQueue];
    expect(await main(args, (s) => lines.push(s))).toBe(0);
    const listed = (JSON.parse(lines.join('\n')) as PendingApproval[]).filter(
      (p) => p.workflowId === handle.workflowId,
    );
    expect(listed.map((p) => p.callId).sort()).toEqual(['a', 'b', 'c']);
    // Narrowed by session: exactly this batch's asks; by another task queue: none of them.
    const scoped = async (...extra: string[]) => {
      const out: string[] = [];
      expect(
        await main(['approvals', '--json', '--address', inject('temporalAddress'), ...extra], (s) => out.push(s)),
      ).toBe(0);
      return JSON.parse(out.join('\n')) as PendingApproval[];
    };
    const sessionId = handle.workflowId.split(':')[1];
    expect((await scoped('--session', sessionId)).map((p) => `${p.workflowId}/${p.callId}`).sort()).toEqual(
      ['a', 'b', 'c'].map((c) => `${handle.workflowId}/${c}`),
    );
    expect(
      (await scoped('--task-queue', `${h.taskQueue}-elsewhere`)).filter((p) => p.workflowId === handle.workflowId),
    ).toEqual([]);
    // The inbox page, in Chromium, shows the three cards at once.
    const page = await browser.newPage();
    await page.goto(inbox.url);
    await expect
      .poll(() => page.locator(`article.card[data-workflow-id="${handle.workflowId}"][data-state="pending"]`).count(), {
        timeout: 50_000, // the page re-reads every batch of the shared test server
        interval: 100,
      })
      .toBe(3);
    await page.close();

    const byCall = new Map(pending.map((p) => [p.callId, p]));
    for (const [callId, decision] of [
      ['c', 'approve'],
      ['b', 'deny'],
      ['a', 'approve'],
    ] as const) {
      const p = byCall.get(callId)!;
      const applied = await h.client.decide({
        workflowId: handle.workflowId,
        approvalId: p.approvalId,
        argsDigest: p.argsDigest,
        decision,
        by: 'alice',
      });
      expect(applied.outcome).toBe(decision === 'approve' ? 'allowed-once' : 'rejected');
    }

    const out = await handle.result();
    expect(out.results.map((r) => [r.callId, r.result.isError, text(r.result)])).toEqual([
      ['a', false, 'sent to ada'],
      ['b', true, expect.stringContaining('rejected by alice')],
      ['c', false, 'sent to cy'],
    ]);
    expect(out.events.filter((e) => e.type === 'tool/result').map((e) => e.data.callId)).toEqual(['a', 'b', 'c']);
    // Each call's tool/call comes before its ask, and every ask was raised before the first decision.
    const seqOf = (type: string, callId: string) =>
      out.events.find((e) => e.type === type && e.data.callId === callId)!.seq;
    for (const id of ['a', 'b', 'c']) expect(seqOf('tool/call', id)).toBeLessThan(seqOf('approval/asked', id));
    expect(Math.max(...['a', 'b', 'c'].map((id) => seqOf('approval/asked', id)))).toBeLessThan(
      Math.min(...['a', 'b', 'c'].map((id) => seqOf('approval/decided', id))),
    );
    await replays(handle);
  });

  it("a call whose pre-execute depends on an earlier body's effect is re-checked, and its early ask withdrawn", async () => {
    const handle = await h.client.startBatch(
      batch([
        { id: 'mail', name: 'send', args: { to: 'ops' } },
        { id: 'open', name: 'unlock' },
        { id: 'walk', name: 'door' },
      ]),
    );
    const pending = await pendingOf(handle.workflowId, 2);
    expect(pending.map((p) => p.callId).sort()).toEqual(['mail', 'walk']);
    const mail = pending.find((p) => p.callId === 'mail')!;
    await h.client.approve(mail.approvalId, {
      workflowId: handle.workflowId,
      by: 'alice',
      argsDigest: mail.argsDigest,
    });

    const out = await handle.result();
    expect(out.results.map((r) => text(r.result))).toEqual(['sent to ops', 'unlocked', 'through the door']);
    expect(out.events.find((e) => e.type === 'approval/decided' && e.data.callId === 'walk')?.data).toMatchObject({
      outcome: 'cancelled',
      reason: expect.stringContaining('re-checked before it ran'),
    });
    await replays(handle);
  });
});
