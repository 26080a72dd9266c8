// The pipeline of one call, stage by stage, as the seed's diagram draws it. The batch workflow
// decides WHEN each part runs (ordering, parallelism, cancellation); this file decides WHAT runs.
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  proxyActivities,
  proxyLocalActivities,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { StageActivities } from '../activities/stages';
import { reservedCallIdProblem } from '../pipeline/code-mode';
import { argsDigest } from '../pipeline/digest';
import { getOwn, setOwn, snapshotArguments } from '../pipeline/json';
import { InlineBudget, jsonBytes, MAX_ARGUMENT_CHARS } from '../pipeline/budget';
import {
  DEFAULT_MAX_RESULT_CHARS,
  errorCandidate,
  ErrorCodes,
  fitResult,
  normalizeResult,
  resultFits,
} from '../pipeline/normalize';
import {
  BODY_DEFAULTS,
  genericCard,
  genericResultCard,
  type CallRef,
  type Gate,
  type GuardsResult,
  type PreflightResult,
  type SettleRequest,
  type SettleResult,
  type StagePlan,
  type ToolProfile,
} from '../pipeline/stages';
import type {
  BatchInput,
  CallStage,
  Candidate,
  Card,
  JsonObject,
  SessionState,
  StatePatch,
  ToolCall,
  ToolResult,
  UserMessage,
} from '../pipeline/types';
import type { Approvals } from './approvals';
import type { EventLog } from './event-log';

// Pre-execute, guards and settle run extension code that is expected to be quick; a worker dying
// mid-stage is retried, an extension's own throw is turned into a result by the activity itself.
// The stages heartbeat while they run (worker/liveness.ts), so a killed worker's stage is retried
// after the heartbeat timeout rather than the start-to-close timeout.
const stages = proxyActivities<StageActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '10s',
  retry: { maximumAttempts: 5, initialInterval: '500ms', maximumInterval: '10s' },
});

// The same stages as local activities, when the worker's config says their extensions are quick:
// they run in the worker that runs the batch, one marker each in history and no round trip
// through the server. A worker dying mid-stage means the stage runs again, as with activities.
const localStages = proxyLocalActivities<StageActivities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 5, initialInterval: '500ms', maximumInterval: '10s' },
});

export const DEFAULT_APPROVAL_TIMEOUT_MS = 10 * 60_000;
export const DEFAULT_MAX_PARALLEL = 10;
/** At most this many calls ride along with one local preflight: it must still finish within seconds. */
const PREFLIGHT_AHEAD = 63;

/** Code Mode: the run_code call a sub-call belongs to, and the outermost call of the batch. */
export interface Lineage {
  parentCallId?: string;
  rootCallId?: string;
}

/** A call after admission: either ready to dispatch, or already holding its result-to-be. */
export interface Admission {
  call: ToolCall;
  lineage: Lineage;
  ref?: CallRef;
  card: Card;
  profile?: ToolProfile;
  preContexts: UserMessage[];
  verdict: { kind: 'dispatch' } | ({ kind: 'settle' } & Settlement);
}

export interface Settlement {
  candidate: Candidate;
  skipPostExecute: boolean;
  bodyContexts?: UserMessage[];
  wrapperContexts?: UserMessage[];
}

export interface CallTracker {
  stage(callId: string, stage: CallStage, isError?: boolean): void;
}

export class CallPipeline {
  private readonly bodyScopes = new Set<CancellationScope>();
  private readonly budget: InlineBudget;
  /** Learnt from the first preflight; until then, preflight is tried as a local activity. */
  private plan?: StagePlan;
  /** Each call of the batch by its place in model order. */
  private readonly order: Map<string, number>;
  // Local stages take the calls that are ready along, in model order, in one local activity: a
  // preflight the calls after it, a settle the finished calls after it. Their results wait here,
  // for the batch's own calls only, each tied to the very call object it was computed for: a
  // sub-call never takes a result from here, so no call can run on another call's verdict.
  private readonly preflightedAhead = new Map<
    string,
    { call: ToolCall; result: PreflightResult; stateVersion: number }
  >();
  private readonly finished = new Map<string, { adm: Admission; s: Settlement }>();
  private readonly settledAhead = new Map<
    string,
    { adm: Admission } & ({ result: SettleResult } | { error: unknown })
  >();
  /** Bumped by every state patch: a preflight run ahead on older state is run again. */
  private stateVersion = 0;
  private readonly executing = new Set<string>();
  /** Sub-calls' contexts, held for their run_code call's result instead of injected at the sub-call. */
  private readonly deferred = new Map<string, UserMessage[]>();

