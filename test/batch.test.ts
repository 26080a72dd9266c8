// Batch-level behaviour: ordering under parallel calls, cancellation, idempotent resubmission,
// seq continuity across a session's batches and the JSONL session log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { BatchOutput } from '../pipeline/types';
import { defineConfig, defineTool } from '../define/config';
import { readSessionLog } from '../stores/sink';
import { batch, startHarness, text, type Harness } from './harness';
import { eventually } from './eventually';

type Span = { id: string; start: number; end: number };
const spans: Span[] = [];
const bodyRuns = new Map<string, number>();
const unmet: string[] = [];

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), reject(new Error('aborted'))));
  });

const config = defineConfig({
  tools: [
    defineTool({
      name: 'sleep',
      description: 'sleeps; safe or exclusive as asked',
      input: z.object({ ms: z.number(), safe: z.boolean(), waitFor: z.string().optional() }),
      isConcurrencySafe: ({ safe }) => safe,
      async execute({ ms, waitFor }, ctx) {
        const span = { id: ctx.call.id, start: Date.now(), end: 0 };
        spans.push(span);
        bodyRuns.set(ctx.idempotencyKey, (bodyRuns.get(ctx.idempotencyKey) ?? 0) + 1);
        // Partners meet: each stays running until the other has started, so two bodies the batch
        // runs in parallel overlap whatever the machine's speed, and two it serializes never meet
        // (recorded, and the test says so, instead of waiting forever).
        if (waitFor)
          await eventually(`${waitFor} to start`, () => spans.some((s) => s.id === waitFor), {
            timeoutMs: 15_000,
          }).catch(() => unmet.push(`${ctx.call.id} never saw ${waitFor} start`));
        await sleep(ms, ctx.signal);
        span.end = Date.now();
        return `slept ${ms}`;
      },
    }),
  ],
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness('batch', config);
});
afterAll(() => h?.close());

const call = (id: string, ms: number, safe: boolean, waitFor?: string) => ({
  id,
  name: 'sleep',
  args: { ms, safe, ...(waitFor ? { waitFor } : {}) },
});
const span = (id: string) => spans.find((s) => s.id === id)!;
const overlaps = (a: Span, b: Span) => a.start < b.end && b.start < a.end;

describe('ordering under parallel calls', () => {
  it('concurrency-safe bodies overlap, an exclusive call is a barrier, results commit in model order', async () => {
    const out = await h.client.runBatch(
      batch([
        call('s1', 300, true, 's2'),
        call('s2', 100, true, 's1'),
        call('x', 300, false),
        call('s3', 100, true, 's4'),
        call('s4', 100, true, 's3'),
      ]),
    );
    expect(unmet).toEqual([]);
    expect(overlaps(span('s1'), span('s2'))).toBe(true);
    expect(span('x').start).toBeGreaterThanOrEqual(span('s1').end);
    expect(span('s3').start).toBeGreaterThanOrEqual(span('x').end);
    expect(overlaps(span('s3'), span('s4'))).toBe(true);
    // s2 finished before s1, yet the results are recorded in model order
    const resultOrder = out.events.filter((e) => e.type === 'tool/result').map((e) => e.data.callId);
    expect(resultOrder).toEqual(['s1', 's2', 'x', 's3', 's4']);
    expect(out.messages.map((m) => (m.role === 'tool' ? m.toolCallId : m.role))).toEqual(['s1', 's2', 'x', 's3', 's4']);
  });

  it('never runs more than maxParallel bodies at once', async () => {
    const ids = ['m1', 'm2', 'm3', 'm4', 'm5'];
    await h.client.runBatch(
      batch(
        ids.map((id) => call(id, 400, true)),
        { options: { maxParallel: 2 } },
      ),
    );
    const mine = ids.map(span);
    for (const s of mine) {
      const concurrent = mine.filter((o) => o !== s && overlaps(o, s) && o.start <= s.start);
      expect(concurrent.length).toBeLessThanOrEqual(1);
    }
  });
});

