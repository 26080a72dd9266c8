// The batch output as the workflow returns it: each result's content (and structured value) once,
// in its tool message; its `results` entry and its tool/result event refer to that message by call
// id instead of carrying copies. `expandBatchOutput` gives readers the familiar shape back, with
// the three places sharing one content object. Pure: the workflow, the client and the CLI use it.
import type { BatchOutput, ContentBlock, Json, JsonObject, ModelMessage, SessionEvent, ToolResult } from './types';

type ToolMessage = Extract<ModelMessage, { role: 'tool' }>;

/** A result entry of the returned output: content and value live in the tool message of the same call. */
export type WireResult = Omit<ToolResult, 'content'> & { content?: ContentBlock[] };

/** What the batch workflow returns (`handle.result()`); pass it to `expandBatchOutput` to read it. */
export interface BatchOutputWire extends Omit<BatchOutput, 'results'> {
  /**
   * Present when content is carried once: each `results[i].result` and each tool/result event
   * without `content` takes its content (and value) from the tool message with its call id.
   * Absent on outputs of batches that ran before this (they carry copies, and read as they are).
   */
  contentIn?: 'messages';
  results: { callId: string; name: string; result: WireResult }[];
}

/** The output with each result's content and value kept once, in its tool message. */
export function compactBatchOutput(output: BatchOutput): BatchOutputWire {
  const byCall = toolMessages(output.messages);
  const same = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b);
  return {
    ...output,
    contentIn: 'messages',
    results: output.results.map((r) => {
      const m = byCall.get(r.callId);
      if (!m || !same(m.content, r.result.content) || !same(m.value, r.result.value)) return r;
      const { content: _content, value: _value, ...rest } = r.result;
      return { ...r, result: rest };
    }),
    events: output.events.map((e) => {
      if (e.type !== 'tool/result') return e;
      const m = byCall.get(String(e.data.callId));
      if (!m || !same(m.content, e.data.content)) return e;
      const { content: _content, ...rest } = e.data;
      return { ...e, data: rest };
    }),
  };
}

/**
 * The output as readers know it: every result entry and tool/result event with its content (one
 * shared object per result, not a copy). Outputs of older batches, which carry copies, come back
 * unchanged.
 */
export function expandBatchOutput(output: BatchOutputWire | BatchOutput): BatchOutput {
  const wire = output as BatchOutputWire;
  if (wire.contentIn !== 'messages') return output as BatchOutput;
  const { contentIn: _contentIn, ...rest } = wire;
  const byCall = toolMessages(wire.messages);
  const missing = (callId: string) => {
    throw new Error(
      `this batch output refers to the tool message of call ${JSON.stringify(callId)} for its content, but has none; the output was altered after the batch returned it`,
    );
  };
  return {
    ...rest,
    results: wire.results.map((r) => {
      if (r.result.content !== undefined) return r as BatchOutput['results'][number];
      const m = byCall.get(r.callId) ?? missing(r.callId);
      // The key order the batch built (content first, value last), so the JSON reads as it did.
      return {
        ...r,
        result: { content: m.content, ...r.result, ...(m.value !== undefined ? { value: m.value } : {}) },
      };
    }),
    events: wire.events.map((e): SessionEvent => {
      if (e.type !== 'tool/result' || e.data.content !== undefined) return e;
      const m = byCall.get(String(e.data.callId)) ?? missing(String(e.data.callId));
      return { ...e, data: withContentAfterName(e.data, m.content as unknown as Json) };
    }),
  };
}

/** A tool/result event's data with its content back where the batch recorded it: after `name`. */
function withContentAfterName(data: JsonObject, content: Json): JsonObject {
  if (!('name' in data)) return { ...data, content };
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(data)) {
    out[k] = v;
    if (k === 'name') out.content = content;
  }
  return out;
}

function toolMessages(messages: ModelMessage[]): Map<string, ToolMessage> {
  const byCall = new Map<string, ToolMessage>();
  for (const m of messages) if (m.role === 'tool') byCall.set(m.toolCallId, m);
  return byCall;
}
