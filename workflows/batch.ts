// One batch of tool calls from one assistant message, as one durable workflow.
//
//   tool/call → pre-execute → (approval) → guards → execute waterfall → body
//     → post-execute → normalize → finalizeContent → tools/result → tool/result
//   … every call of the batch settled → additionalContexts injected as user/message
//
// The walk, top to bottom, as toolBatch reads: validate the input → open the batch (its parts and
// handlers) and claim its seqs → admit each call in model order → wait for every call to settle →
// inject the additionalContexts → the output. Admission (tool/call to guards) goes one call at a
// time in model order; the first ask also raises the asks of later calls, so a person decides them
// together (call-pipeline.ts). Each call leaves admission one of three ways (admitCall): aborted
// before it started, settled at admission, or run. Bodies of concurrency-safe calls overlap up to
// maxParallel; any other call is a barrier (BodySlots). Results commit in model order. A cancel
// stops new calls, drains started ones, and aborts the rest. The waits are Stages
// (stage-runner.ts), so the walk has an async function's microtask timing exactly and a batch
// issues its commands in the order recorded histories hold.
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { batchInputProblem } from '../pipeline/batch-input';
import { InlineBudget, outputProblem } from '../pipeline/budget';
import { type BatchOutputWire, batchOutputWire } from '../codec/output';
import { FailureTypes } from '../pipeline/errors';
import { grantsOf } from '../pipeline/grants';
import { withoutOwnDigest } from '../codec/stages';
import type {
  BatchInput,
  BatchOutput,
  BatchState,
  CallStage,
  GrantUse,
  ModelMessage,
  SessionState,
  ToolCall,
  ToolResult,
} from '../pipeline/types';
import type { SeqClaim } from '../pipeline/seq-claim';
import type { FirstRoundActivities } from '../codec/stages';
import { Approvals } from './approvals';
import type { Admission, Settlement } from './admission';
import { CallLedger } from './call-ledger';
import { CallPipeline, DEFAULT_MAX_PARALLEL } from './call-pipeline';
import { CodeCalls } from './code-calls';
import { SEQ_CONFLICT, SESSION_ID, stateQuery } from './definitions';
import { EventLog } from './event-log';
import { LeanScope } from './lean-scope';
import { runStage, type Stage, waitFor } from './stage-runner';
import { Placement } from './placement';
import { batchFeatures, type MemoFeatures } from './compat';
import { batchEndWatch } from './session-batch-watch';

const { claimThenPreflight } = proxyLocalActivities<FirstRoundActivities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 5, initialInterval: '500ms', maximumInterval: '10s' },
});

const claimRequest = (input: BatchInput) => ({
  sessionId: input.sessionId,
  startSeq: input.startSeq ?? 0,
  batchId: workflowInfo().workflowId,
});

/**
 * The claim and the first group's preflight in one worker round: the preflight runs only once the
 * claim holds, and records nothing; its results wait for their calls. Two batches numbering events
 * from the same seq would collide in the session log; the one that claims second fails here, before
 * it records anything or runs any call, and says where to start. Returns whether the round says a
 * batch of one call runs straight (FirstRound.straight).
 */
async function claimThenFirstPreflight(input: BatchInput, runner: Placement): Promise<boolean> {
  const group = runner.firstGroup();
  const reply = await claimThenPreflight({
    claim: claimRequest(input),
    refs: group.map((g) => withoutOwnDigest(g.ref)),
    batchCalls: input.calls.length,
  });
  refuseOnConflict(reply.claim);
  if (reply.preflight) runner.firstGroupPreflighted(group, reply.preflight);
  return reply.straight === true;
}

function refuseOnConflict(claim: SeqClaim): void {
  if (claim.ok) return;
  throw ApplicationFailure.create({
    type: SEQ_CONFLICT,
    nonRetryable: true,
    message: `${claim.problem}. No call ran and nothing was recorded. Submit the batch again with startSeq ${claim.nextSeq} (the previous batch's nextSeq); \`sluice batch\` does that when --start-seq is not given.`,
    details: [{ nextSeq: claim.nextSeq }],
  });
}