  constructor(
    private readonly input: BatchInput,
    private readonly events: EventLog,
    private readonly approvals: Approvals,
    private readonly state: SessionState,
    private readonly tracker: CallTracker,
    private readonly isCancelled: () => boolean,
  ) {
    this.budget = new InlineBudget(input.calls);
    this.order = new Map(input.calls.map((c, i) => [c.id, i]));
  }

  /** Stages 1–6: tool/call, argument snapshot, pre-execute, approval, guards. */
  async admit(call: ToolCall, lineage: Lineage = {}): Promise<Admission> {
    // 1. tool/call (a sub-call's tool/code-dispatch-start), before anything else for this call
    this.recordStart(call, lineage);
    this.tracker.stage(call.id, 'pre-execute');
    if (call.argumentsChars !== undefined) {
      const message = `the arguments were ${call.argumentsChars} characters, over the ${MAX_ARGUMENT_CHARS}-character limit for one call, so they were not sent and the call did not run. Split the work into smaller calls (e.g. write a large file in parts).`;
      return settleNow(call, lineage, { title: call.name }, errorCandidate(message, ErrorCodes.INVALID_ARGS), true);
    }
    const reserved = lineage.parentCallId ? undefined : reservedCallIdProblem(call.id);
    if (reserved)
      return settleNow(call, lineage, { title: call.name }, errorCandidate(reserved, ErrorCodes.INVALID_ARGS), true);

    // 3. argument snapshot: parsed once, lossless, frozen; every later stage sees this copy
    let args: JsonObject;
    try {
      args = snapshotArguments(call.arguments);
    } catch (err) {
      return settleNow(
        call,
        lineage,
        { title: call.name },
        errorCandidate((err as Error).message, ErrorCodes.INVALID_ARGS),
        true,
      );
    }
    const ref = this.refFor(call, args, lineage);

    // 4. pre-execute waterfall (and guards, when no person needs to be asked)
    let pre;
    try {
      pre = await this.preflight(ref);
    } catch (err) {
      return settleNow(call, lineage, genericCard(call.name, args), stageFailure('pre-execute', err), true, ref);
    }
    this.events.recordAll(pre.events);
    const admission: Admission = {
      call,
      lineage,
      ref,
      card: pre.card,
      profile: pre.profile,
      preContexts: pre.contexts,
      verdict: { kind: 'dispatch' },
    };
    let gate: Gate = pre.gate;

    // 5. approval, only on ask
    if (gate.kind === 'ask') {
      this.tracker.stage(call.id, 'awaiting-approval');
      const decided = await this.approvals.ask(ref, {
        reason: gate.reason,
        card: pre.card,
        policy: pre.profile?.approval ?? 'auto',
        timeoutMs:
          pre.profile?.approvalTimeoutMs ?? this.input.options?.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS,
        channel: this.input.options?.approvalChannel !== false,
        ...(lineage.parentCallId ? { abandoned: () => this.parentEnded(lineage.parentCallId!) } : {}),
      });
      if (decided.outcome !== 'allowed-once') {
        gate = {
          kind: 'denied',
          code: ErrorCodes.DENIED,
          message: approvalDenial(decided.outcome, decided.reason, decided.by),
        };
      } else {
        // 6. monotonic guards, after the person said yes
        this.tracker.stage(call.id, 'guards');
        try {
          const guarded = await this.runGuards(ref);
          this.events.recordAll(guarded.events);
          admission.preContexts = [...admission.preContexts, ...guarded.contexts];
          gate = guarded.gate;
        } catch (err) {
          gate = {
            kind: 'failed',
            code: ErrorCodes.PIPELINE_FAILED,
            message: stageFailure('guards', err).error!.message,
          };
        }
      }
    }

    if (gate.kind === 'denied')
      admission.verdict = {
        kind: 'settle',
        candidate: errorCandidate(gate.message, gate.code),
        skipPostExecute: false,
      };
    else if (gate.kind === 'failed')
      admission.verdict = { kind: 'settle', candidate: errorCandidate(gate.message, gate.code), skipPostExecute: true };
    else if (gate.kind === 'ask') throw ApplicationFailure.nonRetryable('internal: ask gate survived approval');
    this.tracker.stage(call.id, admission.verdict.kind === 'dispatch' ? 'waiting-to-dispatch' : 'post-execute');
    return admission;
  }

