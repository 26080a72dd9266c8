// Every stage outcome and every throw path of DESIGN.md §1, through the real workflow.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { SessionEvent } from '../pipeline/types';
import { defineConfig, defineTool, toolOutput } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';

const seen = {
  post: [] as string[],
  finalize: [] as string[],
  observed: [] as string[],
  bodyArgs: [] as unknown[],
  attempts: new Map<string, number>(),
};

class Weird {
  x = 1;
}

const tools = [
  defineTool({
    name: 'echo',
    description: 'echo',
    input: z.object({ text: z.string() }),
    execute: ({ text }, ctx) => (seen.bodyArgs.push({ text }), ctx.addContext(`body context for ${text}`), text),
  }),
  defineTool({
    name: 'flaky',
    description: 'fails on its first attempt',
    input: z.object({ key: z.string() }),
    retry: { maximumAttempts: 3, initialIntervalMs: 100 },
    execute({ key }, ctx) {
      seen.attempts.set(key, ctx.attempt);
      if (ctx.attempt < 2) throw new Error('transient failure');
      return `ok on attempt ${ctx.attempt}, key ${ctx.idempotencyKey}`;
    },
  }),
  defineTool({
    name: 'broken',
    description: 'always throws',
    input: z.object({}),
    retry: { maximumAttempts: 2, initialIntervalMs: 100 },
    execute: () => {
      throw new Error('disk on fire');
    },
  }),
  defineTool({
    name: 'weird_output',
    description: 'returns non-JSON',
    input: z.object({ kind: z.string() }),
    execute: ({ kind }) => {
      if (kind === 'bigint') return { n: 10n };
      if (kind === 'nan') return { n: NaN };
      if (kind === 'class') return new Weird();
      if (kind === 'cycle') {
        const a: Record<string, unknown> = {};
        a.self = a;
        return a;
      }
      if (kind === 'getter')
        return Object.defineProperty({}, 'boom', {
          enumerable: true,
          get() {
            throw new Error('getter threw');
          },
        });
      return undefined;
    },
  }),
  defineTool({
    name: 'finalized',
    description: 'has a finalizeContent',
    input: z.object({ mode: z.enum(['ok', 'throw']) }),
    execute: ({ mode }) => mode,
    finalizeContent(content, { call }) {
      seen.finalize.push(call.id);
      if ((content[0] as { text: string }).text.includes('throw')) throw new Error('finalize refused');
      return [...content, { type: 'text', text: ' [final]' }];
    },
  }),
  defineTool({
    name: 'concluder',
    description: 'ends the turn',
    input: z.object({}),
    execute: () => toolOutput({ content: [{ type: 'text', text: 'bye' }], concludesTurn: true }),
  }),
  defineTool({
    name: 'big',
    description: 'returns a lot',
    input: z.object({ n: z.number() }),
    execute: ({ n }) => 'x'.repeat(n),
  }),
];

const config = defineConfig({
  tools,
  maxResultChars: 50_000,
  preExecute: [
    function policy(ctx) {
      const a = ctx.call.args as Record<string, unknown>;
      if (a.text === 'deny-me') return { kind: 'deny', reason: 'policy says no' };
      if (a.text === 'pre-throw') throw new Error('pre-execute exploded');
      if (a.text === 'mutate') {
        try {
          (ctx.call.args as Record<string, unknown>).text = 'mutated';
        } catch {
          // frozen: the attempt fails, the call keeps its identity
        }
      }
      ctx.addContext(`pre context for ${ctx.call.id}`);
    },
    function latecomer(ctx) {
      // Tries to undo the denial above: folding is monotonic, so it cannot.
      if ((ctx.call.args as Record<string, unknown>).text === 'deny-me') return { kind: 'allow' };
    },
  ],
  guards: [
    function noSecrets(ctx) {
      const a = ctx.call.args as Record<string, unknown>;
      if (a.text === 'guard-deny') return 'guard says no secrets';
      if (a.text === 'guard-throw') throw new Error('guard exploded');
    },
  ],
  execute: [
    async function wrapper(ctx, next) {
      const a = ctx.call.args as Record<string, unknown>;
      if (a.text === 'wrap-throw') throw new Error('wrapper exploded');
      if (a.text === 'short-circuit') return { content: [{ type: 'text', text: 'from the wrapper' }], isError: false };
      ctx.addContext(`wrapper context for ${ctx.call.id}`);
      return next();
    },
  ],
  postExecute: [
    function tagAndRewrite(ctx) {
      seen.post.push(ctx.call.id);
      const a = ctx.call.args as Record<string, unknown>;
      if (a.text === 'block-me') return { action: 'block', feedback: 'post-execute blocked this result' };
      if (a.text === 'rewrite-content') return { action: 'accept', content: [{ type: 'text', text: 'rewritten' }] };
      if (a.text === 'rewrite-value') return { action: 'accept', value: { replaced: true } };
      if (a.text === 'rewrite-both') return { action: 'accept', value: 1, content: [{ type: 'text', text: 'x' }] };
      if (a.text === 'post-throw') throw new Error('post-execute exploded');
      ctx.addContext(`post context for ${ctx.call.id}`);
    },
  ],
  onResult: [
    function observer(n) {
      seen.observed.push(n.call.id);
      (n.result as { isError: boolean }).isError = !n.result.isError; // frozen: must not change anything
    },
    function thrower() {
      throw new Error('observer exploded');
    },
  ],
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness('stages', config);
});
afterAll(() => h?.close());

