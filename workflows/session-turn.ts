// One step of a session's turn, as openai-agents-js's runner takes one: ask the model, run its
// tool calls as a batch, and say what comes next (NextStep). The loop (session.ts) decides when a
// step runs; the carry (session-carry.ts) holds what a step changes.
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowFailure,
  executeChild,
  isCancellation,
  ParentClosePolicy,
  proxyActivities,
  proxyLocalActivities,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import { FailureTypes } from '../pipeline/errors';
import { type BatchOutputWire, batchMessages } from '../codec/output';
import {
  intakeCalls,
  mergeToolMessages,
  type ModelActivities,
  type ModelStepOutput,
  type SessionInput,
  type SessionStatus,
  type TurnEndReason,
} from '../pipeline/session';
import type { BatchInput, ToolCall } from '../pipeline/types';
import { APPROVALS_MEMO, BATCH_WORKFLOW, batchWorkflowId, EMPTY_APPROVALS_MEMO, SESSION_ID } from './definitions';
import type { SessionFeatures } from './compat';
import type { Carry } from './session-carry';
import { SESSION_BATCH_WATCH_WORKFLOW, type SessionBatchActivities } from './session-definitions';

const DEFAULT_MAX_STEPS = 50;
const DEFAULT_CAN_EVENTS = 5_000;
/** Well under Temporal's 50 MB: continue-as-new long before the server would terminate the run. */
const CAN_HISTORY_BYTES = 8 * 1024 * 1024;

/** Whether this run's history is long enough to continue-as-new, as the current activation sees it. */
export function historyFull(input: SessionInput): boolean {
  const info = workflowInfo();
  return (
    info.historyLength >= (input.continueAsNewAfterEvents ?? DEFAULT_CAN_EVENTS) ||
    info.historySize >= CAN_HISTORY_BYTES ||
    info.continueAsNewSuggested
  );
}

/** What comes after a step: another step of the turn, or the turn's end and why. */
type NextStep = { type: 'run-again' } | { type: 'turn-ended'; reason: TurnEndReason; error?: string };

/** What the loop's handlers and a step share: where the session stands, and how to stop what runs. */
export interface SessionControl {
  status: SessionStatus;
  activeBatch?: string;
  interruptRequested: boolean;
  cancelRequested: boolean;
  modelScope?: CancellationScope;
  /**
   * Local model steps only: whether the history was full (historyFull) when the last step was
   * scheduled, as its recorded result hands it back. With local steps the loop decides to
   * continue-as-new from this and never reads the history's length itself: the activation a local
   * step's result reaches is not always the same workflow task on replay as when it was recorded
   * (a task completed while the step ran, to answer a query or as a heartbeat, moves it), so a
   * read near a local step could see another length on replay and take another branch.
   */
  fullAtLastStep: boolean;
  /**
   * Model steps as activities, batches by activity: whether the history was full when the step's
   * batch was asked for, read before its local activity ran. The loop decides from this, not from
   * the history's length, until the next model step is scheduled: a read after a local activity's
   * result could see another length on replay (as fullAtLastStep says).
   */
  fullAtBatch?: boolean;
  /** Cancels the model step or the batch under way (an interrupt, a cancel). */
  stopCurrent(): void;
}

/** How long a step's batch may run, a person's approvals included: as long as an attached child batch waits. */
const BATCH_TIMEOUT_MS = 30 * 24 * 3_600_000;
/**
 * The local try's bound: its wait (1.5 s) and the batch's start on a loaded server. Past it the
 * activity takes over; the session's workflow task is heartbeated by the worker meanwhile.
 */
const LOCAL_BATCH_TIMEOUT_MS = 10_000;

export class Turn {
  private readonly modelStep: ModelActivities['modelStep'];
  /** The activity that starts and awaits a step's batch, where the run starts batches so (features.batchByActivity). */
  private readonly sessionBatch?: SessionBatchActivities['sluiceSessionBatch'];
  /** The same, as a local activity: the step's first try, its wait short (worker/session-batch.ts); model steps as activities only. */
  private readonly sessionBatchHere?: SessionBatchActivities['sluiceSessionBatch'];
  /** Whether this run's model steps are local activities (modelCall.local, under its patch). */
  readonly local: boolean;

