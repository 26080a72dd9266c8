// One interface for every model family. A session names its model by a string; the worker turns
// it into an adapter here. SDK packages load only when a model of theirs is used, so a worker
// needs only the SDKs its sessions use (they are optional peer dependencies).
import type { AgentMessage, ModelUsage, ToolSpec } from '../pipeline/session';
import type { DeltaSink } from './live';

export interface ModelRequest {
  sessionId: string;
  turn: number;
  step: number;
  /** The whole transcript, system prompt first when there is one. */
  messages: AgentMessage[];
  tools: ToolSpec[];
  /** Aborted when the step's activity is cancelled (an interrupt) or times out. */
  signal: AbortSignal;
  /**
   * Where a streaming adapter gives each piece of the answer as it arrives (text, tool-call
   * arguments, reasoning), for live followers; the reply it returns is still the whole answer.
   */
  onDelta?: DeltaSink;
}

export interface ModelReply {
  text: string;
  /** Tool calls as the model sent them; ids are checked by the session (missing or repeated ids). */
  calls: { id?: string | null; name: string; arguments: string }[];
  usage: ModelUsage;
  finishReason: string;
}

export interface ModelAdapter {
  /** Shown in events and errors, e.g. `openai:gpt-4.1`. */
  readonly id: string;
  step(request: ModelRequest): Promise<ModelReply>;
}

/**
 * Thrown by an adapter for a request the provider refused for good (bad request, bad key, no such
 * model): the step is not retried and the turn ends with the message.
 */
const MODEL_REFUSED_BRAND = Symbol.for('sluice.ModelRefusedError');

export class ModelRefusedError extends Error {
  readonly [MODEL_REFUSED_BRAND] = true;
  /**
   * Holds for a ModelRefusedError of any copy of Sluice: a config's model adapter may throw the one
   * of the copy it imports, and a refusal retried as a passing fault would be asked again and again.
   */
  static [Symbol.hasInstance](value: unknown): boolean {
    if (this !== ModelRefusedError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return (
      value !== null &&
      typeof value === 'object' &&
      (value as { [MODEL_REFUSED_BRAND]?: unknown })[MODEL_REFUSED_BRAND] === true
    );
  }
  constructor(message: string) {
    super(message);
    this.name = 'ModelRefusedError';
  }
}

/** An AI SDK language model (any provider package, or the SDK's mock models), duck-typed. */
export interface AISDKLanguageModel {
  readonly specificationVersion: string;
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: unknown): PromiseLike<unknown>;
}

export type ModelEntry = ModelAdapter | AISDKLanguageModel;

export function isAISDKModel(m: unknown): m is AISDKLanguageModel {
  return (
    !!m &&
    typeof m === 'object' &&
    typeof (m as AISDKLanguageModel).specificationVersion === 'string' &&
    typeof (m as AISDKLanguageModel).doGenerate === 'function'
  );
}

/** Loads an optional SDK, or says how to install it. */
export function loadOptional<T>(pkg: string, load: () => T): T {
  try {
    return load();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' && String((err as Error).message).includes(pkg))
      throw new ModelRefusedError(`this model needs the ${pkg} package on the worker: npm install ${pkg}`);
    throw err;
  }
}

/**
 * The provider's key, from the worker's environment, checked before the SDK is asked: a missing
 * key is a refusal (not retried), named, and placed where it must be set. The session's client
 * cannot give a key; the worker that runs the model step reads it.
 */
export function requireKey(provider: string, names: string[], env: NodeJS.ProcessEnv = process.env): void {
  if (names.some((n) => env[n]?.trim())) return;
  throw new ModelRefusedError(
    `${names[0]} is not set in the worker's environment: the ${provider} model step runs on the Sluice worker, which reads the key there (not the client's or the chat's environment). Set ${names.join(' or ')} where the worker runs (e.g. \`${names[0]}=... npx sluice worker\`) and restart it, or give the worker a configured client in its config's models.`,
  );
}

/** HTTP statuses a retry cannot fix: the step fails for good and the turn ends with the error. */
export function refusedFor(err: unknown): ModelRefusedError | undefined {
  const e = err as { status?: number; statusCode?: number; isRetryable?: boolean; message?: string };
  const status = e?.status ?? e?.statusCode;
  if (
    e?.isRetryable === false ||
    (typeof status === 'number' && status >= 400 && status < 500 && status !== 408 && status !== 409 && status !== 429)
  )
    return new ModelRefusedError(
      `the model refused the request${status ? ` (HTTP ${status})` : ''}: ${e?.message ?? String(err)}`,
    );
  return undefined;
}
