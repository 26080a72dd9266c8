// Client tools (`runsOn: 'client'`): a tool whose body runs in a process attached to the session
// (`sluice chat`, an app's serveClientTools) instead of on a worker. What the workflow, the worker
// and the client share: the binding a session records, the task queue the client polls, what the
// client's activity takes and answers, and the text its key signs. Pure: no Node, no Temporal.
import { sha256Hex } from './digest';
import type { ClientBinding, JsonObject } from './types';

export type { ClientBinding };

/** What the body of a client tool is given (the client's activity input). */
export interface ClientCall {
  callId: string;
  name: string;
  args: JsonObject;
  sessionId: string;
  turn: number;
  step: number;
  idempotencyKey: string;
  parentCallId?: string;
}

/**
 * A call waiting for the user's device, as the batch's memo lists it so `sluice approvals` shows
 * it from the server alone: not an approval (nobody decides it), a wait that ends when the
 * session's client takes the call or `expiresAt` passes (then CLIENT_UNAVAILABLE).
 */
export interface ClientWait {
  callId: string;
  name: string;
  sessionId: string;
  workflowId: string;
  since: string;
  expiresAt: string;
}

/**
 * What the client answers: the body's outcome as JSON text, and its key's signature over that
 * text bound to the batch and the call (clientSignedText). The worker parses the text only after
 * the signature holds.
 */
export interface ClientAnswer {
  keyId: string;
  /** JSON of ClientOutcome. */
  outcome: string;
  /** base64url Ed25519 signature over clientSignedText(workflowId, callId, outcome). */
  signature: string;
}

/** The body's outcome as the client reports it. */
export interface ClientOutcome {
  /** A candidate {content, isError, value?, error?, meta?}, as a worker-side body's. */
  candidate: JsonObject;
  /** What the body added with ctx.addContext and ctx.emit. */
  contexts?: string[];
  events?: { type: string; data: JsonObject }[];
}

/** The activity a client registers on its task queue. */
export interface ClientToolActivities {
  runClientTool(call: ClientCall): Promise<ClientAnswer>;
}

/** The activity type's name, as the workflow schedules it and the client registers it. */
export const CLIENT_TOOL_ACTIVITY = 'runClientTool';

/**
 * The task queue the session's client polls. Its name is no secret (anyone who can read the
 * session's input can compute it): what makes an answer the client's is its signature.
 */
export function clientTaskQueue(sessionId: string, keyId: string): string {
  return `sluice-client/${sessionId}/${keyId}`;
}

/**
 * The text a client signs: a signature for one call of one batch is worthless for any other. A
 * JSON array, so no id's characters can move the line between its parts.
 */
export function clientSignedText(workflowId: string, callId: string, outcome: string): string {
  return JSON.stringify(['sluice client tool result v1', workflowId, callId, outcome]);
}

/** Ten minutes for a client to take a call, as long as an approval waits by default. */
export const DEFAULT_CLIENT_TIMEOUT_MS = 10 * 60_000;

/** A key's id: the first 32 hex digits of the sha-256 of its public `x` (base64url). */
export function clientKeyId(x: string): string {
  return sha256Hex(String(x)).slice(0, 32);
}
