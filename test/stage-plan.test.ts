// Local stage activities change where a stage runs, never what it does: the same batch through
// every stage plan gives the same results, events and sink log; histories show which stages were
// local; every history replays; and the sink still gets events while the workflow waits.
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import type { BatchOutput, JsonObject, PendingApproval, SessionEvent, SessionState } from '../pipeline/types';
import { defineConfig, defineTool, type SluiceConfig } from '../define/config';
import { auditHistory } from '../client/audit';
import { decode } from '../client/history';
import type { SettleResult } from '../pipeline/stages';
import { readSessionLog } from '../stores/sink';
import { sessionEventSinks } from '../worker/workflow-sinks';
import { batch, startHarness, text, type Harness } from './harness';
import { eventually, pendingApproval } from './eventually';

const released = new Map<string, () => void>();
const waitForRelease = (key: string) => new Promise<void>((resolve) => released.set(key, resolve));
/** Per session: the order pre-execute, post-execute and tools/result saw the calls in, and the state marks pre-execute saw. */
const seen = new Map<string, { pre: string[]; post: string[]; observed: string[]; marks: Map<string, string[]> }>();
const seenIn = (sessionId: string) => {
  if (!seen.has(sessionId)) seen.set(sessionId, { pre: [], post: [], observed: [], marks: new Map() });
  return seen.get(sessionId)!;
};

function configFor(plan: Variant): SluiceConfig {
  const pre = function policy(ctx: {
    sessionId: string;
    call: { id: string; args: Readonly<JsonObject> };
    state: Readonly<SessionState>;
    addContext(t: string): void;
  }) {
    const log = seenIn(ctx.sessionId);
    log.pre.push(ctx.call.id);
    log.marks.set(ctx.call.id, Object.keys(ctx.state.marks ?? {}));
    const t = ctx.call.args.text;
    if (t === 'deny-me') return { kind: 'deny' as const, reason: 'policy says no' };
    if (t === 'pre-throw') throw new Error('pre-execute exploded');
    ctx.addContext(`pre context for ${ctx.call.id}`);
  };
  const post = function rewrite(ctx: {
    sessionId: string;
    call: { id: string; args: Readonly<JsonObject> };
    result: { isError: boolean };
    addContext(t: string): void;
    emit(type: string, data: JsonObject): void;
  }) {
    seenIn(ctx.sessionId).post.push(ctx.call.id);
    ctx.emit('test/post-seen', { callId: ctx.call.id, isError: ctx.result.isError });
    if (ctx.call.args.text === 'rewrite')
      return { action: 'accept' as const, content: [{ type: 'text' as const, text: 'rewritten' }] };
    ctx.addContext(`post context for ${ctx.call.id}`);
  };
  return defineConfig({
    tools: [
      defineTool({
        name: 'echo',
        description: 'echo',
        input: z.object({ text: z.string() }),
        isConcurrencySafe: () => true,
        ...(plan === 'local bodies' ? { localBody: true } : {}),
        execute: ({ text }) => text,
      }),
      defineTool({
        name: 'broken',
        description: 'always throws',
        input: z.object({}),
        retry: { maximumAttempts: 1 },
        ...(plan === 'local bodies' ? { localBody: true } : {}),
        execute: () => {
          throw new Error('disk on fire');
        },
      }),
      defineTool({
        name: 'held',
        description: 'waits until the test releases it',
        input: z.object({ key: z.string() }),
        execute: async ({ key }) => (await waitForRelease(key), `released ${key}`),
      }),
      defineTool({
        name: 'deploy',
        description: 'asks first',
        input: z.object({ env: z.string() }),
        approval: 'ask',
        execute: ({ env }) => `deployed ${env}`,
      }),
      defineTool({
        name: 'mark',
        description: 'marks the session state with its call id, once released if it is held',
        input: z.object({ hold: z.string().optional() }),
        isConcurrencySafe: () => true,
        async execute({ hold }, ctx) {
          if (hold) await waitForRelease(hold);
          ctx.setState('marks', ctx.call.id, true);
          return 'marked';
        },
      }),
    ],
    preExecute: [plan === 'long pre-execute' ? { name: 'policy', handler: pre, longRunning: true } : pre],
    guards: [
      (ctx) => (ctx.call.args.text === 'guard-deny' || ctx.call.args.env === 'frozen' ? 'guard says no' : undefined),
    ],
    postExecute: [plan === 'long post-execute' ? { name: 'rewrite', handler: post, longRunning: true } : post],
    onResult: [(n) => void seenIn(n.sessionId).observed.push(n.call.id)],
    ...(plan === 'all activities' ? { localStages: false } : {}),
  });
}

