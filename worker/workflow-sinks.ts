// How session events get from the batch workflow to the EventSink: a Temporal workflow sink, so
// writing them costs no activity and no history event.
//
// At least once: the worker awaits these writes before it reports the workflow task done, and
// calls the sink again on every replay (callDuringReplay). A crash before the write means the task
// is retried and replayed, so the events come again; the EventSink skips seqs it already holds.
//
// A sink that keeps failing (a full or read-only disk, a name the file system refuses) must never
// hold a workflow task: waiting in every task would outlast the task timeout, and the retried task
// would wait again, forever. So the task waits for one short round of attempts per session; after
// that the session's writes wait in memory and are retried in the background, and the batch goes
// on. The events are in the batch's history and output either way (`sluice events` rebuilds a log).
import { Runtime, type InjectedSinks } from '@temporalio/worker';
import type { SessionEvent } from '../pipeline/types';
import type { SessionEventSinks } from '../workflows/event-log';
import type { EventSink } from '../stores/sink';

interface SinkRetryOptions {
  /** Waits between the attempts a workflow task makes, before it stops waiting. */
  inTaskDelaysMs?: number[];
  /** Waits between background attempts once a session's writes are held; the last one repeats. */
  backgroundDelaysMs?: number[];
  /** Events held per session at most; past it the oldest are dropped (they stay in history). */
  maxHeldEvents?: number;
}

const DEFAULTS: Required<SinkRetryOptions> = {
  inTaskDelaysMs: [100, 500],
  backgroundDelaysMs: [2_000, 5_000, 15_000, 60_000, 300_000],
  maxHeldEvents: 20_000,
};

/** Errors no quick retry will cure: the task stops waiting at once. */
const PERMANENT = new Set(['ENAMETOOLONG', 'EROFS', 'ENOSPC', 'EDQUOT', 'EACCES', 'EPERM', 'ENOTDIR', 'EISDIR']);

interface Held {
  /** Each event with the batch that recorded it, so the sink can tell a batch's own rewrite from another's. */
  events: { event: SessionEvent; batchId?: string }[];
  attempt: number;
  timer?: NodeJS.Timeout;
}

export function sessionEventSinks(
  sink: EventSink,
  options: SinkRetryOptions = {},
  /** Sees each chunk once as the workflow records it (not on replay): telemetry. */
  observe?: (workflowId: string, sessionId: string, events: SessionEvent[]) => void,
): InjectedSinks<SessionEventSinks> {
  const writer = new SessionWriter(sink, { ...DEFAULTS, ...options });
  return {
    sessionEvents: {
      append: {
        callDuringReplay: true,
        async fn(info, sessionId, events) {
          if (observe && !info.unsafe.isReplaying) {
            try {
              observe(info.workflowId, sessionId, events);
            } catch {
              // telemetry never stops a batch
            }
          }
          await writer.append(sessionId, events, info.workflowId);
        },
      },
    },
  };
}

/**
 * One sink's writes, per session: in the order the workflow handed them over, the chunks of one
 * batch's workflow task joined into one append, and a session whose writes keep failing held in
 * memory and retried in the background.
 */
class SessionWriter {
  /** One write at a time per session, in the order the workflow handed the chunks over. */
  private readonly queues = new Map<string, Promise<void>>();
  /**
   * Per session, the write queued but not started yet: the events a batch hands over in one
   * workflow task (one sink call each, called together) join it and go as one append.
   */
  private readonly open = new Map<string, { batchId: string; events: SessionEvent[]; written: Promise<void> }>();
  /** Sessions whose writes failed for good in a task: their events wait here for a background retry. */
  private readonly held = new Map<string, Held>();
  private readonly sink: EventSink;
  private readonly opts: Required<SinkRetryOptions>;

  constructor(sink: EventSink, opts: Required<SinkRetryOptions>) {
    this.sink = sink;
    this.opts = opts;
  }

