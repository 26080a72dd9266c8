// The batch's claim on its session's seqs, checked by the sink before the batch records an event.
import type { EventSink, SeqClaim } from '../worker/sink';

export interface SessionActivities {
  claimSessionSeq(request: { sessionId: string; startSeq: number; batchId: string }): Promise<SeqClaim>;
}

export function createSessionActivities(sink: EventSink): SessionActivities {
  return {
    async claimSessionSeq({ sessionId, startSeq, batchId }) {
      return sink.claim ? sink.claim(sessionId, startSeq, batchId) : { ok: true };
    },
  };
}
