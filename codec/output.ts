// The batch output as the workflow returns it: each result's content (and structured value) once,
// in its tool message; its `results` entry and its tool/result event refer to that message by call
// id instead of carrying copies. Packed outputs (`packed: 4`) also leave out of the events, the results and the tool messages what the rest of the output already
// says: a history keeps every batch's output, so each byte here is paid by every call.
// `expandBatchOutput` gives readers the familiar shape back, with the three places sharing one
// content object. Pure: the workflow, the client and the CLI use it.
import { genericResultCard } from '../pipeline/cards';
import type {
  BatchOutput,
  ContentBlock,
  Json,
  JsonObject,
  ModelMessage,
  SessionEvent,
  ToolResult,
} from '../pipeline/types';

type ToolMessage = Extract<ModelMessage, { role: 'tool' }>;

/** A result entry of the returned output: content and value live in the tool message of the same call. */
export type WireResult = Omit<ToolResult, 'content'> & { content?: ContentBlock[] };

/** What the batch workflow returns (`handle.result()`); pass it to `expandBatchOutput` to read it. */
export interface BatchOutputWire
  extends Omit<BatchOutput, 'results' | 'events' | 'messages' | 'concludesTurn' | 'cancelled'> {
  /** Absent in a packed 4 output when false. */
  concludesTurn?: boolean;
  /** Absent in a packed 4 output when false. */
  cancelled?: boolean;
  /**
   * Present when content is carried once: each `results[i].result` and each tool/result event
   * without `content` takes its content (and value) from the tool message with its call id.
   * Absent on outputs of batches that ran before this (they carry copies, and read as they are).
   */
  contentIn?: 'messages';
  /**
   * Present when the output is packed too (packBatchOutput): events, results and tool messages
   * leave out what the rest of the output says; a tool message leaves out its `role`, a
   * tool/call or tool/result that says no more than its call id and arguments is written short
   * (ShortEvent), a tool message's content that is one text block is its text, a run of short
   * events of one kind is one (ShortRun), and `contentIn` (a packed output always carries content
   * in its messages), `concludesTurn` and `cancelled` when false are left out. Absent on the
   * content-once outputs 1.0.0 returned, and when packing would not read back exactly.
   */
  packed?: 4;
  /**
   * A packed output's tool messages leave out `isError: false` and `role`, and write content that
   * is one text block as its text.
   */
  messages: (ModelMessage | PackedToolMessage)[];
  /**
   * A packed output's entry is `{ callId }` alone when its name and outcome are its tool message's;
   * the list is absent when every entry is, in the tool messages' order.
   */
  results?: { callId: string; name?: string; result?: WireResult }[];
  events: (PackedEvent | ShortEvent | ShortRun)[];
}

type PackedToolMessage = Omit<ToolMessage, 'isError' | 'role' | 'content'> & {
  role?: 'tool';
  isError?: boolean;
  content: ContentBlock[] | string;
};

/**
 * An event of a packed output: `seq` is absent when it follows the previous event's, `time` when
 * it is the previous event's; a tool/call's or tool/result's data leaves out the batch's `turn`
 * and `step`, what its call's tool message says (`name`, `isError`, `error`) and a generic card.
 */
export interface PackedEvent {
  type: string;
  seq?: number;
  time?: string;
  data: JsonObject;
}

/**
 * A tool/call or tool/result of a packed output whose packed data is its call id (and, for a
 * tool/call, the arguments as the model sent them) alone: `{"tool/call": id, seq?, time?,
 * arguments}` and `{"tool/result": id, seq?, time?}`.
 */
type ShortEvent = { seq?: number; time?: string } & (
  | { 'tool/call': string; arguments: Json }
  | { 'tool/result': string }
);

/**
 * Short events of one kind in a row, the first at `seq` and `time` and each after it at the next
 * seq and the same time, as one: `{"tool/call": [ids], seq?, time?, "arguments":
 * [each call's]}` and `{"tool/result": [ids], seq?, time?}`.
 */
type ShortRun = { seq?: number; time?: string } & (
  | { 'tool/call': string[]; arguments: Json[] }
  | { 'tool/result': string[] }
);

/**
 * The output as the batch returns it: content once (compactBatchOutput), then packed
 * (packBatchOutput) when the packed form reads back as exactly this output; else content once only.
 */
export function batchOutputWire(output: BatchOutput): BatchOutputWire {
  const once = compactBatchOutput(output);
  const packed = packBatchOutput(once);
  // The check costs two serialisations of the output; it makes the packing safe for any output a
  // hook or an extension can shape, not only the ones its rules foresaw.
  return JSON.stringify(expandBatchOutput(packed)) === JSON.stringify(output) ? packed : once;
}

