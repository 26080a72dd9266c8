// A session's events, live: the session log the workers' sink writes (<state-dir>/sessions/<id>.jsonl,
// or the PostgreSQL store), followed as it grows, and, with `live: true`, the pieces of each model
// answer as the provider streams them (stores/live.ts). The log is the live view of the durable
// record (the workflow histories and the stored transcript, docs/sessions.md says which is which);
// the live pieces are previews of a step that the log records whole when the step ends.
import { promises as fs } from 'node:fs';
import type { LiveDropped, LiveEvent, LiveVoid } from '../pipeline/live';
import type { SessionEvent } from '../pipeline/types';
import { parseJsonl } from '../stores/jsonl';
import { fileLiveChannel, type LiveCursor, type LiveReader } from '../stores/live';
import { sessionLogPath } from '../stores/session-log-path';

export type { LiveDelta, LiveDropped, LiveEvent, LiveVoid } from '../pipeline/live';

/** The log's events; undefined while it does not exist. A torn last line (a crash mid-append) is skipped. */
async function readLog(stateDir: string, sessionId: string): Promise<SessionEvent[] | undefined> {
  let text: string;
  try {
    text = await fs.readFile(sessionLogPath(stateDir, sessionId), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return parseJsonl(text) as SessionEvent[];
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
  /**
   * Asked in the follower's own round, after its read of the log and before it yields what it
   * read (the first round always, then at most every `checkMs`, default 500): whether the events
   * waited for can still come. An error it returns ends the follow: the generator throws it.
   * `logFound` is false when a state folder holds no log for the session (a store: always true).
   * SessionHandle.events uses it for a log kept elsewhere and for a session id another workflow took.
   */
  check?: (round: { logFound: boolean }) => Promise<Error | undefined>;
  checkMs?: number;
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
 * a failed attempt's followed by `live/void`, and a run lost with its worker (a local step run again
 * by the next worker, from attempt 1) voided before the new run's. A step's `model/message` is
 * its whole answer: a follower that showed the pieces replaces them with it.
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
  const view = live ? new LiveView(live, sessionId, opts.maxBacklog ?? 4096) : undefined;
  const changes = new Changes();
  const unwatch = live?.watch(sessionId, () => changes.notify());
  let first = true;
  let checkedAt: number | undefined;
  try {
    while (!opts.signal?.aborted) {
      changes.dirty = false;
      // The first read of a live follower takes the whole log: which steps are recorded.
      const round = await readRound(source, sessionId, live && first ? -1 : next - 1);
      if (opts.check && (checkedAt === undefined || Date.now() - checkedAt >= (opts.checkMs ?? 500))) {
        checkedAt = Date.now();
        const err = await opts.check({ logFound: round !== undefined });
        if (err) throw err;
      }
      let events = round ?? [];
      // A late follower: a step already recorded when it joins comes whole from its record, none
      // of the pieces the live channel still holds for it. Only the first round decides that: a
      // step recorded while this follower follows gets its unread pieces before its record, even
      // when one round reads both (a loaded machine), as a follower there from the start expects.
      if (view && first) for (const e of events) view.note(e, e.seq < next ? 'delivered' : 'read');
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
        if (view) yield* view.recorded(e);
        yield e;
      }
      first = false;
      if (view) yield* view.drain();
      if (changes.dirty) continue; // changed while this round read: read again at once
      await changes.wait(opts.intervalMs ?? live?.pollMs ?? 200, opts.signal);
    }
  } finally {
    unwatch?.();
  }
}

/**
 * One read of the log: a state folder's whole log (undefined while there is none), or a store's
 * events after `afterSeq`.
 */
async function readRound(
  source: SessionEventSource,
  sessionId: string,
  afterSeq: number,
): Promise<SessionEvent[] | undefined> {
  if (typeof source === 'string') return readLog(source, sessionId);
  try {
    return await source.events(sessionId, afterSeq);
  } catch {
    // a database restarting: read again on the next round
    return [];
  }
}

/** Wakes a waiting follower when its live channel changes; the interval is the safety net (a missed notice). */
class Changes {
  /** Changed since the round began. */
  dirty = false;
  private wake: (() => void) | undefined;

  notify(): void {
    this.dirty = true;
    this.wake?.();
  }

  wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.wake = undefined;
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.wake = done;
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

/** The live pieces of the steps under way, each shown once, none of a step the log already holds whole. */
class LiveView {
  private cursor: LiveCursor | undefined;
  /** The last step whose record (its answer, its failure, or its turn's end) this follower delivered. */
  private last = { turn: 0, step: 0 };
  /** The last step whose record this follower has read, delivered or about to be. */
  private read = { turn: 0, step: 0 };
  /**
   * Per step under way: the run and attempt whose pieces were shown, whether they were voided, and
   * the runs superseded before it (a lost run's late pieces are not shown).
   */
  private readonly shown = new Map<string, Shown>();
  private readonly live: LiveReader;
  private readonly sessionId: string;
  private readonly maxBacklog: number;