describe('cancellation mid-batch', () => {
  it('stops new calls, drains the started one, and aborts the rest without running them', async () => {
    const req = batch([call('run', 30_000, false), call('later1', 10, true), call('later2', 10, false)]);
    const handle = await h.client.startBatch(req);
    await eventually('the body of run to start', () => spans.some((s) => s.id === 'run' && s.end === 0));
    await handle.cancel();
    const out: BatchOutput = await handle.result();
    expect(out.cancelled).toBe(true);
    const [run, later1, later2] = out.results.map((r) => r.result);
    expect(run.error?.code).toBe('ABORTED');
    expect(later1.error?.code).toBe('ABORTED_BEFORE_DISPATCH');
    expect(later2.error?.code).toBe('ABORTED_BEFORE_DISPATCH');
    expect(spans.some((s) => s.id === 'later1' || s.id === 'later2')).toBe(false);
    // every call still has exactly one tool/call and one tool/result
    for (const id of ['run', 'later1', 'later2']) {
      expect(out.events.filter((e) => e.type === 'tool/call' && e.data.callId === id)).toHaveLength(1);
      expect(out.events.filter((e) => e.type === 'tool/result' && e.data.callId === id)).toHaveLength(1);
    }
  });

  // The bodies share one cancellation scope (workflows/call-pipeline.ts): a cancel must still reach
  // each body that runs, once, and leave a body that already ended alone.
  it('asks every running body to stop, once each, and not a body that already ended', async () => {
    const req = batch([call('quick', 10, true), call('slowA', 30_000, true), call('slowB', 30_000, true)]);
    const handle = await h.client.startBatch(req);
    // Ended as the workflow sees it: a body that returned but whose completion the history does not
    // hold yet is still running for the workflow, and rightly asked to stop.
    const quickCompleted = async () =>
      ((await h.client.temporal.workflow.getHandle(handle.workflowId).fetchHistory()).events ?? []).some(
        (e) => e.activityTaskCompletedEventAttributes,
      );
    await eventually(
      'both slow bodies to run, after the quick one ended',
      async () =>
        ['slowA', 'slowB'].every((id) => spans.some((s) => s.id === id && s.end === 0)) &&
        span('quick')?.end > 0 &&
        (await quickCompleted()),
    );
    await handle.cancel();
    const out: BatchOutput = await handle.result();
    const [quick, slowA, slowB] = out.results.map((r) => r.result);
    expect(quick.isError).toBe(false);
    expect(slowA.error?.code).toBe('ABORTED');
    expect(slowB.error?.code).toBe('ABORTED');
    const { events } = await h.client.temporal.workflow.getHandle(handle.workflowId).fetchHistory();
    expect((events ?? []).filter((e) => e.activityTaskCancelRequestedEventAttributes)).toHaveLength(2);
  });
});

describe('idempotent resubmission', () => {
  it('a resubmitted batch attaches to the same run, running or finished; bodies run once', async () => {
    const req = batch([call('once', 800, false)]);
    const [a, b] = await Promise.all([h.client.startBatch(req), h.client.startBatch(req)]);
    expect(b.workflowId).toBe(a.workflowId);
    const firstRun = (await a.describe()).runId;
    expect((await b.describe()).runId).toBe(firstRun);
    const out1 = await a.result();
    const out2 = await h.client.runBatch(req); // after completion: the same outcome, no second run
    expect(out2).toEqual(out1);
    expect(bodyRuns.get(`${a.workflowId}/once`)).toBe(1);
  });

  it('refuses a malformed batch before starting anything', async () => {
    await expect(h.client.startBatch({ sessionId: '', turn: 1, step: 1, calls: [] })).rejects.toThrow(
      /malformed batch: sessionId must be a non-empty string/,
    );
    await expect(h.client.startBatch(batch([call('dup', 1, true), call('dup', 1, true)]))).rejects.toThrow(
      /appears twice/,
    );
  });
});

describe('session events', () => {
  it('seq is continuous across batches, and the JSONL log holds each event once, in seq order', async () => {
    const first = batch([call('e1', 10, true), call('e2', 10, true)]);
    const out1 = await h.client.runBatch(first);
    const out2 = await h.client.runBatch({
      ...batch([call('e3', 10, false)]),
      sessionId: first.sessionId,
      turn: 2,
      startSeq: out1.nextSeq,
      state: out1.state,
    });
    const all = [...out1.events, ...out2.events];
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i));
    expect(out2.nextSeq).toBe(all.length);
    expect(text(out2.results[0].result)).toBe('slept 10');

    const log = await readSessionLog(h.stateDir, first.sessionId);
    expect(log).toEqual(all);
  });
});
