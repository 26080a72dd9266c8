// The public surface a user writes against in `sluice.config.ts`: tools and extension points.
import type { ApprovalLifecycle } from '../pipeline/lifecycle';
import { checkQuorum, type QuorumSettings } from '../pipeline/quorum';
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { ModelEntry } from '../agent/models';
import type { ResultStore } from '../stores/claim-check';
import type { EventSink } from '../stores/sink';
import { compileToolSchema, type JsonSchema, type ToolInputSchema } from './tool-schema';
import type { SessionRecord } from '../pipeline/facts';
import { MAX_LOCAL_BODY_TIMEOUT_MS } from '../pipeline/stages';
import type { PostVerdict } from '../pipeline/fold';
import type {
  Candidate,
  Card,
  ContentBlock,
  Json,
  JsonObject,
  PolicyBinding,
  PreDecision,
  RetryPolicyInput,
  SessionState,
  ToolApproval,
  ToolResult,
} from '../pipeline/types';

/** What every stage may know about the call it works on. Identity fields are frozen. */
export interface CallInfo {
  readonly id: string;
  readonly name: string;
  /** The frozen argument snapshot, identical for every stage. */
  readonly args: Readonly<JsonObject>;
  readonly argsDigest: string;
  readonly parentCallId?: string;
}

export interface StageContext {
  readonly call: CallInfo;
  /** The tool the call resolved to; `aliases` are the other names it answers to (hooks match on them). */
  readonly tool?: { readonly name: string; readonly description: string; readonly aliases: readonly string[] };
  readonly sessionId: string;
  readonly turn: number;
  readonly step: number;
  readonly workflowId: string;
  /** Stable across retries and restarts; use it to make side effects idempotent. */
  readonly idempotencyKey: string;
  /** The session's state as it stood when this stage was scheduled (read-only). */
  readonly state: Readonly<SessionState>;
  /** Pre-execute: the calls recorded before this one, in flight too, as the workflow holds them (session facts). */
  readonly record?: Readonly<SessionRecord>;
  /** Queues a context message, injected as `user/message` after the whole batch settles. */
  addContext(text: string): void;
  /** Records a session event (e.g. `hook/invoked`) in the batch's history. */
  emit(type: string, data: JsonObject): void;
}

export interface ToolContext extends StageContext {
  readonly attempt: number;
  /** The names of the tools this worker serves (Code Mode offers them to programs). */
  readonly toolNames: readonly string[];
  /** Aborted when the batch is cancelled or the body times out: stop, and clean up. */
  readonly signal: AbortSignal;
  heartbeat(details?: unknown): void;
  /** Writes session state that later batches of this session see (null deletes). */
  setState(namespace: string, key: string, value: Json | null): void;
}

export type PreExecuteHandler = (
  ctx: StageContext,
) => PreDecision | void | undefined | Promise<PreDecision | void | undefined>;
/** A guard denies with a reason string, or abstains. It can never allow. */
export type Guard = (ctx: StageContext) => string | void | undefined | Promise<string | void | undefined>;
export type ExecuteWrapper = (ctx: ToolContext, next: () => Promise<Candidate>) => Promise<Candidate>;
export interface PostExecuteContext extends StageContext {
  /** The candidate result so far (frozen); later handlers see earlier replacements. */
  readonly result: Readonly<Candidate>;
}
export type PostExecuteHandler = (
  ctx: PostExecuteContext,
) => PostVerdict | void | undefined | Promise<PostVerdict | void | undefined>;
export interface ResultNotice {
  readonly call: CallInfo;
  readonly sessionId: string;
  readonly result: Readonly<ToolResult>;
  readonly idempotencyKey: string;
}
/** Sees the frozen outcome; cannot change it; its throws are logged and contained. */
export type ResultObserver = (notice: ResultNotice) => void;

/**
 * An extension with a name (shown in events and errors), or a bare function. `longRunning` marks
 * one that may take more than a few seconds (a command hook, a remote policy service): the stage
 * it belongs to then runs as a regular activity instead of a local one.
 */
export type Named<F> =
  | F
  | {
      name: string;
      handler: F;
      longRunning?: boolean;
      /**
       * Whether the handler reads `ctx.record` for a call of this tool (session facts). When every
       * extension that judges a call of a facts-scope batch says no, the scope is not read for it
       * (the call is still written there, and counts). Unsaid: it may, and the scope is read.
       */
      readsFacts?: boolean | ((toolName: string) => boolean);
    };

