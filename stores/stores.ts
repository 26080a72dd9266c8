// Where session events and stored results live: files in the state folder (the embedded default),
// or PostgreSQL when SLUICE_DATABASE_URL is set (stores/postgres.ts), shared by every worker and
// read by the CLI and the inbox.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { SessionEvent } from '../pipeline/types';
import { FileResultStore, type ResultStore } from './claim-check';
import { type FactStore, fileFactStore } from './fact-store';
import { fileLiveChannel, type LiveChannel, postgresLiveChannel } from './live';
import { PostgresStores, redactUrl } from './postgres';
import { conflictsPath, type EventSink, JsonlSessionLog, readLastSeq, readSessionLog, sessionLogPath } from './sink';

export interface SluiceStores {
  /** 'files' or 'postgresql', for messages. */
  readonly kind: 'files' | 'postgresql';
  /** Where, for a person: a folder or a redacted database URL. */
  readonly where: string;
  readonly sink: EventSink;
  readonly results: ResultStore;
  /** Where model steps publish the pieces of an answer as it streams, and followers read them (never the record). */
  readonly live: LiveChannel;
  /** The calls of each facts scope, for policies that count across batches (stores/fact-store.ts). */
  readonly facts?: FactStore;
  /** A session's logged events after `afterSeq`, in seq order. */
  events(sessionId: string, afterSeq?: number): Promise<SessionEvent[]>;
  /** Whether the store holds any event of the session. */
  hasSession(sessionId: string): Promise<boolean>;
  lastSeq(sessionId: string): Promise<number>;
  /**
   * Events kept aside because their seq already held another event; where they are, for a person,
   * and the workflows that numbered them (a durable session's own id among them: its events from
   * there on never reach the log, and a follower says so instead of waiting).
   */
  conflicts(sessionId: string): Promise<{ count: number; where: string; batches: string[] }>;
  /**
   * Claims `key` for `holder` once, for every worker that shares this store: resolves to the
   * holder that has it, `holder` itself when this call (or an earlier one by the same holder) took
   * it. One-time approver tokens (`approvers.oneTimeTokens`) are claimed here by their `jti`.
   */
  claimOnce?(key: string, holder: string): Promise<string>;
  /** Number of stored results, when the store can tell cheaply. */
  storedResults?(): Promise<{ results: number; bytes: number }>;
  /** Throws what to do when the store cannot be used yet (a database without Sluice's schema). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export function fileStores(stateDir: string, warn?: (m: string) => void): SluiceStores {
  const resultsDir = path.join(stateDir, 'results');
  const results = new FileResultStore(resultsDir);
  return {
    kind: 'files',
    where: stateDir,
    sink: new JsonlSessionLog(stateDir, warn),
    results,
    live: fileLiveChannel(stateDir),
    facts: fileFactStore(stateDir),
    async events(sessionId, afterSeq = -1) {
      return (await readSessionLog(stateDir, sessionId)).filter((e) => e.seq > afterSeq);
    },
    async hasSession(sessionId) {
      return fs.existsSync(sessionLogPath(stateDir, sessionId));
    },
    lastSeq: (sessionId) => readLastSeq(sessionLogPath(stateDir, sessionId)),
    async conflicts(sessionId) {
      const file = conflictsPath(stateDir, sessionId);
      const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
      const lines = text.split('\n').filter((l) => l.trim());
      return { count: lines.length, where: file, batches: batchesOf(lines) };
    },
    async storedResults() {
      let count = 0;
      let bytes = 0;
      try {
        for (const name of fs.readdirSync(resultsDir)) {
          if (name.startsWith('.')) continue;
          count++;
          bytes += fs.statSync(path.join(resultsDir, name)).size;
        }
      } catch {
        // no folder yet: nothing stored
      }
      return { results: count, bytes };
    },
    claimOnce: (key, holder) => claimFile(path.join(stateDir, 'claims'), key, holder),
    async ready() {},
    async close() {},
  };
}

/**
 * A claim as a file created exclusively (`wx`): the first writer has it, every later one reads who
 * does. Written whole before it is linked in, so a reader never sees half a holder.
 */
async function claimFile(dir: string, key: string, holder: string): Promise<string> {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, createHash('sha256').update(key).digest('hex'));
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  fs.writeFileSync(tmp, holder, { mode: 0o600 });
  try {
    fs.linkSync(tmp, file);
    return holder;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return fs.readFileSync(file, 'utf8');
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

export function postgresStores(url: string, warn?: (m: string) => void): SluiceStores & { pg: PostgresStores } {
  const pg = new PostgresStores(url, { warn });
  const live = postgresLiveChannel(url, { warn });
  return {
    kind: 'postgresql',
    where: redactUrl(url),
    pg,
    sink: pg.sink,
    results: pg.results,
    live,
    facts: pg.facts,
    events: (sessionId, afterSeq) => pg.events(sessionId, afterSeq),
    async hasSession(sessionId) {
      return (await pg.lastSeq(sessionId)) >= 0;
    },
    lastSeq: (sessionId) => pg.lastSeq(sessionId),
    async conflicts(sessionId) {
      const kept = await pg.conflicts(sessionId);
      return {
        count: kept.length,
        where: 'the sluice_session_conflicts table',
        batches: [...new Set(kept.map((c) => c.batch))],
      };
    },
    storedResults: () => pg.results.count(),
    claimOnce: (key, holder) => pg.results.claimOnce(key, holder),
    ready: () => pg.checkSchema(),
    close: async () => {
      await live.close();
      await pg.close();
    },
  };
}

/** The workflows named by conflicts-file lines (`{ batch, event }`), each once; torn lines name none. */
function batchesOf(lines: string[]): string[] {
  const out = new Set<string>();
  for (const line of lines)
    try {
      const batch = JSON.parse(line).batch;
      if (typeof batch === 'string') out.add(batch);
    } catch {
      // a torn line from a crash mid-append
    }
  return [...out];
}

/** The database URL from the environment, if any. */
export function databaseUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.SLUICE_DATABASE_URL?.trim() || undefined;
}

/**
 * PostgreSQL when a URL is given (or SLUICE_DATABASE_URL is set), files in the state folder
 * otherwise: `openStores({ databaseUrl })` needs no folder, `openStores({ stateDir })` no URL.
 */
export function openStores(
  opts: ({ stateDir: string; databaseUrl?: string } | { databaseUrl: string; stateDir?: string }) & {
    warn?: (m: string) => void;
  },
): SluiceStores {
  const url = opts.databaseUrl ?? databaseUrlFromEnv();
  if (url) return postgresStores(url, opts.warn);
  if (opts.stateDir === undefined) throw new Error('openStores needs a stateDir or a databaseUrl');
  return fileStores(opts.stateDir, opts.warn);
}