  /** Stages 7–8: the execute waterfall around the tool body, as a retried, heartbeating activity. */
  async dispatch(adm: Admission): Promise<Settlement> {
    const s = await this.runBody(adm);
    if (this.isOwnCall(adm.call)) this.finished.set(adm.call.id, { adm, s });
    return s;
  }

  private async runBody(adm: Admission): Promise<Settlement> {
    if (adm.verdict.kind === 'settle') return adm.verdict;
    if (this.isCancelled()) {
      return {
        candidate: errorCandidate(
          'the batch was cancelled before this call was dispatched; it did not run',
          ErrorCodes.ABORTED_BEFORE_DISPATCH,
        ),
        skipPostExecute: false,
      };
    }
    const ref = {
      ...adm.ref!,
      state: this.state,
      inlineBytes: this.budget.share(workflowInfo().historySize, this.events.bytes),
    };
    const p = adm.profile ?? { ...BODY_DEFAULTS, concurrencySafe: false, approval: 'auto' as const };
    const body = proxyActivities<StageActivities>({
      startToCloseTimeout: p.timeoutMs,
      heartbeatTimeout: p.heartbeatTimeoutMs,
      retry: {
        maximumAttempts: p.retry.maximumAttempts,
        initialInterval: p.retry.initialIntervalMs,
        backoffCoefficient: p.retry.backoffCoefficient,
        maximumInterval: p.retry.maximumIntervalMs,
        nonRetryableErrorTypes: p.retry.nonRetryableErrorTypes,
      },
      cancellationType: 'WAIT_CANCELLATION_COMPLETED',
      summary: `${adm.call.name} ${adm.call.id}`,
    });
    this.tracker.stage(adm.call.id, 'executing');
    const scope = new CancellationScope({ cancellable: true });
    this.bodyScopes.add(scope);
    this.executing.add(adm.call.id);
    try {
      const out = await scope.run(() => body.executeBody(ref));
      this.events.recordAll(out.events);
      if (out.statePatch) {
        applyPatch(this.state, out.statePatch);
        this.stateVersion++;
      }
      return {
        candidate: out.candidate,
        skipPostExecute: out.outcome === 'failed',
        bodyContexts: out.bodyContexts,
        wrapperContexts: out.wrapperContexts,
      };
    } catch (err) {
      return { candidate: bodyFailure(adm.call.name, p.timeoutMs, err), skipPostExecute: false };
    } finally {
      this.bodyScopes.delete(scope);
      this.executing.delete(adm.call.id);
      this.tracker.stage(adm.call.id, 'post-execute');
    }
  }

