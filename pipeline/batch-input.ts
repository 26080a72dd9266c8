import { jsonBytes, MAX_ARGUMENT_CHARS, MAX_CALLS_PER_BATCH, MAX_INPUT_BYTES } from './budget';
import { factsScopeProblem } from './facts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './json';
import type { BatchInput, Json, ToolCall } from './types';

/** A batch's model-side input: tool calls whose arguments may still be parsed objects. */
export type BatchRequest = Omit<BatchInput, 'calls'> & {
  calls: (Omit<ToolCall, 'arguments'> & { arguments: string | object })[];
};

/**
 * The checks every path runs before a batch starts (the client, a parent workflow's child
 * batch): arguments as the raw string, each within its limit, the whole input within Temporal's.
 */
export function prepareBatch(request: BatchRequest): { input: BatchInput } | { problem: string } {
  const input: BatchInput = {
    ...request,
    calls: (request.calls ?? []).map((c) =>
      withinArgumentLimit({
        id: c.id,
        name: c.name,
        arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
      }),
    ),
  };
  const problem = batchInputProblem(input);
  if (problem) return { problem: `malformed batch: ${problem}` };
  const bytes = jsonBytes(input as unknown as Json);
  if (bytes > MAX_INPUT_BYTES) {
    return {
      problem: `the batch is ${bytes} bytes, over the ${MAX_INPUT_BYTES}-byte limit for one batch (Temporal refuses payloads over 2 MB); no batch was started. Send its calls in several batches.`,
    };
  }
  return { input };
}

/**
 * Arguments too large for Temporal never leave the caller: the call goes with a preview, and the
 * batch gives it an INVALID_ARGS result the model can act on, while the other calls run.
 */
function withinArgumentLimit(call: ToolCall): ToolCall {
  if (typeof call.arguments !== 'string' || call.arguments.length <= MAX_ARGUMENT_CHARS) return call;
  return { ...call, arguments: call.arguments.slice(0, 1000), argumentsChars: call.arguments.length };
}

/** Why a batch cannot run at all, in words for whoever built it; undefined when it can. */
export function batchInputProblem(input: unknown): string | undefined {
  const b = input as Partial<BatchInput> | null;
  if (!b || typeof b !== 'object') return 'a batch must be an object {sessionId, turn, step, calls}';
  if (typeof b.sessionId !== 'string' || !b.sessionId) return 'sessionId must be a non-empty string';
  const sessionProblem = sessionIdProblem(b.sessionId);
  if (sessionProblem) return sessionProblem;
  for (const k of ['turn', 'step'] as const) {
    if (!Number.isInteger(b[k]) || (b[k] as number) < 0) return `${k} must be a whole number >= 0`;
  }
  if (b.startSeq !== undefined && (!Number.isInteger(b.startSeq) || b.startSeq < 0))
    return 'startSeq must be a whole number >= 0';
  if (b.state !== undefined && (b.state === null || typeof b.state !== 'object' || Array.isArray(b.state)))
    return 'state must be an object {namespace: {key: value}}';
  if (b.state !== undefined && nestsDeeperThan(b.state, MAX_JSON_DEPTH))
    return `state nests more than ${MAX_JSON_DEPTH} levels deep; keep session state flatter`;
  if (b.factsScope !== undefined && factsScopeProblem(b.factsScope)) return factsScopeProblem(b.factsScope);
  if (!Array.isArray(b.calls)) return 'calls must be an array of {id, name, arguments}';
  if (b.calls.length > MAX_CALLS_PER_BATCH)
    return `a batch has at most ${MAX_CALLS_PER_BATCH} calls (this one has ${b.calls.length}): split it into several batches (steps)`;
  const seen = new Set<string>();
  for (const [i, c] of b.calls.entries()) {
    if (!c || typeof c !== 'object') return `calls[${i}] must be an object {id, name, arguments}`;
    if (typeof c.id !== 'string' || !c.id) return `calls[${i}].id must be a non-empty string`;
    if (typeof c.name !== 'string' || !c.name) return `calls[${i}].name must be a non-empty string`;
    if (typeof c.arguments !== 'string') return `calls[${i}].arguments must be the raw JSON string the model sent`;
    if (c.argumentsChars !== undefined && (!Number.isInteger(c.argumentsChars) || c.argumentsChars < 0))
      return `calls[${i}].argumentsChars must be a whole number >= 0`;
    if (seen.has(c.id))
      return `calls[${i}].id ${JSON.stringify(c.id)} appears twice; call ids must be unique within a batch`;
    seen.add(c.id);
  }
  return undefined;
}

/** The longest session id, in characters: it is part of workflow ids, search attributes and file names. */
const MAX_SESSION_ID_CHARS = 200;

/** Why a session id cannot be used; undefined when it can. */
function sessionIdProblem(sessionId: string): string | undefined {
  if (sessionId.length > MAX_SESSION_ID_CHARS)
    return `sessionId is ${sessionId.length} characters, over the ${MAX_SESSION_ID_CHARS}-character limit; use a shorter id (e.g. a uuid)`;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for
  if (/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(sessionId))
    return 'sessionId contains control characters or line breaks; use printable characters (e.g. a uuid)';
  if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(sessionId))
    return 'sessionId contains a lone surrogate, which is not valid text; use printable characters (e.g. a uuid)';
  return undefined;
}