export async function toolBatch(input: BatchInput): Promise<BatchOutputWire> {
  // A session step waiting on this batch without a worker slot hears of its end (session-batch-watch.ts).
  const endWatch = batchEndWatch();
  try {
    return await runToolBatch(input);
  } finally {
    await endWatch.tell();
  }
}

async function runToolBatch(input: BatchInput): Promise<BatchOutputWire> {
  // 1. Validate: a bad batch fails before it records anything.
  const problem = batchInputProblem(input);
  if (problem) throw ApplicationFailure.nonRetryable(problem, FailureTypes.INVALID_BATCH);

  // 2. Open the batch: which release recorded this history (workflows/compat.ts, read first, where
  // 1.0.0 read its patch), its search attribute, its parts and handlers; then, before the first
  // event, the claim of its seqs (a conflict fails here) and the first group's preflight.
  const features = batchFeatures();
  findableBySession(input);
  const batch = openBatch(input, features);
  const straight = await claimThenFirstPreflight(input, batch.runner);

  // 3–4. Admit each call and wait for the batch to settle. Everything here drains to the end even
  // when the batch is cancelled: cancel is a flag the stages look at, so every started call still
  // commits exactly one tool/result. One call has no order to keep and nothing beside it: it runs
  // straight when its first round says so. The count is checked here too: workers of the first
  // build to write `straight` wrote it for a first group of one call, whatever the batch's size,
  // and those batches replay on the scheduler.
  const results = await LeanScope.nonCancellable(() =>
    straight && input.calls.length === 1 ? runOneCall(input.calls[0], batch) : runInModelOrder(input, batch),
  );

  // 5. The batch has settled: only now do the queued contexts follow the tool results, FIFO.
  const messages = [...toolMessages(input, results), ...injectContexts(input, results, batch.events)];
  batch.settled = true;
  batch.events.close();
  // Usually no handler is still running here. Entering a scope and a condition that is already
  // true issues no command, but made 18 of a one-call batch's 116 promises, each with a stack
  // trace from the SDK's hook (docs/performance.md, "Worker CPU per call: where it goes").
  if (!allHandlersFinished()) await CancellationScope.nonCancellable(() => condition(allHandlersFinished));

  // 6. The output.
  return batchOutput(input, batch, results, messages);
}

/**
 * Findable by session however it was started (client, parent workflow, stock CLI); a batch the
 * client started has it already, so its history gains no command.
 */
function findableBySession(input: BatchInput): void {
  if (workflowInfo().typedSearchAttributes.get(SESSION_ID) !== input.sessionId)
    upsertSearchAttributes([{ key: SESSION_ID, value: input.sessionId }]);
}

/** A batch under way: what its handlers, its scheduler and its output share. */
interface OpenBatch {
  events: EventLog;
  state: SessionState;
  pipeline: CallPipeline;
  runner: Placement;
  cancelRequested: boolean;
  settled: boolean;
}

/**
 * The batch's parts and its handlers (decisions, Code Mode sub-calls, the state query, cancel),
 * in the order the first activation has always made them: a decision that came with the start
 * runs when its handler is set.
 */