  constructor(
    private readonly input: SessionInput,
    private readonly carry: Carry,
    private readonly control: SessionControl,
    features: SessionFeatures,
  ) {
    const startToCloseTimeout = input.modelCall?.timeoutMs ?? 10 * 60_000;
    const retry = {
      maximumAttempts: input.modelCall?.maxAttempts ?? 5,
      initialInterval: input.modelCall?.initialIntervalMs ?? 1_000,
      backoffCoefficient: 2,
      nonRetryableErrorTypes: [FailureTypes.MODEL_REFUSED],
    };
    // A local model step runs in this worker within the workflow task that asks for it: no
    // activity task, and the batch starts in the same workflow task the reply arrives in, one
    // workflow task fewer a step (docs/performance.md, "Sessions"). The patch is read only when
    // the input asks for it, so a history without the option never meets its marker.
    this.local = input.modelCall?.local === true && features.localModelStep;
    this.modelStep = this.local
      ? proxyLocalActivities<ModelActivities>({ startToCloseTimeout, retry }).modelStep
      : proxyActivities<ModelActivities>({
          startToCloseTimeout,
          heartbeatTimeout: input.modelCall?.heartbeatTimeoutMs ?? 30_000,
          retry,
        }).modelStep;
    if (features.batchByActivity) {
      // Not with local model steps: the next step's local activity would follow this one's in the
      // same workflow task, so a turn of quick steps would be one workflow task, signals and
      // queries would wait for the worker's heartbeat of it (8 s), and a task lost on a loaded
      // worker would take all its steps with it (docs/performance.md, "Sessions: the batch
      // awaited by a local activity first").
      if (!this.local)
        this.sessionBatchHere = proxyLocalActivities<SessionBatchActivities>({
          startToCloseTimeout: LOCAL_BATCH_TIMEOUT_MS,
          // One try: whatever goes wrong, the activity below takes over and retries.
          retry: { maximumAttempts: 1 },
        }).sluiceSessionBatch;
      this.sessionBatch = proxyActivities<SessionBatchActivities>({
        startToCloseTimeout: BATCH_TIMEOUT_MS,
        // The session's liveness setting: a lost worker's wait is taken up by another worker
        // (which attaches to the batch) this long after its last beat.
        heartbeatTimeout: input.modelCall?.heartbeatTimeoutMs ?? 30_000,
        retry: { initialInterval: 1_000, maximumInterval: 30_000 },
      }).sluiceSessionBatch;
    }
  }

  /** One model step and its batch. */
  async step(): Promise<NextStep> {
    const { carry, control } = this;
    const c = carry.c;
    if (control.cancelRequested) return ended('cancelled');
    if (control.interruptRequested) return ended('interrupted');
    if (c.step >= (this.input.maxStepsPerTurn ?? DEFAULT_MAX_STEPS)) return ended('max-steps');
    c.step++;
    control.status = 'model';
    control.fullAtBatch = undefined;
    let reply: ModelStepOutput;
    try {
      control.modelScope = new CancellationScope();
      reply = await control.modelScope.run(() => this.modelStep(this.stepInput()));
    } catch (err) {
      if (isCancellation(err)) return ended(control.cancelRequested ? 'cancelled' : 'interrupted');
      const message = err instanceof ActivityFailure ? (err.cause?.message ?? err.message) : (err as Error).message;
      carry.record('model/failed', { turn: c.turn, step: c.step, message });
      return ended('model-error', message);
    } finally {
      control.modelScope = undefined;
    }
    if (this.local) control.fullAtLastStep = reply.historyFull === true;
    carry.modelReplied(reply);
    carry.record('model/message', {
      turn: c.turn,
      step: c.step,
      text: reply.assistant.text,
      toolCalls: reply.assistant.toolCalls.map((t) => ({ id: t.id, name: t.name })),
      usage: { ...reply.usage },
      finishReason: reply.finishReason,
      // The run's history so far, for anyone checking that a step's cost stays flat.
      historyEvents: workflowInfo().historyLength,
      historyBytes: workflowInfo().historySize,
      run: c.runs,
    });
    if (carry.budgetSpent()) return ended('budget');
    if (!reply.assistant.toolCalls.length) return ended('done');
    return this.runTools(reply);
  }

