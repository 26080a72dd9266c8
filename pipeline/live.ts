// The live channel's vocabulary: what a model step publishes while its provider streams (text,
// tool-call arguments as they form, reasoning), as the step's publisher (agent/live.ts) writes it
// and followers (stores/live.ts, the client's session events, the inbox) read it. Each carries the
// step, the attempt and a sequence number, so a follower can void what a failed attempt showed, and
// the run: a token each execution of a step picks for itself.

/** A piece of a model step's answer as the provider streamed it. */
export interface LiveDelta {
  type: 'live/delta';
  turn: number;
  step: number;
  /** The execution that published it (a random token; events written before runs had none). */
  run?: string;
  /** The activity's attempt (1, 2, …): a retried step streams again under a new attempt. */
  attempt: number;
  /** Order within the attempt, from 0. */
  n: number;
  kind: 'text' | 'tool-call' | 'reasoning';
  text: string;
  /** For a tool call's arguments: which call (its index in the answer), and its id and name once known. */
  call?: { index: number; id?: string; name?: string };
}

/** What an attempt showed is void: it failed (the reason) and may be retried; show none of it. */
export interface LiveVoid {
  type: 'live/void';
  turn: number;
  step: number;
  /** The execution that published it (a random token; events written before runs had none). */
  run?: string;
  attempt: number;
  n: number;
  reason: string;
}

/**
 * Live events of this step were dropped (a slow channel or follower): what was shown of the
 * attempt is incomplete, and the step's whole answer comes with its record (`model/message`).
 */
export interface LiveDropped {
  type: 'live/dropped';
  turn: number;
  step: number;
  /** The execution that published it (a random token; events written before runs had none). */
  run?: string;
  attempt: number;
  n: number;
  reason: string;
}

export type LiveEvent = LiveDelta | LiveVoid | LiveDropped;

/** Where a step publishes (agent/live.ts): a worker's live channel (stores/live.ts). */
export interface LiveWriter {
  /** Appends events for followers; may be slow or fail, the publisher never waits on it mid-step. */
  write(sessionId: string, events: LiveEvent[]): Promise<void>;
  /** Called when an attempt starts: a channel may forget the session's older steps (they are recorded). */
  startStep?(sessionId: string, turn: number, step: number): Promise<void>;
}
