// The packed forms of what crosses history (pipeline/stages.ts): each unpack gives back exactly
// what was packed, and takes the full form recorded by earlier versions as it is.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { argsDigest } from '../../pipeline/digest';
import { defineTool } from '../../define/config';
import {
  type BodyResult,
  type CallRef,
  genericCard,
  type PreflightResult,
  type StagePlan,
  type ToolProfile,
} from '../../pipeline/stages';
import {
  packBodyResult,
  packCallRef,
  packPreflightReply,
  type WireCallRef,
  unpackBodyResult,
  unpackCallRef,
  withoutOwnDigest,
  unpackPlan,
  unpackPreflightResults,
} from '../../codec/stages';

const plan: StagePlan = { preflight: 'local', guards: 'local', settle: 'local', settleHooks: false };
const profile: ToolProfile = {
  concurrencySafe: true,
  timeoutMs: 300000,
  heartbeatTimeoutMs: 10000,
  retry: { maximumAttempts: 3, initialIntervalMs: 500, backoffCoefficient: 2 },
  approval: 'auto',
  finalizes: false,
};
const ref = (callId: string, name: string, args: Record<string, string> = { text: callId }): CallRef => ({
  workflowId: 'sluice-batch:s:1:1',
  sessionId: 's',
  turn: 1,
  step: 1,
  callId,
  name,
  args,
  argsDigest: `hmac-sha256:${callId}`,
  idempotencyKey: `sluice-batch:s:1:1/${callId}`,
  state: {},
  inlineBytes: 1000,
});

describe('preflight replies', () => {
  const refs = [
    ref('c0', 'echo'),
    ref('c1', 'echo'),
    ref('c2', 'echo'),
    ref('c3', 'nope'),
    ref('c4', 'echo'),
    ref('c5', '__proto__'),
  ];
  const results: PreflightResult[] = [
    {
      callId: 'c0',
      gate: { kind: 'dispatch' },
      card: genericCard('echo', { text: 'c0' }),
      profile,
      contexts: [],
      events: [],
      argsDigest: 'd0',
    },
    {
      callId: 'c1',
      gate: { kind: 'ask', reason: 'why not' },
      card: { title: 'Echo', summary: 'custom' },
      profile: { ...profile, concurrencySafe: false },
      contexts: [{ role: 'user', content: 'note', source: 'pre' }],
      events: [{ type: 'x/y', data: { a: 1 } }],
      argsDigest: 'd1',
    },
    // Invalid arguments: no profile, though the tool has one.
    {
      callId: 'c2',
      gate: { kind: 'denied', code: 'INVALID_ARGS', message: 'bad' },
      card: genericCard('echo', { text: 'c2' }),
      contexts: [],
      events: [],
    },
    {
      callId: 'c3',
      gate: { kind: 'denied', code: 'UNKNOWN_TOOL', message: 'unknown' },
      card: genericCard('nope', { text: 'c3' }),
      contexts: [],
      events: [],
    },
    {
      callId: 'c4',
      gate: { kind: 'dispatch' },
      card: genericCard('echo', { text: 'c4' }),
      profile,
      contexts: [],
      events: [],
    },
    {
      callId: 'c5',
      gate: { kind: 'dispatch' },
      card: genericCard('__proto__', { text: 'c5' }),
      profile,
      contexts: [],
      events: [],
    },
  ];

  it('gives back exactly the results packed, with each profile sent once', () => {
    const reply = packPreflightReply(plan, results, refs);
    expect(unpackPreflightResults(reply, refs)).toEqual(results);
    expect(Object.keys(reply.profiles ?? {})).toEqual(['echo', '__proto__']);
    // A call dispatched with nothing to say is its id alone; one with something keeps an object.
    expect(reply.results[4]).toBe('c4');
    expect(reply.results[3]).toMatchObject({ callId: 'c3' });
    // Replies recorded before wrote it as an object: they read the same.
    const before = { ...reply, results: reply.results.map((r) => (typeof r === 'string' ? { callId: r } : r)) };
    expect(unpackPreflightResults(before, refs)).toEqual(results);
  });

  it('packs ten ordinary calls of one tool to under a third of the full form', () => {
    const many = Array.from({ length: 10 }, (_, i) => ref(`c${i}`, 'echo'));
    const full = many.map(
      (r): PreflightResult => ({
        callId: r.callId,
        gate: { kind: 'dispatch' },
        card: genericCard('echo', r.args),
        profile,
        contexts: [],
        events: [],
        argsDigest: r.argsDigest,
      }),
    );
    const reply = packPreflightReply(plan, full, many);
    expect(unpackPreflightResults(reply, many)).toEqual(full);
    expect(JSON.stringify(reply).length).toBeLessThan(
      JSON.stringify({ plan, deferred: false, results: full }).length / 3,
    );
  });

  it('reads the full form recorded before packing as it is', () => {
    expect(unpackPreflightResults({ plan, deferred: false, results }, refs)).toEqual(results);
  });

  it('leaves out of the plan the stages that run locally, and reads every recorded plan as it was', () => {
    expect(packPreflightReply(plan, results, refs).plan).toEqual({ settleHooks: false });
    const mixed: StagePlan = {
      preflight: 'local',
      guards: 'activity',
      settle: 'local',
      settleHooks: true,
      maxResultChars: 9,
    };
    const packed = packPreflightReply(mixed, results, refs).plan;
    expect(packed).toEqual({ guards: 'activity', settleHooks: true, maxResultChars: 9 });
    expect(unpackPlan(packed)).toEqual(mixed);
    expect(unpackPlan(plan)).toEqual(plan);
    // A plan from before settleHooks keeps it absent: such a batch never settled in the workflow.
    const older = { preflight: 'local', guards: 'local', settle: 'local' } as StagePlan;
    expect(unpackPlan(older)).toEqual(older);
  });

  it('refuses a result for a call it was not asked about', () => {
    expect(() => unpackPreflightResults(packPreflightReply(plan, results, refs), refs.slice(1))).toThrow(/c0/);
  });
});

