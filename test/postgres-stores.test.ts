// The shared stores on a real PostgreSQL this file starts: schema migrations by `sluice setup`, the
// event sink's guarantees (each seq once, in order, replays skipped, a conflicting event kept aside
// and reported, seq claims first come first served), the result store, the CLI and the inbox
// reading from it, and a PostgreSQL restart in the middle of running batches.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { main } from '../cli';
import { startInbox } from '../servers/inbox/server';
import type { SessionEvent } from '../pipeline/types';
import { defineConfig, defineTool } from '../define/config';
import { PostgresStores, SCHEMA_VERSION } from '../stores/postgres';
import { postgresStores, type SluiceStores } from '../stores/stores';
import { storedResultOf } from '../stores/claim-check';
import { batch, startHarness, text, type Harness } from './harness';
import { startPostgres, type TestPostgres } from './postgres';
import { eventually } from './eventually';

let pg: TestPostgres;
let url: string;
let stores: ReturnType<typeof postgresStores>;
const warnings: string[] = [];

async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; output: string }> {
  const lines: string[] = [];
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const code = await main(args, (s) => lines.push(s));
    return { code, output: lines.join('\n') };
  } finally {
    process.env = saved;
  }
}

beforeAll(async () => {
  pg = await startPostgres();
  url = await pg.createDatabase('sluice_stores');
  const setup = new PostgresStores(url);
  await setup.migrate();
  await setup.close();
  stores = postgresStores(url, (m) => warnings.push(m));
}, 120_000);
afterAll(async () => {
  await stores?.close();
  await pg?.stop();
});

const ev = (seq: number, type = 'tool/call', data: object = { n: seq }): SessionEvent =>
  ({ seq, time: '2026-01-01T00:00:00.000Z', type, data }) as unknown as SessionEvent;