function openBatch(input: BatchInput, features: MemoFeatures): OpenBatch {
  const events = new EventLog(input.sessionId, input.startSeq ?? 0);
  const state: SessionState = JSON.parse(JSON.stringify(input.state ?? {}));
  const batch = { events, state, cancelRequested: false, settled: false } as OpenBatch;
  const cancelled = () => batch.cancelRequested;
  const grantUses: GrantUse[] = [];
  const approvals = new Approvals(events, cancelled, () => ({ grants: grantsOf(state), uses: grantUses }), features);
  const stages = new Map<
    string,
    { callId: string; name: string; stage: CallStage; isError?: boolean; parentCallId?: string }
  >(input.calls.map((c) => [c.id, { callId: c.id, name: c.name, stage: 'queued' }]));
  const tracker = {
    stage(callId: string, stage: CallStage, isError?: boolean) {
      const entry = stages.get(callId) ?? { callId, name: '?', stage };
      stages.set(callId, { ...entry, stage, ...(isError !== undefined ? { isError } : {}) });
    },
  };
  batch.runner = new Placement(input, state);
  batch.pipeline = new CallPipeline({
    input,
    events,
    approvals,
    state,
    tracker,
    isCancelled: cancelled,
    budget: new InlineBudget(input.calls),
    runner: batch.runner,
    ledger: new CallLedger(input, events),
    grantUses,
    clientWaits: [],
  });
  new CodeCalls(input, batch.pipeline, cancelled, (callId, name, parentCallId) =>
    stages.set(callId, { callId, name, stage: 'queued', parentCallId }),
  );

  setHandler(
    stateQuery,
    (): BatchState => ({
      workflowId: workflowInfo().workflowId,
      sessionId: input.sessionId,
      turn: input.turn,
      step: input.step,
      status: batch.settled ? 'completed' : approvals.pending.length ? 'awaiting-approval' : 'running',
      cancelRequested: batch.cancelRequested,
      calls: [...stages.values()],
      pending: approvals.pending,
      decided: approvals.decided,
      ...(grantsOf(state).length ? { grants: grantsOf(state) } : {}),
      ...(grantUses.length ? { grantUses } : {}),
      nextSeq: events.nextSeq,
    }),
  );

  CancellationScope.current().cancelRequested.catch(() => {
    batch.cancelRequested = true;
    batch.pipeline.cancelRunningBodies();
  });
  return batch;
}

/** A call out of admission: what admission made of it, and its settlement on the way. */
interface Admitted {
  adm: Admission;
  outcome: Promise<Settlement>;
  /** A body that runs alone: the next call's admission waits for it. */
  exclusive?: boolean;
}

/**
 * Admits one call, in one of three endings: aborted before it started (the batch was cancelled),
 * settled at admission (bad arguments, a denial, a failed stage), or run (its body started once a
 * slot is free). A Stage, so the scheduler's loop keeps an async function's timing.
 */
function* admitCall(call: ToolCall, batch: OpenBatch, slots: BodySlots): Stage<Admitted> {
  const { pipeline } = batch;
  if (batch.cancelRequested) {
    const adm = pipeline.abortUnstarted(call);
    return { adm, outcome: pipeline.skipBody(adm) };
  }
  const adm = yield* waitFor(pipeline.admit(call));
  if (adm.verdict.kind !== 'run') return { adm, outcome: pipeline.skipBody(adm) };
  const exclusive = adm.profile?.concurrencySafe !== true;
  const wait = slots.wait(exclusive);
  if (wait) yield* waitFor(wait);
  return { adm, outcome: slots.start(pipeline.runBody(adm), exclusive), exclusive };
}

/**
 * Where bodies wait to start: an exclusive body (any call not concurrency-safe) is a barrier, so
 * nothing runs beside it; concurrency-safe bodies run side by side, at most maxParallel at once.
 */
class BodySlots {
  private readonly running = new Set<Promise<Settlement>>();
  constructor(private readonly maxParallel: number) {}

  /**
   * What a body waits for before it starts, if anything: one wait at most, since once the bodies
   * running before a barrier have ended, none is left.
   */
  wait(exclusive: boolean): Promise<unknown> | undefined {
    if (exclusive && this.running.size > 0) return Promise.all(this.running);
    if (this.running.size >= this.maxParallel) return condition(() => this.running.size < this.maxParallel);
    return undefined;
  }

  /** A body started: a concurrency-safe one holds its slot until it ends. */
  start(body: Promise<Settlement>, exclusive: boolean): Promise<Settlement> {
    if (!exclusive) {
      this.running.add(body);
      const done = () => void this.running.delete(body);
      body.then(done, done);
    }
    return body;
  }
}

/**
 * The scheduler: each call admitted in model order (the next once an exclusive body has ended),
 * and beside that, the results settled in model order as each call's settlement comes.
 */
