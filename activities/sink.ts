import type { SessionEvent } from '../pipeline/types';
import type { EventSink } from '../worker/sink';

export interface SinkActivities {
  appendEvents(req: { sessionId: string; events: SessionEvent[] }): Promise<void>;
}

export function createSinkActivities(sink: EventSink): SinkActivities {
  return {
    async appendEvents({ sessionId, events }) {
      await sink.append(sessionId, events);
    },
  };
}