describe('schema', () => {
  it('a worker refuses a database without the schema and says to run setup; setup applies it once', async () => {
    const fresh = pg.url('sluice_setup');
    const missing = new PostgresStores(fresh);
    await expect(missing.checkSchema()).rejects.toThrow(/cannot reach the Sluice database .*sluice_setup/);
    await missing.close();
    // setup creates the database when it is missing, then applies the schema.
    const first = await cli(['setup', '--address', inject('temporalAddress')], { SLUICE_DATABASE_URL: fresh });
    expect(first.output).toContain('created database');
    expect(first.output).toMatch(/applied schema migration\(s\) 1 \(session events/);
    expect(first.code).toBe(0);
    const again = await cli(['setup', '--address', inject('temporalAddress'), '--database-url', fresh]);
    expect(again.output).toContain(`schema up to date (version ${SCHEMA_VERSION})`);
    const bare = new PostgresStores(fresh);
    await bare.checkSchema();
    expect(await bare.schemaVersion()).toBe(SCHEMA_VERSION);
    await bare.close();
    // A database without the schema: the worker says what to run.
    const empty = new PostgresStores(await pg.createDatabase('sluice_empty'));
    await expect(empty.checkSchema()).rejects.toThrow(
      `schema version 0, this Sluice needs ${SCHEMA_VERSION}: run \`npx sluice setup\``,
    );
    await empty.close();
  });
});

describe('event sink', () => {
  it('each seq once, in seq order; a replayed chunk is skipped', async () => {
    const s = `sink-${Date.now()}`;
    await stores.sink.append(s, [ev(0), ev(1), ev(2)], 'b1');
    await stores.sink.append(s, [ev(0), ev(1), ev(2)], 'b1'); // the same chunk again (a replay)
    await stores.sink.append(s, [ev(2), ev(3)], 'b1'); // overlapping, same events
    expect((await stores.events(s)).map((e) => e.seq)).toEqual([0, 1, 2, 3]);
    expect((await stores.events(s, 1)).map((e) => e.seq)).toEqual([2, 3]);
    expect(await stores.lastSeq(s)).toBe(3);
    expect((await stores.conflicts(s)).count).toBe(0);
  });

  it("a replay that repeats the batch's own events with other times is skipped, not a conflict", async () => {
    const s = `replay-${Date.now()}`;
    warnings.length = 0;
    await stores.sink.append(s, [{ ...ev(0), time: '2026-12-01T00:00:01.000Z' }], 'b1');
    // Replayed after an eviction: the first task's workflow time moved back; then a new event.
    await stores.sink.append(s, [{ ...ev(0), time: '2026-12-01T00:00:00.000Z' }, ev(1)], 'b1');
    expect((await stores.events(s)).map((e) => [e.seq, e.time])).toEqual([
      [0, '2026-12-01T00:00:01.000Z'],
      [1, ev(1).time],
    ]);
    expect((await stores.conflicts(s)).count).toBe(0);
    expect(warnings).toEqual([]);
  });

  it('a different event at a logged seq is kept aside with its batch, reported, and never replaces the logged one', async () => {
    const s = `conflict-${Date.now()}`;
    await stores.sink.append(s, [ev(0), ev(1)], 'first');
    warnings.length = 0;
    await stores.sink.append(s, [ev(1, 'tool/call', { other: true }), ev(2, 'tool/call', { other: true })], 'second');
    expect((await stores.events(s)).map((e) => e.data)).toEqual([{ n: 0 }, { n: 1 }]);
    expect(warnings.join('\n')).toMatch(
      /batch second numbered 2 event\(s\) of session conflict-\d+ at seqs the log already holds/,
    );
    // The batch's later events go aside too, and a replay of its chunk adds nothing twice.
    await stores.sink.append(s, [ev(3, 'tool/result', { other: true })], 'second');
    await stores.sink.append(s, [ev(1, 'tool/call', { other: true }), ev(2, 'tool/call', { other: true })], 'second');
    const aside = await stores.pg.conflicts(s);
    expect(aside.map((c) => [c.batch, c.event.seq])).toEqual([
      ['second', 1],
      ['second', 2],
      ['second', 3],
    ]);
    expect(await stores.lastSeq(s)).toBe(1);
    // `sluice events` shows the log and says where the conflicting events are.
    const shown = await cli(['events', s], { SLUICE_DATABASE_URL: url });
    expect(shown.output).toMatch(
      /warning: some batch numbered 3 event\(s\) over seqs this log already held; they are kept in the sluice_session_conflicts table/,
    );
  });

  it('two workers writing one session concurrently cannot interleave a check and a write', async () => {
    const s = `race-${Date.now()}`;
    const other = postgresStores(url);
    try {
      // Both write the same events (a replay on another worker) many times at once.
      const chunks = Array.from({ length: 20 }, (_, i) => [ev(i * 2), ev(i * 2 + 1)]);
      await Promise.all(chunks.flatMap((c) => [stores.sink.append(s, c, 'b'), other.sink.append(s, c, 'b')]));
      expect((await stores.events(s)).map((e) => e.seq)).toEqual([...Array(40).keys()]);
      expect((await stores.conflicts(s)).count).toBe(0);
    } finally {
      await other.close();
    }
  });

  it('seq claims: first come first served across workers; a claim run again is still granted', async () => {
    const s = `claim-${Date.now()}`;
    const other = postgresStores(url);
    try {
      expect(await stores.sink.claim!(s, 0, 'A')).toEqual({ ok: true });
      const b = await other.sink.claim!(s, 0, 'B');
      expect(b).toMatchObject({ ok: false, nextSeq: 1 });
      expect(b.ok === false && b.problem).toMatch(/batch A of session claim-\d+ claimed its seqs from 0 first/);
      await stores.sink.append(s, [ev(0), ev(1), ev(2)], 'A');
      expect(await other.sink.claim!(s, 0, 'A')).toEqual({ ok: true }); // A's worker died and it runs again
      const late = await other.sink.claim!(s, 2, 'C');
      expect(late).toMatchObject({ ok: false, nextSeq: 3 });
      expect(await other.sink.claim!(s, 3, 'C')).toEqual({ ok: true });
    } finally {
      await other.close();
    }
  });
});

describe('result store', () => {
  it('put is idempotent; get returns the value; sluice result prints it from the database', async () => {
    const key = `sluice-batch:r-${Date.now()}:1:1/call-1`;
    const value = { content: [{ type: 'text', text: 'x'.repeat(100_000) }], isError: false };
    const ref = await stores.results.put(key, value);
    expect(await stores.results.put(key, value)).toBe(ref);
    expect(ref).toBe(`sluice-pg-result:${key}`);
    expect(await stores.results.get(ref)).toEqual(value);
    expect(await stores.results.get('sluice-pg-result:nope')).toBeUndefined();
    expect(await stores.results.get('sluice-result:file-ref.json')).toBeUndefined();
    const printed = await cli(['result', ref], { SLUICE_DATABASE_URL: url });
    expect(printed.code).toBe(0);
    expect(JSON.parse(printed.output)).toEqual(value);
    const missing = await cli(['result', ref], { SLUICE_DATABASE_URL: '' });
    expect(missing.code).toBe(1);
    expect(missing.output).toContain('it is stored in PostgreSQL: set SLUICE_DATABASE_URL');
  });
});

describe('workers on the database', () => {
  let h: Harness;
  let gate = 0;
  const config = defineConfig({
    tools: [
      defineTool({
        name: 'slow',
        description: 'waits, then answers',
        input: z.object({ ms: z.number(), n: z.number() }),
        isConcurrencySafe: () => false,
        async execute({ ms, n }) {
          gate++;
          await new Promise((r) => setTimeout(r, ms));
          return `done ${n}`;
        },
      }),
      defineTool({
        name: 'big',
        description: 'a result over the bound',
        input: z.object({ n: z.number() }),
        execute: ({ n }) => 'y'.repeat(n),
      }),
    ],
  });
  let workerStores: SluiceStores;
  beforeAll(async () => {
    workerStores = postgresStores(url);
    h = await startHarness('pg-stores', config, { stores: workerStores });
  });
  afterAll(async () => {
    await h?.close();
    await workerStores?.close();
  });

  it('a batch writes its events and big result to PostgreSQL; events, audit, result and the inbox read them', async () => {
    const req = batch([
      { name: 'slow', args: { ms: 1, n: 1 } },
      { name: 'big', args: { n: 200_000 } },
    ]);
    const out = await h.client.runBatch(req);
    const stored = out.results[1].result.meta!.storedResult as { ref: string };
    expect(stored.ref).toMatch(/^sluice-pg-result:/);
    // The body's result, stored once (a text stored as its value) and read back whole.
    const kept = storedResultOf((await stores.results.get(stored.ref))!);
    expect(text(kept).length).toBe(200_000);
    expect(await stores.events(req.sessionId)).toEqual(out.events);

    const env = { SLUICE_DATABASE_URL: url };
    const a = ['--address', inject('temporalAddress'), '--task-queue', h.taskQueue];
    const shown = await cli(['events', req.sessionId, '--json', ...a], env);
    expect(shown.output.split('\n').map((l) => JSON.parse(l))).toEqual(out.events);
    const audit = await cli(['audit', req.sessionId, ...a], env);
    expect(audit.output).toContain(
      `session ${req.sessionId} log (postgresql: ${url}): ${out.events.length} event(s), every event of the completed batches in it`,
    );
    const result = await cli(['result', stored.ref], env);
    expect(JSON.parse(result.output).content[0].text.length).toBe(200_000);

    const inbox = await startInbox({ client: h.client, port: 0, store: stores });
    try {
      const timeline = await (await fetch(`${inbox.url}api/session?id=${encodeURIComponent(req.sessionId)}`)).json();
      expect(timeline.events).toEqual(out.events);
    } finally {
      await inbox.close();
    }
  });

  it('PostgreSQL restarted mid-batch: the batches wait and complete, and nothing is lost from the log', async () => {
    const reqs = [0, 1, 2].map(() =>
      batch([
        { name: 'slow', args: { ms: 1500, n: 1 } },
        { name: 'big', args: { n: 150_000 } },
        { name: 'slow', args: { ms: 1500, n: 2 } },
        { name: 'big', args: { n: 150_000 } },
      ]),
    );
    gate = 0;
    const handles = await Promise.all(reqs.map((r) => h.client.startBatch(r)));
    await eventually('three bodies running', () => gate >= 3);
    // Down for two seconds while the bodies run: their results, claims and events meet a dead server.
    await pg.restart(2_000);
    const outs = await Promise.all(handles.map((x) => x.result()));
    for (const [i, out] of outs.entries()) {
      expect(out.results.map((r) => r.result.isError)).toEqual([false, false, false, false]);
      for (const r of [out.results[1], out.results[3]]) {
        const ref = (r.result.meta!.storedResult as { ref: string }).ref;
        expect(ref).toMatch(/^sluice-pg-result:/);
        expect(text(storedResultOf((await stores.results.get(ref))!)).length).toBe(150_000);
      }
      // Events held while the server was down are written once it is back (the worker retries them).
      const logged = await eventually(
        `every event of batch ${i} in the store`,
        async () => {
          const events = await stores.events(reqs[i].sessionId);
          return events.length >= out.events.length && events;
        },
        { timeoutMs: 45_000, intervalMs: 250 },
      );
      expect(logged).toEqual(out.events);
      expect((await stores.conflicts(reqs[i].sessionId)).count).toBe(0);
    }
  }, 90_000);
});

describe('claims (one-time approver tokens)', () => {
  it('two workers of one database claim a key at once: one holder, which finds its claim again; the other reads who has it', async () => {
    const other = postgresStores(url, (m) => warnings.push(m));
    try {
      const keys = ['approver-jti:a', 'approver-jti:b'];
      const got = await Promise.all(
        keys.flatMap((k) => [stores.claimOnce!(k, `w1:${k}`), other.claimOnce!(k, `w2:${k}`)]),
      );
      for (const [i, k] of keys.entries()) {
        const [a, b] = [got[2 * i], got[2 * i + 1]];
        expect(a).toBe(b);
        expect([`w1:${k}`, `w2:${k}`]).toContain(a);
        expect(await stores.claimOnce!(k, a)).toBe(a);
        expect(await other.claimOnce!(k, 'w3')).toBe(a);
      }
    } finally {
      await other.close();
    }
  });
});
