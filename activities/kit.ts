// What every stage activity works with: the tool registry, the result store, and a collector per
// extension run that gathers the contexts and events it adds. Built once per worker from its config.
import { deepFreeze, snapshotJson } from '../pipeline/json';
import { DEFAULT_MAX_RESULT_CHARS } from '../pipeline/normalize';
import { ErrorCodes } from '../pipeline/errors';
import { checkQuorum } from '../pipeline/quorum';
import {
  BODY_DEFAULTS,
  type CallRef,
  DEFAULT_LOCAL_BODY_TIMEOUT_MS,
  type Gate,
  MAX_LOCAL_BODY_TIMEOUT_MS,
  type ToolProfile,
} from '../pipeline/stages';
import type { WireCallRef } from '../codec/stages';
import { isKeyedDigest } from '../pipeline/digest';
import { digestKeyFromEnv, keyedArgsDigest } from '../codec/args-digest';
import type { ApprovalPolicy, Card, EventDraft, JsonObject, UserMessage } from '../pipeline/types';
import type { ResultStore } from '../stores/claim-check';
import type { FactStore } from '../stores/fact-store';
import type { CallInfo, SluiceConfig, StageContext, ToolDefinition } from '../define/config';
import { checkToolArgs } from '../define/tool-schema';
import { DEFAULT_CLIENT_TIMEOUT_MS } from '../pipeline/client-tools';

export interface StageKit {
  config: SluiceConfig;
  store?: ResultStore;
  /** Where the calls of a facts scope are kept (stores/fact-store.ts); none: a scope cannot be read. */
  facts?: FactStore;
  toolNames: readonly string[];
  tool(name: string): ToolDefinition | undefined;
  /**
   * A reference as it came over the wire, with the keyed digest every stage sees: the one the
   * workflow sent (a person, a grant or a reconcile card may be bound to it), else this worker's
   * own keying of the arguments. Workers of a namespace share the key (docs/approvals.md), so
   * that is the digest the preflight computed.
   */
  keyed(ref: WireCallRef): CallRef;
  /** The bounds a call's result must fit in the model's view and in its share of the batch. */
  bounds(ref: CallRef): { maxChars: number; maxBytes: number };
  collector(ref: CallRef, source: string): Collector;
}

/** The context an extension sees, and what it adds: contexts for the model, events for the record. */
export interface Collector {
  ctx: StageContext;
  contexts: UserMessage[];
  events: EventDraft[];
  /** Who is running now: the source of the contexts added from here on. */
  withSource(who: string): void;
}

export function stageKit(config: SluiceConfig, deps: { resultStore?: ResultStore; facts?: FactStore } = {}): StageKit {
  const registry = new Map<string, ToolDefinition>();
  for (const t of config.tools) for (const n of [t.name, ...(t.aliases ?? [])]) registry.set(n, t);
  const digestKey = digestKeyFromEnv();
  return {
    config,
    keyed: (ref) =>
      isKeyedDigest(ref.argsDigest) ? (ref as CallRef) : { ...ref, argsDigest: keyedArgsDigest(ref.args, digestKey) },
    store: config.resultStore ?? deps.resultStore,
    ...(deps.facts ? { facts: deps.facts } : {}),
    toolNames: Object.freeze([...new Set(config.tools.map((t) => t.name))]),
    tool: (name) => registry.get(name),
    bounds: (ref) => ({
      maxChars: config.maxResultChars ?? DEFAULT_MAX_RESULT_CHARS,
      maxBytes: ref.inlineBytes ?? Infinity,
    }),
    collector(ref, source) {
      const contexts: UserMessage[] = [];
      const events: EventDraft[] = [];
      const tool = registry.get(ref.name);
      // Made when first read: it copies and freezes the arguments and the session state, and a
      // stage with no extension to run (no pre-execute handler, guard or post-execute) never reads it.
      const makeCtx = (): StageContext => ({
        call: callInfo(ref),
        tool: tool
          ? Object.freeze({
              name: tool.name,
              description: tool.description,
              aliases: Object.freeze([...(tool.aliases ?? [])]),
            })
          : undefined,
        sessionId: ref.sessionId,
        turn: ref.turn,
        step: ref.step,
        workflowId: ref.workflowId,
        idempotencyKey: ref.idempotencyKey,
        state: deepFreeze(structuredClone(ref.state)),
        ...(ref.record ? { record: deepFreeze(structuredClone(ref.record)) } : {}),
        addContext(text) {
          contexts.push({ role: 'user', content: String(text), source });
        },
        emit(type, data) {
          events.push({ type: String(type), data: snapshotJson(data, `${type} event`) as JsonObject });
        },
      });
      let ctx: StageContext | undefined;
      return {
        get ctx() {
          ctx ??= makeCtx();
          return ctx;
        },
        contexts,
        events,
        withSource(who) {
          source = who;
        },
      };
    },
  };
}

