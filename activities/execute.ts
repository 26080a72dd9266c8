// Stages 7 and 8 worker-side: the execute waterfall (pipeline/waterfall.ts) around the tool body.
// A throw out of the body is the tool's failure: it fails the activity, so Temporal retries the
// body by the tool's policy; a ToolFailure is the body's answer instead (its error result, no retry). A throw out of a wrapper is a failure of the pipeline: the call's
// result, with post-execute skipped. Liveness comes from worker/liveness.ts, which heartbeats
// every stage activity while it runs; this file adds no timer of its own.
import { GRANTS_NAMESPACE } from '../pipeline/grants';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { getOwn, setOwn, snapshotJson } from '../pipeline/json';
import { errorCandidate, renderValue } from '../pipeline/normalize';
import { ErrorCodes } from '../pipeline/errors';
import type { BodyResult, CallRef, Gate, GuardsResult } from '../pipeline/stages';
import {
  type WireCallRef,
  type PackedBodyResult,
  type PackedCallRef,
  packBodyResult,
  unpackCallRef,
} from '../codec/stages';
import { FailureTypes } from '../pipeline/errors';
import type { Candidate, StatePatch } from '../pipeline/types';
import { BODY_INLINE_BYTES } from '../pipeline/budget';
import { compose, type Layer } from '../pipeline/waterfall';
import { stashCandidate } from '../stores/claim-check';
import { handlerOf, isToolOutput, nameOf, type ToolContext, type ToolDefinition } from '../define/config';
import { toolError, ToolFailure } from '../tools/errors';
import { messageOf } from './extensions';
import { type Collector, parseArgs, type StageKit } from './kit';

/** Marks a throw that came out of the tool body itself, as opposed to a wrapper around it. */
class BodyThrew extends Error {
  constructor(readonly original: unknown) {
    super(original instanceof Error ? original.message : String(original));
  }
}

/**
 * The body activity. Given the guards (guardThenExecuteBody, after a person's yes), it runs them
 * first, in the same attempt: a call they do not dispatch ends with their denial, its body never
 * started, and every attempt judges the call again right before its body would run.
 */
export function executeStage(kit: StageKit, guards?: (ref: WireCallRef) => Promise<GuardsResult>) {
  return async function executeBody(packed: PackedCallRef): Promise<PackedBodyResult | string> {
    const activity = Context.current();
    const sent = unpackCallRef(packed, activity.info.workflowExecution?.workflowId ?? '');
    const guarded = guards ? await guards(sent) : undefined;
    const guardsRun = guarded && { gate: guarded.gate, contexts: guarded.contexts, events: guarded.events };
    if (guardsRun && guardsRun.gate.kind !== 'dispatch') {
      const gate = guardsRun.gate as Extract<Gate, { message: string }>;
      return forMarker(
        activity,
        sent.callId,
        packBodyResult({
          // As a denial before dispatch: post-execute runs on a denial, not on a pipeline failure.
          outcome: gate.kind === 'failed' ? 'failed' : 'ok',
          candidate: errorCandidate(gate.message, gate.code),
          bodyContexts: [],
          wrapperContexts: [],
          events: [],
          guards: guardsRun,
        }),
      );
    }
    const ref = kit.keyed(sent);
    const { tool, args } = resolveTool(kit, ref);
    // The wrappers' own collector only when there are wrappers: a collector copies and freezes the
    // arguments and the session state for its context, which nothing would read.
    const wrapperSide = kit.config.execute?.length ? kit.collector(ref, 'execute wrapper') : undefined;
    const bodySide = kit.collector(ref, `tool:${tool.name}`);
    const patch: StatePatch = {};
    const toolCtx = (side: Collector) => toolContext(kit, activity, side, patch);

    const body = async (): Promise<Candidate> => {
      let value: unknown;
      try {
        value = await tool.execute(args, toolCtx(bodySide));
      } catch (err) {
        // The body found what the model must hear (tools/errors.ts): a retry would repeat it.
        if (err instanceof ToolFailure)
          return toCandidate(toolError(err.message, err.code ?? ErrorCodes.TOOL_FAILED), tool.name);
        throw new BodyThrew(err);
      }
      return toCandidate(value, tool.name);
    };
    const layers = wrapperSide ? executeLayers(kit, wrapperSide, toolCtx) : [];
    const { candidate, outcome } = await runWaterfall(activity, tool, layers, body);

    const out = packBodyResult({
      outcome,
      candidate: await stashCandidate(
        kit.store,
        ref.idempotencyKey,
        candidate,
        // A batch of an earlier build sends its share even when it is larger.
        Math.min(ref.inlineBytes ?? BODY_INLINE_BYTES, BODY_INLINE_BYTES),
      ),
      bodyContexts: bodySide.contexts,
      wrapperContexts: wrapperSide?.contexts ?? [],
      events: [...(wrapperSide?.events ?? []), ...bodySide.events],
      ...(Object.keys(patch).length ? { statePatch: patch } : {}),
      ...(guardsRun ? { guards: guardsRun } : {}),
    });
    return forMarker(activity, ref.callId, out);
  };
}

