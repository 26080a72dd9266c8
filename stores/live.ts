// The live channel: where model steps publish the pieces of an answer as the provider streams them
// (agent/live.ts), and where followers (session.events(), `sluice events --follow`, `sluice chat`,
// the inbox's event stream) read them. Two kinds, as the stores (stores/stores.ts):
//
//   files       <state-dir>/sessions/<id>.live.jsonl, appended by the worker, watched by followers
//               on the same machine (or the shared folder).
//   PostgreSQL  an UNLOGGED table (no write-ahead log: a crash may lose it, which is allowed) and a
//               NOTIFY on each write, so a follower on another machine wakes at once, no polling.
//
// The channel is never the record. It keeps only the current step's pieces (older steps are
// recorded whole in the session log by then), so losing it loses previews, not events.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Client, Pool } from 'pg';
import type { LiveEvent, LiveWriter } from '../pipeline/live';
import { requireOptional } from '../support/optional';
import { inFolder, parseJsonl } from './jsonl';
import { besideLogPath, sessionLogPath } from './session-log-path';

/** Where a follower reads live events. */
export interface LiveReader {
  /**
   * The session's live events after `cursor` (none given: all the channel holds), and the cursor
   * to read on from. `reset`: the channel was cleared since the cursor (a new step), read from its start.
   */
  read(sessionId: string, cursor?: LiveCursor): Promise<{ events: LiveEvent[]; cursor: LiveCursor }>;
  /** Calls `changed` when the session's live events (or its log) may have changed; returns the unsubscribe. */
  watch(sessionId: string, changed: () => void): () => void;
  /** How often a follower reads again when no change was noticed (a missed notice's bound). */
  readonly pollMs: number;
}

export type LiveCursor = { kind: 'file'; ino: number; offset: number } | { kind: 'pg'; id: number };

export interface LiveChannel extends LiveWriter, LiveReader {
  close(): Promise<void>;
}

/** A step's pieces are kept while the file is below this; a new step starts a fresh file past it. */
const FILE_ROTATE_BYTES = 1024 * 1024;

function liveLogPath(stateDir: string, sessionId: string): string {
  return besideLogPath(stateDir, sessionId, 'live');
}

/**
 * The whole JSON lines appended to a file since `cursor`, and the cursor past them: a line still
 * being appended is left for the next read, and a line no writer finished is skipped. A file that
 * was replaced (another inode) or cut shorter since is read from its start; a missing one is empty.
 */
export async function readJsonlSince<T>(
  file: string,
  cursor?: LiveCursor,
): Promise<{ events: T[]; cursor: LiveCursor }> {
  let fd: fs.promises.FileHandle;
  try {
    fd = await fs.promises.open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      return { events: [], cursor: cursor ?? { kind: 'file', ino: 0, offset: 0 } };
    throw err;
  }
  try {
    const st = await fd.stat();
    let offset = cursor?.kind === 'file' && cursor.ino === st.ino && cursor.offset <= st.size ? cursor.offset : 0;
    if (st.size <= offset) return { events: [], cursor: { kind: 'file', ino: st.ino, offset } };
    const buf = Buffer.alloc(st.size - offset);
    const { bytesRead } = await fd.read(buf, 0, buf.length, offset);
    // Only whole lines: a line being appended is read on the next round.
    const end = buf.subarray(0, bytesRead).lastIndexOf(10);
    if (end < 0) return { events: [], cursor: { kind: 'file', ino: st.ino, offset } };
    const events = parseJsonl(buf.subarray(0, end).toString('utf8')) as T[];
    offset += end + 1;
    return { events, cursor: { kind: 'file', ino: st.ino, offset } };
  } finally {
    await fd.close();
  }
}

/** The file channel: one JSON line per live event, appended in batches. */
export function fileLiveChannel(stateDir: string): LiveChannel {
  return {
    // Local reads are cheap, and a folder that does not exist yet cannot be watched.
    pollMs: 200,
    // A streaming step writes here many times a second: one synchronous append (stores/jsonl.ts).
    async write(sessionId, events) {
      const file = liveLogPath(stateDir, sessionId);
      const text = events.map((e) => `${JSON.stringify(e)}\n`).join('');
      inFolder(file, () => fs.appendFileSync(file, text));
    },
    async startStep(sessionId) {
      const file = liveLogPath(stateDir, sessionId);
      const size = await fs.promises.stat(file).then(
        (s) => s.size,
        () => 0,
      );
      // The steps before this one are recorded: past the bound, followers start on a fresh file.
      if (size > FILE_ROTATE_BYTES) await fs.promises.unlink(file).catch(() => undefined);
    },
    read: (sessionId, cursor) => readJsonlSince<LiveEvent>(liveLogPath(stateDir, sessionId), cursor),
    watch(sessionId, changed) {
      // The folder is watched, not the files: the live file is replaced on rotation and may not exist yet.
      const dir = path.dirname(liveLogPath(stateDir, sessionId));
      const base = path.basename(sessionLogPath(stateDir, sessionId), '.jsonl');
      let watcher: fs.FSWatcher | undefined;
      try {
        watcher = fs.watch(dir, (_event, name) => {
          if (!name || String(name).startsWith(base)) changed();
        });
        watcher.on('error', () => watcher?.close());
      } catch {
        // no folder yet: the follower's own interval reads again
      }
      return () => watcher?.close();
    },
    async close() {},
  };
}

// pg is an optional peer dependency: loaded when PostgreSQL stores are opened.
const pg = (): typeof import('pg') =>
  requireOptional('pg', 'PostgreSQL stores (SLUICE_DATABASE_URL)', () => require('pg'));

