// Session events leave the workflow through a sink. The default writes one append-only JSONL
// file per session, so a person can `tail -f` it.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import type { SeqClaim } from '../pipeline/seq-claim';
import type { SessionEvent } from '../pipeline/types';
import { appendLines, readJsonl, readJsonlSync } from './jsonl';

export interface EventSink {
  /**
   * Appends events in seq order. Called at least once per chunk (again on every replay of the
   * batch), so it must skip events it already holds: the JSONL sink does it by seq.
   */
  append(sessionId: string, events: SessionEvent[], batchId?: string): Promise<void>;
  /**
   * Called once by each batch before it records an event: may `batchId` number its events from
   * `startSeq` on? A sink without it takes every batch's word for its seqs.
   */
  claim?(sessionId: string, startSeq: number, batchId: string): Promise<SeqClaim>;
}

export type { SeqClaim };

/** Claims on a session's seqs, one JSON line per batch, in the order they were made. */
export function claimsPath(stateDir: string, sessionId: string): string {
  return besideLogPath(stateDir, sessionId, 'claims');
}

/**
 * Who wrote which of the log's seqs, one JSON line `{ wrote, from, to }` per append of a writer
 * with no claim checked by this sink (the log's events carry no writer): a session workflow claims
 * no seqs, so this is how the sink knows a repeat of its events is its own.
 */
export function writersPath(stateDir: string, sessionId: string): string {
  return besideLogPath(stateDir, sessionId, 'writers');
}

/** Events a batch numbered over seqs the log already held from another batch, kept aside with their batch. */
export function conflictsPath(stateDir: string, sessionId: string): string {
  return sessionConflictsPath(stateDir, sessionId);
}

import { besideLogPath, sessionConflictsPath, sessionLogPath } from './session-log-path';

export { sessionLogPath };

export class JsonlSessionLog implements EventSink {
  private readonly lastSeq = new Map<string, number>();
  private readonly queues = new Map<string, Promise<void>>();
  /**
   * Batches whose claim this sink checked (`session|batch`): their claims say whose seqs are whose,
   * so their appends need no writers line. Only a shortcut: a batch claimed on another worker
   * writes the line, which is harmless, and the set is cleared when it grows large.
   */
  private readonly claimedHere = new Set<string>();
  /** Batches replayed into a log that holds part of them (`session|batch`): see renumbered(). */
  private readonly replaying = new Map<string, Replaying>();

  constructor(
    private readonly stateDir: string,
    private readonly warn: (message: string) => void = (m) => console.error(`sluice: ${m}`),
  ) {}

  append(sessionId: string, events: SessionEvent[], batchId?: string): Promise<void> {
    return this.serialized(sessionId, () => this.write(sessionId, events, batchId));
  }

  /**
   * First come, first served, across every worker that shares the state folder: the claim is a
   * line appended to the session's claims file (one small O_APPEND write, so lines never
   * interleave), and the earliest line wins. A batch may not start at or before seqs the log
   * already holds, nor at or before a seq an earlier claim of another batch starts from.
   */
  claim(sessionId: string, startSeq: number, batchId: string): Promise<SeqClaim> {
    return this.serialized(sessionId, async () => {
      const file = claimsPath(this.stateDir, sessionId);
      let claims = readClaims(file);
      // A claim run again (its worker died before the batch recorded it) finds its own line and
      // skips the log check: the log may already hold this batch's first events.
      if (!claims.some((c) => c.batch === batchId)) {
        const last = lastSeqIn(sessionLogPath(this.stateDir, sessionId));
        if (last >= startSeq)
          return {
            ok: false,
            nextSeq: last + 1,
            problem: `session ${sessionId} already has events up to seq ${last} in its log, and this batch would number its events from ${startSeq}`,
          };
        appendLines(file, `${JSON.stringify({ batch: batchId, startSeq, time: new Date().toISOString() })}\n`);
        claims = readClaims(file);
      }
      const mine = claims.findIndex((c) => c.batch === batchId);
      const earlier = claims.slice(0, mine).find((c) => c.startSeq >= startSeq);
      if (!earlier) {
        if (this.claimedHere.size >= 10_000) this.claimedHere.clear();
        this.claimedHere.add(`${sessionId}|${batchId}`);
        return { ok: true };
      }
      const last = lastSeqIn(sessionLogPath(this.stateDir, sessionId));
      return {
        ok: false,
        nextSeq: Math.max(last + 1, earlier.startSeq + 1),
        problem: `batch ${earlier.batch} of session ${sessionId} claimed its seqs from ${earlier.startSeq} first, and this batch would number its events from ${startSeq}`,
      };
    });
  }