/** The output with each result's content and value kept once, in its tool message. */
export function compactBatchOutput(output: BatchOutput): BatchOutputWire {
  const byCall = toolMessages(output.messages);
  return {
    ...output,
    contentIn: 'messages',
    results: output.results.map((r) => {
      const m = byCall.get(r.callId);
      if (!m || !sameJson(m.content, r.result.content) || !sameJson(m.value, r.result.value)) return r;
      const { content: _content, value: _value, ...rest } = r.result;
      return { ...r, result: rest };
    }),
    events: output.events.map((e) => {
      if (e.type !== 'tool/result') return e;
      const m = byCall.get(String(e.data.callId));
      if (!m || !sameJson(m.content, e.data.content)) return e;
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
  const { packed } = output as BatchOutputWire;
  // 1.0.0 returned the content-once form (contentIn alone), read as it is.
  const wire = packed === 4 ? unpackBatchOutput(output as BatchOutputWire) : output;
  if ((wire as BatchOutputWire).contentIn !== 'messages') return wire as BatchOutput;
  // (Unpacking put back the flags a packed 4 output leaves out.)
  const { contentIn: _contentIn, ...rest } = wire as BatchOutputWire &
    Pick<BatchOutput, 'messages' | 'concludesTurn' | 'cancelled'>;
  // After unpacking, every result entry has its name and result (content aside).
  type Entry = { callId: string; name: string; result: WireResult };
  const byCall = toolMessages(rest.messages);
  const missing = (callId: string) => {
    throw new Error(
      `this batch output refers to the tool message of call ${JSON.stringify(callId)} for its content, but has none; the output was altered after the batch returned it`,
    );
  };
  return {
    ...rest,
    results: ((rest.results ?? []) as Entry[]).map((r) => {
      if (r.result?.content !== undefined) return r as BatchOutput['results'][number];
      const m = byCall.get(r.callId) ?? missing(r.callId);
      // The key order the batch built (content first, value last), so the JSON reads as it did.
      return {
        ...r,
        result: { content: m.content, ...r.result, ...(m.value !== undefined ? { value: m.value } : {}) },
      };
    }),
    events: (rest.events as SessionEvent[]).map((e): SessionEvent => {
      if (e.type !== 'tool/result' || e.data.content !== undefined) return e;
      const m = byCall.get(String(e.data.callId)) ?? missing(String(e.data.callId));
      return { ...e, data: withContentAfterName(e.data, m.content as unknown as Json) };
    }),
  };
}

/**
 * Packs a content-once output: each event leaves out a `seq` that follows the previous event's
 * and a `time` that repeats it; a tool/call's or tool/result's data leaves out the batch's turn
 * and step, what its tool message says and the generic result card; a result entry that its tool
 * message tells is its call id alone; a tool message leaves out its role and `isError: false`; a
 * tool/call or tool/result left with its call id (and arguments) alone is written short
 * (ShortEvent), and short ones of a kind in a row as one (ShortRun); a tool message's content that
 * is one text block is written as its text. Not every output reads back exactly (a hook may shape
 * events its own way): batchOutputWire keeps it only when it does.
 */
export function packBatchOutput(once: BatchOutputWire): BatchOutputWire {
  const messages = once.messages as ModelMessage[];
  const byCall = toolMessages(messages);
  const tools = messages.filter((m): m is ToolMessage => m.role === 'tool');
  const results = (once.results ?? []).map((r) => {
    const m = byCall.get(r.callId);
    return m && r.name === m.toolName && r.result && sameJson(r.result, outcomeOf(m)) ? { callId: r.callId } : r;
  });
  const derived =
    results.length === tools.length && results.every((r, i) => !r.result && r.callId === tools[i].toolCallId);
  let previous: PackedEvent | undefined;
  // A content-once output's events are whole events, never short ones.
  const events = (once.events as PackedEvent[]).map((e): PackedEvent | ShortEvent => {
    const out = { type: e.type } as PackedEvent;
    if (previous?.seq === undefined || e.seq !== previous.seq + 1) out.seq = e.seq;
    if (e.time !== previous?.time) out.time = e.time;
    out.data = packEventData(e, once, byCall);
    previous = e;
    return shortened(out);
  });
  const { results: _results, contentIn: _contentIn, concludesTurn, cancelled, ...rest } = once;
  return {
    ...rest,
    ...(concludesTurn ? { concludesTurn } : {}),
    ...(cancelled ? { cancelled } : {}),
    packed: 4,
    messages: messages.map((m) => {
      if (m.role !== 'tool') return m;
      const { role: _role, ...packed }: PackedToolMessage = m;
      if (packed.isError === false) delete packed.isError;
      const [only, more] = m.content;
      if (!more && only?.type === 'text' && Object.keys(only).length === 2) packed.content = only.text;
      return packed;
    }),
    ...(derived ? {} : { results }),
    events: inRuns(events),
  };
}

/** The output's messages as the model reads them, from any form of the output, without expanding the rest. */
export function batchMessages(output: BatchOutputWire | BatchOutput): ModelMessage[] {
  return output.messages.map(unpackMessage);
}

function unpackMessage(m: ModelMessage | PackedToolMessage): ModelMessage {
  // A message with a tool call id is a tool message; a packed one leaves out its role.
  if (!('toolCallId' in m)) return m;
  // Packed 4 writes content that is one text block as its text.
  const t = (typeof m.content === 'string' ? { ...m, content: [{ type: 'text', text: m.content }] } : m) as ToolMessage;
  if (t.isError === undefined)
    return inOrder({ ...t, role: 'tool', isError: false }, ['role', 'toolCallId', 'toolName', 'content', 'isError']);
  return t.role === 'tool' ? t : { role: 'tool', ...(t as Omit<ToolMessage, 'role'>) };
}

/** A packed output back to the content-once form (compactBatchOutput's). */
function unpackBatchOutput(wire: BatchOutputWire): BatchOutputWire {
  const { packed: _packed, ...rest } = wire;
  const messages = wire.messages.map(unpackMessage);
  const byCall = toolMessages(messages);
  const tools = messages.filter((m): m is ToolMessage => m.role === 'tool');
  const told = (callId: string) => byCall.get(callId) ?? missingMessage(callId);
  const entries: NonNullable<BatchOutputWire['results']> = wire.results ?? tools.map((m) => ({ callId: m.toolCallId }));
  const results = entries.map((r) => {
    if (r.result) return r;
    const m = told(r.callId);
    return { callId: r.callId, name: m.toolName, result: outcomeOf(m) };
  });
  let seq = -1;
  let time = '';
  const events = wire.events.flatMap(outOfRun).map((short): SessionEvent => {
    const e = lengthened(short);
    seq = e.seq ?? seq + 1;
    time = e.time ?? time;
    // (packBatchOutput keeps only outputs whose events are these four keys: it checks the read-back.)
    return { type: e.type, seq, time, data: unpackEventData(e, wire, byCall) };
  });
  // Packed 4 leaves out what is always so of it (content in messages) and the flags when false.
  const flags: typeof rest = {
    ...rest,
    concludesTurn: !!rest.concludesTurn,
    cancelled: !!rest.cancelled,
    contentIn: 'messages',
  };
  return inOrder({ ...flags, messages, results, events }, OUTPUT_ORDER);
}

/** The batch's key order of its output (workflows/batch.ts). */
const OUTPUT_ORDER = [
  'sessionId',
  'turn',
  'step',
  'messages',
  'results',
  'events',
  'nextSeq',
  'concludesTurn',
  'cancelled',
  'state',
];

/**
 * The events whose data packs: the batch records them as turn, step, callId, name, then arguments
 * (tool/call) or content, isError, error?, meta?, card (tool/result). Unpacking builds them in that
 * order; expandBatchOutput puts a result's content back after name.
 */
const PACKED_TYPES = new Set(['tool/call', 'tool/result']);

function packEventData(e: PackedEvent, batch: { turn: number; step: number }, byCall: Map<string, ToolMessage>) {
  const d = e.data;
  const [first, second] = Object.keys(d);
  if (!PACKED_TYPES.has(e.type) || first !== 'turn' || second !== 'step') return d;
  if (d.turn !== batch.turn || d.step !== batch.step) return d;
  const { turn: _turn, step: _step, ...out } = d;
  const m = byCall.get(String(d.callId));
  if (!m) return out;
  if (out.name === m.toolName) delete out.name;
  if (e.type === 'tool/result') {
    if (sameJson(out.card, genericResultCard(m.toolName, m.isError))) delete out.card;
    if (out.isError === m.isError) delete out.isError;
    if (out.error !== undefined && sameJson(out.error, m.error)) delete out.error;
  }
  return out;
}

function unpackEventData(e: PackedEvent, batch: { turn: number; step: number }, byCall: Map<string, ToolMessage>) {
  const d = e.data;
  if (!PACKED_TYPES.has(e.type) || 'turn' in d) return d;
  const m = byCall.get(String(d.callId));
  const result = m && e.type === 'tool/result';
  // Built key by key in the batch's order (PACKED_TYPES), then the rest as packed: one object.
  const out: JsonObject = { turn: batch.turn, step: batch.step };
  if (d.callId !== undefined) out.callId = d.callId;
  const name = d.name ?? m?.toolName;
  if (name !== undefined) out.name = name;
  if (result) {
    out.isError = d.isError ?? m.isError;
    const error = d.error ?? (m.error as unknown as JsonObject | undefined);
    if (error !== undefined) out.error = error;
  }
  for (const k in d) if (!(k in out)) out[k] = d[k];
  // The generic card is the last key the batch records.
  if (result && out.card === undefined) out.card = genericResultCard(m.toolName, m.isError) as unknown as JsonObject;
  return out;
}

/** A tool/call or tool/result whose packed data is its call id (and arguments) alone, in short. */
function shortened(e: PackedEvent): PackedEvent | ShortEvent {
  const keys = Object.keys(e.data);
  const { callId } = e.data;
  if (typeof callId !== 'string' || keys[0] !== 'callId') return e;
  const at = placeOf(e);
  if (e.type === 'tool/result' && keys.length === 1) return { 'tool/result': callId, ...at };
  if (e.type === 'tool/call' && keys.length === 2 && keys[1] === 'arguments')
    return { 'tool/call': callId, ...at, arguments: e.data.arguments };
  return e;
}

function lengthened(e: PackedEvent | ShortEvent): PackedEvent {
  if ('type' in e) return e as PackedEvent;
  const at = placeOf(e);
  if ('tool/call' in e) return { type: 'tool/call', ...at, data: { callId: e['tool/call'], arguments: e.arguments } };
  return { type: 'tool/result', ...at, data: { callId: e['tool/result'] } };
}

/** Short events of one kind in a row as one, where each after the first follows it (no seq or time of its own). */
function inRuns(events: (PackedEvent | ShortEvent)[]): (PackedEvent | ShortEvent | ShortRun)[] {
  const out: (PackedEvent | ShortEvent | ShortRun)[] = [];
  for (const e of events) {
    const last = out[out.length - 1];
    const kind = shortKind(e);
    if (!kind || !last || shortKind(last) !== kind || e.seq !== undefined || e.time !== undefined) {
      out.push(e);
      continue;
    }
    // The run grows in place (shortened made every entry afresh): linear in the batch's calls.
    const run = last as Record<string, unknown>;
    const next = e as Record<string, unknown>;
    if (!Array.isArray(run[kind])) {
      run[kind] = [run[kind]];
      if (kind === 'tool/call') run.arguments = [run.arguments];
    }
    (run[kind] as unknown[]).push(next[kind]);
    if (kind === 'tool/call') (run.arguments as unknown[]).push(next.arguments);
  }
  return out;
}

function shortKind(e: PackedEvent | ShortEvent | ShortRun): 'tool/call' | 'tool/result' | undefined {
  return 'tool/call' in e ? 'tool/call' : 'tool/result' in e ? 'tool/result' : undefined;
}

/** A run's events one by one: the first at the run's seq and time, the rest after it. */
function outOfRun(e: PackedEvent | ShortEvent | ShortRun): (PackedEvent | ShortEvent)[] {
  if ('tool/call' in e && Array.isArray(e['tool/call'])) {
    const args = (e as { arguments: Json[] }).arguments;
    return e['tool/call'].map((id, i) => ({ 'tool/call': id, ...(i ? {} : placeOf(e)), arguments: args[i] }));
  }
  if ('tool/result' in e && Array.isArray(e['tool/result']))
    return e['tool/result'].map((id, i) => ({ 'tool/result': id, ...(i ? {} : placeOf(e)) }));
  return [e as PackedEvent | ShortEvent];
}

/** An event's `seq` and `time`, as far as its packed form carries them. */
function placeOf(e: { seq?: number; time?: string }): { seq?: number; time?: string } {
  return { ...(e.seq !== undefined ? { seq: e.seq } : {}), ...(e.time !== undefined ? { time: e.time } : {}) };
}

/** A result entry's outcome as its tool message tells it, in the batch's key order (content aside). */
function outcomeOf(m: ToolMessage): WireResult {
  return { isError: m.isError, ...(m.error ? { error: m.error } : {}) } as WireResult;
}

/** The object with `order`'s keys first, in that order, then the rest as they were. */
function inOrder<T extends object>(value: T, order: string[]): T {
  const out: Record<string, unknown> = {};
  const source = value as Record<string, unknown>;
  for (const k of order) if (k in source) out[k] = source[k];
  for (const k in source) if (!(k in out)) out[k] = source[k];
  return out as T;
}

function missingMessage(callId: string): never {
  throw new Error(
    `this batch output refers to the tool message of call ${JSON.stringify(callId)}, but has none; the output was altered after the batch returned it`,
  );
}

/** The same JSON; the same object (a result's content, shared) is known without serialising it. */
function sameJson(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
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

/** The activity a child batch uses to wait for a batch another caller started (activities/attach-batch.ts). */
export interface AttachActivities {
  sluiceAttachBatch(workflowId: string): Promise<BatchOutputWire>;
}