/**
 * Judges a call again after a person decided, under the policy this worker reads now: the ask was
 * bound to `askedUnder` (hooks/policy.ts). A string denies the call; undefined lets the approval
 * stand. What it found goes on record with `ctx.emit`.
 */
export type PolicyRecheck = (ctx: StageContext, askedUnder: PolicyBinding) => Promise<string | undefined>;

/** A pre-execute extension whose asks are bound to a policy, and that judges them again (policyRules). */
export interface PolicyPreExecute {
  name: string;
  handler: PreExecuteHandler;
  longRunning?: boolean;
  recheck: PolicyRecheck;
  /** Whether a policy that may apply to the tool reads facts; with `askedUnder`, whether the recheck would. */
  readsFacts: (toolName: string, askedUnder?: PolicyBinding) => boolean;
}

export interface ToolDefinition<Args = any> {
  name: string;
  description: string;
  /** Validates the arguments: a zod schema, any Standard Schema, or a JSON Schema object. */
  input: ToolInputSchema;
  /**
   * The JSON Schema the model sees, when it should differ from what `input` produces (or `input`
   * is a Standard Schema that cannot produce one).
   */
  inputSchema?: JsonObject;
  /** Other names the tool answers to (e.g. Claude Code's `Read` for `read`). */
  aliases?: string[];
  execute(args: Args, ctx: ToolContext): unknown;
  /** Only exactly `true` lets the body overlap with others; anything else is a barrier. */
  isConcurrencySafe?(args: Args): boolean;
  /** The definition's own last, synchronous, content-only rewrite; called exactly once. */
  finalizeContent?(content: readonly ContentBlock[], info: { call: CallInfo; isError: boolean }): ContentBlock[];
  presentCall?(args: Args): Card;
  presentResult?(args: Args, result: Readonly<ToolResult>): Card;
  /**
   * Runs the body as a Temporal local activity, in the worker that runs the batch: no round trip
   * through the server, no activity events in history (one marker instead). Only for short bodies
   * that are safe to run again: a crash before the workflow task that records the result re-runs
   * it, no other worker can take it, and it has no heartbeat timeout (its timeout, at most 60 s,
   * default 10 s, is what notices a hang). See docs/tools.md, "Local bodies".
   */
  localBody?: boolean;
  /**
   * `'client'`: the body runs in a process attached to the session (`sluice chat --client-tools`,
   * an app's `serveClientTools`), on the person's own machine; every other stage runs on the
   * worker as for any tool. The worker's config lists the tool (its schema, approval, timeouts);
   * its `execute` there is never called. See docs/sessions.md, "Client tools".
   */
  runsOn?: 'worker' | 'client';
  /**
   * A client tool: how long a call waits for the session's client to take it (each attempt),
   * before it ends CLIENT_UNAVAILABLE without running. Default 10 minutes.
   */
  clientTimeoutMs?: number;
  /** Body timeout per attempt. */
  timeoutMs?: number;
  heartbeatTimeoutMs?: number;
  retry?: RetryPolicyInput;
  /**
   * The body must not run twice (it runs a command, sends, pays). Sluice never retries it, and
   * when an attempt is lost after it may have started (its worker was killed, its heartbeat
   * stopped) the call ends OUTCOME_UNKNOWN and an operator card asks a person to reconcile it:
   * done (with evidence), not done, or run again (docs/reliability.md). A body that makes its
   * effect idempotent with `ctx.idempotencyKey` should not set this: it is retried instead.
   */
  atMostOnce?: boolean;
  /**
   * `'ask'` asks a person before every call; `'deny'` refuses every call; `'auto'` (the default)
   * runs it unless a pre-execute handler asks or denies. A function decides per call, and may
   * wait (a throw asks). `'never'` is refused: see ToolApproval.
   */
  approval?: ToolApproval | ((args: Args) => ToolApproval | Promise<ToolApproval>);
  /**
   * Arguments that name files or folders, for `protectedPathArgs` (tools/protected-args.ts) to hold
   * to the protected paths, beside those it finds by schema `format` or by name.
   */
  pathArgs?: string[];
  /** Deny timeout for this tool's approvals; the batch default applies otherwise. */
  approvalTimeoutMs?: number;
  /**
   * Only verified approvers in one of these groups may decide this tool's asks (a signed identity,
   * see `approvers` in the config); any other decision is refused and recorded.
   */
  approverGroups?: string[];
  /**
   * A quorum: `{quorum: 2}` needs two distinct approvers, never the session's own user (the
   * two-person rule); `groups` counts only verified approvers in those groups; `rejectBy`
   * 'majority' denies only when most of the quorum rejects (docs/approvals.md, "Quorum").
   */
  approvers?: QuorumSettings;
  /** Assignee, reminder and escalation of this tool's asks (docs/approvals.md, "Lifecycle"). */
  approvalLifecycle?: ApprovalLifecycle;
}

