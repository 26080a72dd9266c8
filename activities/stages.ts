// The stage runners: pre-execute (+guards), guards, the execute waterfall around the body, and
// settle (post-execute, normalization, finalizeContent, tools/result). Extension throws become
// results here; only a crash of the worker itself makes Temporal retry a stage.
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { applyPostVerdict, foldPreDecision, parseGuardAnswer, parsePreDecision } from '../pipeline/fold';
import { deepFreeze, getOwn, setOwn, snapshotJson } from '../pipeline/json';
import {
  DEFAULT_MAX_RESULT_CHARS,
  errorCandidate,
  ErrorCodes,
  normalizeResult,
  renderValue,
} from '../pipeline/normalize';
import {
  BODY_DEFAULTS,
  FailureTypes,
  genericCard,
  genericResultCard,
  type BodyResult,
  type CallRef,
  type Gate,
  type GuardsResult,
  type PreflightReply,
  type PreflightResult,
  type StagePlan,
  type SettleRequest,
  type SettleResult,
  type ToolProfile,
} from '../pipeline/stages';
import type {
  ApprovalPolicy,
  Candidate,
  Card,
  EventDraft,
  JsonObject,
  PreDecision,
  StatePatch,
  UserMessage,
} from '../pipeline/types';
import { claimCheck, stashCandidate, unstashCandidate, type ResultStore } from '../worker/claim-check';
import { checkToolArgs } from '../worker/tool-schema';
import {
  handlerOf,
  isLongRunning,
  nameOf,
  ToolOutput,
  type CallInfo,
  type SluiceConfig,
  type StageContext,
  type ToolContext,
  type ToolDefinition,
} from '../worker/config';

export interface StageActivities {
  /**
   * Pre-execute (and guards) for calls in model order, one at a time, stopping after any call
   * that the next must wait for (see admitsNext). As a local activity it answers `deferred`,
   * running nothing, when the plan wants preflight as a regular activity.
   */
  preflight(refs: CallRef[]): Promise<PreflightReply>;
  runGuards(ref: CallRef): Promise<GuardsResult>;
  executeBody(ref: CallRef): Promise<BodyResult>;
  /** Settles calls in model order, one after the other. */
  settle(reqs: SettleRequest[]): Promise<SettleResult[]>;
}

/** A body result bigger than this (or than its batch share) crosses history as a stored preview. */
const DEFAULT_BODY_INLINE_BYTES = 64 * 1024;

/** Marks a throw that came out of the tool body itself, as opposed to a wrapper around it. */
class BodyThrew extends Error {
  constructor(readonly original: unknown) {
    super(original instanceof Error ? original.message : String(original));
  }
}

