// How session events get from the batch workflow to the EventSink: a Temporal workflow sink, so
// writing them costs no activity and no history event.
//
// At least once: the worker awaits these writes before it reports the workflow task done, and
// calls the sink again on every replay (callDuringReplay). A crash before the write means the task
// is retried and replayed, so the events come again; the EventSink skips seqs it already holds.
import { Runtime, type InjectedSinks } from '@temporalio/worker';
import type { SessionEvent } from '../pipeline/types';
import type { SessionEventSinks } from '../workflows/event-log';
import type { EventSink } from './sink';

const RETRY_DELAYS_MS = [100, 500, 2_000];

export function sessionEventSinks(sink: EventSink): InjectedSinks<SessionEventSinks> {
  // One write at a time per session, in the order the workflow handed the chunks over.
  const queues = new Map<string, Promise<void>>();
  return {
    sessionEvents: {
      append: {
        callDuringReplay: true,
        async fn(_info, sessionId, events) {
          const next = (queues.get(sessionId) ?? Promise.resolve()).then(() => write(sink, sessionId, events));
          queues.set(sessionId, next);
          await next;
          if (queues.get(sessionId) === next) queues.delete(sessionId);
        },
      },
    },
  };
}

async function write(sink: EventSink, sessionId: string, events: SessionEvent[]): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await sink.append(sessionId, events);
    } catch (err) {
      if (attempt >= RETRY_DELAYS_MS.length) {
        // `sluice events` rebuilds the log from the batches' outputs.
        Runtime.instance().logger.warn(
          'session sink write failed; the events remain in the workflow history and output',
          { sessionId, firstSeq: events[0]?.seq, error: String(err) },
        );
        return;
      }
      await new Promise((r) => setTimeout(r, RETRY_DELAYS_MS[attempt]));
    }
  }
}
