// The stage activities on their own, through the SDK's MockActivityEnvironment: no worker, no
// server. What the integration tests show end to end, pinned here stage by stage: wrapper order,
// short-circuit, a second next(), how each kind of throw maps to a code, and finalizeContent and
// the tools/result observers running exactly once per settle.
import { ApplicationFailure, type Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createStageActivities } from '../../activities/stages';
import type { BodyResult, CallRef, SettleResult } from '../../pipeline/stages';
import {
  type PreflightReply,
  type SettleRequest,
  unpackBodyResult,
  unpackPreflightResults,
  type WireCallRef,
} from '../../codec/stages';
import { FailureTypes } from '../../pipeline/errors';
import type { Candidate } from '../../pipeline/types';
import { defineTool, type SluiceConfig, type ToolDefinition } from '../../define/config';
import { digestKeyFromEnv, keyedArgsDigest } from '../../codec/args-digest';
import { argsDigest } from '../../pipeline/digest';

function ref(name: string, args: Record<string, unknown> = { text: 'hi' }, callId = 'c1'): CallRef {
  return {
    workflowId: 'wf',
    sessionId: 's',
    turn: 1,
    step: 1,
    callId,
    name,
    args: args as CallRef['args'],
    argsDigest: 'digest',
    idempotencyKey: `wf/${callId}`,
    state: {},
  };
}

const echo = (extra: Partial<ToolDefinition> = {}, onRun: () => void = () => {}): ToolDefinition => ({
  ...defineTool({
    name: 'echo',
    description: 'echo',
    input: z.object({ text: z.string() }),
    execute: ({ text }) => {
      onRun();
      return text;
    },
  }),
  ...extra,
});

function stagesOf(config: SluiceConfig) {
  const acts = createStageActivities(config);
  const warnings: string[] = [];
  const record = (level: string, message: string) => void (level === 'WARN' && warnings.push(message));
  const logger: Logger = {
    log: record,
    trace: (m) => record('TRACE', m),
    debug: (m) => record('DEBUG', m),
    info: (m) => record('INFO', m),
    warn: (m) => record('WARN', m),
    error: (m) => record('ERROR', m),
  };
  const env = new MockActivityEnvironment(undefined, { logger });
  return {
    warnings,
    // Each ref as a stage's input: with whatever digest the test gives it, as a workflow might send.
    preflight: async (r: CallRef) =>
      unpackPreflightResults((await env.run(acts.preflight, [r as WireCallRef])) as PreflightReply, [r])[0],
    execute: async (r: CallRef): Promise<BodyResult> =>
      unpackBodyResult(await env.run(acts.executeBody, r as WireCallRef)),
    settle: async (req: SettleRequest) => ((await env.run(acts.settle, [req])) as SettleResult[])[0],
  };
}

const text = (c: { content: unknown[] }) => (c.content[0] as { text: string }).text;
const settleReq = (r: CallRef, candidate: Candidate, skipPostExecute = false): SettleRequest => ({
  ref: r as WireCallRef,
  candidate,
  skipPostExecute,
  contexts: { pre: [], body: [], wrapper: [] },
});