const echo = (text: string, id?: string) => ({ id, name: 'echo', args: { text } });
const types = (events: SessionEvent[]) => events.map((e) => e.type);

describe('the allow path', () => {
  it('records tool/call before the result, runs every stage, and queues contexts in stage order', async () => {
    const out = await h.client.runBatch(batch([echo('hello', 'a')]));
    const r = out.results[0].result;
    expect(r.isError).toBe(false);
    expect(text(r)).toBe('hello');
    expect(types(out.events)).toEqual([
      'tool/call',
      'tool/result',
      'user/message',
      'user/message',
      'user/message',
      'user/message',
    ]);
    expect(out.events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5]);
    // pre-execute, body-deferred, wrapper, post-execute
    expect(r.additionalContexts!.map((c) => c.content)).toEqual([
      'pre context for a',
      'body context for hello',
      'wrapper context for a',
      'post context for a',
    ]);
    expect(out.messages.map((m) => m.role)).toEqual(['tool', 'user', 'user', 'user', 'user']);
    expect(seen.observed).toContain('a');
  });

  it('retries a throwing body with the tool policy and keeps the idempotency key', async () => {
    const req = batch([{ id: 'f', name: 'flaky', args: { key: 'k1' } }]);
    const out = await h.client.runBatch(req);
    expect(out.results[0].result.isError).toBe(false);
    expect(seen.attempts.get('k1')).toBe(2);
    expect(text(out.results[0].result)).toContain(`key sluice-batch:${req.sessionId}:1:1/f`);
  });

  it('a body that keeps throwing becomes an error result that still goes through post-execute', async () => {
    const out = await h.client.runBatch(batch([{ id: 'b1', name: 'broken' }]));
    const r = out.results[0].result;
    expect(r.isError).toBe(true);
    expect(r.error?.code).toBe('TOOL_FAILED');
    expect(text(r)).toMatch(/^Error: .*disk on fire/);
    expect(seen.post).toContain('b1');
  });

  it('marks the turn concluded when a result says so', async () => {
    const out = await h.client.runBatch(batch([{ name: 'concluder' }]));
    expect(out.concludesTurn).toBe(true);
  });
});

describe('denials go through post-execute', () => {
  it.each([
    [
      'unknown tool',
      { id: 'u1', name: 'nope', args: {} },
      'UNKNOWN_TOOL',
      /unknown tool "nope"; the available tools are: echo/,
    ],
    [
      'schema failure',
      { id: 'v1', name: 'echo', args: { text: 5 } },
      'INVALID_ARGS',
      /invalid arguments for echo: text:/,
    ],
    [
      'pre-execute deny, which a later handler cannot undo',
      { id: 'd1', name: 'echo', args: { text: 'deny-me' } },
      'DENIED',
      /policy says no/,
    ],
    ['guard deny', { id: 'g1', name: 'echo', args: { text: 'guard-deny' } }, 'DENIED', /guard says no secrets/],
  ])('%s', async (_label, call, code, message) => {
    const out = await h.client.runBatch(batch([call]));
    const r = out.results[0].result;
    expect(r.isError).toBe(true);
    expect(r.error?.code).toBe(code);
    expect(text(r)).toMatch(/^Error: /);
    expect(text(r)).toMatch(message);
    expect(seen.post).toContain(call.id);
    expect(seen.bodyArgs).not.toContainEqual(call.args);
  });
});

describe('pipeline failures skip post-execute', () => {
  it.each([
    ['arguments that are not JSON', { id: 'j1', name: 'echo', args: '{"text": ' }, 'INVALID_ARGS', /not valid JSON/],
    [
      'arguments that are not an object',
      { id: 'j2', name: 'echo', args: '[1,2]' },
      'INVALID_ARGS',
      /must be a JSON object/,
    ],
    [
      'a throwing pre-execute',
      { id: 'p1', name: 'echo', args: { text: 'pre-throw' } },
      'PIPELINE_FAILED',
      /pre-execute handler policy threw: pre-execute exploded/,
    ],
    [
      'a throwing guard',
      { id: 'g2', name: 'echo', args: { text: 'guard-throw' } },
      'PIPELINE_FAILED',
      /guard noSecrets threw: guard exploded/,
    ],
    [
      'a throwing execute wrapper',
      { id: 'w1', name: 'echo', args: { text: 'wrap-throw' } },
      'PIPELINE_FAILED',
      /execute wrapper failed around echo: wrapper exploded/,
    ],
  ])('%s', async (_label, call, code, message) => {
    const out = await h.client.runBatch(batch([call]));
    const r = out.results[0].result;
    expect(r.isError).toBe(true);
    expect(r.error?.code).toBe(code);
    expect(text(r)).toMatch(message);
    expect(seen.post).not.toContain(call.id);
    expect(types(out.events).filter((t) => t.startsWith('tool/'))).toEqual(['tool/call', 'tool/result']);
  });

  it('post-execute that throws or replaces both content and value fails the call', async () => {
    const out = await h.client.runBatch(batch([echo('post-throw', 'pt'), echo('rewrite-both', 'rb')]));
    expect(out.results[0].result.error).toEqual({
      code: 'PIPELINE_FAILED',
      message: expect.stringMatching(/post-execute handler tagAndRewrite threw: post-execute exploded/),
    });
    expect(out.results[1].result.error?.message).toMatch(/replaced both content and value/);
  });
});

