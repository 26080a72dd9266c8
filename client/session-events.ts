// A session's events, live: the session log the workers' sink writes (<state-dir>/sessions/<id>.jsonl,
// or the PostgreSQL store), followed as it grows. The log is the live view; what is durable is the workflow histories and
// the stored transcript (docs/sessions.md says which is which).
import { promises as fs } from 'node:fs';
import type { SessionEvent } from '../pipeline/types';
import { sessionLogPath } from '../worker/session-log-path';

/** The log's events; none while it does not exist. A torn last line (a crash mid-append) is skipped. */
async function readLog(stateDir: string, sessionId: string): Promise<SessionEvent[]> {
  let text: string;
  try {
    text = await fs.readFile(sessionLogPath(stateDir, sessionId), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: SessionEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // a torn line carries no complete event
    }
  }
  return out;
}

/** Where a session's events are read: a state folder, or a store (worker/stores.ts: files or PostgreSQL). */
export type SessionEventSource = string | { events(sessionId: string, afterSeq?: number): Promise<SessionEvent[]> };

/**
 * A session's events as they are written: everything already in the session log from `fromSeq`,
 * then each new event, in seq order, until `signal` aborts. The log is the workers' (their
 * `--state-dir`, or their database); events numbered past a gap wait for the gap to fill, at most `gapMs`.
 */
export async function* followSessionEvents(
  source: SessionEventSource,
  sessionId: string,
  opts: { fromSeq?: number; signal?: AbortSignal; intervalMs?: number; gapMs?: number } = {},
): AsyncGenerator<SessionEvent> {
  let next = opts.fromSeq ?? 0;
  let gapSince: number | undefined;
  while (!opts.signal?.aborted) {
    let events: SessionEvent[] = [];
    if (typeof source === 'string') events = await readLog(source, sessionId);
    else
      try {
        events = await source.events(sessionId, next - 1);
      } catch {
        // a database restarting: read again on the next round
      }
    events = events.filter((e) => e.seq >= next);
    events.sort((a, b) => a.seq - b.seq);
    for (const e of events) {
      if (e.seq < next) continue; // the same seq twice (a replayed sink append)
      if (e.seq > next) {
        gapSince ??= Date.now();
        if (Date.now() - gapSince < (opts.gapMs ?? 2_000)) break;
      }
      gapSince = undefined;
      next = e.seq + 1;
      yield e;
    }
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        opts.signal?.removeEventListener('abort', done);
        resolve();
      };
      const t = setTimeout(done, opts.intervalMs ?? 200);
      opts.signal?.addEventListener('abort', done, { once: true });
    });
  }
}