const PG_CHANNEL = 'sluice_live';

/** NOTIFY payloads are bounded (8000 bytes): a long session id is named by its hash. */
export const notifyKey = (sessionId: string) =>
  Buffer.byteLength(sessionId) <= 200 ? sessionId : createHash('sha256').update(sessionId).digest('hex');

/** The channel's pool, and its table, created on first use. */
function liveTable(url: string) {
  let pool: Pool | undefined;
  const poolOf = () => {
    if (!pool) {
      pool = new (pg().Pool)({
        connectionString: url,
        max: 3,
        connectionTimeoutMillis: 5_000,
        idleTimeoutMillis: 10_000,
        allowExitOnIdle: true,
      });
      pool.on('error', () => undefined);
    }
    return pool;
  };
  let ready: Promise<void> | undefined;
  const ensure = () =>
    (ready ??= (async () => {
      try {
        await poolOf().query(`
          CREATE UNLOGGED TABLE IF NOT EXISTS sluice_live_events (
            id bigserial PRIMARY KEY,
            session_id text NOT NULL,
            turn integer NOT NULL,
            step integer NOT NULL,
            event text NOT NULL,
            written_at timestamptz NOT NULL DEFAULT now()
          );
          CREATE INDEX IF NOT EXISTS sluice_live_events_session ON sluice_live_events (session_id, id);`);
      } catch (err) {
        // Two workers creating it at once: one wins, the other finds it made.
        if (!/already exists|duplicate key/.test((err as Error).message)) {
          ready = undefined;
          throw err;
        }
      }
    })());
  const end = async () => {
    await pool?.end().catch(() => undefined);
  };
  return { poolOf, ensure, end };
}

/** One listening connection for every follower of this process, reconnected when it drops. */
function liveListener(url: string) {
  const watchers = new Map<string, Set<() => void>>();
  let listener: Promise<Client> | undefined;
  let closed = false;
  const listen = () => {
    listener ??= (async () => {
      const c = new (pg().Client)({ connectionString: url });
      const retry = () => {
        listener = undefined;
        c.end().catch(() => undefined);
        // Wake every follower: it reads what it may have missed, then waits on the new connection.
        for (const set of watchers.values()) for (const f of set) f();
        if (!closed && watchers.size) setTimeout(() => void listen()?.catch(() => undefined), 1_000).unref();
      };
      c.on('error', retry);
      c.on('notification', (n) => {
        for (const f of watchers.get(n.payload ?? '') ?? []) f();
      });
      try {
        await c.connect();
        await c.query(`LISTEN ${PG_CHANNEL}`);
        await c.query(`LISTEN sluice_session`);
      } catch (err) {
        retry();
        throw err;
      }
      return c;
    })();
    return listener;
  };
  return {
    watch(key: string, changed: () => void): () => void {
      let set = watchers.get(key);
      if (!set) watchers.set(key, (set = new Set()));
      set.add(changed);
      listen().catch(() => undefined);
      return () => {
        set.delete(changed);
        if (!set.size) watchers.delete(key);
      };
    },
    async close() {
      closed = true;
      const c = await listener?.catch(() => undefined);
      await c?.end().catch(() => undefined);
    },
  };
}

/**
 * The PostgreSQL channel. Its table is UNLOGGED and created on first use, outside the versioned
 * schema: it holds previews only, and a database without it (or one that lost it in a crash) loses
 * nothing durable.
 */
export function postgresLiveChannel(url: string, opts: { warn?: (m: string) => void } = {}): LiveChannel {
  const warn = opts.warn ?? ((m: string) => console.error(`sluice: ${m}`));
  const { poolOf, ensure, end } = liveTable(url);
  const listener = liveListener(url);
  return {
    // NOTIFY wakes followers; reading again each second only bounds a notice lost with a connection.
    pollMs: 1_000,
    async write(sessionId, events) {
      await ensure();
      await poolOf().query(
        `WITH rows AS (
           INSERT INTO sluice_live_events (session_id, turn, step, event)
           SELECT $1::text, * FROM unnest($2::int[], $3::int[], $4::text[]) RETURNING 1)
         SELECT pg_notify('${PG_CHANNEL}', $5) FROM (SELECT count(*) FROM rows) AS n`,
        [
          sessionId,
          events.map((e) => e.turn),
          events.map((e) => e.step),
          events.map((e) => JSON.stringify(e)),
          notifyKey(sessionId),
        ],
      );
    },
    async startStep(sessionId, turn, step) {
      await ensure();
      // The session's earlier steps are recorded; an ended session's pieces go after an hour.
      await poolOf().query(
        `DELETE FROM sluice_live_events
         WHERE (session_id = $1 AND (turn, step) <> ($2, $3)) OR written_at < now() - interval '1 hour'`,
        [sessionId, turn, step],
      );
    },
    async read(sessionId, cursor) {
      const after = cursor?.kind === 'pg' ? cursor.id : 0;
      try {
        await ensure();
      } catch (err) {
        warn(`the live channel's table is not available (${(err as Error).message}); followers see whole steps only`);
        return { events: [], cursor: { kind: 'pg', id: after } };
      }
      const r = await poolOf().query(
        'SELECT id, event FROM sluice_live_events WHERE session_id = $1 AND id > $2 ORDER BY id',
        [sessionId, after],
      );
      const last = r.rows.length ? Number(r.rows[r.rows.length - 1].id) : after;
      return { events: r.rows.map((row) => JSON.parse(row.event)), cursor: { kind: 'pg', id: last } };
    },
    watch: (sessionId, changed) => listener.watch(notifyKey(sessionId), changed),
    async close() {
      await listener.close();
      await end();
    },
  };
}
