// The shared stores on PostgreSQL: session events (with the batches' seq claims and any conflicts)
// and stored results, for workers on many machines. Chosen by SLUICE_DATABASE_URL (stores/stores.ts);
// the schema is versioned and applied by `npx sluice setup`.
//
// Same guarantees as the JSONL sink (stores/sink.ts): one event per (session, seq), the log read in
// seq order, appends idempotent under at-least-once delivery (a replayed chunk finds its events and
// is skipped), and an event that differs from the one a seq already holds is never dropped in
// silence: it is kept in sluice_session_conflicts with its batch, and the worker logs a warning.
// Every write for a session holds a transaction-scoped advisory lock on it, so two workers cannot
// interleave a check and the write after it.
import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import type { SeqClaim } from '../pipeline/seq-claim';
import type { Json, SessionEvent } from '../pipeline/types';
import type { ResultStore } from './claim-check';
import { notifyKey } from './live';
import { requireOptional } from '../support/optional';
import type { EventSink } from './sink';
import { type FactStore, postgresFactStore } from './fact-store';

// pg is an optional peer dependency: loaded when PostgreSQL stores are opened.
const pg = (): typeof import('pg') =>
  requireOptional('pg', 'PostgreSQL stores (SLUICE_DATABASE_URL)', () => require('pg'));

