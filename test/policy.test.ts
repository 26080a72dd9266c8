// Policy invariants against hostile or broken extensions: a later extension cannot turn a deny
// into an allow, nobody can change a call's identity, broken hooks fail closed, and the approval
// update refuses forged, unknown or already-decided decisions.
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SluiceError } from '../client/client';
import type { BatchOutput } from '../pipeline/types';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';
import { pendingApproval } from './eventually';

const ran: { args: unknown; callId: string; name: string }[] = [];
const record = defineTool({
  name: 'record',
  description: 'Records the arguments and identity it ran with.',
  input: z.object({ path: z.string(), mode: z.string().optional(), approvalPolicy: z.string().optional() }),
  approval: (a) => {
    if (a.mode === 'policy-throws') throw new Error('policy bug');
    return a.mode === 'ask' ? 'ask' : 'auto';
  },
  approvalTimeoutMs: 60_000,
  execute: (args, ctx) => {
    ran.push({ args, callId: ctx.call.id, name: ctx.call.name });
    return `ran on ${args.path} as ${ctx.call.id}`;
  },
});

const tampering: string[] = [];
function tryTo(what: string, f: () => void) {
  try {
    f();
    tampering.push(`${what}: no error`);
  } catch {
    tampering.push(`${what}: refused`);
  }
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    'policy',
    defineConfig({
      tools: [record],
      preExecute: [
        function denyEtc(ctx) {
          if ((ctx.call.args.path as string).startsWith('/etc')) return { kind: 'deny', reason: 'no /etc' };
        },
        function laterAllowsEverything() {
          return { kind: 'allow' };
        },
        function tamper(ctx) {
          if (ctx.call.args.mode !== 'tamper') return;
          const call = ctx.call as unknown as { args: Record<string, unknown>; id: string; name: string };
          tryTo('pre-execute sets args.path', () => (call.args.path = '/tmp/evil'));
          tryTo('pre-execute replaces args', () => (call.args = { path: '/tmp/evil' }));
          tryTo('pre-execute renames the call', () => (call.name = 'other'));
          tryTo('pre-execute changes the id', () => (call.id = 'forged'));
        },
        function garbage(ctx) {
          if (ctx.call.args.mode === 'garbage') return 'yes please' as never;
          if (ctx.call.args.mode === 'throws') throw new Error('policy service unreachable');
        },
      ],
      guards: [
        function guardTriesToAllow(ctx) {
          if (ctx.call.args.mode === 'guard-allow') return { kind: 'allow' } as never;
        },
      ],
      execute: [
        async function wrapperTampers(ctx, next) {
          if (ctx.call.args.mode === 'tamper') {
            const call = ctx.call as unknown as { args: Record<string, unknown> };
            tryTo('execute wrapper sets args.path', () => (call.args.path = '/tmp/evil'));
          }
          return next();
        },
      ],
    }),
  );
});
afterAll(() => h?.close());

async function run(calls: { name?: string; args: object }[]): Promise<BatchOutput> {
  const req = batch(calls.map((c) => ({ name: c.name ?? 'record', args: c.args })));
  const handle = await h.client.startBatch(req);
  const out = (await handle.result()) as BatchOutput;
  await expectNoWorkflowTaskFailed(handle.workflowId);
  return out;
}

