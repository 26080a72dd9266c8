// followSessionEvents' `check` (what session.events() uses to stop waiting for events that can
// never come: a log kept elsewhere, a session id another workflow took): it runs in the follower's
// own round, after that round's read of the log and before it yields what the round read, and an
// error it returns ends the follow. A state folder's follower, no Temporal needed.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { followSessionEvents } from '../../client/session-events';
import type { SessionEvent } from '../../pipeline/types';
import { sessionLogPath } from '../../stores/session-log-path';
import { eventually } from '../eventually';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function folder(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-follow-check-'));
  dirs.push(dir);
  fs.mkdirSync(path.join(dir, 'sessions'));
  return dir;
}

const event = (seq: number): SessionEvent => ({ seq, type: 'session/user', time: new Date(0).toISOString(), data: {} });
const append = (dir: string, seq: number) =>
  fs.appendFileSync(sessionLogPath(dir, 's1'), `${JSON.stringify(event(seq))}\n`);

describe('followSessionEvents: check', () => {
  it("ends the follow with the check's error, before yielding the round's events that came with it", async () => {
    const dir = folder();
    append(dir, 0);
    append(dir, 1);
    let clash = false;
    const seen: number[] = [];
    const follow = (async () => {
      for await (const e of followSessionEvents(dir, 's1', {
        intervalMs: 20,
        checkMs: 0,
        check: async () => (clash ? new Error('another workflow took this id') : undefined),
      }))
        seen.push(e.seq);
    })();
    await eventually('the log so far', () => seen.length === 2);
    // What the clash brings and the check finding it come in one round: nothing of it passes.
    append(dir, 2);
    clash = true;
    await expect(follow).rejects.toThrow('another workflow took this id');
    expect(seen).toEqual([0, 1]);
  });

  it('says whether the round found the log', async () => {
    const dir = folder();
    const rounds: boolean[] = [];
    const stop = new AbortController();
    const seen: number[] = [];
    const follow = (async () => {
      for await (const e of followSessionEvents(dir, 's1', {
        intervalMs: 20,
        checkMs: 0,
        signal: stop.signal,
        check: async ({ logFound }) => {
          rounds.push(logFound);
          return undefined;
        },
      }))
        seen.push(e.seq);
    })();
    await eventually('the first round', () => rounds.length >= 1);
    append(dir, 0);
    await eventually('the event, read in a later round', () => seen.length === 1);
    stop.abort();
    await follow;
    // No log in the first round; the round that read the event found it, and so did every later one.
    expect(rounds[0]).toBe(false);
    expect(rounds.at(-1)).toBe(true);
    expect(rounds.indexOf(true)).toBeGreaterThan(0);
    expect(rounds.slice(rounds.indexOf(true))).not.toContain(false);
  });
});
