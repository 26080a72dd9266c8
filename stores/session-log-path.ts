// Where a session's JSONL log lives: shared by the sink (stores/sink.ts) and the client's
// follower (client/session-events.ts), which must not load the sink itself.
import { createHash } from 'node:crypto';
import * as path from 'node:path';

/** Where a worker keeps its files (session logs, stored results) unless told otherwise. */
export const DEFAULT_STATE_DIR = '.sluice';

const MAX_READABLE_NAME = 120;

/**
 * The session's log file. A session id whose encoded form is long (emoji take 12 bytes each) gets
 * a name that keeps its readable start and adds a hash of the whole id, so every id has a file
 * name the file system accepts; '~' marks hashed names only, so no two ids share one.
 */
export function sessionLogPath(stateDir: string, sessionId: string): string {
  const encoded = encodeURIComponent(sessionId);
  const name =
    encoded.length <= MAX_READABLE_NAME && !encoded.includes('~')
      ? encoded
      : `${encoded.slice(0, 40).replace(/%[0-9A-F]?$/, '')}~${createHash('sha256').update(sessionId).digest('hex').slice(0, 32)}`;
  return path.join(stateDir, 'sessions', `${name}.jsonl`);
}

/**
 * Where the sink keeps events numbered at seqs the log already held (stores/sink.ts), one JSON
 * line `{ batch, event }` each: they never reach the log, so a follower must not wait for them.
 */
export function sessionConflictsPath(stateDir: string, sessionId: string): string {
  return sessionLogPath(stateDir, sessionId).replace(/\.jsonl$/, '.conflicts.jsonl');
}
