// A durable agent session: the whole loop (ask the model, run its tool calls as a batch, ask
// again) as one workflow that owns the transcript, the seq, the session state and the counters.
//
//   user message → model step (activity) → tool calls? → toolBatch child → results, contexts
//     → model step → ... → no calls / concludesTurn / step limit → the turn ends
//
// The transcript lives in the result store (agent/transcript-store.ts); this workflow carries only
// the stored head's reference, the messages not stored yet, and a short tail for the query. So a
// step adds history in proportion to its new messages, and continue-as-new carries a few kilobytes.
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowFailure,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  ParentClosePolicy,
  proxyActivities,
  proxySinks,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import {
  type AgentMessage,
  carryOf,
  contentText,
  type ModelActivities,
  intakeCalls,
  mergeToolMessages,
  type QueuedMessage,
  type SessionCarry,
  type SessionEndReason,
  type SessionInput,
  type SessionOutput,
  type SessionStatus,
  type SessionView,
  type TurnEndReason,
  type TurnOutcome,
  tailCopy,
} from '../pipeline/session';
import { FailureTypes } from '../pipeline/errors';
import type { EventPayloads, EventType } from '../pipeline/events';
import type { BatchOutputWire } from '../pipeline/output';
import type { BatchInput, JsonObject, SessionEvent, ToolCall } from '../pipeline/types';
import { APPROVALS_MEMO, BATCH_WORKFLOW, batchWorkflowId, EMPTY_APPROVALS_MEMO } from './definitions';
import { sessionFeatures } from './compat';
import type { SessionEventSinks } from './event-log';
import {
  cancelSessionSignal,
  interruptSignal,
  messageSignal,
  sendMessageUpdate,
  sessionQuery,
} from './session-definitions';

const { sessionEvents } = proxySinks<SessionEventSinks>();

const TAIL = 20;
const RECENT_TURNS = 20;
const DEFAULT_MAX_STEPS = 50;
const DEFAULT_CAN_EVENTS = 5_000;
/** Well under Temporal's 50 MB: continue-as-new long before the server would terminate the run. */
const CAN_HISTORY_BYTES = 8 * 1024 * 1024;

