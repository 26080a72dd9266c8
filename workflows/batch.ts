// One batch of tool calls from one assistant message, as one durable workflow.
//
//   tool/call → pre-execute → (approval) → guards → execute waterfall → body
//     → post-execute → normalize → finalizeContent → tools/result → tool/result
//   … every call of the batch settled → additionalContexts injected as user/message
//
// Admission (tool/call to guards) goes one call at a time in model order; the first ask also
// raises the asks of later calls, so a person decides them together (call-pipeline.ts). Bodies of
// concurrency-safe calls overlap up to maxParallel; any other call is a barrier. Results commit
// in model order. A cancel stops new calls, drains started ones, and aborts the rest.
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  patched,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { batchInputProblem } from '../pipeline/batch-input';
import { outputProblem } from '../pipeline/budget';
import { type BatchOutputWire, compactBatchOutput } from '../pipeline/output';
import { FailureTypes } from '../pipeline/errors';
import { grantsOf } from '../pipeline/grants';
import type {
  BatchInput,
  BatchOutput,
  BatchState,
  CallStage,
  GrantUse,
  ModelMessage,
  SessionState,
  ToolResult,
} from '../pipeline/types';
import type { FirstRoundActivities, SeqClaim, SessionActivities } from '../pipeline/seq-claim';
import { Approvals } from './approvals';
import { CallPipeline, DEFAULT_MAX_PARALLEL, type Admission, type Settlement } from './call-pipeline';
import { CodeCalls } from './code-calls';
import { SEQ_CONFLICT, SESSION_ID, stateQuery } from './definitions';
import { EventLog } from './event-log';

const SEQ_CLAIM_PATCH = 'sluice-seq-claim';
const ASKS_TOGETHER_PATCH = 'sluice-asks-together';
/** Content once in the output, values and error codes in tool messages (pipeline/output.ts). */
const CONTENT_ONCE_PATCH = 'sluice-content-once';
/**
 * No await where the value is at hand (a free slot, an outcome already there, a preflight or a
 * settle done ahead): the SDK captures a stack for every promise a workflow makes, which was half
 * of a batch's workflow CPU (docs/performance.md). Fewer awaits change the order in which
 * concurrent calls' commands can come out, so batches recorded before replay as they ran.
 */
const LEAN_AWAITS_PATCH = 'sluice-lean-awaits';
/**
 * Every change of release 0.2 in one patch: a new batch records this one marker (and its
 * TemporalChangeVersion upsert) instead of one per change, six history events fewer. Batches
 * recorded on the way to 0.2 replay by the patches above, which they carry.
 */
const BATCH_0_2_PATCH = 'sluice-batch-0.2';

const { claimSessionSeq: claimActivity, claimThenPreflight } = proxyLocalActivities<
  SessionActivities & FirstRoundActivities
>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 5, initialInterval: '500ms', maximumInterval: '10s' },
});

const claimRequest = (input: BatchInput) => ({
  sessionId: input.sessionId,
  startSeq: input.startSeq ?? 0,
  batchId: workflowInfo().workflowId,
});

/**
 * Two batches numbering events from the same seq would collide in the session log; the one that
 * claims second fails here, before it records anything or runs any call, and says where to start.
 */
async function claimSessionSeq(input: BatchInput): Promise<void> {
  refuseOnConflict(await claimActivity(claimRequest(input)));
}

/**
 * The claim and the first group's preflight in one worker round (release 0.2 on): the preflight
 * runs only once the claim holds, and records nothing; its results wait for their calls.
 */