  /** What the model step sees: the stored transcript's head and the messages not stored yet. */
  private stepInput() {
    const { input } = this;
    const c = this.carry.c;
    return {
      sessionId: input.sessionId,
      turn: c.turn,
      step: c.step,
      model: input.model,
      ...(input.system ? { system: input.system } : {}),
      ...(input.tools ? { tools: input.tools } : {}),
      head: c.head,
      append: c.unstored,
      ...(this.local ? { historyFull: historyFull(input) } : {}),
    };
  }

  /** The reply's tool calls as one batch; their results join the transcript. */
  private async runTools(reply: ModelStepOutput): Promise<NextStep> {
    const { carry, control } = this;
    const c = carry.c;
    const intake = intakeCalls(reply.assistant.toolCalls);
    for (const r of intake.rejected)
      carry.record('tool/rejected', {
        turn: c.turn,
        step: c.step,
        callId: r.message.toolCallId,
        name: r.message.toolName,
        message: r.message.error?.message ?? '',
      });
    let output: BatchOutputWire | undefined;
    if (intake.calls.length) {
      control.status = 'tools';
      try {
        output = await this.runBatch(intake.calls);
      } catch (err) {
        const message =
          err instanceof ChildWorkflowFailure || err instanceof ActivityFailure
            ? (err.cause?.message ?? err.message)
            : (err as Error).message;
        return ended('batch-failed', message);
      }
      carry.batchDone(output);
    }
    carry.appendUnstored(mergeToolMessages(intake, output ? batchMessages(output) : []));
    if (output?.concludesTurn) return ended('concluded');
    if (output?.cancelled) return ended(control.cancelRequested ? 'cancelled' : 'interrupted');
    return { type: 'run-again' };
  }

  private runBatch(calls: ToolCall[]): Promise<BatchOutputWire> {
    const { carry, control, input } = this;
    const c = carry.c;
    const batchInput: BatchInput = {
      sessionId: input.sessionId,
      turn: c.turn,
      step: c.step,
      calls,
      startSeq: c.seq,
      state: c.state,
      ...(input.batch ? { options: input.batch } : {}),
      ...(c.calls?.length ? { earlier: c.calls } : {}),
      // Said even before the session has a call, so a policy's facts are never judged short.
      ...(input.sessionFacts ? { reach: 'session' as const } : {}),
      ...(input.factsScope !== undefined ? { factsScope: input.factsScope } : {}),
    };
    const workflowId = batchWorkflowId(input.sessionId, c.turn, c.step);
    const staticSummary = `Tool batch: session ${input.sessionId}, turn ${c.turn}, step ${c.step}, ${calls.length} call(s)`;
    // The batch is started and awaited outside any cancellation: an interrupt cancels it by
    // request (getExternalWorkflowHandle), so it drains, aborts what has not started, and still
    // hands back every result.
    if (this.sessionBatch) {
      const [run, here] = [this.sessionBatch, this.sessionBatchHere];
      const request = {
        input: batchInput,
        workflowId,
        staticSummary,
        takenMessage: takenBatchIdMessage(input.sessionId, c.turn, c.step, workflowId),
      };
      if (here) control.fullAtBatch = historyFull(input);
      return CancellationScope.nonCancellable(async () => {
        control.activeBatch = workflowId;
        try {
          const near = here && (await batchHere(here, request));
          if (near && !('stillRunning' in near)) return near;
          for (let look = 1; ; look++) {
            const got = await run(request);
            if (!('stillRunning' in got)) return got;
            await watchBatchEnd(workflowId, look);
          }
        } finally {
          control.activeBatch = undefined;
        }
      });
    }
    return CancellationScope.nonCancellable(async () => {
      const handle = await startChild<(i: BatchInput) => Promise<BatchOutputWire>>(BATCH_WORKFLOW, {
        workflowId,
        args: [batchInput],
        parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        // As SluiceClient.startBatch: the batch keeps its approvals readable with no worker.
        memo: { [APPROVALS_MEMO]: EMPTY_APPROVALS_MEMO },
        // As SluiceClient.startBatch: started findable by session, so the batch does not upsert
        // the attribute in its first workflow task (one history event and one server write fewer
        // a step). Data on the same command: a replay compares the child's id and type only.
        typedSearchAttributes: [{ key: SESSION_ID, value: input.sessionId }],
        staticSummary,
      }).catch((err: unknown): never => {
        // REJECT_DUPLICATE: the id is taken (a runBatch under this session id, or an earlier run of
        // the session). The turn ends batch-failed as before; the message says why and what to do.
        if (err instanceof WorkflowExecutionAlreadyStartedError)
          throw new Error(takenBatchIdMessage(input.sessionId, c.turn, c.step, workflowId));
        throw err;
      });
      control.activeBatch = workflowId;
      if (control.interruptRequested || control.cancelRequested) control.stopCurrent();
      try {
        return await handle.result();
      } finally {
        control.activeBatch = undefined;
      }
    });
  }
}

