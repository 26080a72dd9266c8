// A model step's publisher on the live channel: how a step publishes the pieces of its answer
// while its provider streams, without ever waiting on a follower. The channel is never the record: the step's answer is recorded whole, once, when
// the step ends (the transcript store and the session's history); live events only let a
// follower show it sooner. Each carries the step, the attempt and a sequence number, so a
// follower can void what a failed attempt showed, and the run: a token each execution of a step
// picks for itself. A local step whose worker is lost runs again on the next worker from attempt 1,
// under the same (step, attempt, n) as the lost run's pieces; only the run tells them apart.
//
// The events' shapes are in pipeline/live.ts; the channels themselves (a file per session,
// PostgreSQL's LISTEN/NOTIFY) are in stores/live.ts.
import type { LiveDelta, LiveEvent, LiveWriter } from '../pipeline/live';

/** What an adapter is given to stream into (ModelRequest.onDelta). */
export type DeltaSink = (d: Pick<LiveDelta, 'kind' | 'text' | 'call'>) => void;

interface PublisherOptions {
  /** Pending bytes beyond which deltas are dropped (a `live/dropped` marker follows). Default 1 MiB. */
  maxPendingBytes?: number;
  /** How long the attempt's end waits for its last events to be written. Default 2 s. */
  flushMs?: number;
}

/**
 * One attempt's publisher. Deltas queue in memory and go out in batches, one write at a time, so
 * a slow channel gets fewer, larger writes; past `maxPendingBytes` it drops what waits and says so
 * with a `live/dropped` marker. `delta` never blocks; `end` and `void` wait for the write at most
 * `flushMs`.
 */
export class AttemptPublisher {
  private n = 0;
  private pending: LiveEvent[] = [];
  private pendingBytes = 0;
  private writing: Promise<void> | undefined;
  private droppedSince: number | undefined;
  private readonly maxPending: number;
  private readonly flushMs: number;
  private closed = false;
  /** Whether anything was published (a void of an attempt that showed nothing is still sent). */
  published = 0;

  constructor(
    private readonly writer: LiveWriter,
    private readonly sessionId: string,
    private readonly at: { turn: number; step: number; attempt: number; run?: string },
    opts: PublisherOptions = {},
  ) {
    this.maxPending = opts.maxPendingBytes ?? 1024 * 1024;
    this.flushMs = opts.flushMs ?? 2_000;
  }

  readonly delta: DeltaSink = (d) => {
    // An empty piece counts only when it names a tool call (its id and name come first).
    if (this.closed || (!d.text && d.call?.id === undefined && d.call?.name === undefined)) return;
    const last = this.pending[this.pending.length - 1];
    // Consecutive pieces of the same kind (and call) waiting together go out as one.
    if (
      last?.type === 'live/delta' &&
      last.kind === d.kind &&
      last.call?.index === d.call?.index &&
      (!d.call || (d.call.id === undefined && d.call.name === undefined))
    ) {
      last.text += d.text;
    } else {
      this.pending.push({
        type: 'live/delta',
        ...this.at,
        n: this.n++,
        kind: d.kind,
        text: d.text,
        ...(d.call ? { call: d.call } : {}),
      });
    }
    this.pendingBytes += d.text.length;
    if (this.pendingBytes > this.maxPending) {
      // The channel cannot keep up: drop what waits; followers take the answer from the record.
      this.droppedSince ??= this.pending[0]?.n ?? this.n;
      this.pending = [];
      this.pendingBytes = 0;
      return;
    }
    this.kick();
  };

  /** The attempt failed: followers void what it showed. */
  async void(reason: string): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.pending.push({ type: 'live/void', ...this.at, n: this.n++, reason });
    this.kick();
    await this.flush();
  }

  /** The attempt succeeded: its last deltas go out before the step returns (bounded by flushMs). */
  async end(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.kick();
    await this.flush();
  }

  private kick() {
    if (this.writing) return;
    if (!this.pending.length && this.droppedSince === undefined) return;
    const batch = this.pending;
    if (this.droppedSince !== undefined) {
      batch.unshift({
        type: 'live/dropped',
        ...this.at,
        n: this.n++,
        reason: 'the live channel fell behind; the whole answer comes with the step record',
      });
      this.droppedSince = undefined;
    }
    this.pending = [];
    this.pendingBytes = 0;
    this.published += batch.length;
    this.writing = this.writer
      .write(this.sessionId, batch)
      .catch(() => {
        // A channel that fails loses only previews: say so on the next write.
        this.droppedSince ??= batch[0].n;
      })
      .finally(() => {
        this.writing = undefined;
        this.kick();
      });
  }

  private async flush() {
    const deadline = Date.now() + this.flushMs;
    while ((this.writing || this.pending.length || this.droppedSince !== undefined) && Date.now() < deadline) {
      const w = this.writing;
      if (!w) {
        this.kick();
        continue;
      }
      await Promise.race([w, new Promise((r) => setTimeout(r, Math.max(1, deadline - Date.now())))]);
    }
  }
}