export function createStageActivities(config: SluiceConfig, deps: { resultStore?: ResultStore } = {}): StageActivities {
  const store = config.resultStore ?? deps.resultStore;
  const bounds = (ref: CallRef) => ({
    maxChars: config.maxResultChars ?? DEFAULT_MAX_RESULT_CHARS,
    maxBytes: ref.inlineBytes ?? Infinity,
  });
  const registry = new Map<string, ToolDefinition>();
  for (const t of config.tools) for (const n of [t.name, ...(t.aliases ?? [])]) registry.set(n, t);
  const plan = stagePlan(config);
  const toolNames = Object.freeze([...new Set(config.tools.map((t) => t.name))]);

  function collector(ref: CallRef, source: string) {
    const contexts: UserMessage[] = [];
    const events: EventDraft[] = [];
    const tool = registry.get(ref.name);
    const ctx: StageContext = {
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
      addContext(text) {
        contexts.push({ role: 'user', content: String(text), source });
      },
      emit(type, data) {
        events.push({ type: String(type), data: snapshotJson(data, `${type} event`) as JsonObject });
      },
    };
    return {
      ctx,
      contexts,
      events,
      withSource(s: string) {
        source = s;
      },
    };
  }

  /** Parses the frozen args with the tool's schema: a denial, not a failure, when they don't fit. */
  function parseArgs(tool: ToolDefinition, ref: CallRef): { ok: true; args: unknown } | { ok: false; gate: Gate } {
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

  async function runGuardChain(ref: CallRef, c: ReturnType<typeof collector>): Promise<Gate> {
    for (const [i, g] of (config.guards ?? []).entries()) {
      const who = `guard ${nameOf(g, `#${i}`)}`;
      c.withSource(who);
      let reason: string | undefined;
      try {
        reason = parseGuardAnswer(await handlerOf(g)(c.ctx), who);
      } catch (err) {
        return { kind: 'failed', code: ErrorCodes.PIPELINE_FAILED, message: `${who} threw: ${messageOf(err)}` };
      }
      if (reason) return { kind: 'denied', code: ErrorCodes.DENIED, message: reason };
    }
    return { kind: 'dispatch' };
  }

  async function preflightOne(ref: CallRef): Promise<Omit<PreflightResult, 'callId'>> {
    const c = collector(ref, 'pre-execute');
    const tool = registry.get(ref.name);
    if (!tool) {
      const known = [...new Set(config.tools.map((t) => t.name))].join(', ');
      return {
        gate: {
          kind: 'denied',
          code: ErrorCodes.UNKNOWN_TOOL,
          message: `unknown tool ${JSON.stringify(ref.name)}; the available tools are: ${known}`,
        },
        card: genericCard(ref.name, ref.args),
        contexts: [],
        events: [],
      };
    }
    const parsed = parseArgs(tool, ref);
    const card = presentCallCard(tool, ref, parsed.ok ? parsed.args : ref.args);
    if (!parsed.ok) return { gate: parsed.gate, card, contexts: [], events: [] };
    const profile = profileOf(tool, parsed.args);

    // A tool's own policy opens the waterfall: `ask` asks a person, `never` asks and is refused
    // at once (the asked/decided pair stays in the record), `auto` leaves it to the extensions.
    let decision: PreDecision =
      profile.approval === 'ask'
        ? { kind: 'ask', reason: `${tool.name} asks for approval before it runs` }
        : profile.approval === 'never'
          ? { kind: 'ask', reason: `${tool.name} is never approved` }
          : { kind: 'allow' };
    for (const [i, h] of (config.preExecute ?? []).entries()) {
      const who = `pre-execute handler ${nameOf(h, `#${i}`)}`;
      c.withSource(who);
      try {
        decision = foldPreDecision(decision, parsePreDecision(await handlerOf(h)(c.ctx), who));
      } catch (err) {
        return {
          gate: { kind: 'failed', code: ErrorCodes.PIPELINE_FAILED, message: `${who} threw: ${messageOf(err)}` },
          card,
          profile,
          contexts: c.contexts,
          events: c.events,
        };
      }
      if (decision.kind === 'deny') break;
    }
    let gate: Gate;
    if (decision.kind === 'deny') gate = { kind: 'denied', code: ErrorCodes.DENIED, message: decision.reason };
    else if (decision.kind === 'ask')
      gate = decision.reason ? { kind: 'ask', reason: decision.reason } : { kind: 'ask' };
    else gate = await runGuardChain(ref, c);
    return { gate, card, profile, contexts: c.contexts, events: c.events };
  }

  async function settleOne({
    ref,
    candidate,
    skipPostExecute,
    contexts,
  }: SettleRequest): Promise<Omit<SettleResult, 'callId' | 'before'>> {
    const tool = registry.get(ref.name);
    const c = collector(ref, 'post-execute');
    let current = await unstashCandidate(store, candidate);
    let bodyContexts = contexts.body;
    if (!skipPostExecute) {
      for (const [i, h] of (config.postExecute ?? []).entries()) {
        const who = `post-execute handler ${nameOf(h, `#${i}`)}`;
        c.withSource(who);
        try {
          const verdict = await handlerOf(h)({ ...c.ctx, result: deepFreeze(structuredClone(current)) });
          const applied = applyPostVerdict(current, verdict, who);
          current = applied.candidate;
          if (applied.blocked) {
            bodyContexts = [];
            break;
          }
        } catch (err) {
          current = errorCandidate(`${who} threw: ${messageOf(err)}`, ErrorCodes.PIPELINE_FAILED);
          break;
        }
      }
    }
    const queued = [...contexts.pre, ...bodyContexts, ...contexts.wrapper, ...c.contexts];
    // Bounds apply after finalizeContent, by the claim check: the stored copy is what the model
    // would have seen without them.
    let result = normalizeResult(current, queued, { maxResultChars: Infinity });

    if (tool?.finalizeContent) {
      try {
        const content = tool.finalizeContent(result.content, { call: callInfo(ref), isError: result.isError });
        if (content && typeof (content as unknown as Promise<unknown>).then === 'function')
          throw new Error('finalizeContent must be synchronous');
        result = normalizeResult({ ...result, content }, result.additionalContexts ?? [], { maxResultChars: Infinity });
      } catch (err) {
        result = normalizeResult(
          errorCandidate(`${tool.name}.finalizeContent failed: ${messageOf(err)}`, ErrorCodes.INVALID_TOOL_OUTPUT),
          result.additionalContexts ?? [],
        );
      }
    }

    result = deepFreeze(await claimCheck(store, ref.idempotencyKey, result, bounds(ref)));

    for (const [i, o] of (config.onResult ?? []).entries()) {
      try {
        handlerOf(o)({ call: callInfo(ref), sessionId: ref.sessionId, result, idempotencyKey: ref.idempotencyKey });
      } catch (err) {
        Context.current().log.warn(`tools/result observer ${nameOf(o, `#${i}`)} threw; the outcome is unchanged`, {
          error: messageOf(err),
          callId: ref.callId,
        });
      }
    }

    let card: Card = genericResultCard(ref.name, result.isError);
    if (tool?.presentResult) {
      try {
        card = checkCard(tool.presentResult(parsedOr(tool, ref), result)) ?? card;
      } catch {
        // a throwing presentResult gets the generic card
      }
    }
    return { result, card, events: c.events };
  }

  return {
    async preflight(refs) {
      if (Context.current().info.isLocal && plan.preflight === 'activity') return { plan, deferred: true, results: [] };
      const results: PreflightResult[] = [];
      for (const ref of refs) {
        const result = { callId: ref.callId, ...(await preflightOne(ref)) };
        results.push(result);
        if (!admitsNext(result)) break;
      }
      return { plan, deferred: false, results };
    },

    async settle(reqs) {
      const results: SettleResult[] = [];
      for (const req of reqs) {
        const settled = await settleOne(req);
        const changed =
          settled.result.isError !== req.candidate.isError ||
          JSON.stringify(settled.result.content) !== JSON.stringify(req.candidate.content);
        results.push({ callId: req.ref.callId, ...settled, ...(changed ? { before: req.candidate } : {}) });
      }
      return results;
    },

    async runGuards(ref) {
      const c = collector(ref, 'guard');
      const gate = await runGuardChain(ref, c);
      return { callId: ref.callId, gate, contexts: c.contexts, events: c.events };
    },

    async executeBody(ref) {
      const tool = registry.get(ref.name);
      if (!tool)
        throw ApplicationFailure.nonRetryable(
          `unknown tool ${ref.name} on this worker: is every worker running the same sluice config?`,
          FailureTypes.TOOL_BODY,
        );
      const parsed = parseArgs(tool, ref);
      if (!parsed.ok)
        throw ApplicationFailure.nonRetryable((parsed.gate as { message: string }).message, FailureTypes.TOOL_BODY);

      const activity = Context.current();
      const wrapperSide = collector(ref, `execute wrapper`);
      const bodySide = collector(ref, `tool:${tool.name}`);
      const patch: StatePatch = {};
      const toolCtx = (side: ReturnType<typeof collector>): ToolContext => ({
        ...side.ctx,
        attempt: activity.info.attempt,
        toolNames,
        signal: activity.cancellationSignal,
        heartbeat: (d?: unknown) => activity.heartbeat(d),
        setState(ns, key, value) {
          if (!getOwn(patch, ns)) setOwn(patch, ns, {});
          setOwn(patch[ns], key, value === null ? null : snapshotJson(value, `state ${ns}.${key}`));
        },
      });

      // Heartbeats carry liveness (a dead worker is noticed within the heartbeat timeout) and
      // deliver cancellation; the body need not call heartbeat() itself.
      const beat = setInterval(
        () => activity.heartbeat(),
        Math.max(200, Math.floor(profileOf(tool, parsed.args).heartbeatTimeoutMs / 3)),
      );
      try {
        const body = async (): Promise<Candidate> => {
          let value: unknown;
          try {
            value = await tool.execute(parsed.args, toolCtx(bodySide));
          } catch (err) {
            throw new BodyThrew(err);
          }
          return toCandidate(value);
        };
        const chain = (config.execute ?? []).reduceRight<() => Promise<Candidate>>((next, w, i) => {
          return async () => {
            wrapperSide.withSource(`execute wrapper ${nameOf(w, `#${i}`)}`);
            const out = await handlerOf(w)(toolCtx(wrapperSide), next);
            return checkCandidate(out, `execute wrapper ${nameOf(w, `#${i}`)}`);
          };
        }, body);
        let candidate: Candidate;
        let outcome: BodyResult['outcome'] = 'ok';
        try {
          candidate = await chain();
        } catch (err) {
          if (err instanceof BodyThrew) {
            if (activity.cancellationSignal.aborted)
              throw new CancelledFailure('the batch was cancelled while the tool ran');
            const original = err.original as { nonRetryable?: boolean; name?: string };
            throw ApplicationFailure.create({
              message: `${tool.name} failed: ${clip(err.message)}`,
              type: FailureTypes.TOOL_BODY,
              nonRetryable: original?.nonRetryable === true,
            });
          }
          outcome = 'failed';
          candidate = errorCandidate(
            `an execute wrapper failed around ${tool.name}: ${messageOf(err)}`,
            ErrorCodes.PIPELINE_FAILED,
          );
        }
        return {
          outcome,
          candidate: await stashCandidate(
            store,
            ref.idempotencyKey,
            candidate,
            ref.inlineBytes ?? DEFAULT_BODY_INLINE_BYTES,
          ),
          bodyContexts: bodySide.contexts,
          wrapperContexts: wrapperSide.contexts,
          events: [...wrapperSide.events, ...bodySide.events],
          ...(Object.keys(patch).length ? { statePatch: patch } : {}),
        };
      } finally {
        clearInterval(beat);
      }
    },
  };
}

/**
 * Whether the next call's preflight may run right after this one's without anything in between:
 * yes after a denial or a concurrency-safe dispatch; no after an ask (a person decides first) or
 * an exclusive call (its body runs alone, and may change the session state).
 */
function admitsNext(r: PreflightResult): boolean {
  return (
    r.gate.kind === 'denied' ||
    r.gate.kind === 'failed' ||
    (r.gate.kind === 'dispatch' && r.profile?.concurrencySafe === true)
  );
}

/** Local activities must finish within seconds: a stage qualifies when none of its extensions is long-running. */
function stagePlan(config: SluiceConfig): StagePlan {
  const local = config.localStages !== false;
  const quick = (...exts: unknown[][]) => local && !exts.flat().some((e) => isLongRunning(e as never));
  return {
    preflight: quick(config.preExecute ?? [], config.guards ?? []) ? 'local' : 'activity',
    guards: quick(config.guards ?? []) ? 'local' : 'activity',
    settle: quick(config.postExecute ?? [], config.onResult ?? []) ? 'local' : 'activity',
    settleHooks: (config.postExecute ?? []).length + (config.onResult ?? []).length > 0,
    ...(config.maxResultChars !== undefined ? { maxResultChars: config.maxResultChars } : {}),
  };
}

function callInfo(ref: CallRef): CallInfo {
  return Object.freeze({
    id: ref.callId,
    name: ref.name,
    args: deepFreeze(structuredClone(ref.args)),
    argsDigest: ref.argsDigest,
    ...(ref.parentCallId ? { parentCallId: ref.parentCallId } : {}),
  });
}

function parsedOr(tool: ToolDefinition, ref: CallRef): unknown {
  const p = checkToolArgs(tool, ref.args);
  return p.ok ? p.value : ref.args;
}

function profileOf(tool: ToolDefinition, args: unknown): ToolProfile {
  let concurrencySafe = false;
  try {
    concurrencySafe = tool.isConcurrencySafe?.(args) === true;
  } catch {
    concurrencySafe = false;
  }
  let approval: ApprovalPolicy;
  try {
    approval = typeof tool.approval === 'function' ? tool.approval(args) : (tool.approval ?? 'auto');
    if (approval !== 'ask' && approval !== 'never' && approval !== 'auto') approval = 'ask';
  } catch {
    approval = 'ask'; // fail closed
  }
  return {
    concurrencySafe,
    timeoutMs: tool.timeoutMs ?? BODY_DEFAULTS.timeoutMs,
    heartbeatTimeoutMs: tool.heartbeatTimeoutMs ?? BODY_DEFAULTS.heartbeatTimeoutMs,
    retry: { ...BODY_DEFAULTS.retry, ...(tool.retry ?? {}) },
    approval,
    ...(tool.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: tool.approvalTimeoutMs } : {}),
    finalizes: !!(tool.finalizeContent || tool.presentResult),
  };
}

function presentCallCard(tool: ToolDefinition, ref: CallRef, args: unknown): Card {
  if (!tool.presentCall) return genericCard(ref.name, ref.args);
  try {
    return checkCard(tool.presentCall(args)) ?? genericCard(ref.name, ref.args);
  } catch {
    return genericCard(ref.name, ref.args);
  }
}

function checkCard(card: unknown): Card | undefined {
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

function toCandidate(value: unknown): Candidate {
  try {
    if (value instanceof ToolOutput) {
      const f = value.fields;
      const v = f.value === undefined ? undefined : snapshotJson(f.value, 'value');
      return checkCandidate(
        {
          content: f.content ?? renderValue(v),
          ...(v !== undefined ? { value: v } : {}),
          isError: f.isError === true,
          ...(f.error ? { error: f.error } : f.isError ? { error: { message: 'the tool reported an error' } } : {}),
          ...(f.meta ? { meta: f.meta } : {}),
          ...(f.concludesTurn ? { concludesTurn: true as const } : {}),
        },
        'tool output',
      );
    }
    const v = value === undefined ? null : snapshotJson(value, 'result');
    return { content: renderValue(v), value: v, isError: false };
  } catch (err) {
    return errorCandidate(
      `the tool returned a value that cannot be recorded: ${messageOf(err)}`,
      ErrorCodes.INVALID_TOOL_OUTPUT,
    );
  }
}

function checkCandidate(out: unknown, who: string): Candidate {
  const c = snapshotJson(out, who) as unknown as Candidate;
  if (!c || typeof c !== 'object' || !Array.isArray(c.content) || typeof c.isError !== 'boolean') {
    throw new Error(`${who} must return a candidate {content, isError, ...}, e.g. what next() returned`);
  }
  return structuredClone(c) as Candidate;
}

/** A thrown message crosses history as a failure: keep it readable and small. */
function clip(message: string, max = 4000): string {
  return message.length > max ? `${message.slice(0, max)} [${message.length - max} more characters cut]` : message;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
