// Names a client, the terminal chat or the stock `temporal` CLI uses to talk to a session; and the
// names a session, its batch activity and its batches use among themselves.
import { defineQuery, defineSignal, defineUpdate } from './messages';
import type { BatchOutputWire } from '../codec/output';
import type { QueuedMessage, SessionView, TurnOutcome } from '../pipeline/session';
import type { BatchInput } from '../pipeline/types';

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

/**
 * The memo a session's batch is started with when the session's activity starts it (not a child):
 * the session run that owns it. A retry of that activity attaches to the batch it finds under this
 * run; a batch under another run's (or no) memo is someone else's, and the step fails as before.
 */
export const SESSION_STEP_MEMO = 'sluiceSessionStep';

export interface SessionStepOwner {
  /** The session's workflow id (sessionWorkflowId). */
  workflowId: string;
  /** The session run that started the batch. */
  runId: string;
}

/** What the session's batch activity is given: the batch, and what its start says about it. */
interface SessionBatchRequest {
  input: BatchInput;
  workflowId: string;
  staticSummary: string;
  /** Said when the batch's id is taken by a batch this session run did not start. */
  takenMessage: string;
}

/**
 * The batch activity's answer when the batch had not ended within the activity's bounded wait
 * (it waits on a person or a device): the activity leaves its worker slot, and the step waits on
 * the batch's end without one (workflows/session-batch-watch.ts).
 */
export interface BatchStillRunning {
  stillRunning: true;
}

export interface SessionBatchActivities {
  /**
   * Starts a session step's batch (eagerly on this worker where it can), or attaches to the one
   * this session run started, and returns its output; or, when it has not ended within a few
   * seconds, that it still runs.
   */
  sluiceSessionBatch(request: SessionBatchRequest): Promise<BatchOutputWire | BatchStillRunning>;
}

/** The workflow a step waits on while its batch runs past the batch activity's wait. */
export const SESSION_BATCH_WATCH_WORKFLOW = 'sluiceSessionBatchWatch';

/**
 * Sent by the watch to a session's batch: signal this workflow (the watch) when you end. Asked
 * only once a batch has run past the activity's wait, so a batch that ends within it signals
 * nobody and its step pays no hop for it.
 */
export const batchEndWantedSignal = defineSignal<[{ workflowId: string }]>('sluice.batch.endWanted');

/** Sent by a batch, at its end, to the watch that asked (batchEndWantedSignal). */
export const batchEndedSignal = defineSignal<[{ batchId: string }]>('sluice.session.batchEnded');

/**
 * The workflow id of the session a batch is a step of, from its description or listing: its parent
 * (a batch started as the session's child) or its step memo (started by the session's activity).
 */
export function owningSession(batch: {
  parentExecution?: { workflowId?: string | null };
  memo?: Record<string, unknown>;
}): string | undefined {
  const memo = batch.memo?.[SESSION_STEP_MEMO] as Partial<SessionStepOwner> | undefined;
  return batch.parentExecution?.workflowId ?? (typeof memo?.workflowId === 'string' ? memo.workflowId : undefined);
}
