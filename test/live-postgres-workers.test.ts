// The live channel across machines: two worker processes (each its own state folder, as two
// machines) on one task queue share the PostgreSQL stores, and a follower in this process, on
// neither worker, follows with its own connection. The step's first piece reaches the follower
// before the step ends; the worker running the step is then killed with SIGKILL mid-stream, the
// other worker's retry streams again, and the follower sees the first attempt voided, the
// answer shown once, nothing twice, and the record (the session log in PostgreSQL) whole.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LiveEvent } from '../pipeline/live';
import { startSession } from '../client/session';
import { followSessionEvents } from '../client/session-events';
import type { SessionEvent } from '../pipeline/types';
import { PostgresStores } from '../stores/postgres';
import { postgresStores } from '../stores/stores';
import { eventually } from './eventually';
import { spawnWorker, startHarness, type ChildWorker, type Harness } from './harness';
import { startPostgres, type TestPostgres } from './postgres';
import { ANSWER, startStreamProvider, type StreamProvider } from './stream-provider';

type Followed = SessionEvent | LiveEvent;

const CONFIG = path.join(__dirname, 'fixtures', 'session.config.ts');
let pg: TestPostgres;
let url: string;
let provider: StreamProvider;
let h: Harness;
const workers: ChildWorker[] = [];

beforeAll(async () => {
  pg = await startPostgres();
  url = await pg.createDatabase('sluice_live_workers');
  const setup = new PostgresStores(url);
  await setup.migrate();
  await setup.close();
  provider = await startStreamProvider();
  // This process only starts sessions and follows them; the workers are the two children.
  h = await startHarness('live-pg-workers', { tools: [] }, { autoStart: false });
  for (const name of ['a', 'b']) {
    const dir = path.join(h.stateDir, name);
    fs.mkdirSync(dir, { recursive: true });
    workers.push(
      spawnWorker(CONFIG, h.taskQueue, dir, {
        SLUICE_DATABASE_URL: url,
        SLUICE_TEST_DIR: dir,
        OPENAI_API_KEY: 'sk-test-live-workers',
        OPENAI_BASE_URL: `${provider.base}/v1`,
        ANTHROPIC_API_KEY: 'sk-ant-test-live-workers',
        ANTHROPIC_BASE_URL: provider.base,
      }),
    );
  }
  await Promise.all(workers.map((w) => w.ready));
}, 120_000);
afterAll(async () => {
  for (const w of workers) await w.kill();
  await h?.close();
  await provider?.close();
  await pg?.stop();
});

/** A follower with its own stores (its own pool and listening connection), on neither worker. */
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
const voids = (seen: Followed[]) =>
  seen.filter((e): e is Extract<LiveEvent, { type: 'live/void' }> => e.type === 'live/void');
const logged = (seen: Followed[]) => seen.filter((e): e is SessionEvent => 'seq' in e);
function shownText(seen: Followed[]): string {
  const voided = new Set(voids(seen).map((e) => e.attempt));
  return deltas(seen)
    .filter((d) => d.kind === 'text' && !voided.has(d.attempt))
    .map((d) => d.text)
    .join('');
}