const VARIANTS = ['local stages', 'all activities', 'long pre-execute', 'long post-execute', 'local bodies'] as const;
type Variant = (typeof VARIANTS)[number];
/** The stage activities each plan schedules on the server; the rest run as local activities. */
// The approved call (deploy) runs its guards first in its body's activity, whatever the plan.
const SCHEDULED: Record<Variant, string[]> = {
  'local stages': ['executeBody', 'guardThenExecuteBody'],
  'all activities': ['executeBody', 'guardThenExecuteBody', 'preflight', 'settle'],
  'long pre-execute': ['executeBody', 'guardThenExecuteBody', 'preflight'],
  'long post-execute': ['executeBody', 'guardThenExecuteBody', 'settle'],
  // echo's body is local too: only deploy's is scheduled on the server.
  'local bodies': ['guardThenExecuteBody'],
};

const harnesses = new Map<Variant, Harness>();
beforeAll(async () => {
  for (const v of VARIANTS) harnesses.set(v, await startHarness(`plan-${v.replace(/ /g, '-')}`, configFor(v)));
});
afterAll(async () => {
  for (const h of harnesses.values()) await h.close();
});

const mixedBatch = () =>
  batch([
    { name: 'echo', args: { text: 'hello' } },
    { name: 'echo', args: { text: 'deny-me' } },
    { name: 'echo', args: { text: 'guard-deny' } },
    { name: 'echo', args: { text: 'pre-throw' } },
    { name: 'echo', args: { text: 'rewrite' } },
    { name: 'nope', args: {} },
    { name: 'broken', args: {} },
    { name: 'echo', args: '{"text": ' },
  ]);

/**
 * What must not depend on the plan: results, messages, and each kind of event in its order.
 * (Admission of one call and the commit of an earlier one overlap, so how tool/call and
 * tool/result events interleave depends on timing in every plan.)
 */
function comparable(out: BatchOutput) {
  const byType: Record<string, JsonObject[]> = {};
  for (const e of out.events) (byType[e.type] ??= []).push(e.data);
  expect(out.events.map((e) => e.seq)).toEqual(out.events.map((_, i) => i));
  return { results: out.results, messages: out.messages, byType, nextSeq: out.nextSeq, state: out.state };
}

async function historyOf(h: Harness, workflowId: string) {
  return h.client.temporal.workflow.getHandle(workflowId).fetchHistory();
}

function scheduledTypes(history: Awaited<ReturnType<typeof historyOf>>): string[] {
  const names = (history.events ?? [])
    .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
    .filter((n): n is string => !!n);
  return [...new Set(names)].sort();
}

const waitForPending = (h: Harness, workflowId: string): Promise<PendingApproval> =>
  pendingApproval(h.client, workflowId);

function waitForLog(h: Harness, sessionId: string, seen: (events: SessionEvent[]) => boolean) {
  return eventually(`the expected events in the session log of ${sessionId}`, async () => {
    const log = await readSessionLog(h.stateDir, sessionId);
    return seen(log) && log;
  });
}

