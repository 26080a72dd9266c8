// A batch's first worker round (activities/session.ts): the seq claim, then the first group's
// preflight only when the claim holds, so a batch refused for its seqs runs no extension code.
import { describe, expect, it } from 'vitest';
import { createFirstRoundActivities } from '../../activities/session';
import type { SeqClaim } from '../../pipeline/seq-claim';
import type { PreflightReply, WireCallRef } from '../../codec/stages';

const claim = { sessionId: 's', startSeq: 4, batchId: 'sluice-batch:s:1:1' };
const ref = { callId: 'c0', name: 'echo' } as WireCallRef;
const reply = { plan: {}, results: [] } as unknown as PreflightReply;

function round(answer: SeqClaim) {
  const preflighted: WireCallRef[][] = [];
  const claimed: unknown[] = [];
  const acts = createFirstRoundActivities(
    {
      async claimSessionSeq(request) {
        claimed.push(request);
        return answer;
      },
    },
    {
      async preflight(refs) {
        preflighted.push(refs);
        return reply;
      },
    },
  );
  return { acts, preflighted, claimed };
}

describe('first worker round', () => {
  it('claims, then preflights the group when the claim holds; a batch of one call runs straight', async () => {
    const { acts, preflighted, claimed } = round({ ok: true });
    expect(await acts.claimThenPreflight({ claim, refs: [ref], batchCalls: 1 })).toEqual({
      claim: { ok: true },
      preflight: reply,
      straight: true,
    });
    expect(claimed).toEqual([claim]);
    expect(preflighted).toEqual([[ref]]);
  });

  it('a group of more calls does not say straight: its batch keeps the model-order scheduler', async () => {
    const { acts } = round({ ok: true });
    const second = { ...ref, callId: 'c1' };
    expect(await acts.claimThenPreflight({ claim, refs: [ref, second], batchCalls: 2 })).toEqual({
      claim: { ok: true },
      preflight: reply,
    });
  });

  it('a first group of one call in a batch of more does not say straight: the round records only what applies', async () => {
    const { acts, preflighted } = round({ ok: true });
    expect(await acts.claimThenPreflight({ claim, refs: [ref], batchCalls: 3 })).toEqual({
      claim: { ok: true },
      preflight: reply,
    });
    expect(preflighted).toEqual([[ref]]);
  });

  it('runs no preflight when the claim is refused, and says where to start', async () => {
    const refused: SeqClaim = { ok: false, problem: 'seq 4 is taken', nextSeq: 9 };
    const { acts, preflighted } = round(refused);
    expect(await acts.claimThenPreflight({ claim, refs: [ref], batchCalls: 1 })).toEqual({ claim: refused });
    expect(preflighted).toEqual([]);
  });

  it('only claims when no call of the group can be preflighted', async () => {
    const { acts, preflighted } = round({ ok: true });
    expect(await acts.claimThenPreflight({ claim, refs: [], batchCalls: 1 })).toEqual({ claim: { ok: true } });
    expect(preflighted).toEqual([]);
  });
});
