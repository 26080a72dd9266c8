// The session's event record as the workflows keep it: seq-numbered in record order, handed to the
// worker-side sink as it grows, and (for a batch) kept for the workflow's output. The session
// workflow records its own events (turns, model steps) through it too, keeping none: its batches'
// events are in their outputs, and its own are in the session log.
import { proxySinks, type Sinks } from '@temporalio/workflow';
import { EVENT_ENVELOPE_BYTES, jsonBytes } from '../pipeline/budget';
import type { EventPayloads, EventType } from '../pipeline/events';
import type { EventDraft, JsonObject, SessionEvent } from '../pipeline/types';

/**
 * Events leave the workflow through a Temporal workflow sink, not an activity: nothing in history,
 * no wait. The worker writes them before it reports the workflow task done and again on every
 * replay, so each event reaches the sink at least once (stores/sink.ts). Each event is handed
 * over as it is recorded; the worker joins a task's events of one batch into one write
 * (worker/workflow-sinks.ts), so the workflow needs no promise of its own to group them.
 */
export interface SessionEventSinks extends Sinks {
  sessionEvents: { append(sessionId: string, events: SessionEvent[]): void };
}

const { sessionEvents } = proxySinks<SessionEventSinks>();

export class EventLog {
  readonly events: SessionEvent[] = [];
  private closed = false;
  /** JSON bytes recorded so far: the events are part of the batch output (pipeline/budget.ts). */
  bytes = 0;

  constructor(
    private readonly sessionId: string,
    private seq: number,
    /** Keep the events (and their bytes) for the workflow's output: a batch does, a session does not. */
    private readonly keep = true,
  ) {}

  /** Seqs up to `nextSeq` were taken by events recorded elsewhere (a session's batch). */
  skipTo(nextSeq: number): void {
    this.seq = nextSeq;
  }

  get nextSeq(): number {
    return this.seq;
  }

  /** True once the batch settled: its record ends with the injected contexts, nothing after. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Records one of the workflow's own events, with the payload pipeline/events.ts gives its type. */
  record<T extends EventType>(type: T, data: EventPayloads[T]): SessionEvent {
    return this.append(type, data as unknown as JsonObject);
  }

  /** Records the events a stage's extensions emitted: their types and payloads are their own. */
  recordAll(drafts: EventDraft[]): void {
    for (const d of drafts) this.append(d.type, d.data);
  }

  private append(type: string, data: JsonObject): SessionEvent {
    const event: SessionEvent = { type, seq: this.seq++, time: new Date().toISOString(), data };
    if (this.keep) {
      this.bytes += jsonBytes(data) + EVENT_ENVELOPE_BYTES;
      this.events.push(event);
    }
    sessionEvents.append(this.sessionId, [event]);
    return event;
  }

  close(): void {
    this.closed = true;
  }
}
