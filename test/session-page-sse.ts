// A session's event stream from the inbox, read as a browser's EventSource reads it, and what a
// page shows of it: shared by the session page's tests.
import { expect } from 'vitest';
import type { LiveEvent } from '../pipeline/live';
import type { SessionEvent } from '../pipeline/types';

export type Followed = SessionEvent | LiveEvent;

interface Frame {
  id?: string;
  event: string;
  data: Followed;
}

/** An EventSource's view of the stream: every frame with its id, until closed. */
export function openStream(url: string, headers: Record<string, string> = {}) {
  const frames: Frame[] = [];
  const stop = new AbortController();
  let status = 0;
  let failure: unknown;
  const done = (async () => {
    const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: stop.signal });
    status = res.status;
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      for (let cut = buf.indexOf('\n\n'); cut >= 0; cut = buf.indexOf('\n\n')) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const f: Partial<Frame> & { lines: string[] } = { lines: [] };
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) f.id = line.slice(4);
          else if (line.startsWith('event: ')) f.event = line.slice(7);
          else if (line.startsWith('data: ')) f.lines.push(line.slice(6));
        }
        if (f.event && f.lines.length) frames.push({ id: f.id, event: f.event, data: JSON.parse(f.lines.join('\n')) });
      }
    }
  })().catch((err) => {
    // Kept for close(): thrown here, nobody would await it, and a stream cut by the inbox's
    // teardown after a failed assertion would surface as an unhandled rejection of its own.
    if (!stop.signal.aborted) failure = err;
  });
  return {
    frames,
    status: () => status,
    seen: () => frames.map((f) => f.data),
    lastId: () => [...frames].reverse().find((f) => f.id)?.id,
    async close() {
      stop.abort();
      await done;
      if (failure) throw failure;
    },
  };
}

const live = (seen: Followed[]) => seen.filter((e): e is LiveEvent => !('seq' in e));
export const records = (seen: Followed[]) => seen.filter((e): e is SessionEvent => 'seq' in e);
export const deltas = (seen: Followed[]) =>
  seen.filter((e): e is Extract<LiveEvent, { type: 'live/delta' }> => e.type === 'live/delta');

/** What a page shows of a step: the pieces of its attempts that were not voided. */
export function shownText(seen: Followed[], turn: number, step: number): string {
  const voided = new Set(
    live(seen)
      .filter((e) => e.type === 'live/void' && e.turn === turn && e.step === step)
      .map((e) => e.attempt),
  );
  return deltas(seen)
    .filter((d) => d.turn === turn && d.step === step && d.kind === 'text' && !voided.has(d.attempt))
    .map((d) => d.text)
    .join('');
}

/** Every record once and in seq order; every attempt's pieces once and in order. */
export function expectOnce(seen: Followed[]) {
  const seqs = records(seen).map((e) => e.seq);
  expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
  const pieces = deltas(seen).map((d) => `${d.turn}:${d.step}:${d.attempt}:${d.n}`);
  expect(new Set(pieces).size).toBe(pieces.length);
}
