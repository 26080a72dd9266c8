// The live channel on PostgreSQL: the worker publishes a streamed answer through an UNLOGGED table
// and NOTIFY; a follower with its own connection (as on another machine) sees the pieces before
// the step ends, a late one the record so far, the step from its start and the tail, and a cut
// attempt voided. The session log (the record) is the PostgreSQL store's, as before.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LiveEvent } from '../pipeline/live';
import { startSession } from '../client/session';
import { followSessionEvents } from '../client/session-events';
import type { SessionEvent } from '../pipeline/types';
import { postgresLiveChannel } from '../stores/live';
import { PostgresStores } from '../stores/postgres';
import { openStores, postgresStores } from '../stores/stores';
import { eventually } from './eventually';
import sessionConfig from './fixtures/session.config';
import { startHarness, type Harness } from './harness';
import { startPostgres, type TestPostgres } from './postgres';
import { ANSWER, startStreamProvider, type StreamProvider } from './stream-provider';

type Followed = SessionEvent | LiveEvent;

let pg: TestPostgres;
let url: string;
let provider: StreamProvider;
let h: Harness;
let workerStores: ReturnType<typeof postgresStores>;
let n = 0;

beforeAll(async () => {
  pg = await startPostgres();
  url = await pg.createDatabase('sluice_live');
  const setup = new PostgresStores(url);
  await setup.migrate();
  await setup.close();
  provider = await startStreamProvider();
  Object.assign(process.env, {
    OPENAI_API_KEY: 'sk-test-live-pg',
    OPENAI_BASE_URL: `${provider.base}/v1`,
    ANTHROPIC_API_KEY: 'sk-ant-test-live-pg',
    ANTHROPIC_BASE_URL: provider.base,
  });
  workerStores = postgresStores(url);
  h = await startHarness('live-pg', sessionConfig, { stores: workerStores });
  process.env.SLUICE_TEST_DIR = h.stateDir;
}, 120_000);
afterAll(async () => {
  await h?.close();
  await workerStores?.close();
  await provider?.close();
  await pg?.stop();
});

/** A follower with its own stores (its own pool and listening connection). */
function follow(sessionId: string) {
  const stores = postgresStores(url);
  const seen: Followed[] = [];
  const stop = new AbortController();
  const done = (async () => {
    for await (const e of followSessionEvents(stores, sessionId, { live: true, signal: stop.signal })) seen.push(e);
  })();
  return {
    seen,
    async stop() {
      stop.abort();
      await done;
      await stores.close();
    },
  };
}

const deltas = (seen: Followed[]) =>
  seen.filter((e): e is Extract<LiveEvent, { type: 'live/delta' }> => e.type === 'live/delta');
const logged = (seen: Followed[]) => seen.filter((e): e is SessionEvent => 'seq' in e);
function shownText(seen: Followed[]): string {
  const voided = new Set(seen.filter((e): e is LiveEvent => e.type === 'live/void').map((e) => e.attempt));
  return deltas(seen)
    .filter((d) => d.kind === 'text' && !voided.has(d.attempt))
    .map((d) => d.text)
    .join('');
}

