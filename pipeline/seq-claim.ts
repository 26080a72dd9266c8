// A batch's claim on its session's seqs: what the workflow asks and what the sink answers.

/** The sink's answer to a batch's claim on a session's seqs from `startSeq` on. */
export type SeqClaim = { ok: true } | { ok: false; problem: string; nextSeq: number };

export interface SeqClaimRequest {
  sessionId: string;
  startSeq: number;
  batchId: string;
}

export interface SessionActivities {
  claimSessionSeq(request: SeqClaimRequest): Promise<SeqClaim>;
}