async function claimThenFirstPreflight(input: BatchInput, pipeline: CallPipeline): Promise<void> {
  const group = pipeline.firstPreflightGroup();
  const reply = await claimThenPreflight({ claim: claimRequest(input), refs: group.map((g) => g.ref) });
  refuseOnConflict(reply.claim);
  if (reply.preflight) pipeline.firstPreflightDone(group, reply.preflight);
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
  const problem = batchInputProblem(input);
  if (problem) throw ApplicationFailure.nonRetryable(problem, FailureTypes.INVALID_BATCH);
  const release02 = patched(BATCH_0_2_PATCH);
  // Findable by session however it was started (client, parent workflow, stock CLI); a batch the
  // client started has it already, so its history gains no command (and histories recorded
  // before this existed replay unchanged).
  if (
    workflowInfo().typedSearchAttributes.get(SESSION_ID) !== input.sessionId &&
    (release02 || patched('sluice-session-attribute'))
  )
    upsertSearchAttributes([{ key: SESSION_ID, value: input.sessionId }]);
  const events = new EventLog(input.sessionId, input.startSeq ?? 0);
  const state: SessionState = JSON.parse(JSON.stringify(input.state ?? {}));
  let cancelRequested = false;
  // Decided in the first activation, before anything else can run: batches recorded before the
  // asks of a batch were raised together replay asking one at a time.
  const asksTogether = release02 || patched(ASKS_TOGETHER_PATCH);
  const grantUses: GrantUse[] = [];
  const approvals = new Approvals(
    events,
    () => cancelRequested,
    () => ({ grants: grantsOf(state), uses: grantUses }),
  );
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
  // Batches recorded before content-once replay with the budget shares they had.
  const contentOnce = release02 || patched(CONTENT_ONCE_PATCH);
  const leanAwaits = release02 || patched(LEAN_AWAITS_PATCH);
  const pipeline = new CallPipeline(input, events, approvals, state, tracker, () => cancelRequested, {
    asksTogether,
    grantUses,
    contentOnce,
    leanAwaits,
    outcomeUnknown: release02,
  });
  new CodeCalls(
    input,
    pipeline,
    () => cancelRequested,
    (callId, name, parentCallId) => stages.set(callId, { callId, name, stage: 'queued', parentCallId }),
  );
  let settled = false;

  setHandler(
    stateQuery,
    (): BatchState => ({
      workflowId: workflowInfo().workflowId,
      sessionId: input.sessionId,
      turn: input.turn,
      step: input.step,
      status: settled ? 'completed' : approvals.pending.length ? 'awaiting-approval' : 'running',
      cancelRequested,
      calls: [...stages.values()],
      pending: approvals.pending,
      decided: approvals.decided,
      ...(grantsOf(state).length ? { grants: grantsOf(state) } : {}),
      ...(grantUses.length ? { grantUses } : {}),
      nextSeq: events.nextSeq,
    }),
  );

  CancellationScope.current().cancelRequested.catch(() => {
    cancelRequested = true;
    pipeline.cancelRunningBodies();
  });

  // Before the first event; batches recorded before the claim existed replay without it.
  if (release02) await claimThenFirstPreflight(input, pipeline);
  else if (patched(SEQ_CLAIM_PATCH)) await claimSessionSeq(input);

  // Everything below drains to the end even when the batch is cancelled: cancel is a flag the
  // stages look at, so every started call still commits exactly one tool/result.
  const results = await CancellationScope.nonCancellable(async () => {
    const n = input.calls.length;
    const admissions: Admission[] = [];
    const outcomes: Promise<Settlement>[] = [];
    const maxParallel = Math.max(1, input.options?.maxParallel ?? DEFAULT_MAX_PARALLEL);
    const running = new Set<Promise<Settlement>>();

    const admitInModelOrder = async () => {
      for (const [i, call] of input.calls.entries()) {
        if (cancelRequested) {
          admissions[i] = pipeline.abortUnstarted(call);
          outcomes[i] = pipeline.skipBody(admissions[i]);
          continue;
        }
        const adm = await pipeline.admit(call);
        admissions[i] = adm;
        if (adm.verdict.kind !== 'run') {
          outcomes[i] = pipeline.skipBody(adm);
          continue;
        }
        const exclusive = adm.profile?.concurrencySafe !== true;
        // a barrier: nothing runs beside it
        if (exclusive && (!leanAwaits || running.size > 0)) await Promise.all(running);
        if (!leanAwaits || running.size >= maxParallel) await condition(() => running.size < maxParallel);
        const body = pipeline.runBody(adm);
        outcomes[i] = body;
        if (exclusive) {
          await body;
        } else {
          running.add(body);
          const done = () => void running.delete(body);
          body.then(done, done);
        }
      }
    };

    const commitInModelOrder = async () => {
      const out: ToolResult[] = [];
      for (let i = 0; i < n; i++) {
        if (!leanAwaits || outcomes[i] === undefined) await condition(() => outcomes[i] !== undefined);
        out.push(await pipeline.settle(admissions[i], await outcomes[i]));
      }
      return out;
    };

    const [, committed] = await Promise.all([admitInModelOrder(), commitInModelOrder()]);
    return committed;
  });

  // The batch has settled: only now do the queued contexts follow the tool results, FIFO.
  const messages: ModelMessage[] = input.calls.map((call, i) => ({
    role: 'tool',
    toolCallId: call.id,
    toolName: call.name,
    content: results[i].content,
    isError: results[i].isError,
    ...(contentOnce && results[i].error ? { error: results[i].error } : {}),
    ...(contentOnce && results[i].value !== undefined ? { value: results[i].value } : {}),
  }));
  input.calls.forEach((call, i) => {
    (results[i].additionalContexts ?? []).forEach((ctx, k) => {
      const id = `${call.id}:context:${k}`;
      events.record('user/message', {
        id,
        role: 'user',
        content: ctx.content,
        source: ctx.source ?? `tool:${call.name}`,
      });
      messages.push({ role: 'user', content: ctx.content, source: ctx.source ?? `tool:${call.name}` });
    });
  });
  settled = true;

  events.close();
  await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  const output: BatchOutput = {
    sessionId: input.sessionId,
    turn: input.turn,
    step: input.step,
    messages,
    results: input.calls.map((call, i) => ({ callId: call.id, name: call.name, result: results[i] })),
    events: events.events,
    nextSeq: events.nextSeq,
    concludesTurn: results.some((r) => r.concludesTurn === true),
    cancelled: cancelRequested,
    state,
  };
  // Last line of defence: an output over Temporal's payload limit would fail the workflow task
  // forever. The results are in the session log and this history either way.
  const returned: BatchOutputWire = contentOnce ? compactBatchOutput(output) : output;
  const tooBig = outputProblem(returned);
  if (tooBig) throw ApplicationFailure.nonRetryable(tooBig, FailureTypes.OUTPUT_TOO_LARGE);
  return returned;
}