/**
 * The step's first try at its batch: the batch activity run as a local activity, in the workflow
 * task that has the model's reply, waiting SESSION_BATCH_LOCAL_WAIT_MS at most. Its answer (the
 * output, or that the batch still runs) reaches the step with no trip through the server. Any
 * failure but the batch's own (its id taken, or it ended without an output) is answered undefined:
 * the activity takes over, and attaches to the batch if this try started it.
 */
async function batchHere(
  here: SessionBatchActivities['sluiceSessionBatch'],
  request: Parameters<SessionBatchActivities['sluiceSessionBatch']>[0],
): Promise<Awaited<ReturnType<SessionBatchActivities['sluiceSessionBatch']>> | undefined> {
  try {
    return await here(request);
  } catch (err) {
    if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure) {
      if (err.cause.type === FailureTypes.BATCH_FAILED) throw err;
    }
    return undefined;
  }
}

/**
 * Waits, holding no worker slot, for a batch the batch activity left running: a child of the
 * session (session-batch-watch.ts) that ends when the batch does, and asks it to cancel if the
 * session closes first. Its id is the batch's and the look's: unique in the session, the same on
 * replay.
 */
async function watchBatchEnd(batchId: string, look: number): Promise<void> {
  await executeChild(SESSION_BATCH_WATCH_WORKFLOW, {
    workflowId: `${batchId}:watch-${look}`,
    args: [{ batchId }],
    parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    staticSummary: `Waits for ${batchId} to end`,
  });
}

/** Why a turn's batch could not start: its workflow id is another batch's. As SessionIdConflictError says it. */
function takenBatchIdMessage(sessionId: string, turn: number, step: number, workflowId: string): string {
  return `session ${sessionId}: turn ${turn}, step ${step} could not start its tool batch, because workflow ${workflowId} already exists: a batch was run under the same session id with runBatch or \`sluice batch\` (sessionId '${sessionId}', turn ${turn}, step ${step}), or by an earlier run of this session, and a batch's workflow id is never reused. A durable session numbers its batches and events itself and needs a session id no other batch uses: start a new session with another sessionId, and give runBatch calls session ids of their own.`;
}

function ended(reason: TurnEndReason, error?: string): Extract<NextStep, { type: 'turn-ended' }> {
  return error === undefined ? { type: 'turn-ended', reason } : { type: 'turn-ended', reason, error };
}