describe('the live channel on PostgreSQL', () => {
  it('pieces reach a follower on its own connection before the step ends; a late follower gets record + step + tail, nothing twice', async () => {
    const s = await startSession(h.client, {
      sessionId: `live-pg-${process.pid}-${++n}`,
      model: 'anthropic:gate-pg',
      modelCall: { initialIntervalMs: 50 },
    });
    const early = follow(s.sessionId);
    const turn = s.send('say hello');
    await eventually('the first piece, through NOTIFY', () => shownText(early.seen) === ANSWER[0]);
    expect(logged(early.seen).map((e) => e.type)).toEqual(['session/user']);
    const late = follow(s.sessionId);
    await eventually('the late follower catches up', () => shownText(late.seen) === ANSWER[0]);
    provider.release('gate-pg');
    expect(await turn).toMatchObject({ reason: 'done', text: ANSWER.join('') });
    for (const f of [early, late]) {
      await eventually('the record', () => logged(f.seen).some((e) => e.type === 'session/turn-ended'));
      expect(shownText(f.seen)).toBe(ANSWER.join(''));
      const seqs = logged(f.seen).map((e) => e.seq);
      expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
      const ns = deltas(f.seen).map((d) => d.n);
      expect(ns).toEqual([...new Set(ns)].sort((a, b) => a - b));
      expect(f.seen.map((e) => e.type).lastIndexOf('live/delta')).toBeLessThan(
        f.seen.findIndex((e) => e.type === 'model/message'),
      );
    }
    await early.stop();
    await late.stop();
    await s.cancel();
    await s.result();
  });

  it('a follower joining after the steps are recorded gets them whole from their records, none of the pieces the table still holds', async () => {
    const s = await startSession(h.client, {
      sessionId: `live-pg-${process.pid}-${++n}`,
      model: 'anthropic:tool-pg',
      modelCall: { initialIntervalMs: 50 },
    });
    expect(await s.send('note seven')).toMatchObject({ reason: 'done', text: 'Noted seven.' });
    // The table keeps the last step's pieces until the session's next step starts: a follower that
    // took them would show that step twice, once in pieces and once whole.
    const channel = postgresLiveChannel(url);
    const held = await channel.read(s.sessionId);
    await channel.close();
    expect(held.events.filter((e) => e.type === 'live/delta' && e.step === 2).length).toBeGreaterThan(0);
    const late = follow(s.sessionId);
    await eventually('the record', () => logged(late.seen).some((e) => e.type === 'session/turn-ended'));
    expect(logged(late.seen).filter((e) => e.type === 'model/message')).toHaveLength(2);
    expect(late.seen.filter((e) => !('seq' in e))).toEqual([]);
    await late.stop();
    await s.cancel();
    await s.result();
  });

  it("session.events() with the workers' SLUICE_DATABASE_URL and no source follows PostgreSQL; openStores({ databaseUrl }) needs no folder", async () => {
    const s = await startSession(h.client, {
      sessionId: `live-pg-${process.pid}-${++n}`,
      model: 'anthropic:tool-pg',
      modelCall: { initialIntervalMs: 50 },
    });
    expect(await s.send('note seven')).toMatchObject({ reason: 'done', text: 'Noted seven.' });
    const before = process.env.SLUICE_DATABASE_URL;
    process.env.SLUICE_DATABASE_URL = url;
    const types: string[] = [];
    try {
      // No log in this process's .sluice: without the database it would say the log is not there.
      for await (const e of s.events({ until: 'turn' })) types.push(e.type);
    } finally {
      if (before === undefined) delete process.env.SLUICE_DATABASE_URL;
      else process.env.SLUICE_DATABASE_URL = before;
    }
    expect(types[0]).toBe('session/user');
    expect(types.at(-1)).toBe('session/turn-ended');
    expect(types.filter((t) => t === 'model/message')).toHaveLength(2);
    const stores = openStores({ databaseUrl: url });
    try {
      expect(stores.kind).toBe('postgresql');
      expect((await stores.events(s.sessionId)).map((e) => e.type)).toEqual(types);
    } finally {
      await stores.close();
    }
    await s.cancel();
    await s.result();
  });

  it('a stream cut mid-message: the follower sees attempt 1 voided, then attempt 2 whole', async () => {
    const s = await startSession(h.client, {
      sessionId: `live-pg-${process.pid}-${++n}`,
      model: 'openai:cut-pg',
      modelCall: { initialIntervalMs: 50 },
    });
    const f = follow(s.sessionId);
    expect(await s.send('say hello')).toMatchObject({ reason: 'done', text: ANSWER.join('') });
    await eventually('the record', () => logged(f.seen).some((e) => e.type === 'session/turn-ended'));
    const voided = f.seen.findIndex((e) => e.type === 'live/void' && (e as LiveEvent).attempt === 1);
    expect(voided).toBeGreaterThan(f.seen.findIndex((e) => e.type === 'live/delta'));
    expect(shownText(f.seen)).toBe(ANSWER.join(''));
    await f.stop();
    await s.cancel();
    await s.result();
  });
});