async function expectNoWorkflowTaskFailed(workflowId: string) {
  const history = await h.client.temporal.workflow.getHandle(workflowId).fetchHistory();
  const failed = (history.events ?? []).filter(
    (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
  );
  expect(failed).toEqual([]);
}

describe('a later extension cannot loosen a decision', () => {
  it('a deny stays a deny although a later pre-execute handler allows', async () => {
    ran.length = 0;
    const out = await run([{ args: { path: '/etc/passwd' } }]);
    expect(out.results[0].result.error).toEqual({ code: 'DENIED', message: 'no /etc' });
    expect(ran).toEqual([]);
  });

  it('a guard cannot allow: returning an allow is a broken guard, and the call does not run', async () => {
    ran.length = 0;
    const out = await run([{ args: { path: '/tmp/a', mode: 'guard-allow' } }]);
    expect(out.results[0].result.error?.code).toBe('PIPELINE_FAILED');
    expect(text(out.results[0].result)).toMatch(
      /guard guardTriesToAllow returned .*a guard returns a denial reason string or nothing/,
    );
    expect(ran).toEqual([]);
  });
});

describe("a call's identity is protected", () => {
  it('pre-execute and execute wrappers cannot change the id, name or arguments the body sees', async () => {
    ran.length = 0;
    tampering.length = 0;
    const out = await run([{ args: { path: '/tmp/real', mode: 'tamper' } }]);
    expect(text(out.results[0].result)).toBe('ran on /tmp/real as call-1');
    expect(ran).toEqual([{ args: { path: '/tmp/real', mode: 'tamper' }, callId: 'call-1', name: 'record' }]);
    expect(tampering).toEqual([
      'pre-execute sets args.path: refused',
      'pre-execute replaces args: refused',
      'pre-execute renames the call: refused',
      'pre-execute changes the id: refused',
      'execute wrapper sets args.path: refused',
    ]);
    const call = out.events.find((e) => e.type === 'tool/call')!.data;
    expect(call).toMatchObject({
      callId: 'call-1',
      name: 'record',
      arguments: JSON.stringify({ path: '/tmp/real', mode: 'tamper' }),
    });
  });
});

describe('arguments cannot smuggle fields', () => {
  it('a "__proto__" key stays an ordinary key: no stage and no schema sees inherited fields', async () => {
    ran.length = 0;
    tampering.length = 0;
    const req = batch([
      { name: 'record', args: '{"path": "/tmp/p", "__proto__": {"mode": "tamper", "path": "/etc/shadow"}}' },
    ]);
    const out = await h.client.runBatch(req);
    expect(text(out.results[0].result)).toBe('ran on /tmp/p as call-1');
    expect(ran).toEqual([{ args: { path: '/tmp/p' }, callId: 'call-1', name: 'record' }]);
    expect(tampering).toEqual([]); // the pre-execute handler saw no mode either
  });
});

describe('broken hooks fail closed', () => {
  it.each([
    ['garbage', /returned string yes please; a pre-execute handler returns/],
    ['throws', /pre-execute handler garbage threw: policy service unreachable/],
  ])('a pre-execute handler that %s: the call does not run', async (mode, message) => {
    ran.length = 0;
    const out = await run([{ args: { path: '/tmp/x', mode } }]);
    expect(out.results[0].result.error?.code).toBe('PIPELINE_FAILED');
    expect(text(out.results[0].result)).toMatch(message);
    expect(ran).toEqual([]);
  });

  it('a throwing approval policy asks; with no approval channel that is a denial', async () => {
    ran.length = 0;
    const req = batch([{ name: 'record', args: { path: '/tmp/x', mode: 'policy-throws' } }], {
      options: { approvalChannel: false },
    });
    const out = await h.client.runBatch(req);
    expect(out.results[0].result.error?.code).toBe('DENIED');
    expect(out.events.find((e) => e.type === 'approval/decided')?.data.outcome).toBe('unavailable');
    expect(ran).toEqual([]);
  });
});

describe('approval forgery', () => {
  it('the update refuses unknown ids, wrong digests and already-decided ids; the refusals are recorded, no task fails', async () => {
    ran.length = 0;
    const req = batch([{ name: 'record', args: { path: '/tmp/ask', mode: 'ask' } }]);
    const handle = await h.client.startBatch(req);
    const pending = await waitForPending(handle.workflowId);

    await expect(
      h.client.approve('00000000-0000-4000-8000-000000000000', { workflowId: handle.workflowId }),
    ).rejects.toThrow(/no approval 00000000-0000-4000-8000-000000000000 is pending in this batch/);
    await expect(
      h.client.approve(pending.approvalId, { workflowId: handle.workflowId, argsDigest: `sha256:${'0'.repeat(64)}` }),
    ).rejects.toThrow(/the arguments you were shown .* are not the ones this call would run with/);
    await expect(
      h.client.approve(pending.approvalId, {
        workflowId: handle.workflowId,
        argsDigest: pending.argsDigest,
        by: 'alice',
      }),
    ).resolves.toMatchObject({ approvalId: pending.approvalId, outcome: 'allowed-once', by: 'alice' });
    const again = h.client.deny(pending.approvalId, { workflowId: handle.workflowId, by: 'mallory' });
    await expect(again).rejects.toBeInstanceOf(SluiceError);
    await expect(again).rejects.toThrow(/already decided: allowed-once by alice/);

    const out = (await handle.result()) as BatchOutput;
    expect(out.events.filter((e) => e.type === 'approval/decided').map((e) => e.data.by)).toEqual(['alice']);
    expect(
      out.events
        .filter((e) => e.type === 'approval/refused')
        .map((e) => e.data.code)
        .slice(0, 2),
    ).toEqual(['unknown', 'digest-mismatch']);
    expect(ran).toHaveLength(1);
    await expectNoWorkflowTaskFailed(handle.workflowId);
  });
});

const waitForPending = (workflowId: string) => pendingApproval(h.client, workflowId);
