// The batch output as it crosses history (codec/output.ts): the packed form reads back as
// exactly the output the batch built, is used only when it does, and outputs recorded by earlier
// versions (content copied, content once) read as they did.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type BatchOutputWire,
  batchMessages,
  batchOutputWire,
  compactBatchOutput,
  expandBatchOutput,
  packBatchOutput,
  type PackedEvent,
} from '../../codec/output';
import type { BatchOutput, SessionEvent } from '../../pipeline/types';

const T0 = '2026-12-02T05:55:35.946Z';
const T1 = '2026-12-02T05:55:37.494Z';
const text = (t: string) => [{ type: 'text' as const, text: t }];

/** A batch of `n` plain calls as the batch workflow builds it: tool/calls first, then results. */
function plainBatch(n: number): BatchOutput {
  const ids = Array.from({ length: n }, (_, i) => `call_${i}`);
  const events: SessionEvent[] = [];
  let seq = 40;
  for (const id of ids)
    events.push({
      type: 'tool/call',
      seq: seq++,
      time: T0,
      data: { turn: 2, step: 5, callId: id, name: 'echo', arguments: `{"text":"${id}"}` },
    });
  ids.forEach((id, i) =>
    events.push({
      type: 'tool/result',
      seq: seq++,
      time: i < 3 ? T0 : T1,
      data: {
        turn: 2,
        step: 5,
        callId: id,
        name: 'echo',
        content: text(id),
        isError: false,
        card: { title: 'echo', summary: 'done' },
      },
    }),
  );
  return {
    sessionId: 'bench',
    turn: 2,
    step: 5,
    messages: ids.map((id) => ({ role: 'tool', toolCallId: id, toolName: 'echo', content: text(id), isError: false })),
    results: ids.map((id) => ({ callId: id, name: 'echo', result: { content: text(id), isError: false } })),
    events,
    nextSeq: seq,
    concludesTurn: false,
    cancelled: false,
    state: {},
  };
}

/** Every recorded batch output of the fixtures, expanded: real outputs of every shape the batch builds. */
function recordedOutputs(): { name: string; output: BatchOutput }[] {
  const root = path.join(__dirname, '..', 'fixtures', 'histories');
  const found: { name: string; output: BatchOutput }[] = [];
  for (const release of fs.readdirSync(root))
    for (const file of fs.readdirSync(path.join(root, release))) {
      const history = JSON.parse(fs.readFileSync(path.join(root, release, file), 'utf8'));
      for (const e of history.events) {
        const payload = e.workflowExecutionCompletedEventAttributes?.result?.payloads?.[0];
        if (!payload) continue;
        const value = JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8'));
        if (Array.isArray(value?.events) && Array.isArray(value?.messages))
          found.push({ name: `${release}/${file}`, output: expandBatchOutput(value) });
      }
    }
  return found;
}

const json = (v: unknown) => JSON.stringify(v);