  /**
   * One writer per session at a time, so a seq check and the append after it cannot interleave.
   * A session's queue goes once it is idle: a worker serves sessions without end, and kept they
   * would grow its memory with every session it ever wrote.
   */
  private serialized<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    const prev = this.queues.get(sessionId) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(work);
    const tail = next.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(sessionId, tail);
    void tail.then(() => {
      if (this.queues.get(sessionId) === tail) this.queues.delete(sessionId);
    });
    return next;
  }

  /** The last seq this sink wrote to a session's log: a shortcut past reading its tail, bounded like claimedHere. */
  private rememberLastSeq(sessionId: string, seq: number): void {
    if (this.lastSeq.size >= 10_000 && !this.lastSeq.has(sessionId)) this.lastSeq.clear();
    this.lastSeq.set(sessionId, seq);
  }

  /** Sessions this sink holds state for (tests: it must not grow with every session served). */
  get sessionsHeld(): number {
    return this.queues.size + this.lastSeq.size;
  }

  private async write(sessionId: string, events: SessionEvent[], batchId?: string): Promise<void> {
    const file = sessionLogPath(this.stateDir, sessionId);
    let last = this.lastSeq.get(sessionId);
    if (last === undefined) last = lastSeqIn(file);
    // A batch that numbered events over another's keeps all of them aside, not just the overlap.
    if (batchId && conflictedBatches(this.stateDir, sessionId).has(batchId))
      return this.keepAside(sessionId, events, batchId);
    // Held chunks written late may repeat a seq: one event per seq.
    const bySeq = new Map(events.filter((e) => e.seq > last!).map((e) => [e.seq, e]));
    let fresh = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
    const seen = events.filter((e) => e.seq <= last!);
    if (seen.length && (await this.keepConflicts(sessionId, seen, batchId))) {
      // The rest of this chunk goes aside with its clash, as the batch's later chunks will: written
      // to the log it would follow events of another batch, and dropped it would be lost.
      if (fresh.length) this.keepAside(sessionId, fresh, batchId);
      return;
    }
    if (batchId && (seen.length || this.replaying.has(`${sessionId}|${batchId}`)))
      fresh = await this.renumbered(sessionId, batchId, events, fresh, last);
    if (fresh.length === 0) return;
    // The writer's line goes first: a crash between the two leaves a line for seqs this writer
    // writes again when its task is retried; a later line for the same seqs is the one that wrote them.
    // A batch whose claim was checked here needs none: its claim covers its seqs.
    if (batchId && !this.claimedHere.has(`${sessionId}|${batchId}`))
      appendLines(
        writersPath(this.stateDir, sessionId),
        `${JSON.stringify({ wrote: batchId, from: fresh[0].seq, to: fresh[fresh.length - 1].seq })}\n`,
      );
    appendLines(file, `${fresh.map((e) => JSON.stringify(e)).join('\n')}\n`);
    this.rememberLastSeq(sessionId, fresh[fresh.length - 1].seq);
  }

  /**
   * A batch replayed need not number its events as the run that wrote them did: a local activity's
   * result can come in another activation on replay, so around the place where a lost run stopped
   * writing, an event the log holds can come again under a seq past the log's end, and one the log
   * lacks under a seq it holds (its own seq, so skipped). Written as they come, the log would show
   * the first twice and the second never. So once a batch's first event comes again (a replay
   * starts there), its events are counted as they come: a copy the log holds already among the
   * batch's own events is not written again, and in its place, under its seq, goes the first event
   * the log lacks. Once the replay is past the log's end with nothing lacking, the count ends.
   * Returns what to write of `fresh`, the append's events past the log's end.
   */
  private async renumbered(
    sessionId: string,
    batchId: string,
    events: SessionEvent[],
    fresh: SessionEvent[],
    last: number,
  ): Promise<SessionEvent[]> {
    const key = `${sessionId}|${batchId}`;
    const claims = readClaims(claimsPath(this.stateDir, sessionId));
    const writers = readWriters(writersPath(this.stateDir, sessionId));
    const own = (seq: number) => claimOwner(claims, seq) === batchId || writerOf(writers, seq) === batchId;
    const logged = (await readSessionLog(this.stateDir, sessionId)).filter((e) => own(e.seq));
    let r = this.replaying.get(key);
    if (logged.length && events.some((e) => e.seq === logged[0].seq)) {
      if (this.replaying.size >= 10_000) this.replaying.clear();
      r = { handed: new Map(), lacking: [] };
      this.replaying.set(key, r);
    }
    if (!r) return fresh;
    const inLog = new Map<string, number>();
    for (const e of logged) inLog.set(eventIdentity(e), (inLog.get(eventIdentity(e)) ?? 0) + 1);
    const bySeq = new Map(logged.map((e) => [e.seq, e]));
    const out: SessionEvent[] = [];
    let repeats = 0;
    for (const e of [...new Map(events.map((e) => [e.seq, e])).values()].sort((a, b) => a.seq - b.seq)) {
      const id = eventIdentity(e);
      const copy = (r.handed.get(id) ?? 0) + 1;
      r.handed.set(id, copy);
      const held = copy <= (inLog.get(id) ?? 0);
      const had = bySeq.get(e.seq);
      if (e.seq <= last) {
        if (!held && (!had || eventIdentity(had) !== id)) r.lacking.push(e);
      } else if (!held) out.push(e);
      else {
        repeats++;
        const lacking = r.lacking.shift();
        if (lacking) out.push({ ...lacking, seq: e.seq });
      }
    }
    if (repeats === 0 && r.lacking.length === 0 && fresh.length) this.replaying.delete(key);
    return out;
  }

  /**
   * Events at seqs the log already holds are either the same events again (a replay: skipped) or
   * another batch's, numbered over them (a caller that reused a start seq past the claim check).
   * Those are never dropped without a word: they go to the conflicts file with their batch, and
   * the worker says so.
   */
  private async keepConflicts(sessionId: string, seen: SessionEvent[], batchId?: string): Promise<boolean> {
    const log = await readSessionLog(this.stateDir, sessionId);
    const logged = new Map(log.map((e) => [e.seq, JSON.stringify(e)]));
    const loggedEvents = new Map(log.map((e) => [e.seq, e]));
    // A replay may not repeat an event byte for byte: workflow time (an event's time, an
    // approval's expiry) moves when a replayed task resolves a local activity it waited for live.
    // Seqs this batch's own claim covers are its own events again, whatever their text.
    const claims = batchId ? readClaims(claimsPath(this.stateDir, sessionId)) : [];
    // A session workflow claims no seqs. When its worker is lost in a task that scheduled a local
    // activity, the next worker replays that task at another workflow time and records the same
    // events with other times (and other history sizes in a model step's event): seqs it wrote
    // itself, the same type and the same data but for those fields, are its own repeat (the first
    // copy stays). Another writer's events at those seqs still clash.
    const writers = batchId ? readWriters(writersPath(this.stateDir, sessionId)) : [];
    const ownRepeat = (e: SessionEvent) => {
      const had = loggedEvents.get(e.seq);
      return (
        had !== undefined &&
        writerOf(writers, e.seq) === batchId &&
        had.type === e.type &&
        JSON.stringify(replayStableData(had.data)) === JSON.stringify(replayStableData(e.data))
      );
    };
    const clashing = seen.filter(
      (e) =>
        logged.get(e.seq) !== JSON.stringify(e) && !(batchId && claimOwner(claims, e.seq) === batchId) && !ownRepeat(e),
    );
    if (clashing.length === 0) return false;
    this.keepAside(sessionId, clashing, batchId);
    return true;
  }

  /** Appends a batch's events to the conflicts file (each once) and says so. */
  private keepAside(sessionId: string, events: SessionEvent[], batchId?: string): void {
    const file = conflictsPath(this.stateDir, sessionId);
    const kept = readJsonlSync(file) as Partial<Conflict>[];
    const have = new Set(kept.map((c) => `${c?.batch}|${JSON.stringify(c?.event)}`));
    const batch = batchId ?? 'unknown';
    const fresh = events.filter((e) => !have.has(`${batch}|${JSON.stringify(e)}`));
    if (fresh.length === 0) return;
    appendLines(file, fresh.map((e) => `${JSON.stringify({ batch, event: e })}\n`).join(''));
    this.warn(
      `batch ${batch} numbered ${fresh.length} event(s) of session ${sessionId} at seqs the log already holds (${fresh[0].seq}..${fresh[fresh.length - 1].seq}); they are kept in ${file}, not in the log. Start each batch at the previous batch's nextSeq.`,
    );
  }
}

