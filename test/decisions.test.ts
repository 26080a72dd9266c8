// Decisions are bound to the arguments shown, refused decisions stay visible to an auditor, and
// the stock `temporal workflow signal` command decides with nothing but the documented JSON.
import { execFile } from 'node:child_process';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { DecisionRefusedError } from '../client/client';
import type { PendingApproval } from '../pipeline/types';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';
import { eventually, pendingApproval } from './eventually';

const send = defineTool({
  name: 'send',
  description: 'sends a message (asks first)',
  input: z.object({ to: z.string() }),
  approval: 'ask',
  execute: ({ to }) => `sent to ${to}`,
});
const quick = defineTool({
  name: 'quick',
  description: 'asks, with a 1 s deny timeout',
  input: z.object({}),
  approval: 'ask',
  approvalTimeoutMs: 1_000,
  execute: () => 'quick ran',
});

/** The stock Temporal CLI, run without blocking: the worker that answers it lives in this process. */
function temporal(args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      inject('temporalCli'),
      [...args, '--address', inject('temporalAddress'), '--namespace', 'default'],
      (err, stdout, stderr) => resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness('decisions', defineConfig({ tools: [send, quick] }));
});
afterAll(() => h?.close());

const pendingOf = (workflowId: string, callId: string): Promise<PendingApproval> =>
  pendingApproval(h.client, workflowId, (p) => p.callId === callId);

