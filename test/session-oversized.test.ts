// Issue 22 item 6: a model could wedge its own durable session. Model replies whose calls carry
// 1.9 MB of arguments passed neither the 256 K per-call nor the 1 MB batch-input limit the client
// applies, rode into continue-as-new (three of them: 5.7 MB against Temporal's 2 MB) and every
// workflow task after failed. Here a scripted model does that for three steps (and once sends five
// calls of 250 K, over the batch limit in all), on the real dev server, with continue-as-new
// forced: every oversized call gets INVALID_ARGS, the session keeps answering, and it ends.
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel, type ScriptStep } from '../agent/adapters/scripted';
import { startSession } from '../client/session';
import { MAX_ARGUMENT_CHARS, MAX_INPUT_BYTES } from '../pipeline/budget';
import { contentText, type AgentMessage, type ToolMessage } from '../pipeline/session';
import { FileResultStore } from '../stores/claim-check';
import { defineConfig, defineTool } from '../define/config';
import { readSessionLog } from '../stores/sink';
import { eventually } from './eventually';
import { startHarness, type Harness } from './harness';

const HUGE = 1_900_000;
const big = (n: number) => JSON.stringify({ text: 'x'.repeat(n) });

function lastUserText(messages: AgentMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'user' && !m.source) return contentText(m.content);
  }
  return '';
}

function scriptFor(message: string, step: number): ScriptStep {
  if (message === 'flood') {
    // Three steps of one 1.9 MB call each (with a small call that must still run), then five
    // calls of 250 K: each under the per-call limit, over the batch's in all.
    if (step <= 3)
      return {
        text: `step ${step}`,
        calls: [
          { id: `huge${step}`, name: 'write', args: big(HUGE) },
          { id: `small${step}`, name: 'write', args: { text: `small ${step}` } },
        ],
      };
    if (step === 4)
      return { calls: [1, 2, 3, 4, 5].map((i) => ({ id: `wide${i}`, name: 'write', args: big(250_000) })) };
    return { text: 'flood over' };
  }
  return { text: `echo ${message}` };
}

const written: string[] = [];
const config = defineConfig({
  tools: [
    defineTool({
      name: 'write',
      description: 'Writes text somewhere.',
      input: z.object({ text: z.string() }),
      execute: ({ text }) => {
        written.push(text.length > 20 ? `${text.length} chars` : text);
        return `wrote ${text.length}`;
      },
    }),
  ],
  models: {
    flooding: scriptedModel((req) => scriptFor(lastUserText(req.messages), req.step)),
  },
});

let h: Harness;
let store: FileResultStore;
beforeAll(async () => {
  h = await startHarness('session-oversized', config);
  store = new FileResultStore(path.join(h.stateDir, 'results'));
});
afterAll(() => h?.close());

describe('a model that sends oversized arguments', () => {
  it('gets INVALID_ARGS per call; the session continues-as-new, stays answerable and ends', async () => {
    const s = await startSession(h.client, {
      sessionId: `oversized-${process.pid}-${Date.now()}`,
      model: 'flooding',
      // Continue-as-new at every chance: the carry must fit each time.
      continueAsNewAfterEvents: 10,
      maxTurns: 2,
    });
    const first = await s.send('flood', { id: 'm1' });
    expect(first).toMatchObject({ reason: 'done', steps: 5, text: 'flood over' });

    // Still answerable after it, and it reaches its end.
    const second = await s.send('hello', { id: 'm2' });
    expect(second).toMatchObject({ reason: 'done', text: 'echo hello' });
    const out = await s.result();
    expect(out.endReason).toBe('max-turns');
    const view = await eventually('the session view', () => s.state().catch(() => undefined));
    expect(view.runs).toBeGreaterThan(1); // it did continue-as-new

    // The small calls ran, and the 250 K calls that fit; no refused one did.
    expect(written.slice(0, 3)).toEqual(['small 1', 'small 2', 'small 3']);
    const transcript = await s.transcript(store, out);
    const tools = transcript.filter((m): m is ToolMessage => m.role === 'tool');
    const byId = new Map(tools.map((t) => [t.toolCallId, t]));
    for (const i of [1, 2, 3]) {
      const huge = byId.get(`huge${i}`)!;
      expect(huge.isError).toBe(true);
      expect(huge.error?.code).toBe('INVALID_ARGS');
      expect(huge.error?.message).toContain(`over the ${MAX_ARGUMENT_CHARS}-character limit for one call`);
      expect(byId.get(`small${i}`)).toMatchObject({ isError: false });
    }
    // Five calls of 250 K: the largest are refused until the rest fit in one batch's input.
    const wide = [1, 2, 3, 4, 5].map((i) => byId.get(`wide${i}`)!);
    const refused = wide.filter((t) => t.isError);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const t of refused) {
      expect(t.error?.code).toBe('INVALID_ARGS');
      expect(t.error?.message).toContain(`more than ${MAX_INPUT_BYTES} bytes of arguments in all`);
    }
    expect(wide.filter((t) => !t.isError).length * 250_000).toBeLessThanOrEqual(MAX_INPUT_BYTES);
    expect(wide.filter((t) => !t.isError).length).toBeGreaterThanOrEqual(1);
    expect(written.slice(3)).toEqual(wide.filter((t) => !t.isError).map(() => `${250_000} chars`));

    // The transcript keeps what the batch saw: a preview of the arguments and their length.
    const assistants = transcript.filter((m) => m.role === 'assistant');
    const huge1 = assistants.flatMap((m) => m.toolCalls).find((c) => c.id === 'huge1')!;
    expect(huge1.argumentsChars).toBe(big(HUGE).length);
    expect(huge1.arguments.length).toBeLessThanOrEqual(1000);

    // The session log recorded each refusal.
    const events = await readSessionLog(h.stateDir, s.sessionId);
    const rejected = events.filter((e) => e.type === 'tool/rejected').map((e) => e.data.callId);
    expect(rejected).toEqual(expect.arrayContaining(['huge1', 'huge2', 'huge3']));
  });
});