describe('execute waterfall (stages 7–8)', () => {
  it('runs wrappers in config order around the body and unwinds in reverse', async () => {
    const trace: string[] = [];
    const wrap = (n: string) => ({
      name: n,
      handler: async (_ctx: unknown, next: () => Promise<Candidate>) => {
        trace.push(`${n} in`);
        const c = await next();
        trace.push(`${n} out`);
        return { ...c, content: [{ type: 'text' as const, text: `${n}(${text(c)})` }] };
      },
    });
    const s = stagesOf({ tools: [echo({}, () => trace.push('body'))], execute: [wrap('a'), wrap('b')] });
    const out = await s.execute(ref('echo'));
    expect(out.outcome).toBe('ok');
    expect(text(out.candidate)).toBe('a(b(hi))');
    expect(trace).toEqual(['a in', 'b in', 'body', 'b out', 'a out']);
  });

  it('a wrapper that answers without next() short-circuits: the body does not run', async () => {
    let runs = 0;
    const s = stagesOf({
      tools: [echo({}, () => runs++)],
      execute: [async () => ({ content: [{ type: 'text', text: 'from cache' }], isError: false })],
    });
    const out = await s.execute(ref('echo'));
    expect(text(out.candidate)).toBe('from cache');
    expect(runs).toBe(0);
  });

  it('a second next() is refused: the body runs once and the call fails as a pipeline failure', async () => {
    let runs = 0;
    const s = stagesOf({
      tools: [echo({}, () => runs++)],
      execute: [{ name: 'twice', handler: async (_ctx, next) => (await next(), next()) }],
    });
    const out = await s.execute(ref('echo'));
    expect(runs).toBe(1);
    expect(out.outcome).toBe('failed');
    expect(out.candidate.error).toMatchObject({ code: 'PIPELINE_FAILED' });
    expect(out.candidate.error?.message).toMatch(/execute wrapper twice called next\(\) more than once/);
  });

  it('a throwing wrapper is a pipeline failure; a throwing body fails the activity for Temporal to retry', async () => {
    const wrapped = stagesOf({
      tools: [echo()],
      execute: [
        async () => {
          throw new Error('wrapper broke');
        },
      ],
    });
    const out = await wrapped.execute(ref('echo'));
    expect(out.outcome).toBe('failed');
    expect(out.candidate.error).toMatchObject({ code: 'PIPELINE_FAILED' });

    const failing = stagesOf({
      tools: [
        echo({
          execute: () => {
            throw new Error('disk full');
          },
        }),
      ],
    });
    const err = await failing.execute(ref('echo')).catch((e) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err.type).toBe(FailureTypes.TOOL_BODY);
    expect(err.message).toBe('echo failed: disk full');
  });
});

describe('preflight (stages 4 and 6): throw → code', () => {
  it('unknown tool, arguments that fail the schema, a denial, a throwing handler or guard', async () => {
    const s = stagesOf({ tools: [echo()] });
    expect((await s.preflight(ref('nope'))).gate).toMatchObject({ kind: 'denied', code: 'UNKNOWN_TOOL' });
    expect((await s.preflight(ref('echo', { text: 1 }))).gate).toMatchObject({ kind: 'denied', code: 'INVALID_ARGS' });

    const denying = stagesOf({ tools: [echo()], preExecute: [() => ({ kind: 'deny', reason: 'no' })] });
    expect((await denying.preflight(ref('echo'))).gate).toEqual({ kind: 'denied', code: 'DENIED', message: 'no' });

    const throwing = stagesOf({
      tools: [echo()],
      preExecute: [
        {
          name: 'p',
          handler: () => {
            throw new Error('boom');
          },
        },
      ],
    });
    expect((await throwing.preflight(ref('echo'))).gate).toEqual({
      kind: 'failed',
      code: 'PIPELINE_FAILED',
      message: 'pre-execute handler p threw: boom',
    });

    const guarded = stagesOf({ tools: [echo()], guards: [() => undefined, { name: 'g', handler: () => 'not now' }] });
    expect((await guarded.preflight(ref('echo'))).gate).toEqual({ kind: 'denied', code: 'DENIED', message: 'not now' });
  });

  it('a denial stops the waterfall: later handlers and the guards do not run', async () => {
    const ran: string[] = [];
    const s = stagesOf({
      tools: [echo()],
      preExecute: [() => (ran.push('deny'), { kind: 'deny', reason: 'no' }), () => void ran.push('after')],
      guards: [() => void ran.push('guard')],
    });
    await s.preflight(ref('echo'));
    expect(ran).toEqual(['deny']);
  });
});

