// The pipeline of one call, in the order and with the stage numbers of docs/architecture.md:
//   admit      1 tool/call · 3 argument snapshot · 4 pre-execute · 5 approval · 6 guards
//   run        7 execute waterfall · 8 the tool body
//   settle     9 post-execute · 10 normalization · 11 finalizeContent · 12 tools/result · 13 tool/result
// (2 and 14, the cards, are drawn by any UI from the events.) The batch workflow (batch.ts)
// decides WHEN each part runs: ordering, parallelism, cancellation. This file decides WHAT runs.
// Where the quick stages run, and whether a stage's result is at hand or waited for, is the stage
// runner's business (stage-runner.ts): admission and settle are Stages driven by runStage, and
// each `yield*` below is a place where the call may wait, with an async function's timing, so
// concurrent calls' commands come out in the order recorded histories hold. Stage 5, with grants,
// asks raised together and then the guards, is approval-stage.ts's; what is recorded per call,
// the call ledger's (call-ledger.ts).
import {
  ApplicationFailure,
  type CancellationScope,
  ParentClosePolicy,
  proxyActivities,
  proxyLocalActivities,
  startChild,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { StageActivities } from '../activities/stages';
import { BODY_INLINE_BYTES, jsonBytes, MAX_ARGUMENT_CHARS, resultBytes } from '../pipeline/budget';
import { reservedCallIdProblem } from '../pipeline/code-mode';
import { GRANTS_NAMESPACE } from '../pipeline/grants';
import { getOwn, setOwn, snapshotArguments } from '../pipeline/json';
import { errorCandidate, fitResult, normalizeResult, untouchedValue } from '../pipeline/normalize';
import { ErrorCodes, FailureTypes } from '../pipeline/errors';
import {
  BODY_DEFAULTS,
  bodyRunsLocally,
  type CallRef,
  genericCard,
  genericResultCard,
  type PreflightResult,
  type ToolProfile,
} from '../pipeline/stages';
import {
  type PackedCallRef,
  packCallRef,
  type SettleRequest,
  unpackBodyResult,
  withoutOwnDigest,
} from '../codec/stages';
import type {
  Candidate,
  Card,
  JsonObject,
  SessionState,
  StatePatch,
  ToolCall,
  ToolResult,
  UserMessage,
} from '../pipeline/types';
import { type Admission, type Lineage, type Settlement, settledAtAdmission } from './admission';
import { callRef } from './call-ref';
import { runClientBody } from './client-body';
import { ApprovalStage, type RaisedAsk } from './approval-stage';
import type { BatchContext } from './batch-context';
import { bodyFailure, stageFailure } from './failures';
import { APPROVALS_MEMO, AWAITING_APPROVAL, PENDING_APPROVALS, SESSION_ID } from './definitions';
import { reconcileWorkflowId, type ReconcileInput } from '../pipeline/reconcile';
import { attemptLost, lostWords, reconcileCall } from './reconcile';
import { LeanScope } from './lean-scope';
import { runStage, type Stage, waitFor } from './stage-runner';

export const DEFAULT_MAX_PARALLEL = 10;

export class CallPipeline {
  /**
   * The scope every body activity runs in, made at the first body, so a batch cancel stops them
   * all with one request. One per batch rather than one per body: the SDK records a stack trace
   * for every promise a workflow creates (for its stack trace query), and a scope of its own cost
   * each call about five promises more. The same commands either way (docs/performance.md,
   * "Worker CPU per call: where it goes"). A LeanScope: its `run` makes one promise, not two.
   */
  private bodyScope?: CancellationScope;
  /** Stage 5 and around it: grants, asks raised together, the ask itself, then the guards. */
  private readonly approval: ApprovalStage;

  constructor(private readonly batch: BatchContext) {
    this.approval = new ApprovalStage(batch);
  }

  // ─── admit: stages 1–6 ──────────────────────────────────────────────────────────────────────

  admit(call: ToolCall, lineage: Lineage = {}): Promise<Admission> {
    // 1. tool/call (a sub-call's tool/code-dispatch-start), before anything else for this call
    this.batch.ledger.recordStart(call, lineage);
    this.batch.tracker.stage(call.id, 'pre-execute');
    const raised = this.approval.takeRaised(call, lineage);
    if (raised) return this.admitRaised(call, lineage, raised);
    return runStage(this.admitStages(call, lineage));
  }

  private async admitRaised(call: ToolCall, lineage: Lineage, raised: RaisedAsk): Promise<Admission> {
    const adm = await runStage(this.admitStages(call, lineage, raised));
    // An ask raised ahead that admission did not use (the call settled before asking) ends here.
    if (!raised.used) await this.approval.withdraw(raised, 'the call settled before its approval was needed');
    return adm;
  }

  private *admitStages(call: ToolCall, lineage: Lineage, raised?: RaisedAsk): Stage<Admission> {
    // 3. argument snapshot: parsed once, lossless, frozen; every later stage sees this copy
    const snap = snapshotOf(call, lineage);
    if ('problem' in snap)
      return settledAtAdmission(call, lineage, {
        card: { title: call.name },
        candidate: errorCandidate(snap.problem, ErrorCodes.INVALID_ARGS),
        skipPostExecute: true,
      });
    const ref = callRef(this.batch.input, this.batch.state, call, snap.args, lineage);

    // 4. pre-execute waterfall (and 6, the guards, when no person needs to be asked)
    let pre: PreflightResult;
    try {
      pre = yield* this.batch.runner.preflight(ref);
    } catch (err) {
      return settledAtAdmission(call, lineage, {
        card: genericCard(call.name, snap.args),
        candidate: stageFailure('pre-execute', err),
        skipPostExecute: true,
        ref,
      });
    }
    // The keyed digest from the worker replaces the workflow's own: it is the one people see, and
    // the one later stages get (compat.ts, UNMARKED_CHANGES.digestWhereBound). A call nothing binds
    // to a digest gets none back; its stages key the arguments where they run.
    if (pre.argsDigest) ref.argsDigest = pre.argsDigest;
    this.batch.events.recordAll(pre.events);
    const admission: Admission = {
      call,
      lineage,
      ref,
      card: pre.card,
      profile: pre.profile,
      preContexts: pre.contexts,
      verdict: { kind: 'run' },
    };

    // An ask raised ahead, and pre-execute (re-run if a body changed the state since) no longer
    // asks: a person's "no" stands; otherwise the ask is withdrawn and pre-execute's verdict holds.
    if (raised && pre.gate.kind !== 'ask') {
      const withdrawn = this.approval.reconsider(raised, pre);
      if (withdrawn) yield* waitFor(withdrawn);
    }

    // 5. approval, only on ask, then 6. the guards
    const gate =
      pre.gate.kind === 'ask' ? yield* waitFor(this.approval.askThenGuard(admission, pre.gate, raised)) : pre.gate;
    if (gate.kind === 'ask')
      throw ApplicationFailure.nonRetryable('internal: ask gate survived approval', FailureTypes.INTERNAL);
    if (gate.kind !== 'dispatch')
      admission.verdict = {
        kind: 'settle',
        candidate: errorCandidate(gate.message, gate.code),
        // A denial is the call's outcome and goes through post-execute; a failure of the pipeline skips it.
        skipPostExecute: gate.kind === 'failed',
      };
    this.batch.tracker.stage(call.id, admission.verdict.kind === 'run' ? 'waiting-to-dispatch' : 'post-execute');
    return admission;
  }

  // ─── run the body: stages 7–8 ───────────────────────────────────────────────────────────────

  /** The execute waterfall around the tool body, as a retried, heartbeating activity (a call admitted to run). */
  runBody(adm: Admission): Promise<Settlement> {
    return this.executeBody(adm).then((s) => this.markReady(adm, s));
  }

  /** A call that admission settled: its body never runs, and its settlement is the one admission wrote. */
  skipBody(adm: Admission): Promise<Settlement> {
    // A `then`, not an async function awaiting it: the same microtask, one promise fewer (lean-scope.ts).
    return this.admissionSettlement(adm).then((s) => this.markReady(adm, s));
  }

  private markReady(adm: Admission, s: Settlement): Settlement {
    this.batch.runner.readyToSettle(adm.call, {
      admission: adm,
      profile: adm.profile,
      ...(adm.ref ? { request: (share: number) => this.settleRequest(adm, s, share) } : {}),
    });
    return s;
  }

  private async admissionSettlement(adm: Admission): Promise<Settlement> {
    if (adm.verdict.kind !== 'settle')
      throw ApplicationFailure.nonRetryable('internal: skipBody on a call admitted to run', FailureTypes.INTERNAL);
    return adm.verdict;
  }

  private async executeBody(adm: Admission): Promise<Settlement> {
    if (adm.verdict.kind !== 'run')
      throw ApplicationFailure.nonRetryable('internal: runBody on a call admission settled', FailureTypes.INTERNAL);
    if (this.batch.isCancelled()) {
      return {
        candidate: errorCandidate(
          'the batch was cancelled before this call was dispatched; it did not run',
          ErrorCodes.ABORTED_BEFORE_DISPATCH,
        ),
        skipPostExecute: false,
      };
    }
    // The worker bounds a body's result by BODY_INLINE_BYTES; the share goes along when smaller.
    const share = this.batch.budget.share(workflowInfo().historySize, this.batch.events.bytes);
    const ref = {
      ...pastJudgment(adm.ref!, adm.guardsFirst !== undefined),
      state: this.batch.state,
      ...(share < BODY_INLINE_BYTES ? { inlineBytes: share } : {}),
      ...(adm.guardsFirst?.askedUnder ? { askedUnder: adm.guardsFirst.askedUnder } : {}),
    };
    const p: ToolProfile = adm.profile ?? {
      ...BODY_DEFAULTS,
      concurrencySafe: false,
      approval: 'auto' as const,
      finalizes: false,
    };
    const body = bodyActivities(p, `${adm.call.name} ${adm.call.id}`);
    this.batch.tracker.stage(adm.call.id, 'executing');
    // Made where the first body runs. Its parent, the batch's (or a sub-call's) non-cancellable
    // scope, is never cancelled itself, so only cancelRunningBodies stops the bodies in it.
    const scope = (this.bodyScope ??= new LeanScope({ cancellable: true }));
    this.batch.ledger.bodyStarted(adm.call.id);
    try {
      // Input and result packed (UNMARKED_CHANGES.bodyRefFromWorkflowId, .shortStageResults).
      // After a person's yes, the guards first, in the same activity (ApprovalStage.guard).
      const run =
        p.runsOn === 'client'
          ? (packed: PackedCallRef) => runClientBody(this.batch, ref, packed, p, !!adm.guardsFirst)
          : adm.guardsFirst
            ? body.guardThenExecuteBody
            : body.executeBody;
      const out = unpackBodyResult(await scope.run(() => run(packCallRef(ref))));
      if (out.guards) {
        this.batch.events.recordAll(out.guards.events);
        adm.preContexts = [...adm.preContexts, ...out.guards.contexts];
      }
      this.batch.events.recordAll(out.events);
      if (out.statePatch) {
        applyPatch(this.batch.state, out.statePatch);
        this.batch.runner.stateChanged();
      }
      return {
        candidate: out.candidate,
        skipPostExecute: out.outcome === 'failed',
        bodyContexts: out.bodyContexts,
        wrapperContexts: out.wrapperContexts,
      };
    } catch (err) {
      if (p.atMostOnce && attemptLost(err))
        return { candidate: await this.outcomeUnknown(adm, ref, p, err), skipPostExecute: false };
      return { candidate: bodyFailure(adm.call.name, p.timeoutMs, err), skipPostExecute: false };
    } finally {
      // A body that runs alone may have changed anything: asks raised ahead are re-checked.
      if (!p.concurrencySafe) this.batch.runner.bodyEnded();
      this.batch.ledger.bodyEnded(adm.call.id);
      this.batch.tracker.stage(adm.call.id, 'post-execute');
    }
  }

  /**
   * An at-most-once body's attempt was lost after it may have started: nobody knows whether it
   * ran, so it is neither run again nor called failed. The call ends OUTCOME_UNKNOWN, and a
   * reconcile workflow (outliving this batch) holds an operator card until a person says what
   * happened.
   */
  private async outcomeUnknown(adm: Admission, ref: CallRef, profile: ToolProfile, err: unknown): Promise<Candidate> {
    const reconcileId = uuid4();
    const what = lostWords(adm.call.name, err);
    const input: ReconcileInput = {
      reconcileId,
      batchWorkflowId: ref.workflowId,
      sessionId: ref.sessionId,
      turn: ref.turn,
      step: ref.step,
      callId: adm.call.id,
      toolName: adm.call.name,
      ...(adm.lineage.parentCallId ? { parentCallId: adm.lineage.parentCallId } : {}),
      ref,
      profile,
      card: adm.card,
      problem: `${what}. Whether it did its work is unknown; it is never run twice on its own. Check its effect, then mark it done (with the evidence), not done, or run it again.`,
    };
    let card = `An operator has been asked to check what happened and reconcile it (reconcile id ${reconcileId}).`;
    try {
      await startChild(reconcileCall, {
        workflowId: reconcileWorkflowId(ref.workflowId, adm.call.id),
        args: [input],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        typedSearchAttributes: [
          { key: SESSION_ID, value: ref.sessionId },
          { key: AWAITING_APPROVAL, value: true },
          { key: PENDING_APPROVALS, value: [reconcileId] },
        ],
        memo: { [APPROVALS_MEMO]: { v: 1, pending: [], decided: [], refused: [] } },
        staticSummary: `Unknown outcome: ${adm.call.name} ${adm.call.id} of ${ref.workflowId}`,
      });
    } catch (e) {
      card = `No operator card could be opened for it (${(e as Error).message}); tell the user.`;
    }
    return errorCandidate(
      `The outcome of this ${adm.call.name} call is unknown: ${what}, so it may or may not have done its work. It was not run again, because this tool must not run twice. ${card} Do not repeat the call until you have checked whether its effect happened (or the user tells you); say plainly that the outcome is unknown.`,
      ErrorCodes.OUTCOME_UNKNOWN,
    );
  }

  // ─── settle: stages 9–13 ────────────────────────────────────────────────────────────────────

  settle(adm: Admission, s: Settlement): Promise<ToolResult> {
    return runStage(this.settleStages(adm, s));
  }

  private *settleStages(adm: Admission, s: Settlement): Stage<ToolResult> {
    let result: ToolResult;
    const share = this.batch.budget.share(workflowInfo().historySize, this.batch.events.bytes);
    let card: Card | undefined;
    if (!adm.ref) {
      // 10. no reference, so no extension could see the call: the pure normalization, here.
      result = normalizeResult(s.candidate);
    } else {
      // 9–12, worker-side (or here, when no worker code would run).
      try {
        // The same request for the same share: the runner may make it more than once.
        let made: { at: number; req: SettleRequest } | undefined;
        const request = (at: number) =>
          made?.at === at ? made.req : (made = { at, req: this.settleRequest(adm, s, at) }).req;
        const pending = { admission: adm, profile: adm.profile, request };
        const settled = yield* this.batch.runner.settle(adm.call, pending, share);
        this.batch.events.recordAll(settled.events);
        result = settled.result;
        card = settled.card;
      } catch (err) {
        // The worker-side settle failed for good: the same pure normalization, applied here.
        result = normalizeResult(stageFailure('post-execute', err));
      }
    }
    // The share holds even against a worker that ignored it: the output must stay one payload.
    result = fitResult(result, { maxChars: Infinity, maxBytes: share });
    // The body's structured value goes along while nothing rewrote what the model reads, and it fits.
    if (!adm.lineage.parentCallId) {
      const value = untouchedValue(s.candidate, result);
      if (value !== undefined && resultBytes(result) + jsonBytes(value) + 16 <= share) result = { ...result, value };
    }
    // A sub-call's result reaches the output only through its tool/code-dispatch event, which the
    // event bytes count; the even split is among the batch's own calls.
    if (!adm.lineage.parentCallId) this.batch.budget.commit(result);
    // The completed card travels with the result, so any UI renders it from the event alone; a
    // card bigger than the result's own share gives way to the generic one.
    if (!card || jsonBytes(card as unknown as JsonObject) > share)
      card = genericResultCard(adm.call.name, result.isError);
    // 13. the single model-facing outcome; a sub-call's belongs to its program, not the model.
    this.batch.ledger.recordOutcome(adm, result, card);
    this.batch.tracker.stage(adm.call.id, 'done', result.isError);
    return result;
  }

  // ─── around the stages ──────────────────────────────────────────────────────────────────────

  /** A call the batch never started: a tool/call + tool/result pair (or a sub-call's pair), and nothing run. */
  abortUnstarted(call: ToolCall, lineage: Lineage = {}): Admission {
    this.batch.ledger.recordStart(call, lineage); // an ask raised ahead ends as cancelled with the batch
    return settledAtAdmission(call, lineage, {
      card: { title: call.name },
      candidate: errorCandidate(
        'the batch was cancelled before this call started; it did not run',
        ErrorCodes.ABORTED_BEFORE_DISPATCH,
      ),
      skipPostExecute: true,
    });
  }

  /** Batch cancel: running bodies are asked to stop (bash kills its process group). */
  cancelRunningBodies(): void {
    // Bodies that ended are not asked again: the SDK sends a cancel only for an activity still open.
    this.bodyScope?.cancel();
  }

  /** True while the call's body activity runs (a run_code program can call tools only then). */
  isExecuting(callId: string): boolean {
    return this.batch.ledger.isExecuting(callId);
  }

  /** Holds a sub-call's contexts for its run_code call: they follow that call's result, after the batch. */
  deferContexts(parentCallId: string, contexts: UserMessage[]): void {
    this.batch.ledger.deferContexts(parentCallId, contexts);
  }

  private settleRequest(adm: Admission, s: Settlement, share: number) {
    return {
      ref: withoutOwnDigest({ ...pastJudgment(adm.ref!, false), state: this.batch.state, inlineBytes: share }),
      candidate: s.candidate,
      skipPostExecute: s.skipPostExecute,
      contexts: {
        pre: [...adm.preContexts, ...this.batch.ledger.takeDeferred(adm.call.id)],
        body: s.bodyContexts ?? [],
        wrapper: s.wrapperContexts ?? [],
      },
    };
  }
}

/**
 * A call as a stage after the judgment gets it: without its record (the calls before it, for
 * session facts), which only pre-execute and the guards read, unless the guards run in that same
 * activity (a body after a person's yes). The record grows with each call before this one, and a
 * stage activity's input is recorded: carried to every body and settle, it made a batch's history
 * grow with the square of its calls (a batch of 50: 2,973 bytes a call, 5.4× bare).
 */
function pastJudgment(ref: CallRef, guardsHere: boolean): CallRef {
  const { record, ...rest } = ref;
  return record && guardsHere ? { ...rest, record } : rest;
}

/**
 * 3. The argument snapshot, or why there is none: arguments too long to have been sent, a model's
 * call id in the namespace of Code Mode sub-calls, or arguments that are not lossless JSON.
 */
function snapshotOf(call: ToolCall, lineage: Lineage): { args: JsonObject } | { problem: string } {
  if (call.argumentsChars !== undefined)
    return {
      problem: `the arguments were ${call.argumentsChars} characters, over the ${MAX_ARGUMENT_CHARS}-character limit for one call, so they were not sent and the call did not run. Split the work into smaller calls (e.g. write a large file in parts).`,
    };
  const reserved = lineage.parentCallId ? undefined : reservedCallIdProblem(call.id);
  if (reserved) return { problem: reserved };
  try {
    return { args: snapshotArguments(call.arguments) };
  } catch (err) {
    return { problem: (err as Error).message };
  }
}

function applyPatch(state: SessionState, patch: StatePatch): void {
  for (const [ns, entries] of Object.entries(patch)) {
    // Session grants come from people's decisions only; a body cannot give itself one.
    if (ns === GRANTS_NAMESPACE) continue;
    if (!getOwn(state, ns)) setOwn(state, ns, {});
    const target = state[ns];
    for (const [k, v] of Object.entries(entries)) {
      if (v === null) delete target[k];
      else setOwn(target, k, v);
    }
  }
}

/** The activities that run a call's body, with its tool's timeout and retry policy. */
function bodyActivities(p: ToolProfile, summary: string) {
  const retry = {
    // A body that must not run twice gets one attempt, whatever its retry policy says.
    maximumAttempts: p.atMostOnce ? 1 : p.retry.maximumAttempts,
    initialInterval: p.retry.initialIntervalMs,
    backoffCoefficient: p.retry.backoffCoefficient,
    maximumInterval: p.retry.maximumIntervalMs,
    nonRetryableErrorTypes: p.retry.nonRetryableErrorTypes,
  };
  // A tool that declared its body local (the choice is recorded in the preflight's profile, so a
  // replay takes the same path): a local activity in this worker, one marker in history. A body
  // that must not run twice never runs locally (a local result is lost with its workflow task).
  return bodyRunsLocally(p)
    ? proxyLocalActivities<StageActivities>({
        startToCloseTimeout: p.timeoutMs,
        retry,
        cancellationType: 'WAIT_CANCELLATION_COMPLETED',
        summary,
      })
    : proxyActivities<StageActivities>({
        startToCloseTimeout: p.timeoutMs,
        heartbeatTimeout: p.heartbeatTimeoutMs,
        retry,
        cancellationType: 'WAIT_CANCELLATION_COMPLETED',
        summary,
      });
}