/** A batch replaying into a log that holds part of it: what its replay handed over, and what the log lacks. */
interface Replaying {
  /** Copies handed over so far, by eventIdentity. */
  handed: Map<string, number>;
  /** Events handed over under seqs the log holds with other events, which the log holds nowhere. */
  lacking: SessionEvent[];
}

/** An ISO time: workflow time, which a replay may place in another activation. */
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/**
 * An event as a replay repeats it: its type and its payload, without its place, its times (an
 * approval's expiry is workflow time) or what a replay may change; hashed, as it is kept per batch.
 */
function eventIdentity(e: SessionEvent): string {
  const payload = JSON.stringify(replayStableData(e.data), (_k, v) =>
    typeof v === 'string' && ISO_TIME.test(v) ? '' : v,
  );
  return createHash('sha256').update(`${e.type}\n${payload}`).digest('base64');
}

interface Claim {
  batch: string;
  startSeq: number;
}

/**
 * The batch whose claim covers `seq`: of the claims that won (no other batch claimed at or past
 * their start before them), the one starting last at or before `seq`.
 */
function claimOwner(claims: Claim[], seq: number): string | undefined {
  let owner: Claim | undefined;
  claims.forEach((c, i) => {
    const won = !claims.slice(0, i).some((e) => e.batch !== c.batch && e.startSeq >= c.startSeq);
    if (won && c.startSeq <= seq && (!owner || c.startSeq > owner.startSeq)) owner = c;
  });
  return owner?.batch;
}