describe('stage plans', () => {
  it('every plan gives the same results, events and sink log for the same batch', async () => {
    const outputs = new Map<Variant, BatchOutput>();
    for (const v of VARIANTS) {
      const h = harnesses.get(v)!;
      const req = mixedBatch();
      const out = await h.client.runBatch(req);
      outputs.set(v, out);
      expect(await readSessionLog(h.stateDir, req.sessionId), v).toEqual(out.events);
    }
    const local = outputs.get('local stages')!;
    const byCall = Object.fromEntries(
      local.results.map((r) => [
        r.callId,
        { text: text(r.result), isError: r.result.isError, code: r.result.error?.code },
      ]),
    );
    expect(byCall).toEqual({
      'call-1': { text: 'hello', isError: false, code: undefined },
      'call-2': { text: 'Error: policy says no', isError: true, code: 'DENIED' },
      'call-3': { text: 'Error: guard says no', isError: true, code: 'DENIED' },
      'call-4': { text: expect.stringContaining('pre-execute exploded'), isError: true, code: 'PIPELINE_FAILED' },
      'call-5': { text: 'rewritten', isError: false, code: undefined },
      'call-6': { text: expect.stringContaining('unknown tool "nope"'), isError: true, code: 'UNKNOWN_TOOL' },
      'call-7': { text: expect.stringContaining('disk on fire'), isError: true, code: 'TOOL_FAILED' },
      'call-8': { text: expect.stringContaining('Error:'), isError: true, code: 'INVALID_ARGS' },
    });
    // Denials and body failures go through post-execute; failures of the pipeline itself do not.
    const postSeen = local.events.filter((e) => e.type === 'test/post-seen').map((e) => e.data.callId);
    expect(postSeen).toEqual(['call-1', 'call-2', 'call-3', 'call-5', 'call-6', 'call-7']);
    for (const v of VARIANTS) expect(comparable(outputs.get(v)!), v).toEqual(comparable(local));
  });

  it('local stages that take several calls at once still run them one at a time, in model order', async () => {
    for (const v of VARIANTS) {
      const h = harnesses.get(v)!;
      const req = batch(
        Array.from({ length: 13 }, (_, i) => ({ name: 'echo', args: { text: i === 6 ? 'deny-me' : `t${i}` } })),
      );
      const out = await h.client.runBatch(req);
      const ids = req.calls.map((c) => c.id);
      const log = seenIn(req.sessionId);
      expect(log.pre, v).toEqual(ids);
      expect(log.post, v).toEqual(ids);
      expect(log.observed, v).toEqual(ids);
      expect(
        out.events.filter((e) => e.type === 'tool/result').map((e) => e.data.callId),
        v,
      ).toEqual(ids);
    }
  });

  it('a preflight run ahead of a wait for a free slot is run again when a body changed the state meanwhile', async () => {
    for (const v of VARIANTS) {
      const h = harnesses.get(v)!;
      // maxParallel 2: call-3 and call-4 are preflighted together while call-1 and call-2 run;
      // call-4 is admitted only after call-1 finished and marked the state.
      const req = batch(
        [{ name: 'mark' }, { name: 'mark', args: { hold: `slot-${v}` } }, { name: 'mark' }, { name: 'mark' }],
        { options: { maxParallel: 2 } },
      );
      const handle = await h.client.startBatch(req);
      const log = seenIn(req.sessionId);
      await eventually('call-4 preflighted', () => log.marks.has('call-4'));
      await eventually(`the body holding slot-${v}`, () => released.get(`slot-${v}`));
      released.get(`slot-${v}`)!();
      const out = await handle.result();
      expect(
        out.results.map((r) => text(r.result)),
        v,
      ).toEqual(['marked', 'marked', 'marked', 'marked']);
      expect(log.marks.get('call-4'), v).toContain('call-1');
      expect(Object.keys(out.state.marks ?? {}).sort(), v).toEqual(['call-1', 'call-2', 'call-3', 'call-4']);
    }
  });

  it('schedules on the server only the stages the plan makes activities, and every history replays', async () => {
    for (const v of VARIANTS) {
      const h = harnesses.get(v)!;
      const req = batch([
        { name: 'echo', args: { text: 'a' } },
        { name: 'deploy', args: { env: 'staging' } },
      ]);
      const handle = await h.client.startBatch(req);
      const pending = await waitForPending(h, handle.workflowId);
      await h.client.approve(pending.approvalId, { workflowId: handle.workflowId, by: 'test' });
      const out = await handle.result();
      expect(
        out.results.map((r) => text(r.result)),
        v,
      ).toEqual(['a', 'deployed staging']);

      const history = await historyOf(h, handle.workflowId);
      expect(scheduledTypes(history), v).toEqual(SCHEDULED[v]);
      const bodies = (history.events ?? []).filter((e) =>
        ['executeBody', 'guardThenExecuteBody'].includes(
          e.activityTaskScheduledEventAttributes?.activityType?.name ?? '',
        ),
      );
      expect(bodies.length, v).toBe(v === 'local bodies' ? 1 : 2);
      // The audit reads a body from its activity events or, run locally, from its marker.
      const audit = auditHistory({ workflowId: handle.workflowId, history, source: 'server' });
      expect(
        audit.calls.map((c) => [
          c.callId,
          c.preExecute?.gate,
          c.guards?.gate,
          c.body?.outcome,
          c.body?.candidate?.text,
        ]),
        v,
      ).toEqual([
        ['call-1', 'allow', undefined, 'completed', 'a'],
        ['call-2', 'ask', 'allow', 'completed', 'deployed staging'],
      ]);
      // Local stages leave a marker each; with none allowed, only the batch's first worker round
      // does (the session seq claim with the first preflight's try, one local activity). The
      // first round preflights both calls here and the guards after the yes run in the body's
      // activity, so with settle an activity that round is the only marker too. Patch markers
      // are not stages.
      const markers = (history.events ?? []).filter(
        (e) => e.markerRecordedEventAttributes && e.markerRecordedEventAttributes.markerName !== 'core_patch',
      ).length;
      if (v === 'all activities' || v === 'long post-execute') expect(markers, v).toBe(1);
      else expect(markers, v).toBeGreaterThan(1);
      // A replay hands every event to the sink again: what a worker that crashed before a write
      // needs. (Workflow time after a local activity may read differently on replay, so times are
      // left out.) Not always under the same seqs: a local activity's result can come in another
      // activation on replay than live, so two calls' events can take each other's seqs (seen with
      // call-1's settle and call-2's ask); the JSONL sink renumbers a replay against its log
      // (stores/sink.ts, test/replay-sink.test.ts). So: every event once, and the same seqs.
      const replayed: SessionEvent[] = [];
      const sinks = sessionEventSinks({ append: async (_s, events) => void replayed.push(...events) });
      await Worker.runReplayHistory(
        { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: v, sinks },
        history,
        handle.workflowId,
      );
      const untimed = (events: SessionEvent[]) =>
        events
          .map(({ type, data }) => JSON.stringify({ type, data: { ...data, expiresAt: null, latencyMs: null } }))
          .sort();
      const seqs = (events: SessionEvent[]) => events.map((e) => e.seq).sort((a, b) => a - b);
      expect(seqs(replayed), v).toEqual(seqs(out.events));
      expect(untimed(replayed), v).toEqual(untimed(out.events));
    }
  });

  it('the sink gets approval/asked while a person is awaited, and tool/call while a body runs', async () => {
    for (const v of VARIANTS) {
      const h = harnesses.get(v)!;
      const req = batch([
        { name: 'deploy', args: { env: 'frozen' } },
        { name: 'held', args: { key: v } },
      ]);
      const handle = await h.client.startBatch(req);
      const pending = await waitForPending(h, handle.workflowId);
      await waitForLog(h, req.sessionId, (log) =>
        log.some((e) => e.type === 'approval/asked' && e.data.callId === 'call-1'),
      );
      await h.client.approve(pending.approvalId, { workflowId: handle.workflowId, by: 'test' });
      await waitForLog(h, req.sessionId, (l) => l.some((e) => e.type === 'tool/call' && e.data.callId === 'call-2'));
      await eventually(`the body of held ${v}`, () => released.get(v));
      expect(await readSessionLog(h.stateDir, req.sessionId), v).not.toContainEqual(
        expect.objectContaining({ type: 'tool/result', data: expect.objectContaining({ callId: 'call-2' }) }),
      );
      released.get(v)!();
      const out = await handle.result();
      expect(
        out.results.map((r) => text(r.result)),
        v,
      ).toEqual(['Error: guard says no', `released ${v}`]);
      expect(await readSessionLog(h.stateDir, req.sessionId), v).toEqual(out.events);
    }
  });
});