describe('execute waterfall and post-execute', () => {
  it('a wrapper may short-circuit the body with its own result', async () => {
    const out = await h.client.runBatch(batch([echo('short-circuit')]));
    expect(text(out.results[0].result)).toBe('from the wrapper');
    expect(seen.bodyArgs).not.toContainEqual({ text: 'short-circuit' });
  });

  it('block drops the value and the body-deferred contexts, keeping feedback', async () => {
    const out = await h.client.runBatch(batch([echo('block-me', 'bm')]));
    const r = out.results[0].result;
    expect(r.isError).toBe(true);
    expect(r.error?.code).toBe('BLOCKED');
    expect(text(r)).toBe('post-execute blocked this result');
    expect(r.additionalContexts!.map((c) => c.content)).toEqual(['pre context for bm', 'wrapper context for bm']);
  });

  it('accept may replace content, or replace the value (re-rendered)', async () => {
    const out = await h.client.runBatch(batch([echo('rewrite-content'), echo('rewrite-value')]));
    expect(text(out.results[0].result)).toBe('rewritten');
    expect(JSON.parse(text(out.results[1].result))).toEqual({ replaced: true });
  });

  it('values that are not lossless JSON become INVALID_TOOL_OUTPUT, through post-execute', async () => {
    const kinds = ['bigint', 'nan', 'class', 'cycle', 'getter'];
    const out = await h.client.runBatch(
      batch(kinds.map((kind, i) => ({ id: `wo${i}`, name: 'weird_output', args: { kind } }))),
    );
    for (const [i, r] of out.results.entries()) {
      expect(r.result.error?.code, kinds[i]).toBe('INVALID_TOOL_OUTPUT');
      expect(seen.post).toContain(`wo${i}`);
    }
    expect(text(out.results[0].result)).toMatch(/bigint has no JSON form/);
    expect(text(out.results[2].result)).toMatch(/instance of Weird/);
    expect(text(out.results[3].result)).toMatch(/cycle/);
  });

  it('an oversized result is stored aside; the model gets a preview with a note', async () => {
    const out = await h.client.runBatch(batch([{ name: 'big', args: { n: 120_000 } }]));
    const r = out.results[0].result;
    expect(text(r).length).toBeLessThan(51_000);
    expect(text(r)).toMatch(
      /\[truncated: showing 50000 of 120000 characters\. The full result is stored aside as sluice-result:/,
    );
    expect(r.meta).toMatchObject({
      truncated: true,
      originalChars: 120_000,
      storedResult: { ref: expect.stringMatching(/^sluice-result:/) },
    });
  });
});

describe('finalizeContent, observers and identity', () => {
  it('finalizeContent runs exactly once per call; a throw becomes INVALID_TOOL_OUTPUT', async () => {
    const out = await h.client.runBatch(
      batch([
        { id: 'fz1', name: 'finalized', args: { mode: 'ok' } },
        { id: 'fz2', name: 'finalized', args: { mode: 'throw' } },
      ]),
    );
    expect(text(out.results[0].result)).toBe('ok [final]');
    expect(out.results[1].result.error).toMatchObject({
      code: 'INVALID_TOOL_OUTPUT',
      message: expect.stringMatching(/finalize refused/),
    });
    expect(seen.finalize.filter((id) => id === 'fz1')).toHaveLength(1);
    expect(seen.finalize.filter((id) => id === 'fz2')).toHaveLength(1);
  });

  it('observers cannot change the outcome and their throws are contained', async () => {
    const out = await h.client.runBatch(batch([echo('observed', 'ob')]));
    expect(out.results[0].result.isError).toBe(false);
    expect(seen.observed).toContain('ob');
  });

  it('no extension can change the call identity: the body sees the frozen snapshot', async () => {
    const out = await h.client.runBatch(batch([echo('mutate', 'm1')]));
    expect(text(out.results[0].result)).toBe('mutate');
    expect(seen.bodyArgs).toContainEqual({ text: 'mutate' });
    expect(seen.bodyArgs).not.toContainEqual({ text: 'mutated' });
    const call = out.events.find((e) => e.type === 'tool/call')!;
    expect(call.data).toMatchObject({ callId: 'm1', name: 'echo', arguments: JSON.stringify({ text: 'mutate' }) });
  });
});
