// Issue 22 item 6, the pure parts: a model step's calls within a batch's limits (per call and in
// all), the session's intake giving those it kept a preview of INVALID_ARGS, and what the tail and
// the continue-as-new carry keep of large messages.
import { describe, expect, it } from 'vitest';
import { jsonBytes, MAX_ARGUMENT_CHARS, MAX_INPUT_BYTES, PAYLOAD_LIMIT_BYTES } from '../../pipeline/budget';
import {
  type AgentMessage,
  boundStepCalls,
  carryOf,
  intakeCalls,
  type SessionCarry,
  tailCopy,
} from '../../pipeline/session';
import type { Json } from '../../pipeline/types';

const args = (n: number) => JSON.stringify({ text: 'x'.repeat(n) });

describe('boundStepCalls', () => {
  it('keeps a preview of arguments over the per-call limit, and leaves the others alone', () => {
    const out = boundStepCalls([
      { id: 'a', name: 't', arguments: args(1_900_000) },
      { id: 'b', name: 't', arguments: args(10) },
    ]);
    expect(out[0].argumentsChars).toBe(args(1_900_000).length);
    expect(out[0].arguments.length).toBeLessThanOrEqual(1000);
    expect(out[1]).toEqual({ id: 'b', name: 't', arguments: args(10) });
  });

  it('over the batch limit in all, keeps a preview of the largest until the rest fit', () => {
    const calls = [200_000, 250_000, 240_000, 230_000, 220_000, 200_000, 10].map((n, i) => ({
      id: `c${i}`,
      name: 't',
      arguments: args(n),
    }));
    const out = boundStepCalls(calls);
    const sent = out.filter((c) => c.argumentsChars === undefined);
    expect(sent.reduce((n, c) => n + c.arguments.length, 0)).toBeLessThanOrEqual(MAX_INPUT_BYTES);
    // 1.34 M in all: the largest went first (250 K, then 240 K), then the rest fit.
    expect(out.filter((c) => c.argumentsChars !== undefined).map((c) => c.id)).toEqual(['c1', 'c2']);
    expect(out.every((c) => c.arguments.length <= MAX_ARGUMENT_CHARS)).toBe(true);
  });

  it('counts bytes as JSON writes them: escapes and multi-byte characters', () => {
    const quoted = JSON.stringify({ text: '"'.repeat(200_000) }); // each quote is \\\" in the string, twice more as JSON
    const out = boundStepCalls([1, 2, 3].map((i) => ({ id: `q${i}`, name: 't', arguments: quoted })));
    const sent = out.filter((c) => c.argumentsChars === undefined);
    expect(jsonBytes(sent.map((c) => c.arguments) as Json)).toBeLessThanOrEqual(MAX_INPUT_BYTES + 10);
  });
});

describe('intakeCalls', () => {
  it('gives a call kept as a preview INVALID_ARGS, saying which limit, and runs the rest', () => {
    const [huge, ok] = boundStepCalls([
      { id: 'h', name: 't', arguments: args(300_000) },
      { id: 'k', name: 't', arguments: args(3) },
    ]);
    const wide = { id: 'w', name: 't', arguments: '{"text":"xx', argumentsChars: 250_000 };
    const intake = intakeCalls([huge, ok, wide]);
    expect(intake.calls.map((c) => c.id)).toEqual(['k']);
    const [h, w] = intake.rejected.map((r) => r.message);
    expect(h.error).toEqual({ code: 'INVALID_ARGS', message: expect.stringContaining('limit for one call') });
    expect(w.error).toEqual({
      code: 'INVALID_ARGS',
      message: expect.stringContaining('in all, the limit for one batch'),
    });
    expect(intake.order).toEqual([{ rejected: 0 }, { run: 'k' }, { rejected: 1 }]);
  });
});

describe('the tail and the carry', () => {
  it('three steps of 1.9 MB arguments and 1.5 MB results carry well under the payload limit', () => {
    const tail: AgentMessage[] = [];
    for (let i = 0; i < 3; i++) {
      tail.push(
        tailCopy({
          role: 'assistant',
          text: 'y'.repeat(1_000_000),
          toolCalls: [{ id: `c${i}`, name: 't', arguments: args(1_900_000) }],
        }),
        tailCopy({
          role: 'tool',
          toolCallId: `c${i}`,
          toolName: 't',
          isError: false,
          content: Array.from({ length: 300 }, () => ({ type: 'text' as const, text: 'z'.repeat(5_000) })),
          value: { big: 'v'.repeat(1_500_000) },
        }),
      );
    }
    const c: SessionCarry = {
      turn: 1,
      step: 3,
      seq: 10,
      state: {},
      head: 'h',
      unstored: [],
      tail,
      messageCount: 6,
      usage: { inputTokens: 0, outputTokens: 0, steps: 3 },
      inbox: [],
      turnsCompleted: 0,
      recentTurns: Array.from({ length: 20 }, (_, i) => ({
        messageId: `m${i}`,
        turn: i,
        steps: 1,
        reason: 'done' as const,
        text: 't'.repeat(500_000),
      })),
      runs: 1,
    };
    const carried = carryOf(c);
    expect(jsonBytes(carried as unknown as Json)).toBeLessThan(PAYLOAD_LIMIT_BYTES / 4);
    // What is kept says what it is: ids, names, the start of each text, and that the rest is elsewhere.
    expect(carried.tail[0]).toMatchObject({ role: 'assistant', toolCalls: [{ id: 'c0', name: 't' }] });
    expect((carried.tail[1] as { value?: unknown }).value).toBeUndefined();
    expect(JSON.stringify(carried.tail[1])).toContain('more blocks not kept here');
    expect(carried.recentTurns.map((t) => t.messageId)).toEqual(c.recentTurns.map((t) => t.messageId));
    expect(carried.recentTurns[19].text.length).toBeGreaterThan(carried.recentTurns[0].text.length);
  });

  it('leaves small messages as they are', () => {
    const m: AgentMessage = { role: 'user', content: 'hi' };
    expect(tailCopy(m)).toEqual(m);
    const a: AgentMessage = { role: 'assistant', text: 'ok', toolCalls: [{ id: 'x', name: 'n', arguments: '{}' }] };
    expect(tailCopy(a)).toEqual(a);
  });
});