describe('the live channel across two worker processes on PostgreSQL', () => {
  it('a follower on neither worker sees pieces before the step ends; SIGKILL mid-stream voids attempt 1, the other worker streams it whole, nothing twice', {
    timeout: 180_000,
  }, async () => {
    const model = 'gate-workers';
    const s = await startSession(h.client, {
      sessionId: `live-pg-workers-${process.pid}-${Date.now()}`,
      model: `anthropic:${model}`,
      // A killed worker's attempt is retried once its heartbeat is missed; 10 s leaves a loaded
      // machine room so the surviving worker's own attempt is not timed out as well.
      modelCall: { heartbeatTimeoutMs: 10_000, initialIntervalMs: 50 },
    });
    const f = follow(s.sessionId);
    const turn = s.send('say hello');

    // The first piece arrives through NOTIFY while the step is held open by the provider.
    await eventually('the first piece, from a worker process', () => shownText(f.seen) === ANSWER[0], {
      timeoutMs: 60_000,
    });
    expect(f.seen.some((e) => e.type === 'model/message')).toBe(false);
    expect(deltas(f.seen).every((d) => d.attempt === 1)).toBe(true);

    // Which worker runs the step: the pending activity names its worker (pid@host by default).
    const handle = h.client.temporal.workflow.getHandle(s.workflowId);
    const runningOn = async () => {
      const d = await handle.describe();
      const a = (d.raw.pendingActivities ?? []).find((p) => p.lastWorkerIdentity);
      return a ? Number(String(a.lastWorkerIdentity).split('@')[0]) : undefined;
    };
    const pid = await eventually('the step on a worker', runningOn);
    const victim = workers.find((w) => w.pid === pid);
    expect(victim, `the step runs on worker pid ${pid}, one of ${workers.map((w) => w.pid)}`).toBeDefined();
    const survivor = workers.find((w) => w !== victim)!;
    await victim!.kill('SIGKILL');

    // The other worker retries the step (its request reaches the provider and is held the same way).
    await eventually('the retry on the other worker', () => provider.requests(model) >= 2, { timeoutMs: 90_000 });
    expect(await eventually('the retry names its worker', async () => (await runningOn()) === survivor.pid)).toBe(true);
    provider.release(model);

    expect(await turn).toMatchObject({ reason: 'done', text: ANSWER.join('') });
    await eventually('the record', () => logged(f.seen).some((e) => e.type === 'session/turn-ended'), {
      timeoutMs: 60_000,
    });

    // Attempt 1 is voided after its piece and before any later attempt's; the answer shows once.
    const firstVoid = f.seen.findIndex((e) => e.type === 'live/void' && (e as LiveEvent).attempt === 1);
    expect(firstVoid).toBeGreaterThan(f.seen.findIndex((e) => e.type === 'live/delta'));
    expect(firstVoid).toBeLessThan(f.seen.findIndex((e) => e.type === 'live/delta' && (e as LiveEvent).attempt > 1));
    expect(shownText(f.seen)).toBe(ANSWER.join(''));
    // Nothing twice: each (attempt, n) once, in order within its attempt; each logged seq once, in order.
    const keys = deltas(f.seen).map((d) => `${d.attempt}/${d.n}`);
    expect(keys).toEqual([...new Set(keys)]);
    for (const a of new Set(deltas(f.seen).map((d) => d.attempt))) {
      const ns = deltas(f.seen)
        .filter((d) => d.attempt === a)
        .map((d) => d.n);
      expect(ns).toEqual([...ns].sort((x, y) => x - y));
    }
    const seqs = logged(f.seen).map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i));
    // The pieces came before the step's record; the record holds the answer once.
    expect(f.seen.map((e) => e.type).lastIndexOf('live/delta')).toBeLessThan(
      f.seen.findIndex((e) => e.type === 'model/message'),
    );
    expect(logged(f.seen).filter((e) => e.type === 'model/message')).toHaveLength(1);
    expect(logged(f.seen).filter((e) => e.type === 'session/user')).toHaveLength(1);
    await f.stop();

    // A late follower reading the record from PostgreSQL sees the same log, whole.
    const late = follow(s.sessionId);
    await eventually('the late follower has the record', () => logged(late.seen).length >= seqs.length);
    expect(logged(late.seen).map((e) => e.seq)).toEqual(seqs);
    // The step's pieces may still be in the live table; shown, they come before its record, with
    // the killed attempt voided, so they add up to the answer once (or nothing), never more.
    expect(['', ANSWER.join('')]).toContain(shownText(late.seen));
    expect(late.seen.map((e) => e.type).lastIndexOf('live/delta')).toBeLessThan(
      late.seen.findIndex((e) => e.type === 'model/message'),
    );
    await late.stop();

    await s.cancel();
    await s.result();
  });
});