async function runInModelOrder(input: BatchInput, batch: OpenBatch): Promise<ToolResult[]> {
  const admitted: Admitted[] = [];
  const slots = new BodySlots(Math.max(1, input.options?.maxParallel ?? DEFAULT_MAX_PARALLEL));

  function* admitEach(): Stage<void> {
    for (const call of input.calls) {
      const a = yield* admitCall(call, batch, slots);
      admitted.push(a);
      if (a.exclusive) yield* waitFor(a.outcome);
    }
  }

  const settleEach = async () => {
    const out: ToolResult[] = [];
    for (let i = 0; i < input.calls.length; i++) {
      if (admitted[i] === undefined) await condition(() => admitted[i] !== undefined);
      out.push(await batch.pipeline.settle(admitted[i].adm, await admitted[i].outcome));
    }
    return out;
  };

  const [, settled] = await Promise.all([runStage(admitEach()), settleEach()]);
  return settled;
}

/**
 * A batch of one call, straight through: the scheduler's steps for one call (admitCall, then its
 * settle), without its two loops, their Promise.all and the wait for the outcome, which made about
 * a fifth of such a batch's workflow promises, each with a stack trace from the SDK's hook
 * (docs/performance.md, "A one-call batch's extra CPU, whole"). The same stages in the same order,
 * so the same commands; a batch recorded before the first round said `straight` replays on the
 * scheduler (compat.ts, UNMARKED_CHANGES.oneCallStraight). Nothing runs beside the one body, so
 * no slot waits.
 */
function runOneCall(call: ToolCall, batch: OpenBatch): Promise<ToolResult[]> {
  return runStage(
    (function* () {
      const { adm, outcome } = yield* admitCall(call, batch, new BodySlots(1));
      const settlement = yield* waitFor(outcome);
      return [yield* waitFor(batch.pipeline.settle(adm, settlement))];
    })(),
  );
}

/** The tool messages, in model order. */
function toolMessages(input: BatchInput, results: ToolResult[]): ModelMessage[] {
  return input.calls.map((call, i) => ({
    role: 'tool',
    toolCallId: call.id,
    toolName: call.name,
    content: results[i].content,
    isError: results[i].isError,
    ...(results[i].error ? { error: results[i].error } : {}),
    ...(results[i].value !== undefined ? { value: results[i].value } : {}),
  }));
}

/** Each result's additionalContexts, FIFO, as user messages, each recorded as a user/message event. */
function injectContexts(input: BatchInput, results: ToolResult[], events: EventLog): ModelMessage[] {
  return input.calls.flatMap((call, i) =>
    (results[i].additionalContexts ?? []).map((ctx, k): ModelMessage => {
      const source = ctx.source ?? `tool:${call.name}`;
      events.record('user/message', { id: `${call.id}:context:${k}`, role: 'user', content: ctx.content, source });
      return { role: 'user', content: ctx.content, source };
    }),
  );
}

/**
 * The batch's output, packed: data only, no marker (compat.ts, UNMARKED_CHANGES.packedOutput).
 * Last line of defence: an output over Temporal's payload limit would fail the workflow task
 * forever, so it fails the batch instead; the results are in the session log and this history
 * either way.
 */
function batchOutput(
  input: BatchInput,
  batch: OpenBatch,
  results: ToolResult[],
  messages: ModelMessage[],
): BatchOutputWire {
  const output: BatchOutput = {
    sessionId: input.sessionId,
    turn: input.turn,
    step: input.step,
    messages,
    results: input.calls.map((call, i) => ({ callId: call.id, name: call.name, result: results[i] })),
    events: batch.events.events,
    nextSeq: batch.events.nextSeq,
    concludesTurn: results.some((r) => r.concludesTurn === true),
    cancelled: batch.cancelRequested,
    state: batch.state,
  };
  const returned = batchOutputWire(output);
  const tooBig = outputProblem(returned);
  if (tooBig) throw ApplicationFailure.nonRetryable(tooBig, FailureTypes.OUTPUT_TOO_LARGE);
  return returned;
}
