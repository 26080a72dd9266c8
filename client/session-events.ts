// A session's events, live: the session log the workers' sink writes (<state-dir>/sessions/<id>.jsonl,
// or the PostgreSQL store), followed as it grows, and, with `live: true`, the pieces of each model
// answer as the provider streams them (stores/live.ts). The log is the live view of the durable
// record (the workflow histories and the stored transcript, docs/sessions.md says which is which);
// the live pieces are previews of a step that the log records whole when the step ends.
import { promises as fs } from 'node:fs';
import type { LiveDropped, LiveEvent, LiveVoid } from '../agent/live';
import type { SessionEvent } from '../pipeline/types';
import { fileLiveChannel, type LiveCursor, type LiveReader } from '../stores/live';
import { sessionLogPath } from '../stores/session-log-path';

export type { LiveDelta, LiveDropped, LiveEvent, LiveVoid } from '../agent/live';

/** The log's events; none while it does not exist. A torn last line (a crash mid-append) is skipped. */
async function readLog(stateDir: string, sessionId: string): Promise<SessionEvent[]> {
  let text: string;
  try {
    text = await fs.readFile(sessionLogPath(stateDir, sessionId), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: SessionEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // a torn line carries no complete event
    }
  }
  return out;
}

/**
 * Where a session's events are read: a state folder, or a store (stores/stores.ts: files or
 * PostgreSQL; its `live` channel gives the streamed pieces, its `conflicts` the events kept out of
 * the log, which SessionHandle.events reports instead of waiting for them).
 */
export type SessionEventSource =
  | string
  | {
      events(sessionId: string, afterSeq?: number): Promise<SessionEvent[]>;
      live?: LiveReader;
      conflicts?(sessionId: string): Promise<{ where: string; batches?: string[] }>;
    };

export interface FollowOptions {
  fromSeq?: number;
  signal?: AbortSignal;
  intervalMs?: number;
  gapMs?: number;
  /**
   * Also yield the live pieces of the model step under way (`live/delta`), voids of failed
   * attempts (`live/void`) and drops (`live/dropped`: take that step from its `model/message`).
   */
  live?: boolean;
  /** Live events a follower holds unread before it drops them for a `live/dropped` marker. Default 4096. */
  maxBacklog?: number;
}

/** A step's place: (turn, step), compared in order. */
const before = (a: { turn: number; step: number }, b: { turn: number; step: number }) =>
  a.turn < b.turn || (a.turn === b.turn && a.step <= b.step);

/**
 * A session's events as they are written: everything already in the session log from `fromSeq`,
 * then each new event, in seq order, until `signal` aborts. The log is the workers' (their
 * `--state-dir`, or their database); events numbered past a gap wait for the gap to fill, at most `gapMs`.
 *
 * With `live: true`, the model step under way streams in between: `live/delta` pieces of the step
 * not recorded yet (a late follower gets the record so far, then the pieces of the step under
 * way from its start, then the tail: nothing twice, nothing missing), each attempt's pieces once,
 * a failed attempt's followed by `live/void`. A step's `model/message` is its whole answer: a
 * follower that showed the pieces replaces them with it.
 */