export function callInfo(ref: CallRef): CallInfo {
  return Object.freeze({
    id: ref.callId,
    name: ref.name,
    args: deepFreeze(structuredClone(ref.args)),
    argsDigest: ref.argsDigest,
    ...(ref.parentCallId ? { parentCallId: ref.parentCallId } : {}),
  });
}

/** Parses the frozen args with the tool's schema: a denial, not a failure, when they don't fit. */
export function parseArgs(
  tool: ToolDefinition,
  ref: CallRef,
): { ok: true; args: unknown } | { ok: false; gate: Extract<Gate, { kind: 'denied' }> } {
  const parsed = checkToolArgs(tool, ref.args);
  if (parsed.ok) return { ok: true, args: parsed.value };
  const issues = parsed.issues;
  return {
    ok: false,
    gate: {
      kind: 'denied',
      code: ErrorCodes.INVALID_ARGS,
      message: `invalid arguments for ${tool.name}: ${issues}. Fix the arguments to match the tool's input schema and call it again.`,
    },
  };
}

/** What the workflow needs to know of a tool for these arguments; a throwing predicate fails closed. */
export async function profileOf(
  tool: ToolDefinition,
  args: unknown,
  requireIdentity = false,
  notify = false,
): Promise<ToolProfile> {
  let concurrencySafe = false;
  try {
    concurrencySafe = tool.isConcurrencySafe?.(args) === true;
  } catch {
    concurrencySafe = false;
  }
  let approval: ApprovalPolicy;
  try {
    // A policy may need to wait (permission rules wait for their shell parser to load).
    const chosen: string =
      typeof tool.approval === 'function'
        ? await tool.approval(args)
        : // A quorum of approvers means the tool asks, unless it says otherwise.
          (tool.approval ?? (tool.approvers ? 'ask' : 'auto'));
    // `deny` is recorded as `never`, its name in every history so far. A function that returns
    // 0.2's `never` (defineTool cannot see it) keeps 0.2's meaning, deny; anything else asks.
    approval = chosen === 'deny' || chosen === 'never' ? 'never' : chosen === 'auto' ? 'auto' : 'ask';
  } catch {
    approval = 'ask'; // fail closed
  }
  return {
    concurrencySafe,
    timeoutMs:
      tool.timeoutMs !== undefined && tool.localBody
        ? Math.min(tool.timeoutMs, MAX_LOCAL_BODY_TIMEOUT_MS)
        : (tool.timeoutMs ?? (tool.localBody ? DEFAULT_LOCAL_BODY_TIMEOUT_MS : BODY_DEFAULTS.timeoutMs)),
    heartbeatTimeoutMs: tool.heartbeatTimeoutMs ?? BODY_DEFAULTS.heartbeatTimeoutMs,
    retry: { ...BODY_DEFAULTS.retry, ...(tool.retry ?? {}) },
    approval,
    ...(tool.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: tool.approvalTimeoutMs } : {}),
    ...(requireIdentity || tool.approverGroups?.length ? { identityRequired: true } : {}),
    ...(tool.approverGroups?.length ? { approverGroups: [...tool.approverGroups] } : {}),
    ...(tool.approvers ? { quorum: checkQuorum(`tool ${tool.name}`, tool.approvers) } : {}),
    ...(tool.approvalLifecycle ? { lifecycle: { ...tool.approvalLifecycle } } : {}),
    ...(notify ? { notify: true } : {}),
    finalizes: !!(tool.finalizeContent || tool.presentResult),
    ...(tool.atMostOnce === true ? { atMostOnce: true as const } : {}),
    ...(tool.localBody === true ? { localBody: true as const } : {}),
    ...(tool.runsOn === 'client'
      ? { runsOn: 'client' as const, clientTimeoutMs: tool.clientTimeoutMs ?? DEFAULT_CLIENT_TIMEOUT_MS }
      : {}),
  };
}

/** A card a tool drew (presentCall, presentResult), or undefined when it is not one. */
export function checkCard(card: unknown): Card | undefined {
  try {
    const c = snapshotJson(card) as JsonObject;
    if (typeof c?.title !== 'string') return undefined;
    return {
      title: c.title,
      ...(typeof c.summary === 'string' ? { summary: c.summary } : {}),
      ...(c.fields && typeof c.fields === 'object' && !Array.isArray(c.fields)
        ? { fields: c.fields as JsonObject }
        : {}),
    };
  } catch {
    return undefined;
  }
}
