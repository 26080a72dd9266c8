// Where the log and the live channel meet, for a follower that is there before the step: on a
// loaded machine one read can find a step's record and its pieces together. That follower gets the
// pieces, then the record, as it would have across two reads; only a follower that joins after
// the step was recorded gets the step whole from its record. A scripted store, read by read.
import { describe, expect, it } from 'vitest';
import type { LiveEvent } from '../../pipeline/live';
import { followSessionEvents } from '../../client/session-events';
import type { SessionEvent } from '../../pipeline/types';
import type { LiveCursor, LiveReader } from '../../stores/live';

const TIME = new Date(0).toISOString();
const user: SessionEvent = {
  seq: 0,
  type: 'session/user',
  time: TIME,
  data: { turn: 1, content: 'hi' },
} as SessionEvent;
const record: SessionEvent = {
  seq: 1,
  type: 'model/message',
  time: TIME,
  data: { turn: 1, step: 1, text: 'Hello there.' },
} as SessionEvent;
const pieces: LiveEvent[] = ['Hello', ' there.'].map((text, n) => ({
  type: 'live/delta',
  turn: 1,
  step: 1,
  attempt: 1,
  n,
  kind: 'text',
  text,
}));

/**
 * A store whose log reads are scripted: read k returns rounds[k] (the last one after that), and
 * whose live channel holds `pieces` from the read `piecesFrom` on.
 */
function scripted(rounds: SessionEvent[][], piecesFrom: number) {
  let reads = 0;
  const live: LiveReader = {
    pollMs: 5,
    async read(_sessionId: string, cursor?: LiveCursor) {
      const at = cursor?.kind === 'pg' ? cursor.id : 0;
      const held = reads - 1 >= piecesFrom ? pieces : [];
      return { events: held.slice(at), cursor: { kind: 'pg', id: held.length } as LiveCursor };
    },
    watch: () => () => undefined,
  };
  return {
    live,
    async events(_sessionId: string, afterSeq = -1) {
      const round = rounds[Math.min(reads++, rounds.length - 1)];
      return round.filter((e) => e.seq > afterSeq);
    },
  };
}

async function follow(source: ReturnType<typeof scripted>): Promise<string[]> {
  const seen: string[] = [];
  const stop = new AbortController();
  for await (const e of followSessionEvents(source, 's1', { live: true, intervalMs: 5, signal: stop.signal })) {
    seen.push(e.type === 'live/delta' ? `piece ${(e as LiveEvent & { text: string }).text}` : e.type);
    if (e.type === 'model/message') stop.abort();
  }
  return seen;
}

describe('followSessionEvents at the seam of the log and the live channel', () => {
  it('a follower there before the step gets its pieces before its record, when one read finds both', async () => {
    // Read 1: the turn's start, no pieces yet. Read 2: the record and the pieces together.
    const seen = await follow(scripted([[user], [user, record]], 1));
    expect(seen).toEqual(['session/user', 'piece Hello', 'piece  there.', 'model/message']);
  });

  it('a follower that joins after the step was recorded gets it whole from its record, none of its pieces', async () => {
    const seen = await follow(scripted([[user, record]], 0));
    expect(seen).toEqual(['session/user', 'model/message']);
  });
});