export function followSessionEvents(
  source: SessionEventSource,
  sessionId: string,
  opts: FollowOptions & { live: true },
): AsyncGenerator<SessionEvent | LiveEvent>;
export function followSessionEvents(
  source: SessionEventSource,
  sessionId: string,
  opts?: FollowOptions,
): AsyncGenerator<SessionEvent>;
export async function* followSessionEvents(
  source: SessionEventSource,
  sessionId: string,
  opts: FollowOptions = {},
): AsyncGenerator<SessionEvent | LiveEvent> {
  let next = opts.fromSeq ?? 0;
  let gapSince: number | undefined;
  const live: LiveReader | undefined = opts.live
    ? typeof source === 'string'
      ? fileLiveChannel(source)
      : source.live
    : undefined;
  let cursor: LiveCursor | undefined;
  /** The last step the log has recorded (its answer, its failure, or its turn's end). */
  let recorded = { turn: 0, step: 0 };
  /** Per step under way: the attempt whose pieces were shown, and whether they were voided. */
  const shown = new Map<string, { attempt: number; voided: boolean; dropped: boolean }>();
  let wake: (() => void) | undefined;
  let dirty = false;
  const unwatch = live?.watch(sessionId, () => {
    dirty = true;
    wake?.();
  });
  const note = (e: SessionEvent) => {
    const d = e.data as { turn?: number; step?: number };
    if (e.type === 'model/message' || e.type === 'model/failed')
      recorded = before(recorded, { turn: Number(d.turn), step: Number(d.step) })
        ? { turn: Number(d.turn), step: Number(d.step) }
        : recorded;
    else if (e.type === 'session/turn-ended' && Number(d.turn) >= recorded.turn)
      recorded = { turn: Number(d.turn), step: Number.MAX_SAFE_INTEGER };
  };
  /** The live events not read yet, each yielded unless its step is recorded or its attempt superseded. */
  async function* drainLive(): AsyncGenerator<LiveEvent> {
    if (!live) return;
    let got: LiveEvent[] = [];
    try {
      const r = await live.read(sessionId, cursor);
      got = r.events;
      cursor = r.cursor;
    } catch {
      // the channel is down: the log still brings every step whole
    }
    const backlog = got.length > (opts.maxBacklog ?? 4096);
    for (const ev of got) {
      if (before(ev, recorded)) continue; // recorded whole already: its pieces would show it twice
      const key = `${ev.turn}:${ev.step}`;
      const s = shown.get(key);
      if (s && ev.attempt < s.attempt) continue; // an attempt already superseded
      if (s && ev.attempt > s.attempt && !s.voided)
        // A new attempt without a void before it: the last one's worker stopped mid-answer.
        yield voidOf(ev.turn, ev.step, s.attempt, `attempt ${ev.attempt} started over`);
      const cur = s && s.attempt === ev.attempt ? s : { attempt: ev.attempt, voided: false, dropped: false };
      shown.set(key, cur);
      if (ev.type === 'live/void') {
        if (cur.voided) continue;
        cur.voided = true;
      } else if (cur.voided) continue;
      else if (ev.type === 'live/dropped' || (backlog && ev.type === 'live/delta')) {
        // This follower fell behind: what it has not shown comes whole with the step's record.
        if (cur.dropped) continue;
        cur.dropped = true;
        if (ev.type === 'live/delta') {
          yield droppedOf(ev, 'this follower fell behind; the whole answer comes with the step record');
          continue;
        }
      } else if (cur.dropped) continue;
      yield ev;
    }
  }
  let first = true;
  try {
    while (!opts.signal?.aborted) {
      dirty = false;
      let events: SessionEvent[] = [];
      if (typeof source === 'string') events = await readLog(source, sessionId);
      else
        try {
          // The first read of a live follower takes the whole log: which steps are recorded.
          events = await source.events(sessionId, live && first ? -1 : next - 1);
        } catch {
          // a database restarting: read again on the next round
        }
      if (live) for (const e of events) if (e.seq < next) note(e);
      events = events.filter((e) => e.seq >= next);
      events.sort((a, b) => a.seq - b.seq);
      for (const e of events) {
        if (e.seq < next) continue; // the same seq twice (a replayed sink append)
        if (e.seq > next) {
          gapSince ??= Date.now();
          if (Date.now() - gapSince < (opts.gapMs ?? 2_000)) break;
        }
        gapSince = undefined;
        next = e.seq + 1;
        if (live) {
          // Every piece of a step was written before its record: show what is still unread first.
          if (e.type === 'model/message' || e.type === 'model/failed') yield* drainLive();
          note(e);
          // A step that failed for good while an attempt's pieces stood: they are void.
          const d = e.data as { turn?: number; step?: number; message?: string };
          const key = `${d.turn}:${d.step}`;
          const s = shown.get(key);
          if (e.type === 'model/failed' && s && !s.voided)
            yield voidOf(Number(d.turn), Number(d.step), s.attempt, String(d.message ?? 'the model step failed'));
          if (e.type === 'model/message' || e.type === 'model/failed') shown.delete(key);
        }
        yield e;
      }
      first = false;
      if (live) yield* drainLive();
      if (dirty) continue; // changed while this round read: read again at once
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          wake = undefined;
          opts.signal?.removeEventListener('abort', done);
          resolve();
        };
        // A watched channel wakes the follower; the interval is the safety net (a missed notice).
        const t = setTimeout(done, opts.intervalMs ?? live?.pollMs ?? 200);
        wake = done;
        opts.signal?.addEventListener('abort', done, { once: true });
      });
    }
  } finally {
    unwatch?.();
  }
}

function voidOf(turn: number, step: number, attempt: number, reason: string): LiveVoid {
  return { type: 'live/void', turn, step, attempt, n: -1, reason };
}

function droppedOf(at: { turn: number; step: number; attempt: number }, reason: string): LiveDropped {
  return { type: 'live/dropped', turn: at.turn, step: at.step, attempt: at.attempt, n: -1, reason };
}
