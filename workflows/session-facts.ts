// The workflow side of session facts (pipeline/facts.ts): which calls a call's policy looks back
// on, taken from the durable record only — the batch's input (the calls before this one, still in
// flight) and the session's earlier batches as the session workflow carries them across
// continue-as-new — never from a worker's memory. The record goes to the pre-execute stage in its
// input, so the activity's recorded input is what a replay and an auditor read.
import { expandBatchOutput, type BatchOutputWire } from '../codec/output';
import { argsObject, type CallRecord, callRecords, RECORD_KEEP_MS, type SessionRecord } from '../pipeline/facts';
import type { BatchInput, ToolCall } from '../pipeline/types';

/** How many calls a session keeps for facts at most (the oldest go first); how far back: RECORD_KEEP_MS. */
export const RECORD_KEEP_CALLS = 10_000;

/**
 * The calls recorded before `call`: the session's earlier batches, then the batch's calls before
 * it in model order (a sub-call: before its root call), each in flight as far as this batch knows.
 * The record says how far back it reaches: the session when the batch came from a session that
 * carries its calls (`input.reach`), else the batch alone, where a policy reading a fact denies.
 * Undefined when a batch-only record holds nothing: no record reaches nothing, and fails as closed.
 * A batch that names a facts scope gets the scope's calls in its pre-execute stage (activities/facts-scope.ts).
 * `now` is the workflow's clock; a replay of a recorded batch passes the time the call was recorded.
 */
export function recordFor(
  input: BatchInput,
  call: ToolCall,
  rootCallId?: string,
  now = Date.now(),
): SessionRecord | undefined {
  const upTo = input.calls.findIndex((c) => c.id === (rootCallId ?? call.id));
  const siblings = input.calls.slice(0, Math.max(0, upTo)).map((c) => inFlight(c, input.turn, now));
  // A batch of a facts scope reads the earlier calls from the fact store, where the session's earlier
  // batches wrote theirs too: carried ones as well would count twice.
  const calls = [...(input.factsScope === undefined ? (input.earlier ?? []) : []), ...siblings];
  const reach = input.reach ?? 'batch';
  // A scope's batch always has a record: its time is what the pre-execute stage reads the scope at.
  return calls.length || reach === 'session' || input.factsScope !== undefined ? { calls, now, reach } : undefined;
}

function inFlight(c: ToolCall, turn: number, now: number): CallRecord {
  return { callId: c.id, tool: c.name, args: argsObject(c.arguments), at: now, turn, outcome: 'pending' };
}

/** The session's carried calls after a batch: its calls appended, the old ones and the overflow dropped. */
export function carriedCalls(carried: readonly CallRecord[] | undefined, output: BatchOutputWire): CallRecord[] {
  const now = Date.now();
  const done = callRecords(expandBatchOutput(output).events);
  const ids = new Set(done.map((r) => r.callId));
  const kept = [...(carried ?? []).filter((r) => !ids.has(r.callId)), ...done].filter(
    (r) => r.at > now - RECORD_KEEP_MS,
  );
  return kept.slice(-RECORD_KEEP_CALLS);
}
