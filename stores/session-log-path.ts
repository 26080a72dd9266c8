// Where a session's files live: its JSONL log, and the files kept beside it (the live channel's
// pieces, seq claims, writers, events kept aside). Shared by the sink (stores/sink.ts), the live
// channel (stores/live.ts) and the client's follower (client/session-events.ts), which must not
// load the sink itself.
//
// Beside files are named `<log name>.<kind>.jsonl`, so a session id ending `.live` (or any other
// kind) would have its log at another session's beside file: a batch of session `A.live` would
// append its calls and results to A's live channel, served on A's event stream. So no log name
// ends in a kind, by construction: such an id gets the hashed name below, as long ids do.
import { createHash } from 'node:crypto';
import * as path from 'node:path';

/** Where a worker keeps its files (session logs, stored results) unless told otherwise. */
export const DEFAULT_STATE_DIR = '.sluice';

const MAX_READABLE_NAME = 120;

/** The files kept beside a session's log, each `<log name>.<kind>.jsonl`; no log name ends in one. */
export const BESIDE_KINDS = ['live', 'claims', 'writers', 'conflicts'] as const;
type BesideKind = (typeof BESIDE_KINDS)[number];
const ENDS_IN_KIND = new RegExp(`\\.(${BESIDE_KINDS.join('|')})$`, 'i');

/**
 * The session's log file. A session id whose encoded form is long (emoji take 12 bytes each), or
 * ends in a beside file's kind (`.live`, `.claims`, ...), gets a name that keeps its readable
 * start and adds a hash of the whole id: every id has a file name the file system accepts and
 * that no beside file has. '~' marks hashed names only, so no two ids share one.
 */
export function sessionLogPath(stateDir: string, sessionId: string): string {
  const encoded = encodeURIComponent(sessionId);
  const name =
    encoded.length <= MAX_READABLE_NAME && !encoded.includes('~') && !ENDS_IN_KIND.test(encoded)
      ? encoded
      : `${encoded.slice(0, 40).replace(/%[0-9A-F]?$/, '')}~${createHash('sha256').update(sessionId).digest('hex').slice(0, 32)}`;
  return path.join(stateDir, 'sessions', `${name}.jsonl`);
}

/** A file kept beside the session's log: `<log name>.<kind>.jsonl`. */
export function besideLogPath(stateDir: string, sessionId: string, kind: BesideKind): string {
  return sessionLogPath(stateDir, sessionId).replace(/\.jsonl$/, `.${kind}.jsonl`);
}

/**
 * Where the sink keeps events numbered at seqs the log already held (stores/sink.ts), one JSON
 * line `{ batch, event }` each: they never reach the log, so a follower must not wait for them.
 */
export function sessionConflictsPath(stateDir: string, sessionId: string): string {
  return besideLogPath(stateDir, sessionId, 'conflicts');
}
