// The model's answer per step as a page shows it: the live pieces of the attempt under way, then
// the step's record. A fold over the events the inbox streams (servers/inbox/sessions.ts), which
// already sends each piece once and voids what a failed attempt or a lost worker showed
// (client/session-events.ts); this applies those voids, so a retried step's text shows once. Pure:
// no DOM, no network, so it is tested alone and shared by every page built on sluice/browser.
import { isEvent } from '../pipeline/events';
import type { LiveDelta, LiveEvent } from '../pipeline/live';
import type { SessionEvent } from '../pipeline/types';

/** What one execution's attempt streamed of one kind (its text, a call's arguments, reasoning). */
export interface StepPiece {
  /** The execution that streamed it ('' for events written before runs were stamped). */
  run: string;
  attempt: number;
  kind: LiveDelta['kind'];
  text: string;
  /** A tool call's name, once the provider sent it. */
  callName?: string;
}

/** One model step as it stands: streaming pieces, or its recorded answer. */
export interface StepText {
  turn: number;
  step: number;
  /** The pieces shown now, in the order they came; none once the step is recorded. */
  pieces: StepPiece[];
  /** The answer's text: the text pieces shown, or the recorded answer once the record came. */
  text: string;
  /** Pieces came and the step's record has not: the model is answering. */
  streaming: boolean;
  /** The record came (`model/message`): `text` is the whole answer, and no piece shows again. */
  recorded: boolean;
  /** The calls the recorded answer made (their cards follow in the log). */
  toolCalls: { id: string; name: string }[];
  /** How many attempts' pieces were voided (a failed attempt, a worker lost mid-answer). */
  voids: number;
  /** Pieces were dropped on the way: the text is incomplete until the record brings it whole. */
  dropped: boolean;
}

const textOf = (pieces: StepPiece[]) =>
  pieces
    .filter((p) => p.kind === 'text')
    .map((p) => p.text)
    .join('');

/** Every step's text, folded from the session's events in the order the stream sends them. */
export class LiveText {
  private readonly steps = new Map<string, StepText>();

  /** The step as it stands, if any event named it. */
  get(turn: number, step: number): StepText | undefined {
    return this.steps.get(`${turn}:${step}`);
  }

  /** Applies a streamed event; returns the step it changed, if it changed one. */
  apply(e: SessionEvent | LiveEvent): StepText | undefined {
    if ('seq' in e) return this.record(e);
    const s = this.step(e.turn, e.step);
    if (s.recorded) return undefined; // the record already shows the whole answer
    const run = e.run ?? '';
    // A later attempt of the same run replaces an earlier one; a piece of another run (the step
    // started again on another worker) replaces every piece shown.
    s.pieces = s.pieces.filter((p) => (p.run === run ? p.attempt >= e.attempt : e.type !== 'live/delta'));
    if (e.type === 'live/void') {
      s.pieces = s.pieces.filter((p) => !(p.attempt === e.attempt && p.run === run));
      s.voids++;
    } else if (e.type === 'live/dropped') s.dropped = true;
    else {
      s.streaming = true;
      let piece = s.pieces.find((p) => p.attempt === e.attempt && p.run === run && p.kind === e.kind);
      if (!piece) {
        piece = { run, attempt: e.attempt, kind: e.kind, text: '' };
        s.pieces.push(piece);
      }
      if (e.kind === 'tool-call' && e.call?.name) piece.callName = e.call.name;
      piece.text += e.text;
    }
    s.text = textOf(s.pieces);
    return s;
  }

  private record(e: SessionEvent): StepText | undefined {
    if (isEvent(e, 'model/message')) {
      const s = this.step(e.data.turn, e.data.step);
      Object.assign(s, {
        pieces: [],
        text: e.data.text,
        streaming: false,
        recorded: true,
        toolCalls: e.data.toolCalls ?? [],
      });
      return s;
    }
    if (isEvent(e, 'model/failed')) {
      const s = this.steps.get(`${e.data.turn}:${e.data.step}`);
      if (!s?.streaming) return undefined;
      s.streaming = false;
      return s;
    }
    return undefined;
  }

  private step(turn: number, step: number): StepText {
    const key = `${turn}:${step}`;
    let s = this.steps.get(key);
    if (!s) {
      s = {
        turn,
        step,
        pieces: [],
        text: '',
        streaming: false,
        recorded: false,
        toolCalls: [],
        voids: 0,
        dropped: false,
      };
      this.steps.set(key, s);
    }
    return s;
  }
}