export async function agentSession(input: SessionInput): Promise<SessionOutput> {
  const problem = sessionInputProblem(input);
  if (problem) throw ApplicationFailure.nonRetryable(problem, FailureTypes.INVALID_SESSION);
  // Which release recorded this history (workflows/compat.ts): each read where it is used.
  const features = sessionFeatures();
  const c: SessionCarry = input.carried ?? {
    turn: 0,
    step: 0,
    seq: 0,
    state: {},
    head: null,
    unstored: [],
    tail: [],
    messageCount: 0,
    usage: { inputTokens: 0, outputTokens: 0, steps: 0 },
    inbox: input.message ? [{ id: `${input.sessionId}:first`, content: input.message }] : [],
    turnsCompleted: 0,
    recentTurns: [],
    runs: 0,
  };
  c.runs++;
  const { modelStep } = proxyActivities<ModelActivities>({
    startToCloseTimeout: input.modelCall?.timeoutMs ?? 10 * 60_000,
    heartbeatTimeout: input.modelCall?.heartbeatTimeoutMs ?? 30_000,
    retry: {
      maximumAttempts: input.modelCall?.maxAttempts ?? 5,
      initialInterval: input.modelCall?.initialIntervalMs ?? 1_000,
      backoffCoefficient: 2,
      nonRetryableErrorTypes: [FailureTypes.MODEL_REFUSED],
    },
  });

  let status: SessionStatus = 'idle';
  let activeBatch: string | undefined;
  let interruptRequested = false;
  let cancelRequested = false;
  let modelScope: CancellationScope | undefined;

  const record = <T extends EventType>(type: T, data: EventPayloads[T]) => {
    const event: SessionEvent = {
      type,
      seq: c.seq++,
      time: new Date().toISOString(),
      data: data as unknown as JsonObject,
    };
    sessionEvents.append(input.sessionId, [event]);
  };
  const remember = (...messages: AgentMessage[]) => {
    // Previews only: the tail rides in every continue-as-new (the transcript keeps the messages).
    c.tail.push(...messages.map(tailCopy));
    if (c.tail.length > TAIL) c.tail.splice(0, c.tail.length - TAIL);
    c.messageCount += messages.length;
  };
  const known = (id: string) =>
    c.inbox.some((m) => m.id === id) || c.activeTurn?.messageId === id || c.recentTurns.some((t) => t.messageId === id);
  const accept = (m: QueuedMessage) => {
    if (!known(m.id)) c.inbox.push(m);
  };
  const stopCurrent = () => {
    modelScope?.cancel();
    if (!activeBatch) return;
    const id = activeBatch;
    const cancelBatch = () =>
      getExternalWorkflowHandle(id)
        .cancel()
        .catch(() => undefined);
    // From a Temporal cancel the current scope is the cancelled root, where a cancel request is
    // silently never sent: the batch ran on to its end. Sent from outside that scope now.
    if (!CancellationScope.current().consideredCancelled) void cancelBatch();
    else if (features.temporalCancel) void CancellationScope.nonCancellable(cancelBatch);
  };

  setHandler(messageSignal, (m) => {
    if (!c.endReason && !messageProblem(m)) accept(m);
  });
  setHandler(
    sendMessageUpdate,
    async (m) => {
      accept(m);
      let outcome: TurnOutcome | undefined;
      // Not cancelled with the workflow: a Temporal cancel winds the session down like the cancel
      // signal, and the caller waiting here gets the turn's outcome (reason cancelled), not a failure.
      await CancellationScope.nonCancellable(() =>
        condition(() => {
          outcome = c.recentTurns.find((t) => t.messageId === m.id);
          return outcome !== undefined || c.endReason !== undefined;
        }),
      );
      return (
        outcome ?? {
          messageId: m.id,
          turn: 0,
          steps: 0,
          reason: 'cancelled',
          text: '',
          error: `the session ended (${c.endReason}) before this message was answered`,
        }
      );
    },
    {
      validator: (m) => {
        const p = messageProblem(m);
        if (p) throw new Error(p);
        if (c.endReason && !c.recentTurns.some((t) => t.messageId === m.id))
          throw new Error(`the session has ended (${c.endReason}); start a new one`);
      },
    },
  );
  setHandler(interruptSignal, () => {
    if (!c.activeTurn) return;
    interruptRequested = true;
    stopCurrent();
  });
  setHandler(cancelSessionSignal, () => {
    cancelRequested = true;
    stopCurrent();
  });
  setHandler(
    sessionQuery,
    (): SessionView => ({
      sessionId: input.sessionId,
      status: c.endReason ? 'ended' : status,
      turn: c.turn,
      step: c.step,
      nextSeq: c.seq,
      usage: c.usage,
      ...(activeBatch ? { activeBatch } : {}),
      messageCount: c.messageCount,
      tail: c.tail,
      head: c.head,
      unstored: c.unstored,
      ...(c.recentTurns.length ? { lastTurn: c.recentTurns[c.recentTurns.length - 1] } : {}),
      ...(c.endReason ? { endReason: c.endReason } : {}),
      queued: c.inbox.length,
      runs: c.runs,
    }),
  );
  // Cancelling the workflow itself (Temporal cancel) is the cancel signal: the loop below winds
  // down the same way and the session completes with a recorded reason.
  CancellationScope.current().cancelRequested.catch(() => {
    cancelRequested = true;
    stopCurrent();
  });

  const historyFull = () => {
    const info = workflowInfo();
    return (
      info.historyLength >= (input.continueAsNewAfterEvents ?? DEFAULT_CAN_EVENTS) ||
      info.historySize >= CAN_HISTORY_BYTES ||
      info.continueAsNewSuggested
    );
  };
  const budgetSpent = () =>
    input.tokenBudget !== undefined && c.usage.inputTokens + c.usage.outputTokens >= input.tokenBudget;

  const endTurn = (reason: TurnEndReason, error?: string) => {
    const t = c.activeTurn!;
    const outcome: TurnOutcome = { messageId: t.messageId, turn: t.turn, steps: c.step, reason, text: t.text };
    if (error) outcome.error = error;
    c.recentTurns.push(outcome);
    if (c.recentTurns.length > RECENT_TURNS) c.recentTurns.shift();
    c.turnsCompleted++;
    c.activeTurn = undefined;
    interruptRequested = false;
    status = 'idle';
    record('session/turn-ended', outcome);
  };

  /** One model step and its batch; returns why the turn ends, or undefined to go on. */
  const step = async (): Promise<{ reason: TurnEndReason; error?: string } | undefined> => {
    const turn = c.activeTurn!;
    if (cancelRequested) return { reason: 'cancelled' };
    if (interruptRequested) return { reason: 'interrupted' };
    if (c.step >= (input.maxStepsPerTurn ?? DEFAULT_MAX_STEPS)) return { reason: 'max-steps' };
    c.step++;
    status = 'model';
    let reply: Awaited<ReturnType<typeof modelStep>>;
    try {
      modelScope = new CancellationScope();
      reply = await modelScope.run(() =>
        modelStep({
          sessionId: input.sessionId,
          turn: c.turn,
          step: c.step,
          model: input.model,
          ...(input.system ? { system: input.system } : {}),
          ...(input.tools ? { tools: input.tools } : {}),
          head: c.head,
          append: c.unstored,
        }),
      );
    } catch (err) {
      if (isCancellation(err)) return { reason: cancelRequested ? 'cancelled' : 'interrupted' };
      const message = err instanceof ActivityFailure ? (err.cause?.message ?? err.message) : (err as Error).message;
      record('model/failed', { turn: c.turn, step: c.step, message });
      return { reason: 'model-error', error: message };
    } finally {
      modelScope = undefined;
    }
    c.head = reply.head;
    c.unstored = [];
    remember(reply.assistant);
    c.usage = {
      inputTokens: c.usage.inputTokens + reply.usage.inputTokens,
      outputTokens: c.usage.outputTokens + reply.usage.outputTokens,
      steps: c.usage.steps + 1,
    };
    if (reply.assistant.text) turn.text = reply.assistant.text;
    record('model/message', {
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
    if (budgetSpent()) return { reason: 'budget' };
    if (!reply.assistant.toolCalls.length) return { reason: 'done' };

    const intake = intakeCalls(reply.assistant.toolCalls);
    for (const r of intake.rejected)
      record('tool/rejected', {
        turn: c.turn,
        step: c.step,
        callId: r.message.toolCallId,
        name: r.message.toolName,
        message: r.message.error?.message ?? '',
      });
    let output: BatchOutputWire | undefined;
    if (intake.calls.length) {
      status = 'tools';
      try {
        output = await runBatch(intake.calls);
      } catch (err) {
        const message =
          err instanceof ChildWorkflowFailure ? (err.cause?.message ?? err.message) : (err as Error).message;
        return { reason: 'batch-failed', error: message };
      }
      c.seq = output.nextSeq;
      c.state = output.state;
    }
    const results = mergeToolMessages(intake, output?.messages ?? []);
    c.unstored.push(...results);
    remember(...results);
    if (output?.concludesTurn) return { reason: 'concluded' };
    if (output?.cancelled) return { reason: cancelRequested ? 'cancelled' : 'interrupted' };
    return undefined;
  };

  const runBatch = async (calls: ToolCall[]): Promise<BatchOutputWire> => {
    const batchInput: BatchInput = {
      sessionId: input.sessionId,
      turn: c.turn,
      step: c.step,
      calls,
      startSeq: c.seq,
      state: c.state,
      ...(input.batch ? { options: input.batch } : {}),
    };
    const workflowId = batchWorkflowId(input.sessionId, c.turn, c.step);
    // The batch is started and awaited outside any cancellation: an interrupt cancels it by
    // request (getExternalWorkflowHandle), so it drains, aborts what has not started, and still
    // hands back every result.
    return CancellationScope.nonCancellable(async () => {
      const handle = await startChild<(i: BatchInput) => Promise<BatchOutputWire>>(BATCH_WORKFLOW, {
        workflowId,
        args: [batchInput],
        parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        // As SluiceClient.startBatch: the batch keeps its approvals readable with no worker.
        memo: { [APPROVALS_MEMO]: EMPTY_APPROVALS_MEMO },
        staticSummary: `Tool batch: session ${input.sessionId}, turn ${c.turn}, step ${c.step}, ${calls.length} call(s)`,
      });
      activeBatch = workflowId;
      if (interruptRequested || cancelRequested) stopCurrent();
      try {
        return await handle.result();
      } finally {
        activeBatch = undefined;
      }
    });
  };

  const finish = (reason: SessionEndReason): SessionOutput => {
    c.endReason = reason;
    status = 'ended';
    record('session/ended', { reason, turns: c.turnsCompleted, usage: { ...c.usage } });
    return {
      sessionId: input.sessionId,
      endReason: reason,
      turns: c.turnsCompleted,
      usage: c.usage,
      head: c.head,
      unstored: c.unstored,
      messageCount: c.messageCount,
      nextSeq: c.seq,
      state: c.state,
      ...(c.recentTurns.length ? { lastTurn: c.recentTurns[c.recentTurns.length - 1] } : {}),
    };
  };

  const loop = async (): Promise<SessionOutput | 'continue-as-new'> => {
    for (;;) {
      if (!c.activeTurn) {
        if (cancelRequested) return finish('cancelled');
        if (budgetSpent()) return finish('budget');
        if (input.maxTurns !== undefined && c.turnsCompleted >= input.maxTurns) return finish('max-turns');
        if (!c.inbox.length && input.endWhenIdle && c.turnsCompleted > 0) return finish('idle');
        if (historyFull() && allHandlersFinished()) return 'continue-as-new';
        // An idle session whose history is full continues-as-new as soon as the update that
        // ended the last turn has returned (before, a session driven by updates alone never did).
        const idleCan = features.idleContinueAsNew;
        await condition(
          () => c.inbox.length > 0 || cancelRequested || (idleCan && historyFull() && allHandlersFinished()),
        );
        if (cancelRequested || !c.inbox.length) continue;
        const m = c.inbox.shift()!;
        c.turn++;
        c.step = 0;
        c.activeTurn = { messageId: m.id, turn: c.turn, text: '' };
        const user: AgentMessage = { role: 'user', content: m.content };
        c.unstored.push(user);
        remember(user);
        record('session/user', {
          turn: c.turn,
          messageId: m.id,
          content: typeof m.content === 'string' ? m.content : contentText(m.content),
        });
      }
      // Mid-turn continue-as-new only when no update waits on this run (it would be lost).
      if (historyFull() && allHandlersFinished()) return 'continue-as-new';
      const end = await step();
      if (end) {
        endTurn(end.reason, end.error);
        if (end.reason === 'budget') return finish('budget');
      }
    }
  };

  const result = await CancellationScope.nonCancellable(loop);
  if (result === 'continue-as-new') {
    await condition(allHandlersFinished);
    const { message: _first, ...rest } = input;
    return continueAsNew<typeof agentSession>({ ...rest, carried: carryOf(c) });
  }
  // Updates waiting on this session learn it ended before the run closes. After a Temporal
  // cancel this wait is outside the cancelled scope, so the session completes with its reason
  // (before, the wait threw and the run closed as cancelled, with no result).
  if (cancelRequested && features.temporalCancel)
    await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  else await condition(allHandlersFinished);
  return result;
}

function messageProblem(m: QueuedMessage | undefined): string | undefined {
  if (!m || typeof m !== 'object') return 'a message must be {id, content}';
  if (typeof m.id !== 'string' || !m.id) return 'a message needs a non-empty id (it makes a resend safe)';
  if (typeof m.content === 'string' ? !m.content.trim() : !Array.isArray(m.content) || !m.content.length)
    return 'a message needs content: non-empty text, or content blocks';
  return undefined;
}

function sessionInputProblem(input: SessionInput): string | undefined {
  if (!input || typeof input !== 'object') return 'a session needs {sessionId, model}';
  if (typeof input.sessionId !== 'string' || !input.sessionId) return 'sessionId must be a non-empty string';
  if (typeof input.model !== 'string' || !input.model)
    return 'model must name a model: openai:<model>, anthropic:<model>, script:<file>, or one of the worker config models';
  for (const k of ['maxTurns', 'maxStepsPerTurn', 'tokenBudget', 'continueAsNewAfterEvents'] as const) {
    const v = input[k];
    if (v !== undefined && (!Number.isInteger(v) || v < 1)) return `${k} must be a whole number >= 1`;
  }
  return undefined;
}