/** Where approval notices go: a signed JSON webhook, or a chat incoming webhook ({"text"}). */
export type NotifierSettings =
  | { kind: 'webhook'; url: string /** HMAC-SHA256 key that signs notices. */; secret?: string; name?: string }
  | { kind: 'chat'; url: string; name?: string };

/**
 * How workers verify approvers' signed identities (docs/approvals.md, "Verified approvers"). A
 * client seals the approver's JWT to the public half of `sealKey`; the worker opens it and checks
 * it against `jwks`, `jwksUrl` (RS/ES/EdDSA tokens) or `sharedKey` (HS tokens).
 */
export interface ApproverSettings {
  /** The private seal key (an EC P-256 or X25519 JWK); publish its public half as SLUICE_SEAL_KEY. */
  sealKey: Record<string, unknown>;
  jwks?: { keys: Record<string, unknown>[] };
  jwksUrl?: string;
  /** An HMAC secret for HS256/384/512 tokens. */
  sharedKey?: string;
  issuer?: string;
  audience?: string;
  /** The claim that lists the approver's groups (default `groups`). */
  groupsClaim?: string;
  /**
   * The oldest token accepted, by its `iat` claim (then required): seconds, or a duration such
   * as `'15m'` or `'1h'`. Tokens always need `exp`; this bounds one whose provider gave it a long
   * life. Default: no bound beyond `exp`.
   */
  maxTokenAge?: number | string;
  /** Every approval needs a verified approver, whatever the tool. */
  require?: boolean;
  /**
   * Each approver token decides once: a token must carry a `jti`, and a second decision with the
   * same issuer and `jti` is refused (`token-used`), in any approval, batch or worker. Used ones
   * are recorded in the worker's store (the state folder, or PostgreSQL: share it between workers).
   * Default false: a token decides until it expires, as a signed-in inbox session needs.
   */
  oneTimeTokens?: boolean;
}

/** A tool as written by a user: everything but the schema, whose form decides the argument type. */
export type ToolDefinitionInput<Args, S> = Omit<ToolDefinition<Args>, 'input'> & { input: S };

/**
 * Defines a tool. `input` is a zod schema or any other Standard Schema (the body's argument type
 * is inferred from it), or a plain JSON Schema object, e.g. from an MCP server (then name the
 * argument type yourself: `defineTool<{ city: string }>({ ... })`). A schema Sluice cannot use is
 * refused here, not on the first call.
 */
export function defineTool<S extends StandardSchemaV1>(
  def: ToolDefinitionInput<StandardSchemaV1.InferOutput<S>, S>,
): ToolDefinition<StandardSchemaV1.InferOutput<S>>;
export function defineTool<Args = Record<string, any>>(
  def: ToolDefinitionInput<Args, JsonSchema>,
): ToolDefinition<Args>;
export function defineTool(def: ToolDefinitionInput<unknown, ToolInputSchema>): ToolDefinition {
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(def.name))
    throw new Error(`tool name ${JSON.stringify(def.name)} must be 1-64 letters, digits, _ . or -`);
  if (!def.description?.trim())
    throw new Error(`tool ${def.name} needs a description: the model reads it to decide when to call the tool`);
  if (typeof def.execute !== 'function') throw new Error(`tool ${def.name} needs an execute(args, ctx) function`);
  if (def.localBody && (def.timeoutMs ?? 0) > MAX_LOCAL_BODY_TIMEOUT_MS)
    throw new Error(
      `tool ${def.name} has localBody with a timeoutMs of ${def.timeoutMs}: a local body must finish within ${MAX_LOCAL_BODY_TIMEOUT_MS} ms (it holds the batch's workflow task); drop localBody for longer bodies`,
    );
  if (def.localBody && def.atMostOnce)
    throw new Error(
      `tool ${def.name} has both localBody and atMostOnce: a local body runs again when its worker dies before the result is recorded, so a body that must not run twice cannot be local; drop localBody`,
    );
  checkRunsOn(def);
  checkApproval(def.name, def.approval);
  if (def.approvers !== undefined) checkQuorum(`tool ${def.name}`, def.approvers);
  compileToolSchema(def.name, def.input, def.inputSchema);
  return Object.freeze({ ...def }) as ToolDefinition;
}