describe('decisions', () => {
  it('an update must carry the digest that was shown; missing or mismatched ones are refused and recorded', async () => {
    const handle = await h.client.startBatch(batch([{ id: 'c1', name: 'send', args: { to: 'ada' } }]));
    const p = await pendingOf(handle.workflowId, 'c1');

    const raw = handle.executeUpdate('sluice.decide', {
      args: [{ approvalId: p.approvalId, decision: 'approve', by: 'mallory' }],
    });
    const rawErr = await raw.then(
      () => undefined,
      (e) => e,
    );
    expect(rawErr).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((rawErr.cause as ApplicationFailure).type).toBe('SluiceDecisionRefused');
    expect(((rawErr.cause as ApplicationFailure).details?.[0] as { code: string }).code).toBe('digest-missing');

    const mismatch = await h.client
      .approve(p.approvalId, { workflowId: handle.workflowId, by: 'mallory', argsDigest: `sha256:${'0'.repeat(64)}` })
      .then(
        () => undefined,
        (e) => e,
      );
    expect(mismatch).toBeInstanceOf(DecisionRefusedError);
    expect((mismatch as DecisionRefusedError).refusal.code).toBe('digest-mismatch');
    expect((await h.client.batchState(handle.workflowId)).pending.map((x) => x.approvalId)).toEqual([p.approvalId]);

    expect(
      await h.client.approve(p.approvalId, { workflowId: handle.workflowId, by: 'alice', argsDigest: p.argsDigest }),
    ).toEqual({ approvalId: p.approvalId, outcome: 'allowed-once', by: 'alice' });
    const late = await h.client
      .deny(p.approvalId, { workflowId: handle.workflowId, by: 'bob', argsDigest: p.argsDigest })
      .then(
        () => undefined,
        (e) => e,
      );
    const out = await handle.result();
    expect(text(out.results[0].result)).toBe('sent to ada');
    // `late` raced the batch's end: refused by the batch itself, or found decided in its result.
    expect((late as DecisionRefusedError).refusal).toMatchObject({
      code: 'decided',
      outcome: 'allowed-once',
      by: 'alice',
    });

    const refused = out.events.filter((e) => e.type === 'approval/refused');
    expect(refused.slice(0, 2).map((e) => [e.data.code, e.data.via, e.data.by, e.data.callId])).toEqual([
      ['digest-missing', 'update', 'mallory', 'c1'],
      ['digest-mismatch', 'update', 'mallory', 'c1'],
    ]);
    expect(out.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({
      outcome: 'allowed-once',
      by: 'alice',
    });
  });

  it('deciding after the deny timeout says it expired, while the batch runs and after it finished', async () => {
    const handle = await h.client.startBatch(
      batch([
        { id: 'q', name: 'quick' },
        { id: 's', name: 'send', args: { to: 'bob' } },
      ]),
    );
    // Both are asked together; the first expires while the second still waits.
    const second = await pendingOf(handle.workflowId, 's');
    const first = await eventually('the first ask to expire', async () =>
      (await h.client.batchState(handle.workflowId)).decided.find((d) => d.callId === 'q'),
    );
    expect(first).toMatchObject({ outcome: 'unavailable', expired: true });

    const whileRunning = await h.client
      .approve(first.approvalId, { workflowId: handle.workflowId, by: 'alice', argsDigest: second.argsDigest })
      .then(
        () => undefined,
        (e) => e,
      );
    expect((whileRunning as DecisionRefusedError).refusal.code).toBe('expired');

    await h.client.deny(second.approvalId, {
      workflowId: handle.workflowId,
      by: 'alice',
      reason: 'not today',
      argsDigest: second.argsDigest,
    });
    const out = await handle.result();
    expect(out.results.map((r) => r.result.isError)).toEqual([true, true]);
    expect(text(out.results[1].result)).toContain('rejected by alice: not today');

    const afterwards = await h.client
      .approve(first.approvalId, { workflowId: handle.workflowId, by: 'alice', argsDigest: 'sha256:x' })
      .then(
        () => undefined,
        (e) => e,
      );
    expect((afterwards as DecisionRefusedError).refusal).toMatchObject({ code: 'expired', callId: 'q' });
  });

  it('the stock `temporal workflow signal` command decides; a signal with another digest is refused and recorded', async () => {
    const handle = await h.client.startBatch(batch([{ id: 'c1', name: 'send', args: { to: 'ops' } }]));
    const p = await pendingOf(handle.workflowId, 'c1');
    const signal = (payload: object) =>
      temporal([
        'workflow',
        'signal',
        '--workflow-id',
        handle.workflowId,
        '--name',
        'sluice.decide',
        '--input',
        JSON.stringify(payload),
      ]);

    const wrong = await signal({
      approvalId: p.approvalId,
      decision: 'approve',
      by: 'ops',
      argsDigest: 'sha256:stale',
    });
    expect(wrong.status, wrong.stderr).toBe(0);
    const ok = await signal({ approvalId: p.approvalId, decision: 'approve', by: 'ops', reason: 'ticket 42' });
    expect(ok.status, ok.stderr).toBe(0);

    const out = await handle.result();
    expect(text(out.results[0].result)).toBe('sent to ops');
    expect(out.events.find((e) => e.type === 'approval/refused')?.data).toMatchObject({
      code: 'digest-mismatch',
      via: 'signal',
      by: 'ops',
    });
    expect(out.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({
      outcome: 'allowed-once',
      by: 'ops',
      reason: 'ticket 42',
    });
  });

  it('the stock `temporal workflow update execute` command decides, and tells why it refuses', async () => {
    const handle = await h.client.startBatch(batch([{ id: 'c1', name: 'send', args: { to: 'ops' } }]));
    const p = await pendingOf(handle.workflowId, 'c1');
    const update = (payload: object) =>
      temporal([
        'workflow',
        'update',
        'execute',
        '--workflow-id',
        handle.workflowId,
        '--name',
        'sluice.decide',
        '--input',
        JSON.stringify(payload),
      ]);

    const bare = await update({ approvalId: p.approvalId, decision: 'deny', by: 'ops' });
    expect(bare.status).not.toBe(0);
    expect(bare.stdout + bare.stderr).toContain('must carry the argsDigest');
    const ok = await update({ approvalId: p.approvalId, decision: 'deny', by: 'ops', argsDigest: p.argsDigest });
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('rejected');
    expect((await handle.result()).results[0].result.isError).toBe(true);
  });
});