describe('body inputs and results', () => {
  it('leaves out the workflow id and idempotency key the worker rebuilds, and an empty state', () => {
    const r = ref('c0', 'echo');
    const packed = packCallRef(r);
    expect(packed).not.toHaveProperty('workflowId');
    expect(packed).not.toHaveProperty('idempotencyKey');
    expect(packed).not.toHaveProperty('state');
    expect(unpackCallRef(packed, r.workflowId)).toEqual(r);
    const sub = { ...ref('c0:code:3', 'echo'), parentCallId: 'c0', rootCallId: 'c0', state: { ns: { k: 1 } } };
    expect(unpackCallRef(packCallRef(sub), sub.workflowId)).toEqual(sub);
    // An idempotency key of another shape travels as it is.
    const odd = { ...r, idempotencyKey: 'elsewhere/c0' };
    expect(unpackCallRef(packCallRef(odd), 'another-workflow')).toEqual(odd);
    expect(unpackCallRef(r as WireCallRef, 'another-workflow')).toEqual(r);
  });

  it("carries a keyed digest, and leaves out the workflow's own sha-256 for the worker to key", () => {
    const keyed = ref('c0', 'echo');
    expect(packCallRef(keyed).argsDigest).toBe(keyed.argsDigest);
    expect(withoutOwnDigest(keyed)).toBe(keyed);
    const own = { ...keyed, argsDigest: argsDigest(keyed.args) };
    expect(packCallRef(own)).not.toHaveProperty('argsDigest');
    expect(JSON.stringify(packCallRef(own))).not.toMatch(/sha256/);
    expect(withoutOwnDigest(own)).not.toHaveProperty('argsDigest');
    const { argsDigest: _, ...rest } = own;
    expect(unpackCallRef(packCallRef(own), own.workflowId)).toEqual(rest);
    // A stage's input takes a call reference only through withoutOwnDigest: the compiler refuses
    // one passed as it is, since its digest may be the workflow's own (tsc checks this line).
    // @ts-expect-error a CallRef's argsDigest is not a digest the workflow may send
    const sent: WireCallRef = own;
    expect(sent.argsDigest).toBe(own.argsDigest);
  });

  it('leaves out the session id, turn and step when the workflow id names them, and only then', () => {
    const r = {
      ...ref('c0', 'echo'),
      workflowId: 'sluice-batch:team:a:b:12:3',
      sessionId: 'team:a:b',
      turn: 12,
      step: 3,
    };
    r.idempotencyKey = `${r.workflowId}/c0`;
    const packed = packCallRef(r);
    for (const k of ['sessionId', 'turn', 'step']) expect(packed).not.toHaveProperty(k);
    expect(unpackCallRef(packed, r.workflowId)).toEqual(r);
    // A workflow id of another shape, or one naming another session or step: they travel.
    for (const other of [
      { ...r, workflowId: 'my-own-id', idempotencyKey: 'my-own-id/c0' },
      { ...r, sessionId: 'team:a' },
      { ...r, step: 4 },
      { ...r, workflowId: 'sluice-batch:team:a:b:012:3', idempotencyKey: 'sluice-batch:team:a:b:012:3/c0' },
    ]) {
      const p = packCallRef(other);
      expect(p).toMatchObject({ sessionId: other.sessionId, turn: other.turn, step: other.step });
      expect(unpackCallRef(p, other.workflowId)).toEqual(other);
    }
    // A body input that leaves them out under a workflow id that does not name them is refused, by name.
    expect(() => unpackCallRef(packed, 'my-own-id')).toThrow(/no session id, turn or step.*"my-own-id"/);
  });

  it('gives back exactly the body result packed', () => {
    const cases: BodyResult[] = [
      {
        outcome: 'ok',
        candidate: { content: [{ type: 'text', text: 'hi' }], value: 'hi', isError: false },
        bodyContexts: [],
        wrapperContexts: [],
        events: [],
      },
      {
        outcome: 'ok',
        candidate: { content: [{ type: 'text', text: '{\n  "a": 1\n}' }], value: { a: 1 }, isError: false },
        bodyContexts: [],
        wrapperContexts: [],
        events: [],
      },
      {
        outcome: 'ok',
        candidate: {
          content: [{ type: 'text', text: 'rendered my way' }],
          value: { a: 1 },
          isError: false,
          meta: { m: 1 },
        },
        bodyContexts: [{ role: 'user', content: 'b' }],
        wrapperContexts: [],
        events: [{ type: 't/e', data: {} }],
        statePatch: { ns: { k: null } },
      },
      {
        outcome: 'failed',
        candidate: {
          content: [{ type: 'text', text: 'Error: x' }],
          isError: true,
          error: { message: 'x', code: 'PIPELINE_FAILED' },
        },
        bodyContexts: [],
        wrapperContexts: [{ role: 'user', content: 'w' }],
        events: [],
      },
      {
        outcome: 'ok',
        candidate: { content: [{ type: 'text', text: '' }], value: null, isError: false, concludesTurn: true },
        bodyContexts: [],
        wrapperContexts: [],
        events: [],
      },
      {
        outcome: 'ok',
        candidate: { content: [{ type: 'text', text: 'preview' }], isError: false, stashed: 'sha256:abc' },
        bodyContexts: [],
        wrapperContexts: [],
        events: [],
      },
    ];
    for (const c of cases) {
      const packed = packBodyResult(c);
      expect(unpackBodyResult(JSON.parse(JSON.stringify(packed)))).toEqual(c);
      expect(unpackBodyResult(c)).toEqual(c);
    }
    // A value and nothing else is the value alone, a string as itself (what a bare activity
    // returning it records); a result recorded before wrote it as a candidate.
    expect(packBodyResult(cases[0])).toBe('hi');
    expect(packBodyResult(cases[1])).toEqual({ value: { a: 1 } });
    expect(unpackBodyResult({ candidate: { value: 'hi' } })).toEqual(cases[0]);
    expect(unpackBodyResult({ value: 'hi' })).toEqual(cases[0]);
  });
});

describe('defineTool: localBody', () => {
  const base = { name: 't', description: 'd', input: z.object({}), execute: () => 1 };
  it('refuses a local body that could run long, or must not run twice', () => {
    expect(() => defineTool({ ...base, localBody: true, timeoutMs: 120_000 })).toThrow(/must finish within 60000 ms/);
    expect(() => defineTool({ ...base, localBody: true, atMostOnce: true })).toThrow(/cannot be local/);
    expect(defineTool({ ...base, localBody: true }).localBody).toBe(true);
  });
});