  constructor(live: LiveReader, sessionId: string, maxBacklog: number) {
    this.live = live;
    this.sessionId = sessionId;
    this.maxBacklog = maxBacklog;
  }

  /** A logged event, read or delivered: the step it records (if any) is whole now. */
  note(e: SessionEvent, how: 'read' | 'delivered'): void {
    const d = e.data as { turn?: number; step?: number };
    let at: { turn: number; step: number } | undefined;
    if (e.type === 'model/message' || e.type === 'model/failed') at = { turn: Number(d.turn), step: Number(d.step) };
    else if (e.type === 'session/turn-ended') at = { turn: Number(d.turn), step: Number.MAX_SAFE_INTEGER };
    if (!at) return;
    if (before(this.read, at)) this.read = at;
    if (how === 'delivered' && before(this.last, at)) this.last = at;
  }

  /** What goes before a logged event: the pieces of its step still unread, and a void for a step that failed. */
  async *recorded(e: SessionEvent): AsyncGenerator<LiveEvent> {
    // Every piece of a step was written before its record: show what is still unread first.
    if (e.type === 'model/message' || e.type === 'model/failed') yield* this.drain();
    this.note(e, 'delivered');
    // A step that failed for good while an attempt's pieces stood: they are void.
    const d = e.data as { turn?: number; step?: number; message?: string };
    const key = `${d.turn}:${d.step}`;
    const s = this.shown.get(key);
    if (e.type === 'model/failed' && s && !s.voided)
      yield voidOf(Number(d.turn), Number(d.step), s, String(d.message ?? 'the model step failed'));
    if (e.type === 'model/message' || e.type === 'model/failed') this.shown.delete(key);
  }

  /**
   * The live events not read yet, each yielded unless its step is recorded or its attempt
   * superseded. A step whose pieces this follower has been showing gets the rest of them before
   * its record (the record then replaces them); a step whose record was read before any of its
   * pieces were shown gets none: a late follower would show its text twice, once in pieces and
   * once whole.
   */
  async *drain(): AsyncGenerator<LiveEvent> {
    let got: LiveEvent[] = [];
    try {
      const r = await this.live.read(this.sessionId, this.cursor);
      got = r.events;
      this.cursor = r.cursor;
    } catch {
      // the channel is down: the log still brings every step whole
    }
    const backlog = got.length > this.maxBacklog;
    for (const ev of got) {
      if (before(ev, this.last)) continue; // recorded whole already: its pieces would show it twice
      const key = `${ev.turn}:${ev.step}`;
      const s = this.shown.get(key);
      if (!s && before(ev, this.read)) continue; // its record is read, none of its pieces shown: it comes whole
      let cur: Shown;
      if (s && ev.run !== s.run) {
        // Another execution of the step. A local step whose worker was lost runs again on the next
        // worker from attempt 1, its pieces numbered as the lost run's were: the run tells them
        // apart. A run superseded already, or an older attempt's run that is not such a restart
        // (a worker that went on after its attempt was retried), shows nothing more.
        if (s.gone.has(ev.run) || (ev.attempt < s.attempt && ev.attempt !== 1)) continue;
        if (!s.voided)
          yield voidOf(
            ev.turn,
            ev.step,
            s,
            ev.attempt > s.attempt
              ? `attempt ${ev.attempt} started over`
              : 'the worker running the step was lost; the step runs again on another worker',
          );
        cur = { attempt: ev.attempt, run: ev.run, voided: false, dropped: false, gone: s.gone.add(s.run) };
      } else {
        if (s && ev.attempt < s.attempt) continue; // an attempt already superseded
        if (s && ev.attempt > s.attempt && !s.voided)
          // A new attempt without a void before it: the last one's worker stopped mid-answer.
          yield voidOf(ev.turn, ev.step, s, `attempt ${ev.attempt} started over`);
        cur =
          s && s.attempt === ev.attempt
            ? s
            : { attempt: ev.attempt, run: ev.run, voided: false, dropped: false, gone: s?.gone ?? new Set() };
      }
      this.shown.set(key, cur);
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
}

interface Shown {
  attempt: number;
  /** The execution whose pieces these are (undefined: written before runs were stamped). */
  run: string | undefined;
  voided: boolean;
  dropped: boolean;
  gone: Set<string | undefined>;
}

/** A void this follower makes itself, of the attempt (and run) it was showing. */
function voidOf(turn: number, step: number, of: { attempt: number; run?: string }, reason: string): LiveVoid {
  return {
    type: 'live/void',
    turn,
    step,
    attempt: of.attempt,
    ...(of.run !== undefined ? { run: of.run } : {}),
    n: -1,
    reason,
  };
}

function droppedOf(at: { turn: number; step: number; attempt: number; run?: string }, reason: string): LiveDropped {
  return {
    type: 'live/dropped',
    turn: at.turn,
    step: at.step,
    attempt: at.attempt,
    ...(at.run !== undefined ? { run: at.run } : {}),
    n: -1,
    reason,
  };
}