describe('the packed batch output', () => {
  it('reads back as exactly the output the batch built, key for key, and is well under the content-once form', () => {
    const output = plainBatch(10);
    const wire = batchOutputWire(output);
    expect(wire.packed).toBe(4);
    expect(json(expandBatchOutput(wire))).toBe(json(output));
    // What it leaves out: the derived results, consecutive seqs, repeated times, turn and step,
    // and the flags that are always so of it or false.
    expect(wire.results).toBeUndefined();
    for (const key of ['contentIn', 'concludesTurn', 'cancelled']) expect(wire).not.toHaveProperty(key);
    // The tool/calls say no more than their call ids and arguments, and follow one another: one run.
    const args = Array.from({ length: 10 }, (_, i) => `{"text":"call_${i}"}`);
    const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `call_${from + i}`);
    expect(wire.events[0]).toEqual({ 'tool/call': ids(0, 10), seq: 40, time: T0, arguments: args });
    // A tool/result's generic card goes too (the card a tool without presentResult gets): its call
    // id is all it says. A new time starts a new run.
    expect(wire.events.slice(1)).toEqual([{ 'tool/result': ids(0, 3) }, { 'tool/result': ids(3, 10), time: T1 }]);
    // A tool message leaves out its role and `isError: false`, and its one text block is its text.
    expect(wire.messages[0]).toEqual({ toolCallId: 'call_0', toolName: 'echo', content: 'call_0' });
    expect(json(wire).length).toBeLessThan(0.6 * json(compactBatchOutput(output)).length);
    // Each result's content is one object, shared by its message, its entry and its event.
    const back = expandBatchOutput(wire);
    expect(back.results[4].result.content).toBe(back.messages[4].content);
    expect(back.events[14].data.content).toBe(back.messages[4].content);
  });

  it('packs every recorded batch output of the fixtures and reads it back exactly', () => {
    const outputs = recordedOutputs();
    // The three batches 1.0.0 recorded, and those of the release in the making.
    expect(outputs.length).toBeGreaterThanOrEqual(3);
    for (const { name, output } of outputs) {
      const wire = batchOutputWire(output);
      expect({ name, packed: wire.packed }).toEqual({ name, packed: 4 });
      expect({ name, back: json(expandBatchOutput(wire)) }).toEqual({ name, back: json(output) });
      expect(json(wire).length).toBeLessThan(json(compactBatchOutput(output)).length);
    }
  });

  it('keeps in each event and entry what the rest of the output does not say', () => {
    const output = plainBatch(3);
    output.concludesTurn = true;
    // A result whose event names another turn, an error, extra outcome fields, a context, a gap in seqs.
    output.events[0].data.turn = 1;
    const { card, ...called } = output.events[4].data;
    output.events[4].data = { ...called, isError: true, error: { message: 'no', code: 'DENIED' }, card };
    output.messages[1] = { ...output.messages[1], isError: true, error: { message: 'no', code: 'DENIED' } } as never;
    output.results[1].result = { ...output.results[1].result, isError: true, error: { message: 'no', code: 'DENIED' } };
    output.results[2].result = {
      ...output.results[2].result,
      additionalContexts: [{ role: 'user', content: 'mind the quota', source: 'hook' }],
    };
    output.messages.push({ role: 'user', content: 'mind the quota', source: 'hook' });
    output.events.push({ type: 'hook/invoked', seq: 99, time: T1, data: { turn: 2, step: 5, hook: 'h' } });
    const wire = batchOutputWire(output);
    expect(wire.packed).toBe(4);
    expect(json(expandBatchOutput(wire))).toBe(json(output));
    expect(wire).toMatchObject({ concludesTurn: true });
    expect((wire.events[0] as PackedEvent).data).toMatchObject({ turn: 1, step: 5, name: 'echo' });
    // A run takes the short events after a whole one, and a whole one in between ends a run.
    expect(wire.events[1]).toEqual({
      'tool/call': ['call_1', 'call_2'],
      arguments: ['{"text":"call_1"}', '{"text":"call_2"}'],
    });
    expect(wire.events[2]).toEqual({ 'tool/result': 'call_0' });
    expect(wire.events[4]).toEqual({ 'tool/result': 'call_2' });
    expect((wire.events[3] as PackedEvent).data).toEqual({
      callId: 'call_1',
      card: { title: 'echo', summary: 'done' },
    });
    expect(wire.results).toEqual([
      { callId: 'call_0' },
      { callId: 'call_1' },
      expect.objectContaining({ name: 'echo' }),
    ]);
    expect(wire.events.at(-1)).toEqual({
      type: 'hook/invoked',
      seq: 99,
      time: T1,
      data: { turn: 2, step: 5, hook: 'h' },
    });
    expect(wire.messages[1]).toHaveProperty('isError', true);
    expect(wire.messages[0]).not.toHaveProperty('isError');
    // Neither tool message names its role; the context's user message does, and keeps its text as it was.
    expect(wire.messages.map((m) => m.role)).toEqual([undefined, undefined, undefined, 'user']);
    expect(wire.messages[3]).toEqual({ role: 'user', content: 'mind the quota', source: 'hook' });
  });

  it('writes only a lone text block as its text, and runs only events that follow one another', () => {
    const output = plainBatch(4);
    // An image beside the text, and a text block with a key of its own: each content is the call's
    // everywhere (its message, its result entry, its tool/result event). And a gap in the seqs.
    const contents = [
      [...text('a'), { type: 'image', data: 'AA==', mimeType: 'image/png' }],
      [{ type: 'text', text: 'b', cached: true }],
    ] as never[];
    contents.forEach((content, i) => {
      Object.assign(output.messages[i], { content });
      output.results[i].result.content = content;
      output.events[4 + i].data.content = content;
    });
    output.events[2].seq = 60;
    for (const i of [3, 4, 5, 6, 7]) output.events[i].seq = 58 + i;
    const wire = batchOutputWire(output);
    expect(wire.packed).toBe(4);
    expect(json(expandBatchOutput(wire))).toBe(json(output));
    expect(json(batchMessages(wire))).toBe(json(output.messages));
    expect(wire.messages.map((m) => typeof m.content)).toEqual(['object', 'object', 'string', 'string']);
    expect(wire.events.slice(0, 2)).toEqual([
      { 'tool/call': ['call_0', 'call_1'], seq: 40, time: T0, arguments: ['{"text":"call_0"}', '{"text":"call_1"}'] },
      { 'tool/call': ['call_2', 'call_3'], seq: 60, arguments: ['{"text":"call_2"}', '{"text":"call_3"}'] },
    ]);
  });

  it('falls back to content once when the packed form would not read back exactly', () => {
    const output = plainBatch(2);
    // A tool/result with its keys in another order: unpacking would put isError back after name.
    const { isError, ...rest } = output.events[2].data;
    output.events[2].data = { ...rest, isError };
    expect(json(expandBatchOutput(packBatchOutput(compactBatchOutput(output))))).not.toBe(json(output));
    const wire = batchOutputWire(output);
    expect(wire.packed).toBeUndefined();
    expect(wire.contentIn).toBe('messages');
    expect(json(expandBatchOutput(wire))).toBe(json(output));
  });

  it('reads outputs of earlier batches as they are, and names an altered packed output', () => {
    const output = plainBatch(2);
    expect(expandBatchOutput(output)).toBe(output);
    expect(json(expandBatchOutput(compactBatchOutput(output)))).toBe(json(output));
    const wire = batchOutputWire(output);
    const altered: BatchOutputWire = { ...wire, messages: wire.messages.slice(1) };
    expect(() => expandBatchOutput(altered)).toThrow(/tool message of call "call_0".*altered/);
  });

  it('gives the messages as the model reads them from any form, without expanding the rest', () => {
    const output = plainBatch(3);
    for (const form of [output, compactBatchOutput(output), batchOutputWire(output)])
      expect(json(batchMessages(form))).toBe(json(output.messages));
  });
});