  /** Stages 9–13: post-execute, normalization, finalizeContent, tools/result, then `tool/result`. */
  async settle(adm: Admission, s: Settlement): Promise<ToolResult> {
    let result: ToolResult;
    const share = this.budget.share(workflowInfo().historySize, this.events.bytes);
    let card: Card | undefined;
    if (!adm.ref) {
      result = normalizeResult(s.candidate);
    } else {
      try {
        const settled = await this.settleStage(adm, s, share);
        this.events.recordAll(settled.events);
        result = settled.result;
        card = settled.card;
      } catch (err) {
        // The worker-side settle failed for good: the same pure normalization, applied here.
        result = normalizeResult(stageFailure('post-execute', err));
      }
    }
    // The share holds even against a worker that ignored it: the output must stay one payload.
    result = fitResult(result, { maxChars: Infinity, maxBytes: share });
    // A sub-call's result reaches the output only through its tool/code-dispatch event, which the
    // event bytes count; the even split is among the batch's own calls.
    if (!adm.lineage.parentCallId) this.budget.commit(result);
    // The completed card travels with the result, so any UI renders it from the event alone; a
    // card bigger than the result's own share gives way to the generic one.
    if (!card || jsonBytes(card as unknown as JsonObject) > share)
      card = genericResultCard(adm.call.name, result.isError);
    const outcome = {
      content: result.content,
      isError: result.isError,
      ...(result.error ? { error: result.error as unknown as JsonObject } : {}),
      ...(result.meta ? { meta: result.meta } : {}),
      card: card as unknown as JsonObject,
    };
    // Only top-level calls get a tool/result: a sub-call's outcome belongs to its program, not the model.
    if (adm.lineage.parentCallId)
      this.events.record('tool/code-dispatch', { ...codeDispatchFields(adm.call, adm.lineage), ...outcome });
    else
      this.events.record('tool/result', {
        turn: this.input.turn,
        step: this.input.step,
        callId: adm.call.id,
        name: adm.call.name,
        ...outcome,
      });
    this.tracker.stage(adm.call.id, 'done', result.isError);
    return result;
  }

  /** True while the call's body activity runs (a run_code program can call tools only then). */
  isExecuting(callId: string): boolean {
    return this.executing.has(callId);
  }

  /** Why a sub-call's program is gone, once its run_code call's body stopped running. */
  private parentEnded(parentCallId: string): string | undefined {
    return this.executing.has(parentCallId) ? undefined : `the program of ${parentCallId} ended`;
  }

  /** Holds a sub-call's contexts for its run_code call: they follow that call's result, after the batch. */
  deferContexts(parentCallId: string, contexts: UserMessage[]): void {
    if (contexts.length) this.deferred.set(parentCallId, [...(this.deferred.get(parentCallId) ?? []), ...contexts]);
  }

  private takeDeferred(callId: string): UserMessage[] {
    const held = this.deferred.get(callId) ?? [];
    this.deferred.delete(callId);
    return held;
  }

  /** A call the batch never started: a tool/call + tool/result pair (or a sub-call's pair), and nothing run. */
  abortUnstarted(call: ToolCall, lineage: Lineage = {}): Admission {
    this.recordStart(call, lineage);
    return settleNow(
      call,
      lineage,
      { title: call.name },
      errorCandidate(
        'the batch was cancelled before this call started; it did not run',
        ErrorCodes.ABORTED_BEFORE_DISPATCH,
      ),
      true,
    );
  }

  /** Batch cancel: running bodies are asked to stop (bash kills its process group). */
  cancelRunningBodies(): void {
    for (const scope of this.bodyScopes) scope.cancel();
  }

  /** True for the batch's own calls (the model's), false for a program's sub-calls. */
  private isOwnCall(call: ToolCall): boolean {
    const at = this.order.get(call.id);
    return at !== undefined && this.input.calls[at] === call;
  }

  /** The batch's own call a ref was made for; undefined for a program's sub-call. */
  private ownCallOf(ref: CallRef): ToolCall | undefined {
    const at = this.order.get(ref.callId);
    return ref.parentCallId || at === undefined ? undefined : this.input.calls[at];
  }

  private async preflight(ref: CallRef): Promise<PreflightResult> {
    const call = this.ownCallOf(ref);
    if (call) {
      const ahead = this.preflightedAhead.get(call.id);
      this.preflightedAhead.delete(call.id);
      if (ahead && ahead.call === call && ahead.stateVersion === this.stateVersion) return ahead.result;
    }
    if (this.plan?.preflight !== 'activity') {
      const followers = call ? this.followersOf(call) : [];
      const refs = [ref, ...followers.map((f) => f.ref)];
      const stateVersion = this.stateVersion;
      const reply = await localStages.preflight(refs);
      this.plan = reply.plan;
      if (!reply.deferred) {
        reply.results
          .slice(1)
          .forEach((result, k) =>
            this.preflightedAhead.set(followers[k].call.id, { call: followers[k].call, result, stateVersion }),
          );
        return reply.results[0];
      }
    }
    return (await stages.preflight([ref])).results[0];
  }