/** A client tool's own settings: where its body runs decides which other settings fit. */
function checkRunsOn(def: ToolDefinitionInput<unknown, ToolInputSchema>): void {
  if (def.runsOn !== undefined && def.runsOn !== 'worker' && def.runsOn !== 'client')
    throw new Error(
      `tool ${def.name} has runsOn: ${JSON.stringify(def.runsOn)}: use 'worker' (the default) or 'client'`,
    );
  if (def.runsOn === 'client' && def.localBody)
    throw new Error(
      `tool ${def.name} has runsOn: 'client' and localBody: a client tool's body runs on the session's client, never inside the worker; drop localBody`,
    );
  if (def.clientTimeoutMs !== undefined && def.runsOn !== 'client')
    throw new Error(
      `tool ${def.name} has clientTimeoutMs but its body runs on the worker: add runsOn: 'client' or drop it`,
    );
  if (def.clientTimeoutMs !== undefined && !(Number.isInteger(def.clientTimeoutMs) && def.clientTimeoutMs > 0))
    throw new Error(
      `tool ${def.name} has clientTimeoutMs ${JSON.stringify(def.clientTimeoutMs)}: give a whole number of milliseconds above 0`,
    );
}

/**
 * 0.2's `approval: 'never'` denied every call, while OpenAI's `require_approval: "never"` means
 * "never ask": read either way, a config would silently turn a deny into an allow or the reverse.
 * So the word is refused, and the error names the two meanings.
 */
function checkApproval(tool: string, approval: unknown): void {
  if (approval === undefined || typeof approval === 'function') return;
  if (approval === 'never')
    throw new Error(
      `tool ${tool} has approval: 'never', which Sluice no longer accepts: in Sluice 0.2 it denied every call, while OpenAI's require_approval "never" means never ask. Write approval: 'deny' to refuse every call (what 'never' did), or approval: 'auto' to run calls without asking (pre-execute handlers may still ask or deny).`,
    );
  if (approval !== 'ask' && approval !== 'deny' && approval !== 'auto')
    throw new Error(
      `tool ${tool} has approval: ${JSON.stringify(approval)}: use 'ask', 'deny', 'auto' or a function of the arguments returning one of them`,
    );
}

/**
 * Marks a ToolOutput with a key every copy of Sluice shares: a config that imports `sluice` from
 * another copy than the worker's (a linked checkout, a workspace, the CLI run from source) builds
 * its results with its own class, and `instanceof` against the worker's would call them plain
 * objects that cannot be recorded, after the body ran.
 */
const TOOL_OUTPUT_BRAND = Symbol.for('sluice.ToolOutput');

/** A body may return this to set content, meta or concludesTurn itself instead of a plain value. */
export class ToolOutput {
  readonly [TOOL_OUTPUT_BRAND] = true;
  /** `instanceof ToolOutput` holds for a ToolOutput of any copy of Sluice. */
  static [Symbol.hasInstance](value: unknown): boolean {
    // A subclass keeps the ordinary check.
    return this === ToolOutput ? isToolOutput(value) : Function.prototype[Symbol.hasInstance].call(this, value);
  }
  constructor(
    readonly fields: {
      content?: ContentBlock[];
      value?: Json;
      isError?: boolean;
      meta?: JsonObject;
      concludesTurn?: true;
      error?: { message: string; code?: string };
    },
  ) {}
}
export const toolOutput = (fields: ToolOutput['fields']) => new ToolOutput(fields);

