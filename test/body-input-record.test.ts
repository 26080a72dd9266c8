// A call's record (the calls before it in the batch, in flight, for session facts) reaches the stages
// that judge — pre-execute, and the guards wherever they run — but not a body's or a settle's
// recorded input unless the guards run in that same activity: the record grows with every call
// before this one, so in every such input it made a batch's history grow with the square of its
// calls. On the real dev server, read from the recorded history.
import type { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineConfig, defineTool } from '../define/config';
import { pendingApproval } from './eventually';
import { batch, startHarness, text, type Harness } from './harness';

/** How many calls each stage saw in a call's record, by stage and call id. */
const seen = new Map<string, number>();
const note = (name: string, extra: object = {}) =>
  defineTool({
    name,
    description: `answers with its word (${name})`,
    input: z.object({ word: z.string() }),
    execute: ({ word }) => word,
    ...extra,
  });

const config = defineConfig({
  tools: [note('note'), note('held', { approval: 'ask' })],
  preExecute: [(ctx) => void seen.set(`pre ${ctx.call.id}`, ctx.record?.calls.length ?? -1)],
  guards: [(ctx) => void seen.set(`guard ${ctx.call.id}`, ctx.record?.calls.length ?? -1)],
});

/** The same tools, with a long-running post-execute: each call's settle is an activity, its input recorded. */
const settlingConfig = defineConfig({
  ...config,
  postExecute: [
    {
      name: 'reads the record',
      longRunning: true,
      handler: (ctx) => void seen.set(`post ${ctx.call.id}`, ctx.record?.calls.length ?? -1),
    },
  ],
});

let h: Harness;
let settling: Harness;
beforeAll(async () => {
  h = await startHarness('body-input-record', config);
  settling = await startHarness('settle-input-record', settlingConfig);
});
afterAll(async () => {
  await h?.close();
  await settling?.close();
});

const json = (p?: temporal.api.common.v1.IPayload | null) => Buffer.from(p?.data ?? []).toString('utf8');

/** Each body's recorded input, parsed, by call id. */
function bodyInputs(history: temporal.api.history.v1.IHistory): Map<string, Record<string, unknown>> {
  const bodies = new Map<string, Record<string, unknown>>();
  for (const e of history.events ?? []) {
    const s = e.activityTaskScheduledEventAttributes;
    if (!s || !/^(executeBody|guardThenExecuteBody)$/.test(s.activityType?.name ?? '')) continue;
    const input = JSON.parse(json(s.input?.payloads?.[0]));
    bodies.set(input.callId, input);
  }
  return bodies;
}

describe("a call's record in the body's input", () => {
  it('is left out of a body whose guards ran before it, and pre-execute and the guards still see it', async () => {
    const words = ['alpha-word', 'beta-word', 'gamma-word', 'delta-word', 'omega-word'];
    const req = batch(words.map((word, i) => ({ id: `c${i}`, name: 'note', args: { word } })));
    const handle = await h.client.startBatch(req);
    const out = await handle.result();
    expect(out.results.map((r) => text(r.result))).toEqual(words);
    // The judging stages saw the calls before each one.
    for (let i = 0; i < words.length; i++) {
      expect(seen.get(`pre c${i}`), `pre-execute of c${i}`).toBe(i === 0 ? -1 : i);
      expect(seen.get(`guard c${i}`), `guards of c${i}`).toBe(i === 0 ? -1 : i);
    }
    const history = await h.client.temporal.workflow.getHandle(handle.workflowId).fetchHistory();
    const bodies = bodyInputs(history);
    expect([...bodies.keys()].sort()).toEqual(['c0', 'c1', 'c2', 'c3', 'c4']);
    for (const [id, input] of bodies) {
      expect(input, id).not.toHaveProperty('record');
      // No other call's arguments ride along.
      const others = words.filter((_, i) => `c${i}` !== id);
      for (const w of others) expect(JSON.stringify(input), `${id}'s body input`).not.toContain(w);
    }
  });

  it('goes with a body whose guards run in the same activity (after a person said yes), and the guards read it', async () => {
    const req = batch([
      { id: 'first', name: 'note', args: { word: 'before-word' } },
      { id: 'asked', name: 'held', args: { word: 'asked-word' } },
    ]);
    const handle = await h.client.startBatch(req);
    const pending = await pendingApproval(h.client, handle.workflowId);
    await h.client.approve(pending.approvalId, {
      workflowId: handle.workflowId,
      by: 'ops',
      argsDigest: pending.argsDigest,
    });
    const out = await handle.result();
    expect(out.results.map((r) => text(r.result))).toEqual(['before-word', 'asked-word']);
    expect(seen.get('guard asked')).toBe(1);
    const history = await h.client.temporal.workflow.getHandle(handle.workflowId).fetchHistory();
    const types = (history.events ?? []).flatMap(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? [],
    );
    expect(types).toContain('guardThenExecuteBody');
    const asked = bodyInputs(history).get('asked');
    expect(JSON.stringify(asked)).toContain('before-word');
    expect(asked).toHaveProperty('record');
    expect(bodyInputs(history).get('first')).not.toHaveProperty('record');
  });

  it("is left out of a settle activity's input too, and post-execute sees none", async () => {
    const words = ['one-word', 'two-word', 'three-word', 'four-word'];
    const req = batch(words.map((word, i) => ({ id: `s${i}`, name: 'note', args: { word } })));
    const handle = await settling.client.startBatch(req);
    const out = await handle.result();
    expect(out.results.map((r) => text(r.result))).toEqual(words);
    for (let i = 0; i < words.length; i++) expect(seen.get(`post s${i}`), `post-execute of s${i}`).toBe(-1);
    const history = await settling.client.temporal.workflow.getHandle(handle.workflowId).fetchHistory();
    const settles = (history.events ?? []).flatMap((e) => {
      const a = e.activityTaskScheduledEventAttributes;
      return a?.activityType?.name === 'settle' ? [JSON.parse(json(a.input?.payloads?.[0])) as { ref: object }[]] : [];
    });
    const refs = settles.flat().map((r) => r.ref as { callId: string });
    expect(refs.map((r) => r.callId).sort()).toEqual(['s0', 's1', 's2', 's3']);
    for (const ref of refs) {
      expect(ref, ref.callId).not.toHaveProperty('record');
      const others = words.filter((_, i) => `s${i}` !== ref.callId);
      for (const w of others) expect(JSON.stringify(ref), `${ref.callId}'s settle input`).not.toContain(w);
    }
  });
});
