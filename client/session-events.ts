// A session's events, live: the session log the workers' sink writes (<state-dir>/sessions/<id>.jsonl,
// or the PostgreSQL store), followed as it grows. The log is the live view; what is durable is the workflow histories and
// the stored transcript (docs/sessions.md says which is which).
import type { SessionEvent } from '../pipeline/types';
import type * as Sink from '../worker/sink';

/** The file reader loads only when a state folder is given: sluice/client loads no file-system code otherwise. */
const readSessionLog: typeof Sink.readSessionLog = (stateDir, sessionId) =>
  (require('../worker/sink') as typeof Sink).readSessionLog(stateDir, sessionId);

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
    try {
      events = (
        typeof source === 'string' ? await readSessionLog(source, sessionId) : await source.events(sessionId, next - 1)
      ).filter((e) => e.seq >= next);
    } catch {
      // a database restarting: read again on the next round
    }
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