/** True for a ToolOutput built by any copy of Sluice (see TOOL_OUTPUT_BRAND). */
export function isToolOutput(value: unknown): value is ToolOutput {
  if (value === null || typeof value !== 'object') return false;
  const v = value as { [TOOL_OUTPUT_BRAND]?: unknown; fields?: unknown };
  return v[TOOL_OUTPUT_BRAND] === true && v.fields !== null && typeof v.fields === 'object';
}

/** Where links point and how they are signed (worker config `approvalLinks`, the inbox's `linkKey`). */
export interface ApprovalLinkSettings {
  /** The inbox as approvers reach it, e.g. `https://approvals.example.com` (links are `<baseUrl>/link/<token>`). */
  baseUrl: string;
  /** The HMAC key, at least 32 characters; default SLUICE_LINK_KEY. The inbox needs the same. */
  key?: string;
  /** How long a link lives, at most until the approval's deny timeout. Default: until then. */
  ttlMs?: number;
}

export interface SluiceConfig {
  tools: ToolDefinition[];
  /** Approval notices (asked, reminder, escalated, reassigned), sent by an activity. */
  notifiers?: NotifierSettings[];
  /**
   * One-time approval links in notices: `{ baseUrl: 'https://inbox.example.com' }` (the inbox as
   * approvers reach it) and the key in SLUICE_LINK_KEY, which the inbox needs too
   * (docs/approvals.md, "One-time approval links").
   */
  approvalLinks?: ApprovalLinkSettings;
  /** Verified approvers: how a worker checks a decision's signed identity. */
  approvers?: ApproverSettings;
  /** Named<PreExecuteHandler> includes a PolicyPreExecute (policyRules), found by its `recheck`. */
  preExecute?: Named<PreExecuteHandler>[];
  guards?: Named<Guard>[];
  execute?: Named<ExecuteWrapper>[];
  postExecute?: Named<PostExecuteHandler>[];
  onResult?: Named<ResultObserver>[];
  /** Where session events go; default: one JSONL file per session in the state folder. */
  sink?: EventSink;
  /**
   * Bound on a result's text (default 64 K characters). A bigger result is stored aside in the
   * result store and the model gets a preview with a note; a batch of many calls may bound each
   * result tighter, to keep within Temporal's payload and history limits.
   */
  maxResultChars?: number;
  /**
   * Pre-execute, guards and settle (post-execute, finalizeContent, tools/result) run as local
   * activities, in the worker that runs the batch with no round trip through the server, unless
   * one of their extensions is `longRunning`. `false` makes every stage a regular activity.
   * Tool bodies are always regular activities. Default true.
   */
  localStages?: boolean;
  /** Where results over the bound are stored; default: files in `<state folder>/results/`. */
  resultStore?: ResultStore;
  /**
   * How long stored results are kept: a duration (`'30d'`, `'12h'`, `'90m'`) or milliseconds;
   * `false` keeps them forever. Each worker deletes older ones at start and every hour; `sluice
   * results prune` does it by hand. Default 30 days. At least an hour: a batch waiting for a
   * person still reads its body's stored result when it settles.
   */
  resultRetention?: string | number | false;
  /**
   * Models sessions may name (agent/models.ts): adapters, or AI SDK language models. A session may
   * also name `openai:<model>`, `openai-responses:<model>`, `anthropic:<model>` or `script:<file>`.
   */
  models?: Record<string, ModelEntry>;
}

export function defineConfig(config: SluiceConfig): SluiceConfig {
  if (config.resultRetention !== undefined && config.resultRetention !== false) parseRetention(config.resultRetention);
  const names = new Map<string, string>();
  for (const tool of config.tools) {
    if (typeof tool?.execute !== 'function') throw new Error(`tool ${tool?.name} needs an execute(args, ctx) function`);
    checkApproval(tool.name, tool.approval);
    compileToolSchema(tool.name, tool.input, tool.inputSchema);
    for (const n of [tool.name, ...(tool.aliases ?? [])]) {
      if (names.has(n))
        throw new Error(
          `two tools answer to ${JSON.stringify(n)} (${names.get(n)} and ${tool.name}); names and aliases must be unique`,
        );
      names.set(n, tool.name);
    }
  }
  return config;
}

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };
/** The shortest retention: a batch may wait this long between storing a body's result and settling. */
export const MIN_RESULT_RETENTION_MS = 3_600_000;
export const DEFAULT_RESULT_RETENTION_MS = 30 * 86_400_000;

