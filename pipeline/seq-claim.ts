// A batch's claim on its session's seqs: what the workflow asks and what the sink answers.
import type { PreflightReply, WireCallRef } from './stages';

/** The sink's answer to a batch's claim on a session's seqs from `startSeq` on. */
export type SeqClaim = { ok: true } | { ok: false; problem: string; nextSeq: number };

interface SeqClaimRequest {
  sessionId: string;
  startSeq: number;
  batchId: string;
}

export interface SessionActivities {
  claimSessionSeq(request: SeqClaimRequest): Promise<SeqClaim>;
}

/**
 * A batch's first worker round: the claim, then (only if it holds) the preflight of the first
 * group of calls, so the first workflow task waits for one local activity instead of two.
 */
export interface FirstRoundActivities {
  claimThenPreflight(request: FirstRoundRequest): Promise<FirstRound>;
}

interface FirstRoundRequest {
  claim: SeqClaimRequest;
  /** The first group's calls, preflighted once the claim holds. */
  refs: WireCallRef[];
  /**
   * How many calls the whole batch has: the group is all the worker sees otherwise. A local
   * activity's input is not recorded, so this costs no history; it lets the round say `straight`
   * only for a batch that can use it.
   */
  batchCalls: number;
}

/** What the first round recorded: its marker's result, read on replay as it was recorded. */
interface FirstRound {
  claim: SeqClaim;
  preflight?: PreflightReply;
  /**
   * A batch of one call runs it straight through: admit, body, settle, without the model-order
   * scheduler (workflows/batch.ts). Set by workers of the build that does so, for a batch of one
   * call; a round recorded before has none, and its batch replays on the scheduler.
   */
  straight?: true;
}