/** Each migration runs once, in order, in its own transaction; never edit one that has shipped. */
export const MIGRATIONS: { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'session events, seq claims, conflicts, stored results',
    sql: `
      CREATE TABLE sluice_session_events (
        session_id text NOT NULL,
        seq bigint NOT NULL,
        batch_id text,
        type text NOT NULL,
        event text NOT NULL,
        written_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (session_id, seq)
      );
      CREATE TABLE sluice_session_claims (
        id bigserial PRIMARY KEY,
        session_id text NOT NULL,
        batch_id text NOT NULL,
        start_seq bigint NOT NULL,
        claimed_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (session_id, batch_id)
      );
      CREATE TABLE sluice_session_conflicts (
        id bigserial PRIMARY KEY,
        session_id text NOT NULL,
        batch_id text NOT NULL,
        seq bigint NOT NULL,
        event text NOT NULL,
        event_sha256 text NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (session_id, batch_id, seq, event_sha256)
      );
      CREATE TABLE sluice_results (
        key text PRIMARY KEY,
        value text NOT NULL,
        bytes integer NOT NULL,
        stored_at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    version: 2,
    name: 'calls by facts scope',
    sql: `
      CREATE TABLE sluice_fact_calls (
        workflow_id text NOT NULL,
        call_id text NOT NULL,
        scope text NOT NULL,
        at bigint NOT NULL,
        call jsonb NOT NULL,
        outcome text,
        decider jsonb,
        PRIMARY KEY (workflow_id, call_id)
      );
      CREATE INDEX sluice_fact_calls_scope_at ON sluice_fact_calls (scope, at);
    `,
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;
const MIGRATIONS_TABLE = 'sluice_schema_migrations';
export const PG_RESULT_REF = 'sluice-pg-result:';

/** Errors a restarted or unreachable server gives: worth waiting out, unlike a bad query. */
function isTransient(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (
    e?.code &&
    /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|57P0[123]|08\d\d\d|53300)$/.test(e.code)
  )
    return true;
  return /Connection terminated|connection ended|Client has encountered a connection error|timeout exceeded when trying to connect/i.test(
    e?.message ?? '',
  );
}

/** Retries `work` while the server is unreachable, up to `forMs`; a non-transient error is thrown at once. */
async function withRetry<T>(work: () => Promise<T>, forMs: number): Promise<T> {
  const deadline = Date.now() + forMs;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2_000)) {
    try {
      return await work();
    } catch (err) {
      if (!isTransient(err) || Date.now() + delay > deadline) throw err;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/** A password in a URL never reaches a message. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'the database URL';
  }
}

/**
 * Creates the URL's database when the server has none by that name (connecting to the server's
 * `postgres` database to do it); returns whether it did.
 */
export async function ensureDatabase(url: string): Promise<boolean> {
  const { Client } = pg();
  const probe = new Client({ connectionString: url });
  try {
    await probe.connect();
    await probe.end();
    return false;
  } catch (err) {
    await probe.end().catch(() => undefined);
    if ((err as { code?: string }).code !== '3D000') throw err;
  }
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.replace(/^\//, ''));
  u.pathname = '/postgres';
  const admin = new Client({ connectionString: u.toString() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } finally {
    await admin.end();
  }
  return true;
}

export class PostgresStores {
  private readonly pool: Pool;
  readonly sink: PostgresEventSink;
  readonly results: PostgresResultStore;
  readonly facts: FactStore;

  constructor(
    readonly url: string,
    /** `pool`: options for pg's Pool (max, timeouts, ssl …), over Sluice's defaults. */
    opts: { warn?: (message: string) => void; pool?: Record<string, unknown> } = {},
  ) {
    const warn = opts.warn ?? ((m: string) => console.error(`sluice: ${m}`));
    this.pool = new (pg().Pool)({
      connectionString: url,
      max: 10,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 10_000,
      allowExitOnIdle: true,
      ...opts.pool,
    });
    // An idle connection cut by a server restart emits here; without a listener it would end the process.
    this.pool.on('error', (err) => warn(`PostgreSQL connection lost (${err.message}); the next query reconnects`));
    this.sink = new PostgresEventSink(this.pool, warn);
    this.results = new PostgresResultStore(this.pool);
    this.facts = postgresFactStore(this.pool, `the sluice_fact_calls table at ${redactUrl(url)}`);
  }

  /** Applies the migrations this database lacks; returns the ones applied. */
  async migrate(): Promise<{ version: number; name: string }[]> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('sluice-schema-migrations'))`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const have = new Set(
        (await client.query(`SELECT version FROM ${MIGRATIONS_TABLE}`)).rows.map((r) => Number(r.version)),
      );
      const applied = [];
      for (const m of MIGRATIONS) {
        if (have.has(m.version)) continue;
        await client.query(m.sql);
        await client.query(`INSERT INTO ${MIGRATIONS_TABLE} (version, name) VALUES ($1, $2)`, [m.version, m.name]);
        applied.push({ version: m.version, name: m.name });
      }
      await client.query('COMMIT');
      return applied;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** The schema version applied (0: none). */
  async schemaVersion(): Promise<number> {
    const r = await this.pool.query(`SELECT to_regclass('${MIGRATIONS_TABLE}') AS t`);
    if (!r.rows[0].t) return 0;
    return Number((await this.pool.query(`SELECT coalesce(max(version), 0) AS v FROM ${MIGRATIONS_TABLE}`)).rows[0].v);
  }

  /** Throws a message a person can act on when the schema is missing or older than this Sluice's. */
  async checkSchema(): Promise<void> {
    let version: number;
    try {
      version = await withRetry(() => this.schemaVersion(), 10_000);
    } catch (err) {
      throw new Error(
        `cannot reach the Sluice database at ${redactUrl(this.url)} (SLUICE_DATABASE_URL): ${(err as Error).message}`,
      );
    }
    if (version < SCHEMA_VERSION)
      throw new Error(
        `the Sluice database at ${redactUrl(this.url)} has schema version ${version}, this Sluice needs ${SCHEMA_VERSION}: run \`npx sluice setup\` with the same SLUICE_DATABASE_URL`,
      );
  }

  async events(sessionId: string, afterSeq = -1): Promise<SessionEvent[]> {
    const r = await this.pool.query(
      'SELECT event FROM sluice_session_events WHERE session_id = $1 AND seq > $2 ORDER BY seq',
      [sessionId, afterSeq],
    );
    return r.rows.map((row) => JSON.parse(row.event));
  }

  async lastSeq(sessionId: string): Promise<number> {
    return lastSeq(this.pool, sessionId);
  }

  async conflicts(sessionId: string): Promise<{ batch: string; event: SessionEvent }[]> {
    const r = await this.pool.query(
      'SELECT batch_id, event FROM sluice_session_conflicts WHERE session_id = $1 ORDER BY id',
      [sessionId],
    );
    return r.rows.map((row) => ({ batch: row.batch_id, event: JSON.parse(row.event) }));
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

async function lastSeq(q: Pool | PoolClient, sessionId: string): Promise<number> {
  const r = await q.query('SELECT coalesce(max(seq), -1) AS last FROM sluice_session_events WHERE session_id = $1', [
    sessionId,
  ]);
  return Number(r.rows[0].last);
}

async function inSessionLock<T>(pool: Pool, sessionId: string, work: (c: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`sluice-session:${sessionId}`]);
    const out = await work(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * A pg Pool, typed by its shape: sluice/worker's declarations name no pg, an optional peer an app
 * without PostgreSQL does not install.
 */
interface PgPool {
  query: (...args: never[]) => unknown;
  connect: (...args: never[]) => unknown;
}

export class PostgresEventSink implements EventSink {
  private readonly pool: Pool;
  constructor(
    pool: PgPool,
    private readonly warn: (message: string) => void,
  ) {
    this.pool = pool as Pool;
  }

  async append(sessionId: string, events: SessionEvent[], batchId?: string): Promise<void> {
    if (events.length === 0) return;
    // Held chunks written late may repeat a seq: one event per seq, the last one given.
    const bySeq = new Map(events.map((e) => [e.seq, e]));
    const chunk = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
    const texts = chunk.map((e) => JSON.stringify(e));
    const kept = await inSessionLock(this.pool, sessionId, async (c) => {
      // A batch that numbered events over another's keeps all of them aside, not just the overlap.
      const conflicted =
        batchId !== undefined &&
        (
          await c.query('SELECT 1 FROM sluice_session_conflicts WHERE session_id = $1 AND batch_id = $2 LIMIT 1', [
            sessionId,
            batchId,
          ])
        ).rowCount! > 0;
      const rows = (
        await c.query(
          'SELECT seq, event, batch_id FROM sluice_session_events WHERE session_id = $1 AND seq = ANY($2::bigint[])',
          [sessionId, chunk.map((e) => e.seq)],
        )
      ).rows;
      const held = new Map<number, string>(rows.map((r) => [Number(r.seq), r.event]));
      // A replay may not repeat an event byte for byte (workflow time moves when a replayed task
      // resolves a local activity it waited for live): the batch's own rows are its events again.
      const own = new Set<number>(
        rows.filter((r) => batchId !== undefined && r.batch_id === batchId).map((r) => Number(r.seq)),
      );
      const clashing = chunk.some((e, i) => held.has(e.seq) && held.get(e.seq) !== texts[i] && !own.has(e.seq));
      if (conflicted || clashing) {
        // A replayed chunk of a conflicted batch repeats rows: the unique key skips them.
        const r = await c.query(
          `INSERT INTO sluice_session_conflicts (session_id, batch_id, seq, event, event_sha256)
           SELECT $1::text, $2::text, * FROM unnest($3::bigint[], $4::text[], $5::text[])
           ON CONFLICT DO NOTHING RETURNING seq`,
          [sessionId, batchId ?? 'unknown', chunk.map((e) => e.seq), texts, texts.map(sha256)],
        );
        return r.rows.map((row) => Number(row.seq));
      }
      const fresh = chunk.map((e, i) => ({ e, text: texts[i] })).filter(({ e }) => !held.has(e.seq));
      if (fresh.length)
        await c.query(
          `INSERT INTO sluice_session_events (session_id, batch_id, seq, type, event)
           SELECT $1::text, $2::text, * FROM unnest($3::bigint[], $4::text[], $5::text[])`,
          [
            sessionId,
            batchId ?? null,
            fresh.map(({ e }) => e.seq),
            fresh.map(({ e }) => e.type),
            fresh.map(({ text }) => text),
          ],
        );
      // Followers on any machine wake on commit (stores/live.ts listens), instead of polling the table.
      if (fresh.length) await c.query('SELECT pg_notify($1, $2)', ['sluice_session', notifyKey(sessionId)]);
      return [];
    });
    if (kept.length)
      this.warn(
        `batch ${batchId ?? 'unknown'} numbered ${kept.length} event(s) of session ${sessionId} at seqs the log already holds (${kept[0]}..${kept[kept.length - 1]}); they are kept in the sluice_session_conflicts table, not in the log. Start each batch at the previous batch's nextSeq.`,
      );
  }

  /** First come, first served across every worker: the claim with the lowest id wins (as the JSONL sink's earliest line). */
  claim(sessionId: string, startSeq: number, batchId: string): Promise<SeqClaim> {
    return withRetry(
      () =>
        inSessionLock(this.pool, sessionId, async (c) => {
          const claims = async () =>
            (
              await c.query('SELECT batch_id, start_seq FROM sluice_session_claims WHERE session_id = $1 ORDER BY id', [
                sessionId,
              ])
            ).rows.map((r) => ({ batch: r.batch_id as string, startSeq: Number(r.start_seq) }));
          let list = await claims();
          // A claim run again (its worker died before the batch recorded it) finds its own row and
          // skips the log check: the log may already hold this batch's first events.
          if (!list.some((cl) => cl.batch === batchId)) {
            const last = await lastSeq(c, sessionId);
            if (last >= startSeq)
              return {
                ok: false as const,
                nextSeq: last + 1,
                problem: `session ${sessionId} already has events up to seq ${last} in its log, and this batch would number its events from ${startSeq}`,
              };
            await c.query('INSERT INTO sluice_session_claims (session_id, batch_id, start_seq) VALUES ($1, $2, $3)', [
              sessionId,
              batchId,
              startSeq,
            ]);
            list = await claims();
          }
          const mine = list.findIndex((cl) => cl.batch === batchId);
          const earlier = list.slice(0, mine).find((cl) => cl.startSeq >= startSeq);
          if (!earlier) return { ok: true as const };
          const last = await lastSeq(c, sessionId);
          return {
            ok: false as const,
            nextSeq: Math.max(last + 1, earlier.startSeq + 1),
            problem: `batch ${earlier.batch} of session ${sessionId} claimed its seqs from ${earlier.startSeq} first, and this batch would number its events from ${startSeq}`,
          };
        }),
      20_000,
    );
  }
}

/** Results keyed by the call's idempotency key; a retried put writes the same value again. */
export class PostgresResultStore implements ResultStore {
  private readonly pool: Pool;
  constructor(pool: PgPool) {
    this.pool = pool as Pool;
  }

  async put(key: string, value: Json): Promise<string> {
    const text = JSON.stringify(value);
    await withRetry(
      () =>
        this.pool.query(
          `INSERT INTO sluice_results (key, value, bytes) VALUES ($1, $2, $3)
           ON CONFLICT (key) DO UPDATE SET value = excluded.value, bytes = excluded.bytes, stored_at = now()`,
          [key, text, Buffer.byteLength(text)],
        ),
      20_000,
    );
    return `${PG_RESULT_REF}${key}`;
  }

  async get(ref: string): Promise<Json | undefined> {
    if (!ref.startsWith(PG_RESULT_REF)) return undefined;
    const r = await withRetry(
      () => this.pool.query('SELECT value FROM sluice_results WHERE key = $1', [ref.slice(PG_RESULT_REF.length)]),
      20_000,
    );
    return r.rows.length ? JSON.parse(r.rows[0].value) : undefined;
  }

  /**
   * A claim kept beside the results (key `claim:<key>`, no schema change): the first insert has
   * it, a later one reads who does (SluiceStores.claimOnce). Pruned with the results, so keep
   * results longer than anything claimed must stay claimed (an approver token's lifetime).
   */
  async claimOnce(key: string, holder: string): Promise<string> {
    const k = `claim:${key}`;
    const text = JSON.stringify(holder);
    const r = await withRetry(
      () =>
        this.pool.query(
          `INSERT INTO sluice_results (key, value, bytes) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING`,
          [k, text, Buffer.byteLength(text)],
        ),
      20_000,
    );
    if (r.rowCount === 1) return holder;
    const held = await withRetry(() => this.pool.query('SELECT value FROM sluice_results WHERE key = $1', [k]), 20_000);
    return held.rows.length ? JSON.parse(held.rows[0].value) : holder;
  }

  /** Deletes the results stored before `before` (retention). */
  async prune(before: Date): Promise<{ results: number; bytes: number }> {
    const r = await withRetry(
      () =>
        this.pool.query(
          `WITH gone AS (DELETE FROM sluice_results WHERE stored_at < $1 RETURNING bytes)
           SELECT count(*) AS n, coalesce(sum(bytes), 0) AS b FROM gone`,
          [before],
        ),
      20_000,
    );
    return { results: Number(r.rows[0].n), bytes: Number(r.rows[0].b) };
  }

  /** How many results are stored, and their bytes (for the stored-results metric). */
  async count(): Promise<{ results: number; bytes: number }> {
    const r = await this.pool.query('SELECT count(*) AS n, coalesce(sum(bytes), 0) AS b FROM sluice_results');
    return { results: Number(r.rows[0].n), bytes: Number(r.rows[0].b) };
  }
}
