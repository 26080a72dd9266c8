// The client activity of serveClientTools (client/client-tools.ts): runs a client tool's body as a
// worker runs one, with a heartbeat so a killed client is noticed, and signs what it returned with
// the session's client key. Loaded only when a client serves tools, so sluice/client loads no
// activity or worker runtime for an app that never does.
import { createPrivateKey, sign } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { CallInfo, ToolContext, ToolDefinition } from '../define/config';
import { ToolFailure } from '../define/tool-failure';
import { checkToolArgs } from '../define/tool-schema';
import {
  type ClientAnswer,
  type ClientBinding,
  type ClientCall,
  type ClientOutcome,
  clientSignedText,
} from '../pipeline/client-tools';
import { ErrorCodes, FailureTypes } from '../pipeline/errors';
import { errorCandidate } from '../pipeline/normalize';
import type { Candidate, JsonObject } from '../pipeline/types';

type ToCandidate = (value: unknown, toolName: string) => Candidate;

/** The `runClientTool` activity for one session's client: its tools, signed with its key. */
export function clientActivity(
  sessionId: string,
  // The key as client-tools.ts's ClientKey holds it (named by shape: that file loads this one).
  opts: { tools: ToolDefinition[]; key: { binding: ClientBinding; privateKey: JsonWebKey } },
  toCandidate: ToCandidate,
) {
  const tools = new Map<string, ToolDefinition>();
  for (const t of opts.tools) for (const n of [t.name, ...(t.aliases ?? [])]) tools.set(n, t);
  const privateKey = createPrivateKey({ key: opts.key.privateKey as never, format: 'jwk' });
  return async function runClientTool(call: ClientCall): Promise<ClientAnswer> {
    const activity = Context.current();
    const tool = tools.get(call.name);
    if (call.sessionId !== sessionId || !tool)
      throw ApplicationFailure.nonRetryable(
        `this client serves session ${sessionId} with ${[...tools.keys()].join(', ') || 'no tools'}; it cannot run ${call.name} of session ${call.sessionId}: serve the tool from the session's client`,
        FailureTypes.TOOL_BODY,
      );
    const outcome: Required<ClientOutcome> = { candidate: {}, contexts: [], events: [] };
    const candidate = await runBody(tool, call, activity, outcome, toCandidate);
    outcome.candidate = candidate as unknown as JsonObject;
    const text = JSON.stringify(outcome);
    const workflowId = activity.info.workflowExecution?.workflowId ?? '';
    return {
      keyId: opts.key.binding.keyId,
      outcome: text,
      signature: sign(null, Buffer.from(clientSignedText(workflowId, call.callId, text)), privateKey).toString(
        'base64url',
      ),
    };
  };
}

/**
 * The body, as a worker runs it: its schema's parse, a ToolFailure as its error result, any other
 * throw failing the attempt (retried by the tool's policy), and a heartbeat while it runs so a
 * killed client is noticed.
 */
async function runBody(
  tool: ToolDefinition,
  call: ClientCall,
  activity: Context,
  outcome: Required<ClientOutcome>,
  toCandidate: ToCandidate,
): Promise<Candidate> {
  const parsed = checkToolArgs(tool, call.args);
  if (!parsed.ok)
    return errorCandidate(`invalid arguments for ${tool.name}: ${parsed.issues}`, ErrorCodes.INVALID_ARGS);
  const every = Math.max(200, Math.floor((activity.info.heartbeatTimeoutMs ?? 30_000) / 3));
  const beat = setInterval(() => activity.heartbeat(), every);
  try {
    return toCandidate(await tool.execute(parsed.value, toolContext(call, activity, outcome)), tool.name);
  } catch (err) {
    if (err instanceof ToolFailure) return errorCandidate(err.message, err.code ?? ErrorCodes.TOOL_FAILED);
    if (activity.cancellationSignal.aborted) throw err;
    throw ApplicationFailure.create({
      message: `${tool.name} failed on the client: ${(err as Error)?.message ?? String(err)}`,
      type: FailureTypes.TOOL_BODY,
      nonRetryable: (err as { nonRetryable?: boolean })?.nonRetryable === true,
    });
  } finally {
    clearInterval(beat);
  }
}

function toolContext(call: ClientCall, activity: Context, outcome: Required<ClientOutcome>): ToolContext {
  const info: CallInfo = Object.freeze({
    id: call.callId,
    name: call.name,
    args: call.args,
    argsDigest: '',
    ...(call.parentCallId ? { parentCallId: call.parentCallId } : {}),
  });
  return {
    call: info,
    sessionId: call.sessionId,
    turn: call.turn,
    step: call.step,
    workflowId: activity.info.workflowExecution?.workflowId ?? '',
    idempotencyKey: call.idempotencyKey,
    state: Object.freeze({}),
    attempt: activity.info.attempt,
    toolNames: Object.freeze([call.name]),
    signal: activity.cancellationSignal,
    heartbeat: (d?: unknown) => activity.heartbeat(d),
    addContext: (text) => outcome.contexts.push(String(text)),
    emit: (type, data) => outcome.events.push({ type: String(type), data }),
    setState() {
      throw new Error(
        "a client tool's body cannot write session state: the session's state lives on the worker; return what it found as the tool's result instead",
      );
    },
  };
}
