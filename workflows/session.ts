// A durable agent session: the whole loop (ask the model, run its tool calls as a batch, ask
// again) as one workflow that owns the transcript, the seq, the session state and the counters.
//
//   user message → model step (activity) → tool calls? → toolBatch (started by the session's activity;
//     a watch child while it waits on a person) → results, contexts
//     → model step → ... → no calls / concludesTurn / step limit → the turn ends
//
// The transcript lives in the result store (agent/transcript-store.ts); this workflow carries only
// the stored head's reference, the messages not stored yet, and a short tail for the query. So a
// step adds history in proportion to its new messages, and continue-as-new carries a few kilobytes.
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import {
  carryOf,
  type QueuedMessage,
  type SessionInput,
  type SessionOutput,
  type TurnOutcome,
} from '../pipeline/session';
import { FailureTypes } from '../pipeline/errors';
import { type SessionFeatures, sessionFeatures } from './compat';
import { Carry } from './session-carry';
import {
  cancelSessionSignal,
  interruptSignal,
  messageSignal,
  sendMessageUpdate,
  sessionQuery,
} from './session-definitions';
import { historyFull, type SessionControl, Turn } from './session-turn';

/** How often an interrupt asks again to cancel a batch an activity has not started yet. */
const CANCEL_RETRY_MS = 1_000;

export async function agentSession(input: SessionInput): Promise<SessionOutput> {
  const problem = sessionInputProblem(input);
  if (problem) throw ApplicationFailure.nonRetryable(problem, FailureTypes.INVALID_SESSION);
  // Which release recorded this history (workflows/compat.ts): each patch asked where 1.0.0 asked.
  const features = sessionFeatures(input.modelCall?.local === true);
  const carry = new Carry(input);
  const control = sessionControl(features);
  const turn = new Turn(input, carry, control, features);
  setHandlers(carry, control);

  const result = await CancellationScope.nonCancellable(() => loop(input, carry, control, turn, features));
  if (result === 'continue-as-new') {
    await condition(allHandlersFinished);
    const { message: _first, ...rest } = input;
    return continueAsNew<typeof agentSession>({ ...rest, carried: carryOf(carry.c) });
  }
  // Updates waiting on this session learn it ended before the run closes. After a Temporal
  // cancel this wait is outside the cancelled scope, so the session completes with its reason
  // (before, the wait threw and the run closed as cancelled, with no result).
  if (control.cancelRequested) {
    features.temporalCancelHandled();
    await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  } else await condition(allHandlersFinished);
  return result;
}

/** Where the session stands, and how an interrupt or a cancel stops what runs. */
function sessionControl(features: SessionFeatures): SessionControl {
  const control: SessionControl = {
    status: 'idle',
    interruptRequested: false,
    cancelRequested: false,
    fullAtLastStep: false,
    stopCurrent() {
      control.modelScope?.cancel();
      if (!control.activeBatch) return;
      const id = control.activeBatch;
      const cancelBatch = async () => {
        for (;;) {
          try {
            return await getExternalWorkflowHandle(id).cancel();
          } catch {
            // Started by an activity, the batch may not exist yet when the interrupt comes: asked
            // again while the step still waits on it. A child batch is asked once, as recorded.
            if (!features.batchByActivity || control.activeBatch !== id) return;
            await sleep(CANCEL_RETRY_MS);
            if (control.activeBatch !== id) return;
          }
        }
      };
      // From a Temporal cancel the current scope is the cancelled root, where a cancel request is
      // silently never sent: the batch ran on to its end. Sent from outside that scope now.
      if (!CancellationScope.current().consideredCancelled) void cancelBatch();
      else {
        features.temporalCancelHandled();
        void CancellationScope.nonCancellable(cancelBatch);
      }
    },
  };
  return control;
}