interface Wrote {
  wrote: string;
  from: number;
  to: number;
}

function readWriters(file: string): Wrote[] {
  return (readJsonlSync(file) as Partial<Wrote>[]).filter(
    (w): w is Wrote => typeof w?.wrote === 'string' && Number.isInteger(w.from) && Number.isInteger(w.to),
  );
}

/** The writer of `seq`: the last line that covers it (an earlier one was a write lost in a crash). */
function writerOf(writers: Wrote[], seq: number): string | undefined {
  for (let i = writers.length - 1; i >= 0; i--)
    if (writers[i].from <= seq && seq <= writers[i].to) return writers[i].wrote;
  return undefined;
}

/** A line of the conflicts file: an event a batch numbered over another's, kept aside with its batch. */
interface Conflict {
  batch: string;
  event: SessionEvent;
}

function conflictedBatches(stateDir: string, sessionId: string): Set<string> {
  const lines = readJsonlSync(conflictsPath(stateDir, sessionId)) as Partial<Conflict>[];
  return new Set(lines.flatMap((c) => (typeof c?.batch === 'string' ? [c.batch] : [])));
}

function readClaims(file: string): Claim[] {
  return (readJsonlSync(file) as Partial<Claim>[]).filter(
    (c): c is Claim => typeof c?.batch === 'string' && Number.isInteger(c.startSeq),
  );
}

/** The highest seq in a session log (-1 for none), reading only its tail. */
export async function readLastSeq(file: string): Promise<number> {
  return lastSeqIn(file);
}

function lastSeqIn(file: string): number {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return -1;
  }
  try {
    const { size } = fs.fstatSync(fd);
    let tailSize = 64 * 1024;
    for (;;) {
      const start = Math.max(0, size - tailSize);
      const buf = Buffer.alloc(size - start);
      fs.readSync(fd, buf, 0, buf.length, start);
      const lines = buf
        .toString('utf8')
        .split('\n')
        .filter((l) => l.trim());
      // The first line of a partial read may be cut; use it only when the read began at 0.
      for (let i = lines.length - 1; i >= (start === 0 ? 0 : 1); i--) {
        try {
          const seq = JSON.parse(lines[i]).seq;
          if (Number.isInteger(seq)) return seq;
        } catch {
          // a torn last line from a crash mid-append: look further back
        }
      }
      if (start === 0) return -1;
      tailSize *= 4;
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** A session's log as the JSONL sink wrote it: every whole event, in seq order; none when there is no log. */
export async function readSessionLog(stateDir: string, sessionId: string): Promise<SessionEvent[]> {
  return (await readJsonl(sessionLogPath(stateDir, sessionId))) as SessionEvent[];
}

/**
 * Payload fields the workflow reads from its own run (a model step's history length and size), not
 * from a recorded result: a replayed task can see other values than the live one did (a local
 * activity's result lands in another task on replay). Everything else in a payload repeats exactly.
 */
const REPLAY_VOLATILE_FIELDS = ['historyEvents', 'historyBytes'];

/** An event's payload without the fields a replay may change: what a writer's repeat must match. */
function replayStableData(data: SessionEvent['data']): SessionEvent['data'] {
  if (!REPLAY_VOLATILE_FIELDS.some((f) => f in data)) return data;
  const out = { ...data };
  for (const f of REPLAY_VOLATILE_FIELDS) delete out[f];
  return out;
}