  /**
   * The calls after this one whose arguments parse, up to PREFLIGHT_AHEAD. Those that wait for a
   * free slot first are run again if a body changed the state meanwhile (see preflight).
   */
  private followersOf(own: ToolCall): { call: ToolCall; ref: CallRef }[] {
    const at = this.order.get(own.id)!;
    const out: { call: ToolCall; ref: CallRef }[] = [];
    for (const call of this.input.calls.slice(at + 1, at + 1 + PREFLIGHT_AHEAD)) {
      if (reservedCallIdProblem(call.id)) continue;
      let args: JsonObject;
      try {
        args = snapshotArguments(call.arguments);
      } catch {
        break;
      }
      out.push({ call, ref: this.refFor(call, args, {}) });
    }
    return out;
  }

  private runGuards(ref: CallRef): Promise<GuardsResult> {
    return this.plan?.guards === 'local' ? localStages.runGuards(ref) : stages.runGuards(ref);
  }

  private async settleStage(adm: Admission, s: Settlement, share: number): Promise<SettleResult> {
    const ahead = this.isOwnCall(adm.call) ? this.settledAhead.get(adm.call.id) : undefined;
    if (ahead?.adm === adm) {
      this.settledAhead.delete(adm.call.id);
      if ('error' in ahead) throw ahead.error;
      return ahead.result;
    }
    if (this.isOwnCall(adm.call)) this.finished.delete(adm.call.id);
    const req = this.settleRequest(adm, s, share);
    const here = this.settlesHere(adm) ? this.settleHere(req) : undefined;
    if (here) return here;
    if (this.plan?.settle !== 'local') return (await stages.settle([req]))[0];
    // Calls settled ahead use this call's share: never more than their own turn would give them
    // (shares only grow as results within their share commit), so the output stays in budget.
    const along = this.isOwnCall(adm.call) ? this.finishedAfter(adm.call.id) : [];
    const group = [req, ...along.map((g) => this.settleRequest(g.adm, g.s, share))];
    let results: SettleResult[];
    try {
      results = await localStages.settle(group);
    } catch (err) {
      for (const g of along) this.settledAhead.set(g.adm.call.id, { adm: g.adm, error: err });
      throw err;
    }
    along.forEach((g, k) => this.settledAhead.set(g.adm.call.id, { adm: g.adm, result: results[k + 1] }));
    return results[0];
  }

  /** No post-execute, no observers, no finalizeContent or presentResult: nothing for a worker to run. */
  private settlesHere(adm: Admission): boolean {
    return this.plan?.settleHooks === false && adm.profile?.finalizes === false;
  }

  /**
   * The worker's settle when it has no code to run: the same normalization, and the generic card.
   * Undefined when the result needs the worker after all: a body result stored aside, or one over
   * its bounds, which the claim check stores aside.
   */
  private settleHere(req: SettleRequest): SettleResult | undefined {
    if (req.candidate.stashed) return undefined;
    const queued = [...req.contexts.pre, ...req.contexts.body, ...req.contexts.wrapper];
    const result = normalizeResult(req.candidate, queued, { maxResultChars: Infinity });
    if (!resultFits(result, this.plan?.maxResultChars ?? DEFAULT_MAX_RESULT_CHARS, req.ref.inlineBytes ?? Infinity))
      return undefined;
    return { callId: req.ref.callId, result, card: genericResultCard(req.ref.name, result.isError), events: [] };
  }

  /** The calls right after this one whose dispatch has finished (those with no stages to run are passed over). */
  private finishedAfter(callId: string): { adm: Admission; s: Settlement }[] {
    const at = this.order.get(callId);
    const out: { adm: Admission; s: Settlement }[] = [];
    if (at === undefined) return out;
    for (const call of this.input.calls.slice(at + 1)) {
      const f = this.finished.get(call.id);
      if (!f) break;
      this.finished.delete(call.id);
      if (f.adm.ref && !this.settlesHere(f.adm)) out.push(f);
    }
    return out;
  }