/** A retention setting in milliseconds; throws what to write instead for one Sluice cannot use. */
export function parseRetention(setting: string | number): number {
  const ms =
    typeof setting === 'number'
      ? setting
      : /^\s*(\d+)\s*([mhd])\s*$/i.test(setting)
        ? Number(/^\s*(\d+)/.exec(setting)![1]) * UNITS[/([mhd])\s*$/i.exec(setting)![1].toLowerCase()]
        : Number.NaN;
  if (!Number.isFinite(ms) || ms < MIN_RESULT_RETENTION_MS)
    throw new Error(
      `result retention ${JSON.stringify(setting)} is not usable: give a duration of at least an hour such as '30d', '12h' or '90m' (or milliseconds), or false to keep stored results forever`,
    );
  return ms;
}

/** What a model needs to know about one tool. */
export interface ToolSchema {
  name: string;
  description: string;
  inputSchema: JsonObject;
}

/** The JSON Schema a model needs for each tool, from its input schema in whichever form. */
export function toolSchemas(config: Pick<SluiceConfig, 'tools'>): ToolSchema[] {
  return config.tools.map((t) => ({
    name: t.name,
    description: t.description,
    inputSchema: compileToolSchema(t.name, t.input, t.inputSchema).jsonSchema(),
  }));
}

/**
 * The model-facing half of a config as plain JSON: write it once where the worker's tools are
 * defined (`npx sluice manifest > tools.json`), and an agent process reads the schemas from it
 * without importing any tool body or the worker's dependencies.
 */
export interface ToolManifest {
  sluiceToolManifest: 1;
  tools: (ToolSchema & { aliases?: string[] })[];
}

export function toolManifest(config: Pick<SluiceConfig, 'tools'>): ToolManifest {
  return {
    sluiceToolManifest: 1,
    tools: toolSchemas(config).map((s, i) => {
      const aliases = config.tools[i].aliases;
      return aliases?.length ? { ...s, aliases: [...aliases] } : s;
    }),
  };
}

/** Reads a manifest back (from its JSON text or the parsed value), refusing anything else. */
export function parseToolManifest(json: string | unknown): ToolManifest {
  const m = (typeof json === 'string' ? JSON.parse(json) : json) as Partial<ToolManifest> | null;
  if (m?.sluiceToolManifest !== 1 || !Array.isArray(m.tools))
    throw new Error(
      'not a Sluice tool manifest (expected { sluiceToolManifest: 1, tools: [...] }); write one with `npx sluice manifest`',
    );
  for (const t of m.tools)
    if (typeof t?.name !== 'string' || typeof t.description !== 'string' || typeof t.inputSchema !== 'object')
      throw new Error(`tool manifest entry ${JSON.stringify(t?.name)} needs name, description and inputSchema`);
  return m as ToolManifest;
}

export function nameOf(ext: Named<(...args: never[]) => unknown>, fallback: string): string {
  return ext.name || fallback;
}

export function isLongRunning(ext: Named<unknown>): boolean {
  return typeof ext === 'object' && ext !== null && (ext as { longRunning?: boolean }).longRunning === true;
}

/** The policy extension (policyRules) among the pre-execute extensions, found by its `recheck`, if one is configured. */
export function policyOf(exts: readonly Named<PreExecuteHandler>[] = []): PolicyPreExecute | undefined {
  for (const e of exts)
    if (typeof e === 'object' && e !== null && typeof (e as PolicyPreExecute).recheck === 'function')
      return e as PolicyPreExecute;
  return undefined;
}

/** The policy re-check among the pre-execute extensions, if one is configured. */
export function policyRecheckOf(exts: readonly Named<PreExecuteHandler>[] = []): PolicyRecheck | undefined {
  return policyOf(exts)?.recheck;
}

/** Whether any of `exts` may read facts for a call of `toolName`: one that does not say, may. */
export function mayReadFacts(exts: readonly Named<unknown>[] = [], toolName: string): boolean {
  return exts.some((e) => {
    const says = typeof e === 'object' && e !== null ? (e as { readsFacts?: unknown }).readsFacts : undefined;
    return typeof says === 'function' ? says(toolName) !== false : says !== false;
  });
}

export function handlerOf<F>(ext: Named<F>): F {
  return typeof ext === 'function' ? ext : (ext as { handler: F }).handler;
}
