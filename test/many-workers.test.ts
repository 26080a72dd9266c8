// Three worker processes ("machines": each its own state folder) on one task queue, sharing the
// PostgreSQL stores: 200 batches across 20 sessions; one worker is killed with -9 mid-load and
// another is added. Every batch completes, each call has one tool/result, and every session's log
// in the store is complete and in seq order.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchOutput, SessionEvent } from '../pipeline/types';
import { PostgresStores } from '../stores/postgres';
import { batch, spawnWorker, startHarness, type ChildWorker, type Harness } from './harness';
import { startPostgres, type TestPostgres } from './postgres';
import { eventually } from './eventually';

const CONFIG = path.join(__dirname, 'fixtures', 'scale.config.ts');
let pg: TestPostgres;
let url: string;
let h: Harness;
let store: PostgresStores;
const workers: ChildWorker[] = [];

beforeAll(async () => {
  pg = await startPostgres();
  url = await pg.createDatabase('sluice_many');
  store = new PostgresStores(url);
  await store.migrate();
  h = await startHarness('many-workers', { tools: [] }, { autoStart: false });
}, 120_000);
afterAll(async () => {
  for (const w of workers) await w.kill();
  await h?.close();
  await store?.close();
  await pg?.stop();
});

const machine = (name: string) => {
  const dir = path.join(h.stateDir, name);
  fs.mkdirSync(dir, { recursive: true });
  return spawnWorker(CONFIG, h.taskQueue, dir, { SLUICE_DATABASE_URL: url });
};

describe('many workers', () => {
  it('200 batches over 20 sessions on 3 workers; one killed with -9 and one added mid-load: nothing lost', {
    timeout: 300_000,
  }, async () => {
    for (const name of ['a', 'b', 'c']) workers.push(machine(name));
    await Promise.all(workers.map((w) => w.ready));
    const SESSIONS = 20;
    const PER_SESSION = 10;
    const outputs = new Map<string, BatchOutput[]>();
    let done = 0;
    const runSession = async (s: number) => {
      const base = batch([]);
      const sessionId = `${base.sessionId}-${s}`;
      const outs: BatchOutput[] = [];
      let startSeq = 0;
      for (let step = 1; step <= PER_SESSION; step++) {
        const out = await h.client.runBatch({
          sessionId,
          turn: 1,
          step,
          startSeq,
          calls: [0, 1, 2].map((i) => ({
            id: `c${step}-${i}`,
            name: 'work',
            arguments: JSON.stringify({ ms: 20 + 10 * i, n: step * 10 + i }),
          })),
        });
        outs.push(out);
        startSeq = out.nextSeq;
        done++;
      }
      outputs.set(sessionId, outs);
    };
    const all = Promise.all(Array.from({ length: SESSIONS }, (_, s) => runSession(s)));
    // Mid-load: kill one worker with -9 and add a fourth machine.
    // A session that fails rejects `all` at once instead of leaving the count short.
    await Promise.race([all, eventually('60 batches done', () => done >= 60, { timeoutMs: 240_000 })]);
    await workers[0].kill('SIGKILL');
    const added = machine('d');
    workers.push(added);
    await added.ready;
    await all;

    expect(done).toBe(SESSIONS * PER_SESSION);
    const ranOn = new Set<string>();
    for (const [sessionId, outs] of outputs) {
      const recorded: SessionEvent[] = outs.flatMap((o) => o.events);
      for (const out of outs) {
        expect(out.results.map((r) => r.result.isError)).toEqual([false, false, false]);
        for (const r of out.results) {
          const text = (r.result.content[0] as { text: string }).text;
          ranOn.add(/by (\d+)$/.exec(text)![1]);
        }
      }
      // The store's log: every event the batches recorded, once each, seqs 0..n-1 in order.
      const logged = await store.events(sessionId);
      expect(logged.map((e) => e.seq)).toEqual([...Array(recorded.length).keys()]);
      // Times aside: a workflow task run again after its worker died (or replayed after an
      // eviction) stamps its events anew, and the log keeps the first write of the batch's own seq.
      const untimed = (list: SessionEvent[]) => list.map(({ time: _t, ...rest }) => rest);
      expect(untimed(logged)).toEqual(untimed(recorded));
      const results = logged.filter((e) => e.type === 'tool/result').map((e) => e.data.callId);
      expect(results).toHaveLength(PER_SESSION * 3);
      expect(new Set(results).size).toBe(results.length);
      expect(await store.conflicts(sessionId)).toEqual([]);
    }
    // The load was shared, and the worker added mid-load took some of it.
    expect(ranOn.size).toBeGreaterThanOrEqual(3);
    expect(ranOn.has(String(added.pid))).toBe(true);
  });
});