  private settleRequest(adm: Admission, s: Settlement, share: number): SettleRequest {
    return {
      ref: { ...adm.ref!, state: this.state, inlineBytes: share },
      candidate: s.candidate,
      skipPostExecute: s.skipPostExecute,
      contexts: {
        pre: [...adm.preContexts, ...this.takeDeferred(adm.call.id)],
        body: s.bodyContexts ?? [],
        wrapper: s.wrapperContexts ?? [],
      },
    };
  }

  private recordStart(call: ToolCall, lineage: Lineage): void {
    if (lineage.parentCallId) this.events.record('tool/code-dispatch-start', codeDispatchFields(call, lineage));
    else
      this.events.record('tool/call', {
        turn: this.input.turn,
        step: this.input.step,
        callId: call.id,
        name: call.name,
        arguments: call.arguments,
        ...(call.argumentsChars !== undefined ? { argumentsChars: call.argumentsChars } : {}),
      });
  }

  private refFor(call: ToolCall, args: JsonObject, lineage: Lineage): CallRef {
    const { workflowId } = workflowInfo();
    return {
      workflowId,
      sessionId: this.input.sessionId,
      turn: this.input.turn,
      step: this.input.step,
      callId: call.id,
      name: call.name,
      args,
      argsDigest: argsDigest(args),
      idempotencyKey: `${workflowId}/${call.id}`,
      state: this.state,
      ...lineage,
    };
  }
}

function settleNow(
  call: ToolCall,
  lineage: Lineage,
  card: Card,
  candidate: Candidate,
  skipPostExecute: boolean,
  ref?: CallRef,
): Admission {
  return { call, lineage, ref, card, preContexts: [], verdict: { kind: 'settle', candidate, skipPostExecute } };
}

function codeDispatchFields(call: ToolCall, lineage: Lineage): JsonObject {
  return {
    rootCallId: lineage.rootCallId ?? lineage.parentCallId!,
    parentCallId: lineage.parentCallId!,
    subCallId: call.id,
    name: call.name,
    arguments: call.arguments,
  };
}

function approvalDenial(outcome: string, reason?: string, by?: string): string {
  switch (outcome) {
    case 'rejected':
      return `the call was rejected${by ? ` by ${by}` : ''}${reason ? `: ${reason}` : ''}. Do not retry it unchanged; ask the user what they want instead.`;
    case 'cancelled':
      return `${reason ?? 'the batch was cancelled'} while this call awaited approval; it did not run.`;
    default:
      return `approval was required but not given (${reason ?? 'no approval channel answered'}); the call did not run.`;
  }
}

function causeMessage(err: unknown): string {
  let e = err as { cause?: unknown; message?: string } | undefined;
  while (e?.cause && (e instanceof ActivityFailure || !(e as { message?: string }).message)) e = e.cause as typeof e;
  return e?.message ?? String(err);
}

function stageFailure(stage: string, err: unknown): Candidate {
  return errorCandidate(
    `the ${stage} stage failed and the call did not complete: ${causeMessage(err)}`,
    ErrorCodes.PIPELINE_FAILED,
  );
}

function bodyFailure(name: string, timeoutMs: number, err: unknown): Candidate {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof CancelledFailure)
    return errorCandidate(`${name} was aborted because the batch was cancelled`, ErrorCodes.ABORTED);
  if (cause instanceof TimeoutFailure)
    return errorCandidate(
      `${name} timed out (limit ${Math.round(timeoutMs / 1000)}s) and was not retried further`,
      ErrorCodes.TOOL_FAILED,
    );
  return errorCandidate(causeMessage(err), ErrorCodes.TOOL_FAILED);
}

export function applyPatch(state: SessionState, patch: StatePatch): void {
  for (const [ns, entries] of Object.entries(patch)) {
    if (!getOwn(state, ns)) setOwn(state, ns, {});
    const target = state[ns];
    for (const [k, v] of Object.entries(entries)) {
      if (v === null) delete target[k];
      else setOwn(target, k, v);
    }
  }
}
