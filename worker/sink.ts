// Session events leave the workflow through a sink. The default writes one append-only JSONL
// file per session, so a person can `tail -f` it.
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { SessionEvent } from '../pipeline/types';

export interface EventSink {
  /**
   * Appends events in seq order. Called at least once per chunk (again on every replay of the
   * batch), so it must skip events it already holds: the JSONL sink does it by seq.
   */
  append(sessionId: string, events: SessionEvent[]): Promise<void>;
}

/** Longest file name kept readable; file systems refuse names over 255 bytes. */
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

export class JsonlSessionLog implements EventSink {
  private readonly lastSeq = new Map<string, number>();
  private readonly queues = new Map<string, Promise<void>>();

  constructor(private readonly stateDir: string) {}

  append(sessionId: string, events: SessionEvent[]): Promise<void> {
    // One writer per session at a time, so the seq check and the append cannot interleave.
    const prev = this.queues.get(sessionId) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(() => this.write(sessionId, events));
    this.queues.set(sessionId, next);
    return next;
  }

  private async write(sessionId: string, events: SessionEvent[]): Promise<void> {
    const file = sessionLogPath(this.stateDir, sessionId);
    let last = this.lastSeq.get(sessionId);
    const firstWriteHere = last === undefined;
    if (last === undefined) last = await readLastSeq(file);
    const bySeq = new Map(events.filter((e) => e.seq > last!).map((e) => [e.seq, e]));
    const fresh = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
    if (fresh.length === 0) return;
    await fs.mkdir(path.dirname(file), { recursive: true });
    // After a crash mid-append the file may end in a torn line: start on a fresh one.
    const lead = firstWriteHere && (await endsTorn(file)) ? '\n' : '';
    await fs.appendFile(file, `${lead + fresh.map((e) => JSON.stringify(e)).join('\n')}\n`);
    this.lastSeq.set(sessionId, fresh[fresh.length - 1].seq);
  }
}

async function endsTorn(file: string): Promise<boolean> {
  let handle;
  try {
    handle = await fs.open(file, 'r');
  } catch {
    return false;
  }
  try {
    const { size } = await handle.stat();
    if (size === 0) return false;
    const last = Buffer.alloc(1);
    await handle.read(last, 0, 1, size - 1);
    return last[0] !== 0x0a;
  } finally {
    await handle.close();
  }
}

/** The highest seq in a session log, reading only its tail. */
export async function readLastSeq(file: string): Promise<number> {
  let handle;
  try {
    handle = await fs.open(file, 'r');
  } catch {
    return -1;
  }
  try {
    const { size } = await handle.stat();
    let tailSize = 64 * 1024;
    for (;;) {
      const start = Math.max(0, size - tailSize);
      const buf = Buffer.alloc(size - start);
      await handle.read(buf, 0, buf.length, start);
      const lines = buf
        .toString('utf8')
        .split('\n')
        .filter((l) => l.trim());
      // The first line of a partial read may be cut; use it only when the read began at 0.
      for (let i = lines.length - 1; i >= (start === 0 ? 0 : 1); i--) {
        try {
          const seq = JSON.parse(lines[i]).seq;
          if (Number.isInteger(seq)) return seq;
        } catch {
          // a torn last line from a crash mid-append: look further back
        }
      }
      if (start === 0) return -1;
      tailSize *= 4;
    }
  } finally {
    await handle.close();
  }
}

export async function readSessionLog(stateDir: string, sessionId: string): Promise<SessionEvent[]> {
  let text: string;
  try {
    text = await fs.readFile(sessionLogPath(stateDir, sessionId), 'utf8');
  } catch {
    return [];
  }
  const out: SessionEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // a torn line from a crash mid-append carries no complete event
    }
  }
  return out;
}