/** Messages (signal or update), interrupt, cancel (signal or Temporal's), and the status query. */
function setHandlers(carry: Carry, control: SessionControl): void {
  const c = carry.c;
  setHandler(messageSignal, (m) => {
    if (!c.endReason && !messageProblem(m)) carry.accept(m);
  });
  setHandler(sendMessageUpdate, (m) => answerMessage(carry, m), {
    validator: (m) => {
      const p = messageProblem(m);
      if (p) throw new Error(p);
      if (c.endReason && !c.recentTurns.some((t) => t.messageId === m.id))
        throw new Error(`the session has ended (${c.endReason}); start a new one`);
    },
  });
  setHandler(interruptSignal, () => {
    if (!c.activeTurn) return;
    control.interruptRequested = true;
    control.stopCurrent();
  });
  setHandler(cancelSessionSignal, () => {
    control.cancelRequested = true;
    control.stopCurrent();
  });
  setHandler(sessionQuery, () => carry.view(control.status, control.activeBatch));
  // Cancelling the workflow itself (Temporal cancel) is the cancel signal: the loop winds down
  // the same way and the session completes with a recorded reason.
  CancellationScope.current().cancelRequested.catch(() => {
    control.cancelRequested = true;
    control.stopCurrent();
  });
}

/** The update's answer: the outcome of the turn that answered the message. */
async function answerMessage(carry: Carry, m: QueuedMessage): Promise<TurnOutcome> {
  carry.accept(m);
  let outcome: TurnOutcome | undefined;
  // Not cancelled with the workflow: a Temporal cancel winds the session down like the cancel
  // signal, and the caller waiting here gets the turn's outcome (reason cancelled), not a failure.
  await CancellationScope.nonCancellable(() =>
    condition(() => {
      outcome = carry.outcomeOf(m.id);
      return outcome !== undefined || carry.c.endReason !== undefined;
    }),
  );
  return (
    outcome ?? {
      messageId: m.id,
      turn: 0,
      steps: 0,
      reason: 'cancelled',
      text: '',
      error: `the session ended (${carry.c.endReason}) before this message was answered`,
    }
  );
}

/** The loop: wait for a message, run its turn step by step, end the session or continue-as-new. */
async function loop(
  input: SessionInput,
  carry: Carry,
  control: SessionControl,
  turn: Turn,
  features: SessionFeatures,
): Promise<SessionOutput | 'continue-as-new'> {
  const c = carry.c;
  // With local model steps, from the value the last step recorded (SessionControl.fullAtLastStep),
  // the same on replay; a run whose steps are activities reads its history as it always did, but
  // after a batch's local activity from the value read before it (SessionControl.fullAtBatch).
  const fullNow = () => (turn.local ? control.fullAtLastStep : (control.fullAtBatch ?? historyFull(input)));
  const finish = (reason: Parameters<Carry['finish']>[0]) => {
    control.status = 'ended';
    return carry.finish(reason);
  };
  for (;;) {
    if (!c.activeTurn) {
      if (control.cancelRequested) return finish('cancelled');
      if (carry.budgetSpent()) return finish('budget');
      if (input.maxTurns !== undefined && c.turnsCompleted >= input.maxTurns) return finish('max-turns');
      if (!c.inbox.length && input.endWhenIdle && c.turnsCompleted > 0) return finish('idle');
      if (fullNow() && allHandlersFinished()) return 'continue-as-new';
      // An idle session whose history is full continues-as-new as soon as the update that
      // ended the last turn has returned (before, a session driven by updates alone never did).
      features.idleWait();
      await condition(() => c.inbox.length > 0 || control.cancelRequested || (fullNow() && allHandlersFinished()));
      if (control.cancelRequested || !c.inbox.length) continue;
      carry.startTurn();
    }
    // Mid-turn continue-as-new only when no update waits on this run (it would be lost).
    if (fullNow() && allHandlersFinished()) return 'continue-as-new';
    const next = await turn.step();
    if (next.type === 'turn-ended') {
      carry.endTurn(next.reason, next.error);
      control.interruptRequested = false;
      control.status = 'idle';
      if (next.reason === 'budget') return finish('budget');
    }
  }
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
