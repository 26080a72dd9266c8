// Names a client, the terminal chat or the stock `temporal` CLI uses to talk to a session.
import { defineQuery, defineSignal, defineUpdate } from './messages';
import type { QueuedMessage, SessionView, TurnOutcome } from '../pipeline/session';

export const SESSION_WORKFLOW = 'agentSession';

/** A user message; the update returns when the turn it starts has ended. */
export const sendMessageUpdate = defineUpdate<TurnOutcome, [QueuedMessage]>('sluice.session.send');
/** A user message, fire-and-forget: queued, answered in its turn. */
export const messageSignal = defineSignal<[QueuedMessage]>('sluice.session.message');
/** Ends the current turn: a model call in flight is cancelled, a batch drains and aborts its unstarted calls. */
export const interruptSignal = defineSignal('sluice.session.interrupt');
/** Interrupts, then ends the session. */
export const cancelSessionSignal = defineSignal('sluice.session.cancel');
export const sessionQuery = defineQuery<SessionView>('sluice.session.state');

export function sessionWorkflowId(sessionId: string): string {
  return `sluice-session:${sessionId}`;
}
