// Streaming out of durable model steps: the real `openai`, `@anthropic-ai/sdk` and `ai` packages
// against a local provider that streams in each wire format (test/stream-provider.ts). Followers
// see the pieces while the step runs (the provider holds the rest back until the test has seen
// them), a failed attempt's pieces voided, and a late follower the record so far, then the step
// under way from its start, then the tail, nothing twice. The record stays the whole message once.
import * as path from 'node:path';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LiveEvent } from '../pipeline/live';
import { type SessionHandle, sessionHandle, startSession } from '../client/session';
import type { SessionEvent } from '../pipeline/types';
import { FileResultStore } from '../stores/claim-check';
import { fileLiveChannel } from '../stores/live';
import { eventually } from './eventually';
import sessionConfig from './fixtures/session.config';
import { startHarness, type Harness } from './harness';
import { ANSWER, startStreamProvider, type StreamProvider } from './stream-provider';

type Followed = SessionEvent | LiveEvent;

let provider: StreamProvider;
let h: Harness;
let n = 0;

/**
 * An AI SDK language model that streams from the fake provider's chat completions endpoint, so
 * `streamText` meets the same wire (and the same gates and faults) as the other adapters.
 */
function aiSdkOverWire(model: string) {
  return new MockLanguageModelV3({
    provider: 'wire',
    modelId: model,
    doStream: async (options: any) => {
      const res = await fetch(`${provider.base}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model, stream: true, messages: options.prompt }),
        signal: options.abortSignal,
      });
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let buf = '';
      let started = false;
      const tools = new Map<number, { id: string; name: string; args: string }>();
      return {
        stream: new ReadableStream({
          async pull(controller) {
            for (;;) {
              const cut = buf.indexOf('\n\n');
              if (cut >= 0) {
                const line = buf.slice(0, cut).replace(/^data: /, '');
                buf = buf.slice(cut + 2);
                if (line === '[DONE]') continue;
                const chunk = JSON.parse(line); // a line that is not JSON fails the stream
                const c = chunk.choices?.[0];
                if (!c) continue;
                if (!started) {
                  controller.enqueue({ type: 'stream-start', warnings: [] });
                  controller.enqueue({ type: 'text-start', id: 't' });
                  started = true;
                }
                if (c.delta?.content) controller.enqueue({ type: 'text-delta', id: 't', delta: c.delta.content });
                for (const t of c.delta?.tool_calls ?? []) {
                  if (t.id) {
                    tools.set(t.index, { id: t.id, name: t.function.name, args: '' });
                    controller.enqueue({ type: 'tool-input-start', id: t.id, toolName: t.function.name });
                  }
                  const tc = tools.get(t.index)!;
                  if (t.function?.arguments) {
                    tc.args += t.function.arguments;
                    controller.enqueue({ type: 'tool-input-delta', id: tc.id, delta: t.function.arguments });
                  }
                }
                if (c.finish_reason) {
                  controller.enqueue({ type: 'text-end', id: 't' });
                  for (const tc of tools.values()) {
                    controller.enqueue({ type: 'tool-input-end', id: tc.id });
                    controller.enqueue({ type: 'tool-call', toolCallId: tc.id, toolName: tc.name, input: tc.args });
                  }
                  controller.enqueue({
                    type: 'finish',
                    finishReason: { unified: tools.size ? 'tool-calls' : 'stop', raw: c.finish_reason },
                    usage: {
                      inputTokens: { total: 19, noCache: 19, cacheRead: 0, cacheWrite: 0 },
                      outputTokens: { total: 3, text: 3, reasoning: 0 },
                    },
                  });
                  controller.close();
                  return;
                }
                continue;
              }
              const { done, value } = await reader.read();
              if (done) {
                controller.error(new Error('the connection was cut mid-answer'));
                return;
              }
              buf += decoder.decode(value, { stream: true });
              if (started) return;
            }
          },
        }),
      };
    },
  });
}

beforeAll(async () => {
  provider = await startStreamProvider();
  Object.assign(process.env, {
    OPENAI_API_KEY: 'sk-test-stream',
    OPENAI_BASE_URL: `${provider.base}/v1`,
    ANTHROPIC_API_KEY: 'sk-ant-test-stream',
    ANTHROPIC_BASE_URL: provider.base,
  });
  const models: Record<string, unknown> = { ...sessionConfig.models };
  for (const m of ['gate-ai', 'cut-ai', 'tool-ai']) models[m] = aiSdkOverWire(`${m}-${process.pid}`);
  h = await startHarness('stream', { ...sessionConfig, models: models as never });
  process.env.SLUICE_TEST_DIR = h.stateDir;
}, 60_000);
afterAll(async () => {
  await h?.close();
  await provider?.close();
});

/** Follows a session's events with the live pieces into an array, until stopped. */
function follow(s: SessionHandle) {
  const seen: Followed[] = [];
  const stop = new AbortController();
  const done = (async () => {
    for await (const e of s.events({ source: h.stateDir, live: true, signal: stop.signal, until: 'session' }))
      seen.push(e);
  })();
  return {
    seen,
    async stop() {
      stop.abort();
      await done;
    },
  };
}

const deltas = (seen: Followed[]) =>
  seen.filter((e): e is Extract<LiveEvent, { type: 'live/delta' }> => e.type === 'live/delta');
const logged = (seen: Followed[]) => seen.filter((e): e is SessionEvent => 'seq' in e);

/** What a follower shows for a step: the pieces of its attempts not voided, in order. */
function shownText(seen: Followed[], turn: number, step: number, kind = 'text'): string {
  const voided = new Set(
    seen
      .filter((e): e is LiveEvent => e.type === 'live/void')
      .filter((e) => e.turn === turn && e.step === step)
      .map((e) => e.attempt),
  );
  return deltas(seen)
    .filter((d) => d.turn === turn && d.step === step && d.kind === kind && !voided.has(d.attempt))
    .map((d) => d.text)
    .join('');
}

/** Each follower sees the log in seq order, nothing twice, and each attempt's pieces in order, once. */
function expectNoDuplicates(seen: Followed[]) {
  const seqs = logged(seen).map((e) => e.seq);
  expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  expect(new Set(seqs).size).toBe(seqs.length);
  const byAttempt = new Map<string, number[]>();
  for (const d of deltas(seen)) {
    const k = `${d.turn}:${d.step}:${d.attempt}`;
    byAttempt.set(k, [...(byAttempt.get(k) ?? []), d.n]);
  }
  for (const ns of byAttempt.values()) {
    expect(ns).toEqual([...ns].sort((a, b) => a - b));
    expect(new Set(ns).size).toBe(ns.length);
  }
}

async function start(model: string, extra: Record<string, unknown> = {}) {
  return startSession(h.client, {
    sessionId: `stream-${process.pid}-${Date.now()}-${++n}`,
    model,
    modelCall: { initialIntervalMs: 50, maxAttempts: 4 },
    ...extra,
  });
}

describe('the model answer streams to followers while the step runs', () => {
  for (const [label, model, gateName, extra] of [
    ['OpenAI chat completions', 'openai:gate-chat', 'gate-chat', {}],
    ['OpenAI Responses', 'openai-responses:gate-resp', 'gate-resp', {}],
    ['Anthropic Messages', 'anthropic:gate-anth', 'gate-anth', {}],
    ['AI SDK streamText', 'gate-ai', `gate-ai-${process.pid}`, {}],
    // A local model step streams the same way, with no activity heartbeat.
    [
      'OpenAI chat completions, a local model step',
      'openai:gate-chat-local',
      'gate-chat-local',
      { modelCall: { local: true } },
    ],
  ] as const) {
    it(`${label}: pieces before the step ends; a late follower gets the record, the step from its start, the tail`, async () => {
      const s = await start(model, extra);
      const early = follow(s);
      const turn = s.send('say hello');
      // The provider holds everything after the first piece: seeing it means the step is still running.
      await eventually('the first piece, live', () => deltas(early.seen).some((d) => d.text === ANSWER[0]));
      expect(logged(early.seen).map((e) => e.type)).not.toContain('model/message');
      expect(provider.requests(gateName)).toBe(1);
      // A follower joining now: the log so far (the user's message), then this step's pieces from the first.
      const late = follow(s);
      await eventually('the late follower catches up', () => shownText(late.seen, 1, 1) === ANSWER[0]);
      expect(logged(late.seen).map((e) => e.type)).toEqual(['session/user']);
      provider.release(gateName);
      const outcome = await turn;
      expect(outcome).toMatchObject({ reason: 'done', text: ANSWER.join('') });
      for (const f of [early, late]) {
        await eventually('the record', () => logged(f.seen).some((e) => e.type === 'model/message'));
        expect(shownText(f.seen, 1, 1)).toBe(ANSWER.join(''));
        expectNoDuplicates(f.seen);
        // Every piece came before the step's record.
        const recordAt = f.seen.findIndex((e) => e.type === 'model/message');
        const lastPiece = f.seen.map((e) => e.type).lastIndexOf('live/delta');
        expect(lastPiece).toBeLessThan(recordAt);
      }
      // The record is the whole message, once.
      const transcript = await s.transcript(new FileResultStore(path.join(h.stateDir, 'results')));
      expect(transcript.filter((m) => m.role === 'assistant').map((m) => (m as { text: string }).text)).toEqual([
        ANSWER.join(''),
      ]);
      await s.cancel();
      await s.result();
      await early.stop();
      await late.stop();
    });
  }

  it('tool-call arguments stream as they form (OpenAI chat, Anthropic, AI SDK); the record keeps the call whole', async () => {
    for (const model of ['openai:tool-chat', 'anthropic:tool-anth', 'tool-ai']) {
      const s = await start(model);
      const f = follow(s);
      const outcome = await s.send('note seven');
      expect(outcome).toMatchObject({ reason: 'done', text: 'Noted seven.' });
      await eventually(
        `${model}: both records`,
        () => logged(f.seen).filter((e) => e.type === 'model/message').length === 2,
      );
      const args = deltas(f.seen).filter((d) => d.step === 1 && d.kind === 'tool-call');
      expect(args.map((d) => d.text).join(''), model).toBe('{"n": 7}');
      expect(args.find((d) => d.call?.name)?.call, model).toMatchObject({ index: 0, name: 'note' });
      expect(shownText(f.seen, 1, 2), model).toBe('Noted seven.');
      expectNoDuplicates(f.seen);
      await s.cancel();
      await s.result();
      await f.stop();
    }
  });
});

describe('a follower joining after a step is recorded', () => {
  it('gets the step whole from its record, none of the pieces the channel still holds for it', async () => {
    const s = await start('openai:tool-chat');
    expect(await s.send('note seven')).toMatchObject({ reason: 'done', text: 'Noted seven.' });
    // The channel still holds both steps' pieces (a file channel rotates only past 1 MiB): a
    // follower that took them would show each step twice, once in pieces and once whole.
    const held = await fileLiveChannel(h.stateDir).read(s.sessionId);
    expect(new Set(held.events.filter((e) => e.type === 'live/delta').map((e) => e.step))).toEqual(new Set([1, 2]));
    const late = follow(s);
    await eventually('the record', () => logged(late.seen).some((e) => e.type === 'session/turn-ended'));
    expect(logged(late.seen).filter((e) => e.type === 'model/message')).toHaveLength(2);
    expect(late.seen.filter((e) => !('seq' in e))).toEqual([]);
    await s.cancel();
    await s.result();
    await late.stop();
  });
});

describe('bad streams: the step fails or retries as before, followers see the attempt voided', () => {
  for (const [label, model, extra] of [
    ['a stream cut mid-message (OpenAI chat)', 'openai:cut-chat', {}],
    ['a stream cut mid-message (AI SDK)', 'cut-ai', {}],
    ['a data line that is not JSON (Anthropic)', 'anthropic:badjson-anth', {}],
    ['a data line that is not JSON (Responses)', 'openai-responses:badjson-resp', {}],
    [
      'a stream that never ends (Responses)',
      'openai-responses:hang-resp',
      { modelCall: { initialIntervalMs: 50, maxAttempts: 3, timeoutMs: 4_000 } },
    ],
    // A local model step retries in its worker: attempt 2, the first one's pieces voided as above.
    [
      'a stream cut mid-message (OpenAI chat), a local model step',
      'openai:cut-chat-local',
      { modelCall: { local: true, initialIntervalMs: 50, maxAttempts: 4 } },
    ],
    [
      'a stream that never ends (Responses), a local model step timed out',
      'openai-responses:hang-resp-local',
      { modelCall: { local: true, initialIntervalMs: 50, maxAttempts: 3, timeoutMs: 4_000 } },
    ],
  ] as const) {
    it(`${label}: attempt 1 voided with its reason, attempt 2 whole, shown once`, async () => {
      const s = await start(model, extra);
      const f = follow(s);
      const outcome = await s.send('say hello');
      expect(outcome).toMatchObject({ reason: 'done', text: ANSWER.join('') });
      await eventually('the record', () => logged(f.seen).some((e) => e.type === 'model/message'));
      const first = f.seen.findIndex((e) => e.type === 'live/delta' && (e as LiveEvent).attempt === 1);
      const voided = f.seen.findIndex((e) => e.type === 'live/void' && (e as LiveEvent).attempt === 1);
      expect(first).toBeGreaterThanOrEqual(0);
      expect(voided).toBeGreaterThan(first);
      expect((f.seen[voided] as { reason: string }).reason.length).toBeGreaterThan(0);
      expect(f.seen.findIndex((e) => e.type === 'live/delta' && (e as LiveEvent).attempt === 2)).toBeGreaterThan(
        voided,
      );
      // What a follower shows: attempt 2's text once, none of attempt 1's.
      expect(shownText(f.seen, 1, 1)).toBe(ANSWER.join(''));
      expectNoDuplicates(f.seen);
      await s.cancel();
      await s.result();
      await f.stop();
    });
  }

  it('10 MB of streamed text: followers get pieces or a drop marker, never more than the channel holds; the session goes on', async () => {
    const s = await start('openai:huge-chat', { modelCall: { initialIntervalMs: 50, maxAttempts: 2 } });
    const f = follow(s);
    const outcome = await s.send('say a lot');
    // As before streaming: an answer that large is refused by the step's limits or recorded; either way the turn ends.
    expect(['done', 'model-error']).toContain(outcome.reason);
    const next = await s.send('say hello');
    expect(next.reason).toBe('done');
    await eventually('the second turn recorded', () =>
      logged(f.seen).some((e) => e.type === 'session/turn-ended' && (e.data as { turn: number }).turn === 2),
    );
    expectNoDuplicates(f.seen);
    expect(shownText(f.seen, 2, 1)).toBe(ANSWER.join(''));
    await s.cancel();
    await s.result();
    await f.stop();
  });
});

describe('sluice chat prints the answer as it streams', () => {
  it('the text appears before the step ends, on one model: line, once; a voided attempt is said to be cut off', async () => {
    const { runChat, LineInput } = await import('../client/chat');
    const { PassThrough } = await import('node:stream');
    let screen = '';
    const sessionId = `stream-chat-${process.pid}-${++n}`;
    const chat = runChat({
      client: h.client,
      sessionId,
      start: { sessionId, model: 'openai:gate-chat2', modelCall: { initialIntervalMs: 50 } },
      events: h.stateDir,
      input: new LineInput(new PassThrough()),
      out: (line) => (screen += `${line}\n`),
      write: (s) => (screen += s),
      approver: 'tester',
      messages: ['say hello'],
    });
    await eventually('the first piece on the screen', () => screen.includes(`model: ${ANSWER[0]}`));
    expect(screen).not.toContain(ANSWER.join(''));
    provider.release('gate-chat2');
    await eventually('the whole answer', () => screen.includes(`model: ${ANSWER.join('')}\n`));
    await chat.catch(() => undefined);
    expect(screen.split(ANSWER.join('')).length - 1).toBe(1);

    screen = '';
    const cutId = `stream-chat-${process.pid}-${++n}`;
    const cut = runChat({
      client: h.client,
      sessionId: cutId,
      start: { sessionId: cutId, model: 'openai:cut-chat2', modelCall: { initialIntervalMs: 50 } },
      events: h.stateDir,
      input: new LineInput(new PassThrough()),
      out: (line) => (screen += `${line}\n`),
      write: (s) => (screen += s),
      approver: 'tester',
      messages: ['say hello'],
    });
    await eventually('the retried answer', () => screen.includes(`model: ${ANSWER.join('')}\n`));
    await cut.catch(() => undefined);
    expect(screen).toContain('(that answer was cut off:');
    expect(screen.split(ANSWER.join('')).length - 1).toBe(1);
    for (const id of [sessionId, cutId])
      await sessionHandle(h.client, id)
        .cancel()
        .catch(() => undefined);
  });
});