  /** Resolves when the events are written, or held for the background when writing them failed. */
  append(sessionId: string, events: SessionEvent[], batchId: string): Promise<void> {
    const joined = this.open.get(sessionId);
    if (joined && joined.batchId === batchId) {
      joined.events.push(...events);
      return joined.written;
    }
    const chunk = { batchId, events: [...events], written: Promise.resolve() };
    this.open.set(sessionId, chunk);
    chunk.written = this.after(sessionId).then(() => {
      if (this.open.get(sessionId) === chunk) this.open.delete(sessionId);
      return this.writeInTask(sessionId, chunk.events, chunk.batchId);
    });
    this.track(sessionId, chunk.written);
    return chunk.written;
  }

  // The batch id lets the sink tell a replay of this batch's events from another batch's (sink.ts).
  private async writeInTask(sessionId: string, events: SessionEvent[], batchId: string): Promise<void> {
    if (this.held.has(sessionId)) return this.hold(sessionId, events, batchId);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.sink.append(sessionId, events, batchId);
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (attempt >= this.opts.inTaskDelaysMs.length || (code && PERMANENT.has(code))) {
          warn('session sink write failed; the batch goes on and the write is retried in the background', {
            sessionId,
            firstSeq: events[0]?.seq,
            error: String(err),
          });
          return this.hold(sessionId, events, batchId);
        }
        await new Promise((r) => setTimeout(r, this.opts.inTaskDelaysMs[attempt]));
      }
    }
  }

  private hold(sessionId: string, events: SessionEvent[], batchId?: string): void {
    let h = this.held.get(sessionId);
    if (!h) {
      h = { events: [], attempt: 0 };
      this.held.set(sessionId, h);
      this.schedule(sessionId, h);
    }
    h.events.push(...events.map((event) => ({ event, batchId })));
    const over = h.events.length - this.opts.maxHeldEvents;
    if (over > 0) {
      h.events.splice(0, over);
      warn('session sink: held events dropped (they remain in the workflow history and output)', {
        sessionId,
        dropped: over,
      });
    }
  }

  private schedule(sessionId: string, h: Held): void {
    const delays = this.opts.backgroundDelaysMs;
    const delay = delays[Math.min(h.attempt, delays.length - 1)];
    h.timer = setTimeout(() => {
      this.track(
        sessionId,
        this.after(sessionId).then(() => this.writeHeld(sessionId, h)),
      );
    }, delay);
    // A worker that shuts down does not wait for these: the events are in history.
    h.timer.unref();
  }

  /** A background round: every held event written, or all of them held again for the next round. */
  private async writeHeld(sessionId: string, h: Held): Promise<void> {
    const events = h.events.splice(0);
    const count = events.length;
    try {
      // One append per run of events from the same batch, in the order they were held.
      while (events.length) {
        let j = 1;
        while (j < events.length && events[j].batchId === events[0].batchId) j++;
        await this.sink.append(
          sessionId,
          events.slice(0, j).map((x) => x.event),
          events[0].batchId,
        );
        events.splice(0, j);
      }
      // Events held while these were written wait for the next round.
      if (h.events.length) {
        h.attempt = 0;
        this.schedule(sessionId, h);
      } else this.held.delete(sessionId);
      warn('session sink: held events written after earlier failures', { sessionId, events: count });
    } catch (err) {
      h.events.unshift(...events);
      h.attempt++;
      warn('session sink write still failing; retrying in the background', {
        sessionId,
        attempt: h.attempt,
        error: String(err),
      });
      this.schedule(sessionId, h);
    }
  }

  /** The session's last queued write: the next one starts after it. */
  private after(sessionId: string): Promise<void> {
    return this.queues.get(sessionId) ?? Promise.resolve();
  }

  private track(sessionId: string, next: Promise<void>): void {
    this.queues.set(sessionId, next);
    void next.finally(() => {
      if (this.queues.get(sessionId) === next) this.queues.delete(sessionId);
    });
  }
}

function warn(message: string, meta: Record<string, unknown>): void {
  Runtime.instance().logger.warn(message, meta);
}