describe('settle with nothing for a worker to run', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(
      'plan-no-settle-hooks',
      defineConfig({
        tools: [
          defineTool({
            name: 'echo',
            description: 'echo',
            input: z.object({ text: z.string() }),
            isConcurrencySafe: () => true,
            execute: ({ text }, ctx) => (ctx.addContext(`body ${text}`), text),
          }),
          defineTool({
            name: 'big',
            description: 'a lot of text',
            input: z.object({ n: z.number() }),
            isConcurrencySafe: () => true,
            execute: ({ n }) => 'x'.repeat(n),
          }),
          defineTool({
            name: 'finalized',
            description: 'has a finalizeContent',
            input: z.object({}),
            isConcurrencySafe: () => true,
            execute: () => 'raw',
            finalizeContent: (content) => [...content, { type: 'text', text: ' [final]' }],
          }),
        ],
        preExecute: [(ctx) => ctx.addContext(`pre ${ctx.call.id}`)],
        maxResultChars: 200,
      }),
    );
  });
  afterAll(() => h?.close());

  it('settles in the workflow with the same normalization, and in the worker where worker code or the claim check runs', async () => {
    const req = batch([
      { name: 'echo', args: { text: 'a' } },
      { name: 'big', args: { n: 5000 } },
      { name: 'finalized' },
      { name: 'nope' },
    ]);
    const out = await h.client.runBatch(req);
    const [a, big, fin, nope] = out.results.map((r) => r.result);
    expect(text(a)).toBe('a');
    expect(a.additionalContexts!.map((c) => c.content)).toEqual(['pre call-1', 'body a']);
    expect(text(big).length).toBeLessThan(1000);
    expect(text(big)).toContain('truncated');
    expect(text(fin)).toBe('raw [final]');
    expect(nope.error?.code).toBe('UNKNOWN_TOOL');
    expect(
      out.events.filter((e) => e.type === 'tool/result').map((e) => (e.data.card as { summary?: string }).summary),
    ).toEqual(['done', 'done', 'done', 'failed']);

    const history = await historyOf(h, `sluice-batch:${req.sessionId}:1:1`);
    const settledByWorker = (history.events ?? [])
      .map((e) => e.markerRecordedEventAttributes)
      .filter((m) => (decode(m?.details?.data) as { activity_type?: string } | undefined)?.activity_type === 'settle')
      .flatMap((m) => (decode(m!.details!.result) as SettleResult[]).map((r) => r.callId));
    // A result over its bound goes to the worker's claim check; finalizeContent is worker code;
    // an unknown tool has no profile. Only the plain small result settles in the workflow.
    expect(settledByWorker.sort()).toEqual(['call-2', 'call-3', 'call-4']);
  });
});
