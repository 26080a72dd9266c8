// The keyed argsDigest crosses history only where the workflow binds something to it: an ask (the
// pending approval, the decision, a grant's use) and an at-most-once body (a lost attempt's
// reconcile card). An allowed call's stages each key the arguments where they run, so its
// digest is in neither the preflight's marker nor the body's input, and every stage still sees
// the same keyed digest. On the real dev server, read from the recorded history.
import type { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { auditHistories } from '../client/audit';
import { digestKeyFromEnv, keyedArgsDigest } from '../codec/args-digest';
import { defineConfig, defineTool } from '../define/config';
import { pendingApproval } from './eventually';
import { batch, startHarness, text, type Harness } from './harness';

/** Each tool answers with the digest its body saw; post-execute notes the one it saw. */
const seenByPost = new Map<string, string>();
const digestTool = (name: string, extra: object = {}) =>
  defineTool({
    name,
    description: `answers with the digest its body sees (${name})`,
    input: z.object({ pin: z.string() }),
    execute: (_args, ctx) => ctx.call.argsDigest,
    ...extra,
  });

const config = defineConfig({
  tools: [digestTool('show'), digestTool('unlock', { approval: 'ask' }), digestTool('charge', { atMostOnce: true })],
  postExecute: [(ctx) => void seenByPost.set(ctx.call.id, ctx.call.argsDigest)],
});

// The same tools where every stage runs as a regular activity (long-running hooks): the stages'
// inputs are then in history too.
const slowConfig = defineConfig({
  tools: config.tools,
  preExecute: [{ name: 'slow-pre', handler: () => undefined, longRunning: true }],
  guards: [{ name: 'slow-guard', handler: () => undefined, longRunning: true }],
  postExecute: [{ name: 'slow-post', handler: () => undefined, longRunning: true }],
});

let h: Harness;
let slow: Harness;
beforeAll(async () => {
  [h, slow] = await Promise.all([
    startHarness('digest-where-bound', config),
    startHarness('digest-where-bound-slow', slowConfig),
  ]);
});
afterAll(() => Promise.all([h?.close(), slow?.close()]));

const json = (p?: temporal.api.common.v1.IPayload | null) => Buffer.from(p?.data ?? []).toString('utf8');

/** The input of every activity a history scheduled, as JSON text, by activity type. */
function scheduledInputs(history: temporal.api.history.v1.IHistory): Map<string, string[]> {
  const inputs = new Map<string, string[]>();
  for (const e of history.events ?? []) {
    const s = e.activityTaskScheduledEventAttributes;
    if (!s) continue;
    const type = s.activityType?.name ?? '';
    inputs.set(type, [...(inputs.get(type) ?? []), ...(s.input?.payloads ?? []).map(json)]);
  }
  return inputs;
}

describe('the keyed digest in history', () => {
  it('travels for an ask and an at-most-once body only; every stage of every call sees the keyed digest', async () => {
    const req = batch([
      { id: 'a', name: 'show', args: { pin: '1111' } },
      { id: 'b', name: 'unlock', args: { pin: '2222' } },
      { id: 'c', name: 'charge', args: { pin: '3333' } },
    ]);
    const handle = await h.client.startBatch(req);
    const pending = await pendingApproval(h.client, handle.workflowId);
    expect(pending.callId).toBe('b');
    await h.client.approve(pending.approvalId, {
      workflowId: handle.workflowId,
      by: 'ops',
      argsDigest: pending.argsDigest,
    });
    const out = await handle.result();

    // The worker's key is this process's environment: the test computes what each stage must see.
    const key = digestKeyFromEnv();
    const keyed = {
      a: keyedArgsDigest({ pin: '1111' }, key),
      b: pending.argsDigest,
      c: keyedArgsDigest({ pin: '3333' }, key),
    };
    expect(keyed.b).toBe(keyedArgsDigest({ pin: '2222' }, key));
    expect(out.results.map((r) => text(r.result))).toEqual([keyed.a, keyed.b, keyed.c]);
    expect(Object.fromEntries(seenByPost)).toEqual(keyed);

    const history = await h.client.temporal.workflow.getHandle(handle.workflowId).fetchHistory();
    const events = history.events ?? [];
    // The preflight's markers (local activities: the claim's round and the later ones): the
    // digest comes back for b and c, not for a.
    const markers = events
      .map((e) => e.markerRecordedEventAttributes?.details)
      .filter((d) => /"activity_type":"(claimThenPreflight|preflight)"/.test(json(d?.data?.payloads?.[0])))
      .map((d) => json(d?.result?.payloads?.[0]))
      .join('\n');
    // (a has nothing else to say: its result is its call id alone.)
    expect(markers).toContain('"results":["a"]');
    expect(markers).toContain(keyed.b);
    expect(markers).toContain(keyed.c);
    expect(markers).not.toContain(keyed.a);
    // The bodies' inputs: b's and c's carry their digest, a's carries none. b was asked, so its
    // guards run first in its body's activity.
    const inputs = scheduledInputs(history);
    expect(inputs.get('guardThenExecuteBody')?.map((t) => JSON.parse(t).callId)).toEqual(['b']);
    expect(inputs.has('runGuards')).toBe(false);
    const bodies = new Map<string, Record<string, unknown>>();
    for (const text of [...(inputs.get('executeBody') ?? []), ...(inputs.get('guardThenExecuteBody') ?? [])]) {
      const input = JSON.parse(text);
      bodies.set(input.callId, input);
    }
    expect([...bodies.keys()].sort()).toEqual(['a', 'b', 'c']);
    expect(bodies.get('a')).not.toHaveProperty('argsDigest');
    expect(bodies.get('b')?.argsDigest).toBe(keyed.b);
    expect(bodies.get('c')?.argsDigest).toBe(keyed.c);
    // Nowhere in the history: the workflow's own sha-256 of any call's arguments.
    const all = events
      .flatMap((e) => JSON.stringify(e))
      .join('')
      .concat(markers, ...[...bodies.values()].map((b) => JSON.stringify(b)));
    expect(all).not.toMatch(/(?<!hmac-)sha256:[0-9a-f]{64}/);

    // The audit, from the history alone, still shows the ask bound to its digest.
    const audit = auditHistories([{ workflowId: handle.workflowId, history, source: 'server' }]);
    expect(JSON.stringify(audit)).toContain(keyed.b);
  });
});

describe('stages run as activities (their inputs in history)', () => {
  it("no stage's input carries the workflow's own sha-256, and every body sees the keyed digest", async () => {
    // An ask first, so the calls after it are preflighted ahead as activities too.
    const req = batch([
      { id: 'a', name: 'unlock', args: { pin: '1111' } },
      { id: 'b', name: 'show', args: { pin: '2222' } },
      { id: 'c', name: 'unlock', args: { pin: '3333' } },
    ]);
    const handle = await slow.client.startBatch(req);
    for (let decided = 0; decided < 2; decided++) {
      const p = await pendingApproval(slow.client, handle.workflowId);
      await slow.client.approve(p.approvalId, { workflowId: handle.workflowId, by: 'ops', argsDigest: p.argsDigest });
    }
    const out = await handle.result();
    const key = digestKeyFromEnv();
    expect(out.results.map((r) => text(r.result))).toEqual(
      ['1111', '2222', '3333'].map((pin) => keyedArgsDigest({ pin }, key)),
    );

    const history = await slow.client.temporal.workflow.getHandle(handle.workflowId).fetchHistory();
    const inputs = scheduledInputs(history);
    // The preflight, the bodies and the settles all ran as activities here; the asked calls'
    // guards ran first in their bodies' activities.
    expect([...inputs.keys()].sort()).toEqual(['executeBody', 'guardThenExecuteBody', 'preflight', 'settle']);
    const all = [...inputs.values()].flat().join('\n');
    expect(all).not.toMatch(/(?<!hmac-)sha256:[0-9a-f]{64}/);
    // The allowed call's digest is in no stage's reference (its body's answer, settled, is the
    // digest as text); the asked calls' are, where bound.
    const sent = (pin: string) => `"argsDigest":"${keyedArgsDigest({ pin }, key)}"`;
    expect(all).not.toContain(sent('2222'));
    expect(inputs.get('executeBody')!.join('\n')).not.toContain(sent('3333'));
    expect(inputs.get('guardThenExecuteBody')!.join('\n')).toContain(sent('1111'));
    expect(inputs.get('guardThenExecuteBody')!.join('\n')).toContain(sent('3333'));
  });
});
