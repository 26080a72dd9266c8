// Client tools, the client's side: the key a session's client makes when the session starts, and
// serveClientTools, which runs the bodies of the session's `runsOn: 'client'` tools in this process
// (an app, `sluice chat --client-tools`). It polls the session's client task queue with a Temporal
// worker that registers only the client activity, runs the body, and signs what the body returned
// with the key, so the session's worker accepts it as this client's and nobody else's.
import { generateKeyPairSync, createPrivateKey, sign } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { DataConverter } from '@temporalio/common';
import type { NativeConnection } from '@temporalio/worker';
import type { CallInfo, ToolContext, ToolDefinition } from '../define/config';
import { checkToolArgs } from '../define/tool-schema';
import {
  type ClientAnswer,
  type ClientBinding,
  type ClientCall,
  type ClientOutcome,
  clientKeyId,
  clientSignedText,
  clientTaskQueue,
} from '../pipeline/client-tools';
import { ErrorCodes, FailureTypes } from '../pipeline/errors';
import { errorCandidate } from '../pipeline/normalize';
import type { Candidate, JsonObject } from '../pipeline/types';
import { ToolFailure } from '../define/tool-failure';
import { InvalidInputError } from '../support/errors';
import type { SessionHandle } from './session';

/**
 * A session's client key: `binding` (its public half) goes into the session's start
 * (`batch: { client: key.binding }`), the private half stays with the client. Keep it as long as
 * the session lives: a client that comes back after a crash needs the same key to take its calls.
 */
export interface ClientKey {
  binding: ClientBinding;
  /** The private half, an Ed25519 JWK. */
  privateKey: JsonWebKey;
}

/** A new key for a session's client. */
export function createClientKey(): ClientKey {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const x = String(publicKey.export({ format: 'jwk' }).x);
  return {
    binding: { keyId: clientKeyId(x), publicKey: { kty: 'OKP', crv: 'Ed25519', x } },
    privateKey: privateKey.export({ format: 'jwk' }),
  };
}

/** Writes a key where only this user can read it. */
export function saveClientKey(file: string, key: ClientKey): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.writeFileSync(file, `${JSON.stringify(key)}\n`, { mode: 0o600 });
}

/** Reads a key saveClientKey wrote; a clear error for a missing or damaged one. */
export function loadClientKey(file: string): ClientKey {
  let key: ClientKey;
  try {
    key = JSON.parse(fs.readFileSync(file, 'utf8')) as ClientKey;
  } catch (err) {
    throw new InvalidInputError(
      `the session's client key could not be read from ${file} (${(err as Error).message}): only the client that started the session holds it, so its client tools can be served only from where it was saved`,
    );
  }
  if (typeof key?.binding?.publicKey?.x !== 'string' || key.binding.keyId !== clientKeyId(key.binding.publicKey.x))
    throw new InvalidInputError(`${file} is not a session client key (it has no binding whose keyId matches its key)`);
  return key;
}

export interface ServeClientToolsOptions {
  /** The bodies to run: tools with `runsOn: 'client'`, the same definitions as the worker's config. */
  tools: ToolDefinition[];
  key: ClientKey;
  /**
   * A worker connection (NativeConnection from @temporalio/worker); default the session's client's
   * own connection when it is one.
   */
  connection?: NativeConnection;
  /** The data converter the workers use (their payload codec), when they use one. */
  dataConverter?: DataConverter;
}

/** A client serving its session's client tools: `stop()` ends it (a body running then is let finish). */
export interface ClientToolServer {
  readonly taskQueue: string;
  /** Resolves when it has stopped; rejects when its worker failed. */
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs the session's client tools here until stopped: calls that wait for the user's device are
 * taken, including those that waited while no client was attached.
 */
export async function serveClientTools(
  session: Pick<SessionHandle, 'sessionId' | 'client'>,
  opts: ServeClientToolsOptions,
): Promise<ClientToolServer> {
  // Loaded here, so sluice/client loads no worker runtime until a client serves tools.
  const { NativeConnection, Worker } = await import('@temporalio/worker');
  const { toCandidate } = await import('../activities/execute');
  const connection = opts.connection ?? session.client.temporal.connection;
  if (!(connection instanceof NativeConnection))
    throw new InvalidInputError(
      "serveClientTools needs a worker connection: pass connection: await NativeConnection.connect({ address }) from @temporalio/worker (sluice/client's connect() makes a plain client connection, which cannot poll)",
    );
  for (const t of opts.tools)
    if (t.runsOn !== 'client')
      throw new InvalidInputError(`tool ${t.name} runs on the worker: serve only tools defined with runsOn: 'client'`);
  const taskQueue = clientTaskQueue(session.sessionId, opts.key.binding.keyId);
  const worker = await Worker.create({
    connection,
    namespace: session.client.temporal.options.namespace,
    taskQueue,
    activities: { runClientTool: clientActivity(session.sessionId, opts, toCandidate) },
    ...(opts.dataConverter ? { dataConverter: opts.dataConverter } : {}),
  });
  const done = worker.run();
  return {
    taskQueue,
    done,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}

type ToCandidate = (value: unknown, toolName: string) => Candidate;

function clientActivity(sessionId: string, opts: ServeClientToolsOptions, toCandidate: ToCandidate) {
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
