// The batch's claim on its session's seqs, checked by the sink before the batch records an event.
import { Context } from '@temporalio/activity';
import type { SessionActivities } from '../pipeline/seq-claim';
import type { FirstRoundActivities } from '../codec/stages';
import type { StageActivities } from './stages';
import type { EventSink } from '../stores/sink';

export function createSessionActivities(sink: EventSink): SessionActivities {
  return {
    async claimSessionSeq({ sessionId, startSeq, batchId }) {
      if (!sink.claim) return { ok: true };
      try {
        return await sink.claim(sessionId, startSeq, batchId);
      } catch (err) {
        // A sink that cannot be read or written must not stop batches (worker/workflow-sinks.ts):
        // the batch goes on unchecked, and the sink's own conflict check still applies.
        Context.current().log.warn('session seq claim could not be checked; the batch goes on', {
          sessionId,
          startSeq,
          error: String(err),
        });
        return { ok: true };
      }
    },
  };
}

/** The claim and the first preflight group in one local activity; nothing is preflighted when the claim fails. */
export function createFirstRoundActivities(
  session: SessionActivities,
  stages: Pick<StageActivities, 'preflight'>,
): FirstRoundActivities {
  return {
    async claimThenPreflight({ claim: request, refs, batchCalls }) {
      const claim = await session.claimSessionSeq(request);
      if (!claim.ok || refs.length === 0) return { claim };
      const preflight = await stages.preflight(refs);
      // A batch of one call has a first group of that call alone (the group is not empty here).
      return batchCalls === 1 ? { claim, preflight, straight: true } : { claim, preflight };
    },
  };
}