describe('settle (stages 9–12)', () => {
  const ok: Candidate = { content: [{ type: 'text', text: 'raw' }], isError: false };

  it('finalizeContent and each observer run exactly once, observers on the final, frozen outcome', async () => {
    let finalized = 0;
    const seen: unknown[] = [];
    const s = stagesOf({
      tools: [
        echo({
          finalizeContent: (content) => {
            finalized++;
            return [...content, { type: 'text', text: 'final' }];
          },
        }),
      ],
      onResult: [(n) => void seen.push(n.result), (n) => void seen.push(Object.isFrozen(n.result))],
    });
    const out = await s.settle(settleReq(ref('echo'), ok));
    expect(finalized).toBe(1);
    expect(seen).toHaveLength(2);
    expect(seen[0]).toEqual(out.result);
    expect(seen[1]).toBe(true);
    expect(out.result.content.map((b) => (b as { text: string }).text)).toEqual(['raw', 'final']);
  });

  it('a throwing post-execute handler is a pipeline failure; a throwing observer changes nothing', async () => {
    const s = stagesOf({
      tools: [echo()],
      postExecute: [
        {
          name: 'post',
          handler: () => {
            throw new Error('no');
          },
        },
      ],
      onResult: [
        () => {
          throw new Error('observer broke');
        },
      ],
    });
    const out = await s.settle(settleReq(ref('echo'), ok));
    expect(out.result.isError).toBe(true);
    expect(out.result.error).toEqual({ message: 'post-execute handler post threw: no', code: 'PIPELINE_FAILED' });
    expect(s.warnings).toEqual(['tools/result observer #0 threw; the outcome is unchanged']);
  });

  it('a pipeline failure skips post-execute; a throwing finalizeContent is INVALID_TOOL_OUTPUT', async () => {
    let post = 0;
    const s = stagesOf({
      tools: [
        echo({
          finalizeContent: () => {
            throw new Error('bad content');
          },
        }),
      ],
      postExecute: [() => void post++],
    });
    const out = await s.settle(settleReq(ref('echo'), ok, true));
    expect(post).toBe(0);
    expect(out.result.error).toMatchObject({ code: 'INVALID_TOOL_OUTPUT' });
    expect(out.result.error?.message).toMatch(/echo\.finalizeContent failed: bad content/);
  });
});

describe('the digest each stage sees (keyed where it runs, or the one the workflow binds)', () => {
  it('an allowed call: the preflight returns none, and the body and post-execute key the arguments themselves', async () => {
    const seen: Record<string, unknown> = {};
    const s = stagesOf({
      tools: [echo({ execute: (_args, ctx) => String((seen.body = ctx.call.argsDigest)) })],
      preExecute: [(ctx) => void (seen.pre = ctx.call.argsDigest)],
      postExecute: [(ctx) => void (seen.post = ctx.call.argsDigest)],
    });
    const keyed = keyedArgsDigest({ text: 'hi' }, digestKeyFromEnv());
    // What the workflow sends: its own sha-256 is never what a stage sees.
    const own = { ...ref('echo'), argsDigest: argsDigest({ text: 'hi' }) };
    const { argsDigest: _, ...sent } = own;
    const pre = await s.preflight(own);
    expect(pre.gate).toEqual({ kind: 'dispatch' });
    expect(pre).not.toHaveProperty('argsDigest');
    const body = await s.execute(sent as CallRef);
    expect(text(body.candidate)).toBe(keyed);
    await s.settle(settleReq(sent as CallRef, body.candidate));
    expect(seen).toEqual({ pre: keyed, body: keyed, post: keyed });
  });

  it('an ask and an at-most-once body get the keyed digest back; a keyed digest sent is the one every stage sees', async () => {
    const s = stagesOf({
      tools: [
        echo({ name: 'asks', approval: 'ask' }),
        echo({ name: 'once', atMostOnce: true }),
        echo({ execute: (_args, ctx) => ctx.call.argsDigest }),
      ],
    });
    const keyed = keyedArgsDigest({ text: 'hi' }, digestKeyFromEnv());
    expect((await s.preflight(ref('asks'))).argsDigest).toBe(keyed);
    expect((await s.preflight(ref('once'))).argsDigest).toBe(keyed);
    // The digest a person approved, even under a key this worker does not have, reaches the body.
    const approved = keyedArgsDigest({ text: 'hi' }, 'the key before a rotation');
    expect(text((await s.execute({ ...ref('echo'), argsDigest: approved })).candidate)).toBe(approved);
  });
});
