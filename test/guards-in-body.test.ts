// After a person's yes, the guards judge the call in the activity that runs its body
// (guardThenExecuteBody), right before the body, instead of in a stage of their own: one local
// activity less between a decision and its result. What must hold: a guard's "no" still stops
// the body (and goes through post-execute as a denial), a guard that throws is a failure of the
// pipeline, every attempt of the body is judged again, the guards' events and contexts are kept,
// and `sluice audit` still shows what the guards said. Histories recorded before, with the guards
// as their own stage, replay from the fixtures of every release (test/replay.test.ts). On the
// real dev server.
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { auditHistory } from '../client/audit';
import { defineConfig, defineTool } from '../define/config';
import { pendingApproval } from './eventually';
import { batch, startHarness, text, type Harness } from './harness';

/** Per call id: how often the guards judged it, and how often its body started. */
const guarded = new Map<string, number>();
const bodies = new Map<string, number>();
const bump = (m: Map<string, number>, id: string) => m.set(id, (m.get(id) ?? 0) + 1);
/** Post-execute saw these calls. */
const postSeen: string[] = [];

const config = defineConfig({
  tools: [
    defineTool({
      name: 'deploy',
      description: 'Deploys, once a person approves. `fail` fails its first attempt.',
      input: z.object({ env: z.string(), fail: z.boolean().optional() }),
      approval: 'ask',
      retry: { maximumAttempts: 3, initialIntervalMs: 50 },
      execute: ({ env, fail }, ctx) => {
        bump(bodies, ctx.call.id);
        if (fail && ctx.attempt === 1) throw new Error('flaky network');
        return `deployed ${env}`;
      },
    }),
  ],
  guards: [
    (ctx) => {
      bump(guarded, ctx.call.id);
      ctx.emit('test/guarded', { callId: ctx.call.id });
      ctx.addContext(`guard checked ${ctx.call.id}`);
      if (ctx.call.args.env === 'explode') throw new Error('the change calendar is unreachable');
      return ctx.call.args.env === 'frozen' ? 'production is frozen' : undefined;
    },
  ],
  postExecute: [
    (ctx) => {
      postSeen.push(ctx.call.id);
      return undefined;
    },
  ],
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness('guards-in-body', config);
});
afterAll(async () => {
  await h?.close();
});

type History = temporal.api.history.v1.IHistory;
const json = (p?: temporal.api.common.v1.IPayload | null) => Buffer.from(p?.data ?? []).toString('utf8');

/** The activity types scheduled, and the local activities' types, in history order. */
function stagesOf(history: History) {
  const scheduled: string[] = [];
  const local: string[] = [];
  for (const e of history.events ?? []) {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (name) scheduled.push(name);
    const m = e.markerRecordedEventAttributes;
    const type = m && /"activity_type":"(\w+)"/.exec(json(m.details?.data?.payloads?.[0]))?.[1];
    if (type) local.push(type);
  }
  return { scheduled, local };
}

/** Runs one approved call of deploy and returns its output, history and audit; replays it too. */
async function approved(id: string, args: { env: string; fail?: boolean }) {
  const req = batch([{ id, name: 'deploy', args }]);
  const handle = await h.client.startBatch(req);
  const pending = await pendingApproval(h.client, handle.workflowId);
  expect(guarded.get(id)).toBeUndefined(); // not before the yes: the preflight's ask ends the waterfall
  await h.client.approve(pending.approvalId, { workflowId: handle.workflowId, by: 'ops' });
  const out = await handle.result();
  const history = await h.client.temporal.workflow.getHandle(handle.workflowId).fetchHistory();
  await Worker.runReplayHistory(
    { workflowBundle: { codePath: inject('workflowBundlePath') } },
    history as Parameters<typeof Worker.runReplayHistory>[1],
    handle.workflowId,
  );
  const audit = auditHistory({ workflowId: handle.workflowId, history, source: 'server' });
  return { out, history, call: audit.calls.find((c) => c.callId === id)! };
}

describe('the guards after a yes run in the body activity', () => {
  it('they allow: one activity runs the guards, then the body; their event and context are kept', async () => {
    const { out, history, call } = await approved('ok', { env: 'staging' });
    expect(text(out.results[0].result)).toBe('deployed staging');
    expect(stagesOf(history).scheduled).toEqual(['guardThenExecuteBody']);
    expect(stagesOf(history).local).not.toContain('runGuards');
    expect([guarded.get('ok'), bodies.get('ok')]).toEqual([1, 1]);
    // The guard's event comes before the result; its context is injected after the batch.
    const types = out.events.map((e) => e.type);
    expect(types.indexOf('test/guarded')).toBeGreaterThan(types.indexOf('approval/decided'));
    expect(types.indexOf('test/guarded')).toBeLessThan(types.indexOf('tool/result'));
    expect(JSON.stringify(out.messages)).toContain('guard checked ok');
    expect(call.guards).toMatchObject({ gate: 'allow', outcome: 'completed' });
    expect(call.body).toMatchObject({ outcome: 'completed', candidate: { text: 'deployed staging' } });
  });

  it('they deny: the body never starts, the denial goes through post-execute, the audit shows the guard', async () => {
    const { out, history, call } = await approved('frozen', { env: 'frozen' });
    expect(out.results[0].result).toMatchObject({ isError: true, error: { code: 'DENIED' } });
    expect(text(out.results[0].result)).toBe('Error: production is frozen');
    expect(bodies.get('frozen')).toBeUndefined();
    expect(postSeen).toContain('frozen');
    expect(stagesOf(history).scheduled).toEqual(['guardThenExecuteBody']);
    expect(out.events.map((e) => e.type)).toContain('test/guarded');
    expect(call.guards).toMatchObject({ gate: 'deny', message: 'production is frozen' });
    expect(call.body).toBeUndefined();
  });

  it('a guard that throws is a failure of the pipeline: no body, no post-execute', async () => {
    const { out, call } = await approved('explode', { env: 'explode' });
    expect(out.results[0].result).toMatchObject({ isError: true, error: { code: 'PIPELINE_FAILED' } });
    expect(text(out.results[0].result)).toContain('the change calendar is unreachable');
    expect(bodies.get('explode')).toBeUndefined();
    expect(postSeen).not.toContain('explode');
    expect(call.guards?.gate).toBe('failed');
  });

  it('every attempt of the body is judged again, right before it runs', async () => {
    const { out, call } = await approved('retried', { env: 'staging', fail: true });
    expect(text(out.results[0].result)).toBe('deployed staging');
    expect([guarded.get('retried'), bodies.get('retried')]).toEqual([2, 2]);
    expect(call.body).toMatchObject({ outcome: 'completed', attempts: 2 });
  });
});