/** A local body's marker keeps only its result: it names its call for `sluice audit`. */
function forMarker(activity: Context, callId: string, out: PackedBodyResult | string): PackedBodyResult | string {
  if (!activity.info.isLocal) return out;
  return { callId, ...(typeof out === 'string' ? { value: out } : out) };
}

/**
 * The tool this worker knows by the call's name, and the args its schema parsed. Either missing
 * fails the body for good: a retry on the same worker would meet the same config.
 */
function resolveTool(kit: StageKit, ref: CallRef): { tool: ToolDefinition; args: unknown } {
  const tool = kit.tool(ref.name);
  if (!tool)
    throw ApplicationFailure.nonRetryable(
      `unknown tool ${ref.name} on this worker: is every worker running the same sluice config?`,
      FailureTypes.TOOL_BODY,
    );
  const parsed = parseArgs(tool, ref);
  if (!parsed.ok) throw ApplicationFailure.nonRetryable(parsed.gate.message, FailureTypes.TOOL_BODY);
  return { tool, args: parsed.args };
}

/**
 * What the body and each execute wrapper see: the collector's context plus the activity's attempt,
 * cancellation and heartbeat, and a `setState` that gathers into the call's one state patch.
 */
function toolContext(kit: StageKit, activity: Context, side: Collector, patch: StatePatch): ToolContext {
  return {
    ...side.ctx,
    attempt: activity.info.attempt,
    toolNames: kit.toolNames,
    signal: activity.cancellationSignal,
    heartbeat: (d?: unknown) => activity.heartbeat(d),
    setState(ns, key, value) {
      if (ns === GRANTS_NAMESPACE)
        throw new Error(
          `the ${GRANTS_NAMESPACE} state namespace holds the session's approval grants and only a person's decision writes it; keep the tool's state in a namespace of its own`,
        );
      if (!getOwn(patch, ns)) setOwn(patch, ns, {});
      setOwn(patch[ns], key, value === null ? null : snapshotJson(value, `state ${ns}.${key}`));
    },
  };
}

/** The config's execute wrappers as waterfall layers; each names itself as the source of what it adds. */
function executeLayers(
  kit: StageKit,
  wrapperSide: Collector,
  toolCtx: (side: Collector) => ToolContext,
): Layer<Candidate>[] {
  return (kit.config.execute ?? []).map((w, i) => {
    const who = `execute wrapper ${nameOf(w, `#${i}`)}`;
    return {
      name: who,
      async run(next) {
        wrapperSide.withSource(who);
        return checkCandidate(await handlerOf(w)(toolCtx(wrapperSide), next), who);
      },
    };
  });
}

/**
 * Runs the wrappers around the body. The body's own throw fails the activity (Temporal retries it
 * by the tool's policy, or records the cancel); a wrapper's throw is the pipeline failing, which
 * becomes the call's result with outcome `failed`.
 */
async function runWaterfall(
  activity: Context,
  tool: ToolDefinition,
  layers: Layer<Candidate>[],
  body: () => Promise<Candidate>,
): Promise<{ candidate: Candidate; outcome: BodyResult['outcome'] }> {
  try {
    return { candidate: await compose(layers, body)(), outcome: 'ok' };
  } catch (err) {
    if (err instanceof BodyThrew) {
      if (activity.cancellationSignal.aborted) throw new CancelledFailure('the batch was cancelled while the tool ran');
      const original = err.original as { nonRetryable?: boolean; name?: string };
      throw ApplicationFailure.create({
        message: `${tool.name} failed: ${clip(err.message)}`,
        type: FailureTypes.TOOL_BODY,
        nonRetryable: original?.nonRetryable === true,
      });
    }
    return {
      outcome: 'failed',
      candidate: errorCandidate(
        `an execute wrapper failed around ${tool.name}: ${messageOf(err)}`,
        ErrorCodes.PIPELINE_FAILED,
      ),
    };
  }
}

export function toCandidate(value: unknown, toolName: string): Candidate {
  try {
    if (isToolOutput(value)) {
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
    return ranButUnrecorded(toolName, messageOf(err));
  }
}

/**
 * The body returned, so whatever it does was done; only what it returned cannot be recorded. Not
 * the call failing: a model told so would call it again and do the work twice. The result is not
 * an error (`isError: false`), its text says the effect happened and what was wrong with the
 * value, and `error.code` INVALID_TOOL_OUTPUT lets code tell it apart (docs/tools.md).
 */
function ranButUnrecorded(toolName: string, why: string): Candidate {
  const message = `${toolName} ran to the end, so its effects happened, but the value it returned cannot be recorded: ${why}. What it returned is not known; do not call it again to redo the work.`;
  return {
    content: [{ type: 'text', text: message }],
    isError: false,
    error: { message, code: ErrorCodes.INVALID_TOOL_OUTPUT },
  };
}

export function checkCandidate(out: unknown, who: string): Candidate {
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
