// The session's event record as the batch workflow keeps it: seq-numbered in record order, kept
// in the workflow's output, and streamed to the worker-side sink one chunk per workflow step.
import { condition, log, proxyLocalActivities } from '@temporalio/workflow';
import type { SinkActivities } from '../activities/sink';
import { EVENT_ENVELOPE_BYTES, jsonBytes } from '../pipeline/budget';
import type { EventDraft, JsonObject, SessionEvent } from '../pipeline/types';

const sink = proxyLocalActivities<SinkActivities>({
  startToCloseTimeout: '10s',
  retry: { maximumAttempts: 10, initialInterval: '200ms', maximumInterval: '5s' },
});

export class EventLog {
  readonly events: SessionEvent[] = [];
  private unflushed: SessionEvent[] = [];
  private closed = false;
  /** JSON bytes recorded so far: the events are part of the batch output (pipeline/budget.ts). */
  bytes = 0;

  constructor(
    private readonly sessionId: string,
    private seq: number,
  ) {}

  get nextSeq(): number {
    return this.seq;
  }

  /** True once the batch settled: events recorded now would miss the sink. */
  get isClosed(): boolean {
    return this.closed;
  }

  record(type: string, data: JsonObject): SessionEvent {
    const event: SessionEvent = { type, seq: this.seq++, time: new Date().toISOString(), data };
    this.bytes += jsonBytes(data) + EVENT_ENVELOPE_BYTES;
    this.events.push(event);
    this.unflushed.push(event);
    return event;
  }

  recordAll(drafts: EventDraft[]): void {
    for (const d of drafts) this.record(d.type, d.data);
  }

  /**
   * Writes events to the sink as they come, in seq order, one write per batch of events that
   * arrive together. The sink skips seqs it already has, so activity retries write nothing twice.
   */
  async streamToSink(): Promise<void> {
    for (;;) {
      await condition(() => this.unflushed.length > 0 || this.closed);
      if (this.unflushed.length === 0) return;
      const chunk = this.unflushed.splice(0);
      try {
        await sink.appendEvents({ sessionId: this.sessionId, events: chunk });
      } catch (err) {
        // The events stay in history and in the output; `sluice events` can rebuild the log.
        log.warn('session sink write failed; events remain in the workflow history', { error: String(err), firstSeq: chunk[0].seq });
      }
    }
  }

  close(): void {
    this.closed = true;
  }
}
