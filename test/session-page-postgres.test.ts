// The session's event stream of the inbox with the workers' PostgreSQL store: the inbox has its
// own connections (as on another machine than the worker) and wakes on NOTIFY. The page gets the
// pieces before the step ends, a late page the record and the step from its start, and a cut
// attempt's pieces voided before the retry's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LiveEvent } from '../pipeline/live';
import { PostgresStores } from '../stores/postgres';
import { postgresStores } from '../stores/stores';
import { eventually } from './eventually';
import { startPostgres, type TestPostgres } from './postgres';
import { deltas, expectOnce, openStream, records, shownText } from './session-page-sse';
import { useSessionPage } from './session-page-setup';
import { ANSWER } from './stream-provider';

let pg: TestPostgres;
let dbUrl: string;
let workerStores: ReturnType<typeof postgresStores>;

// The database first; closed after the set-up below (after-hooks run in reverse).
beforeAll(async () => {
  pg = await startPostgres();
  dbUrl = await pg.createDatabase('sluice_page');
  const setup = new PostgresStores(dbUrl);
  await setup.migrate();
  await setup.close();
  workerStores = postgresStores(dbUrl);
}, 120_000);
afterAll(async () => {
  await workerStores?.close();
  await pg?.stop();
});

const fx = useSessionPage('session-page-pg', () =>
  Promise.resolve({
    provider: true,
    browser: false,
    harness: { stores: workerStores },
    // The inbox's own connections, as on another machine than the worker.
    inboxStore: () => postgresStores(dbUrl),
  }),
);
const start = (model: string) => fx.start(model, { modelCall: { initialIntervalMs: 50, maxAttempts: 4 } });
const url = fx.eventsUrl;

describe("a session's event stream through PostgreSQL", () => {
  it('pieces before the step ends, a late page the record and the step from its start, a cut attempt voided', async () => {
    const gate = `gate-page-pg-${process.pid}`;
    const s = await start(`openai:${gate}`);
    const early = openStream(url(s.sessionId));
    const turn = s.send('say hello');
    await eventually('the first piece, live', () => deltas(early.seen()).some((d) => d.text === ANSWER[0]));
    expect(records(early.seen()).map((e) => e.type)).not.toContain('model/message');
    const late = openStream(url(s.sessionId));
    await eventually('the late page catches up', () => shownText(late.seen(), 1, 1) === ANSWER[0]);
    expect(records(late.seen()).map((e) => e.type)).toEqual(['session/user']);
    fx.provider.release(gate);
    await turn;
    for (const f of [early, late]) {
      await eventually('the turn recorded', () => records(f.seen()).some((e) => e.type === 'session/turn-ended'));
      expect(shownText(f.seen(), 1, 1)).toBe(ANSWER.join(''));
      expectOnce(f.seen());
      await f.close();
    }
    await s.cancel();
    await s.result();

    const cut = await start(`openai:cut-page-pg-${process.pid}`);
    const f = openStream(url(cut.sessionId));
    expect(await cut.send('say hello')).toMatchObject({ reason: 'done', text: ANSWER.join('') });
    await eventually('the record', () => records(f.seen()).some((e) => e.type === 'model/message'));
    const seen = f.seen();
    const at = (type: string, attempt: number) =>
      seen.findIndex((e) => e.type === type && (e as LiveEvent).attempt === attempt);
    expect(at('live/void', 1)).toBeGreaterThan(at('live/delta', 1));
    expect(at('live/delta', 2)).toBeGreaterThan(at('live/void', 1));
    expect(shownText(seen, 1, 1)).toBe(ANSWER.join(''));
    expectOnce(seen);
    await f.close();
    await cut.cancel();
    await cut.result();
  });
});
