// The session's event record as the batch workflow keeps it: seq-numbered in record order, kept
// in the workflow's output, and streamed to the worker-side sink whenever the workflow waits.
import { condition, log, proxyLocalActivities } from '@temporalio/workflow';
import type { SinkActivities } from '../activities/sink';
import type { EventDraft, JsonObject, SessionEvent } from '../pipeline/types';

const sink = proxyLocalActivities<SinkActivities>({
  startToCloseTimeout: '10s',
  retry: { maximumAttempts: 10, initialInterval: '200ms', maximumInterval: '5s' },
});

export class EventLog {
  readonly events: SessionEvent[] = [];
  private unflushed: SessionEvent[] = [];
  private closed = false;
  private localStages = 0;

  constructor(
    private readonly sessionId: string,
    private seq: number,
  ) {}

  get nextSeq(): number {
    return this.seq;
  }

  record(type: string, data: JsonObject): SessionEvent {
    const event: SessionEvent = { type, seq: this.seq++, time: new Date().toISOString(), data };
    this.events.push(event);
    this.unflushed.push(event);
    return event;
  }

  recordAll(drafts: EventDraft[]): void {
    for (const d of drafts) this.record(d.type, d.data);
  }

  /**
   * Awaits a local stage activity. While one runs the workflow waits on nothing slow, so the sink
   * write waits too and takes the events of a whole chain of local stages in one chunk.
   */
  async whileLocal<T>(stage: Promise<T>): Promise<T> {
    this.localStages++;
    try {
      return await stage;
    } finally {
      this.localStages--;
    }
  }

  /**
   * Writes events to the sink in seq order, one write each time the workflow waits on something
   * slow (a tool body, a person, the server). The sink skips seqs it already has, so activity
   * retries write nothing twice.
   */
  async streamToSink(): Promise<void> {
    for (;;) {
      await condition(() => (this.unflushed.length > 0 && this.localStages === 0) || this.closed);
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
