// Temporal's budgets, and how a batch shares them between its calls. Pure and deterministic, so
// the workflow and the worker compute the same numbers.
//
// The batch output is ONE payload (Temporal refuses payloads over 2 MiB: the workflow task would
// fail forever). It carries each result's content once, in its tool message (codec/output.ts;
// batches from before that carried it three times: results, messages and the tool/result event),
// the structured value at most once more, and each call's arguments once (the tool/call event). Every activity result
// also lands in history (hard limit 50 MB, warnings from 10 MB). So each result gets a share of
// what is left, and whatever does not fit inline is stored aside with a note (stores/claim-check.ts).
import type { BatchOutput, Json, ToolCall, ToolResult } from './types';

/** Temporal refuses a payload above this. */
export const PAYLOAD_LIMIT_BYTES = 2 * 1024 * 1024;
/** What the batch output may reach: the limit less room for the envelope and the codec. */
const OUTPUT_TARGET_BYTES = 1536 * 1024;
/** What a batch's history may reach from results: far below the 50 MB limit and 10 MB warning. */
export const HISTORY_TARGET_BYTES = 8 * 1024 * 1024;
/**
 * A tool body's result bigger than this, or than its batch share, crosses history as a stored
 * preview (the settle reads it back whole). The same as the default bound on a final result
 * (pipeline/normalize.ts): a bigger body result is rarely kept whole. A body's input carries its
 * share only when the share is smaller.
 */
export const BODY_INLINE_BYTES = 64 * 1024;
/** The smallest share: room for the note that says where the full result is, and its meta. */
export const MIN_SHARE_BYTES = 1024;
/** One call's raw arguments above this never reach the workflow: the call gets INVALID_ARGS. */
export const MAX_ARGUMENT_CHARS = 256 * 1024;
/** A whole batch input above this is refused by the client: split the batch. */
export const MAX_INPUT_BYTES = 1024 * 1024;
/** At most this many calls per batch: each costs about 17 history events (limit 51,200). */
export const MAX_CALLS_PER_BATCH = 1000;
/** Output bytes of a call not yet settled, besides its arguments: event envelopes, ids, names. */
const PER_CALL_OVERHEAD_BYTES = 600;
/** JSON bytes of an event besides its data: type, seq, time. */
export const EVENT_ENVELOPE_BYTES = 80;

/** UTF-8 bytes of a string as JSON would write it (quotes and escapes included). */
export function jsonStringBytes(s: string): number {
  let n = 2;
  for (let i = 0; i < s.length; i++) {
    const bytes = charBytes(s, i);
    n += bytes;
    if (bytes === 4) i++; // a surrogate pair: two units
  }
  return n;
}

/** The longest prefix of `s` whose JSON form fits in `maxBytes`, never splitting a surrogate pair. */
export function sliceToJsonBytes(s: string, maxBytes: number): string {
  let n = 2;
  for (let i = 0; i < s.length; i++) {
    const bytes = charBytes(s, i);
    if (n + bytes > maxBytes) return s.slice(0, i);
    n += bytes;
    if (bytes === 4) i++;
  }
  return s;
}

/**
 * JSON bytes of the character at i: escapes are 2 or 6 bytes, a lone surrogate becomes \uXXXX, and
 * 4 bytes means a surrogate pair (the only character that takes two units). A number, not an
 * object: every call's arguments and result pass through here, in the workflow too.
 */
function charBytes(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c >= 0x20 && c < 0x80) return c === 0x22 || c === 0x5c ? 2 : 1;
  if (c < 0x20) return c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6;
  if (c < 0x800) return 2;
  if (c >= 0xd800 && c < 0xdc00) {
    const d = s.charCodeAt(i + 1);
    return d >= 0xdc00 && d < 0xe000 ? 4 : 6;
  }
  if (c >= 0xdc00 && c < 0xe000) return 6;
  return 3;
}

/** UTF-8 bytes of a JSON value's JSON text. */
export function jsonBytes(value: Json | undefined): number {
  if (value === undefined) return 0;
  if (value === null) return 4;
  if (typeof value === 'string') return jsonStringBytes(value);
  if (typeof value !== 'object') return String(value).length;
  if (Array.isArray(value)) return 2 + value.reduce<number>((n, v, i) => n + jsonBytes(v) + (i ? 1 : 0), 0);
  let n = 2;
  let first = true;
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined) continue;
    n += jsonStringBytes(k) + 1 + jsonBytes(v) + (first ? 0 : 1);
    first = false;
  }
  return n;
}

/** The bytes of a result that reach the model and the output: content, error, meta, contexts. */
export function resultBytes(r: ToolResult): number {
  return jsonBytes(r as unknown as Json);
}

/**
 * The batch's running account. `share()` is what the next result may take inline: an even split
 * of what is left among the calls still to settle, bounded by the output and history targets.
 * What is left is measured, not guessed: the events recorded so far (tool/call arguments, hook
 * events, earlier tool/results), plus the copies of committed results in `results` and `messages`,
 * plus what the calls still to come will need at least.
 */
export class InlineBudget {
  private readonly pending: number[];
  private committedBytes = 0;
  private settled = 0;

  constructor(calls: readonly ToolCall[]) {
    this.pending = calls.map((c) => jsonStringBytes(c.arguments) + PER_CALL_OVERHEAD_BYTES);
  }

  /** Bytes the next result may take inline, given the history size and the event bytes so far. */
  share(historySizeBytes: number, eventBytes: number): number {
    const left = Math.max(1, this.pending.length - this.settled);
    const future = this.pending.slice(this.settled).reduce((a, b) => a + b, 0);
    // The output carries each result's content once (codec/output.ts): a result's tool/result
    // event is counted whole in the event bytes (the sink gets it whole) and the result once more
    // for its message (content, value, error), so two shares per result to come, and nothing is
    // counted short. A result lands in history about eight times over (body result, settle input
    // and output, sink marker, the final output).
    const copies = 2;
    const outputLeft = OUTPUT_TARGET_BYTES - eventBytes - (copies - 1) * this.committedBytes - future;
    const byOutput = Math.floor(outputLeft / copies / left);
    const byHistory = Math.floor((HISTORY_TARGET_BYTES - historySizeBytes) / 8 / left);
    return Math.max(MIN_SHARE_BYTES, Math.min(byOutput, byHistory));
  }

  /** Accounts a committed result; its tool/result event is counted with the other events. */
  commit(result: ToolResult): void {
    this.committedBytes += resultBytes(result);
    this.settled++;
  }
}

/** Why a batch output (as built, or in its wire form) cannot be returned as one payload; undefined when it can. */
export function outputProblem(output: BatchOutput | object): string | undefined {
  const bytes = jsonBytes(output as unknown as Json);
  if (bytes <= PAYLOAD_LIMIT_BYTES - 64 * 1024) return undefined;
  return `the batch output is ${bytes} bytes, over Temporal's ${PAYLOAD_LIMIT_BYTES}-byte payload limit, so it cannot be returned; every result is in the session log and this workflow's history. Send fewer calls (or smaller arguments) per batch.`;
}
