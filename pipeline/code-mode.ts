// Code Mode's vocabulary, shared by the run_code body (worker side) and the batch workflow that
// runs each sub-call through the pipeline.
import { canonicalJson } from './json';
import { renderValue } from './normalize';
import type { Json, ToolResult } from './types';

/** The reserved tool that runs a program; a program can call every other tool, never this one. */
export const RUN_CODE = 'run_code';

/** The batch's update a program's sub-call is (workflows/definitions.ts's codeCallUpdate), by name. */
export const CODE_CALL_UPDATE = 'sluice.codeCall';

/** Sub-calls one program may make. Each is a workflow update, and Temporal keeps ~2,000 per run. */
export const MAX_SUBCALLS_PER_PROGRAM = 500;
/** Sub-calls one batch may hold across all its run_code calls, under Temporal's update limit. */
export const MAX_SUBCALLS_PER_BATCH = 1_500;
/**
 * Argument bytes (as JSON text) all sub-calls of one batch may send together. Each sub-call's arguments are
 * recorded in two events of the batch output (one payload, at most 2 MB), so this keeps them to
 * half of it; results shrink to what is left (pipeline/budget.ts).
 */
export const MAX_SUBCALL_ARGUMENT_BYTES_PER_BATCH = 384 * 1024;

/**
 * One `await tools.<name>(args)` of a program, sent by the run_code body to its batch workflow.
 * `token` is the parent call's idempotency key (`<workflowId>/<parentCallId>`): it names the
 * run_code call the sub-call belongs to, and the sub-call's own key derives from it.
 */
export interface CodeCallRequest {
  token: string;
  parentCallId: string;
  /** 0-based, in the order the program submitted its calls. */
  index: number;
  name: string;
  /** The lossless JSON snapshot of the arguments, as a JSON string. */
  arguments: string;
  argsDigest: string;
}

/**
 * What the program sees of a sub-call's settled result. `batchCancelled`: the program must stop.
 * `name` and `argsDigest` are those of the sub-call recorded at this index: a re-run of the
 * program gets the recorded outcome by update id, and checks it asked for the same thing.
 */
export type CodeCallOutcome = {
  subCallId: string;
  name?: string;
  argsDigest?: string;
  batchCancelled?: true;
} /** The tool's structured value while the model-facing content is exactly its rendering, else that content's text. */ & (
  | { isError: false; value: Json }
  /** The error message only: what the program's promise rejects with. */
  | { isError: true; message: string }
);

export function subCallId(parentCallId: string, index: number): string {
  return `${parentCallId}:code:${index}`;
}

/**
 * Why a model's (top-level) call id cannot be used: ids shaped like a sub-call's belong to Code
 * Mode, so no top-level call can share an id (and with it a cached stage result, an idempotency key
 * or a progress entry) with a program's sub-call. Undefined when the id is fine.
 */
export function reservedCallIdProblem(id: string): string | undefined {
  if (!/:code:\d+$/.test(id)) return undefined;
  return `the call id ${JSON.stringify(id.slice(0, 200))} ends like a Code Mode sub-call id (":code:<n>"), which is reserved for the tool calls of run_code programs; the call did not run. Give the call an id without ":code:<n>" at the end.`;
}

/**
 * The update id of a sub-call. Temporal deduplicates updates by id, so a re-run of the program
 * after a crash attaches to the same sub-call. Update ids are stored in clear even when payloads
 * are encrypted, so the id names only the place (parent call, index), never the tool or a digest
 * of its arguments; the outcome carries the recorded name and digest, and the program's side
 * refuses one that is not what it asked for (nonDeterminism).
 */
export function codeCallUpdateId(req: Pick<CodeCallRequest, 'parentCallId' | 'index'>): string {
  return `sluice-code:${req.parentCallId}:${req.index}`;
}

/** Why a recorded outcome does not answer this request (a re-run asking for something else), or undefined. */
export function nonDeterminism(req: CodeCallRequest, out: { name?: string; argsDigest?: string }): string | undefined {
  if (out.name === undefined || (out.name === req.name && out.argsDigest === req.argsDigest)) return undefined;
  return (
    `the program of ${RUN_CODE} call ${req.parentCallId} is not deterministic: re-run after a restart, its sub-call #${req.index} is ` +
    `${req.name} (arguments ${req.argsDigest}), but the first run's sub-call #${req.index} was ${out.name} (arguments ${out.argsDigest}). ` +
    'A program must make the same tool calls in the same order every time it runs, deciding only on what tools returned; ' +
    'the recorded sub-calls were not run again. Fix the program and call run_code again.'
  );
}

/**
 * The program's view of a settled sub-call. The structured value is handed over only while the
 * content still is its rendering: once a post-execute handler, finalizeContent or truncation changed
 * what the model would see, the program gets that text instead, so no rewrite is bypassed.
 */
export function programOutcome(subCall: string, result: ToolResult, bodyValue: Json | undefined): CodeCallOutcome {
  const text = result.content.map((b) => (b.type === 'text' ? b.text : `[${b.type} ${b.mimeType}]`)).join('');
  if (result.isError) return { subCallId: subCall, isError: true, message: result.error?.message ?? text };
  const untouched =
    bodyValue !== undefined &&
    canonicalJson(result.content as unknown as Json) === canonicalJson(renderValue(bodyValue) as unknown as Json);
  return { subCallId: subCall, isError: false, value: untouched ? bodyValue : text };
}
