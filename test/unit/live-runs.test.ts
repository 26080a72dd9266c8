// The live pieces of a step that ran more than once: each execution stamps its own run token, so
// a follower tells a local step restarted on another worker (attempt 1 again, its pieces numbered
// from 0 again) from the lost run it was showing, voids the lost run's pieces before the new run's,
// and shows neither twice. Events written before runs were stamped still read as attempts did.
// A state folder's follower (the file channel), no Temporal needed; the same run-aware resume for
// the session page's event stream.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LiveEvent } from '../../pipeline/live';
import { parseResume, resumeId, sentBefore } from '../../servers/inbox/sessions';
import { followSessionEvents } from '../../client/session-events';
import type { SessionEvent } from '../../pipeline/types';
import { fileLiveChannel } from '../../stores/live';
import { sessionLogPath } from '../../stores/session-log-path';
import { eventually } from '../eventually';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function folder(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-live-runs-'));
  dirs.push(dir);
  fs.mkdirSync(path.join(dir, 'sessions'));
  return dir;
}

const log = (dir: string, e: Omit<SessionEvent, 'time'>) =>
  fs.appendFileSync(sessionLogPath(dir, 's1'), `${JSON.stringify({ ...e, time: new Date(0).toISOString() })}\n`);

const piece = (attempt: number, n: number, text: string, run?: string): LiveEvent => ({
  type: 'live/delta',
  turn: 1,
  step: 1,
  attempt,
  ...(run ? { run } : {}),
  n,
  kind: 'text',
  text,
});

/** Follows s1 until its step's record; the events it yielded, in order. */
async function followUntilRecord(dir: string, live: LiveEvent[], pieces: number, answer: string) {
  log(dir, { seq: 0, type: 'session/user', data: { turn: 1, content: 'hi' } });
  await fileLiveChannel(dir).write('s1', live);
  const seen: (SessionEvent | LiveEvent)[] = [];
  const stop = new AbortController();
  const done = (async () => {
    for await (const e of followSessionEvents(dir, 's1', { live: true, intervalMs: 20, signal: stop.signal })) {
      seen.push(e);
      if (e.type === 'model/message') stop.abort();
    }
  })();
  await eventually('the pieces', () => seen.filter((e) => e.type === 'live/delta').length >= pieces);
  log(dir, { seq: 1, type: 'model/message', data: { turn: 1, step: 1, text: answer } });
  await done;
  return seen;
}

/** The text a follower shows: the pieces of every (run, attempt) not voided. */
function shown(seen: (SessionEvent | LiveEvent)[]): string {
  const voided = new Set(
    seen.filter((e) => e.type === 'live/void').map((e) => `${(e as LiveEvent).run}/${(e as LiveEvent).attempt}`),
  );
  return seen
    .filter((e): e is Extract<LiveEvent, { type: 'live/delta' }> => e.type === 'live/delta')
    .filter((d) => !voided.has(`${d.run}/${d.attempt}`))
    .map((d) => d.text)
    .join('');
}

const brief = (seen: (SessionEvent | LiveEvent)[]) =>
  seen.map((e) => ('seq' in e ? e.type : `${e.type} ${e.run ?? '-'}/${e.attempt}/${e.n}`));

describe('followSessionEvents: a step run again by another worker', () => {
  it("voids the lost run's pieces before the new run's, which carry the same attempt and numbers", async () => {
    const dir = folder();
    const seen = await followUntilRecord(
      dir,
      [
        piece(1, 0, 'Hello', 'aaa'),
        // The worker is lost; the next one runs the step again from attempt 1, numbered from 0.
        piece(1, 0, 'Hello', 'bbb'),
        piece(1, 1, ' world', 'bbb'),
      ],
      3,
      'Hello world',
    );
    expect(brief(seen)).toEqual([
      'session/user',
      'live/delta aaa/1/0',
      'live/void aaa/1/-1',
      'live/delta bbb/1/0',
      'live/delta bbb/1/1',
      'model/message',
    ]);
    const v = seen.find((e) => e.type === 'live/void') as LiveEvent & { reason: string };
    expect(v.reason).toMatch(/worker running the step was lost/);
    expect(shown(seen)).toBe('Hello world');
  });

  it('a lost run at a later attempt: the new run from attempt 1 replaces it, and late pieces of the lost run show nothing', async () => {
    const dir = folder();
    const seen = await followUntilRecord(
      dir,
      [
        piece(1, 0, 'Hel', 'r1'),
        { type: 'live/void', turn: 1, step: 1, attempt: 1, run: 'r1', n: 1, reason: 'cut' },
        piece(2, 0, 'Hello', 'r2'),
        // The worker running attempt 2 is lost; the next worker starts over at attempt 1.
        piece(1, 0, 'Hello', 'r3'),
        piece(2, 1, ' again', 'r2'), // a late piece of the lost run
        piece(1, 1, ' world', 'r3'),
      ],
      4,
      'Hello world',
    );
    expect(brief(seen)).toEqual([
      'session/user',
      'live/delta r1/1/0',
      'live/void r1/1/1',
      'live/delta r2/2/0',
      'live/void r2/2/-1',
      'live/delta r3/1/0',
      'live/delta r3/1/1',
      'model/message',
    ]);
    expect(shown(seen)).toBe('Hello world');
  });

  it('events written before runs were stamped read as attempts did', async () => {
    const dir = folder();
    const seen = await followUntilRecord(dir, [piece(1, 0, 'Hel'), piece(2, 0, 'Hello')], 2, 'Hello');
    expect(brief(seen)).toEqual([
      'session/user',
      'live/delta -/1/0',
      'live/void -/1/-1',
      'live/delta -/2/0',
      'model/message',
    ]);
    expect((seen[2] as LiveEvent & { reason: string }).reason).toBe('attempt 2 started over');
  });
});

describe("the session page's resume point names the run", () => {
  it('round-trips, and reads ids without a run as before', () => {
    const r = { next: 3, at: { turn: 1, step: 2, attempt: 1, n: 4, run: '0a1b2c' } };
    expect(parseResume(resumeId(r))).toEqual(r);
    expect(parseResume('3/1/2/1/4')).toEqual({ next: 3, at: { turn: 1, step: 2, attempt: 1, n: 4 } });
    expect(parseResume('3/1/2/1/4/not a run')).toEqual({ next: 0 });
  });

  it("a page that showed the new run's pieces gets none of the lost run's again, nor the new run's it had", () => {
    const r = parseResume('1/1/1/1/0/bbb');
    const state = {};
    const sent = [piece(1, 0, 'Hello', 'aaa'), piece(1, 0, 'Hello', 'bbb'), piece(1, 1, ' world', 'bbb')].map((e) =>
      sentBefore(e, r, state),
    );
    expect(sent).toEqual([true, true, false]);
  });

  it('a page that showed the lost run gets the new run whole, though its pieces carry the same numbers', () => {
    const r = parseResume('1/1/1/1/0/aaa');
    const state = {};
    const sent = [piece(1, 0, 'Hello', 'aaa'), piece(1, 0, 'Hello', 'bbb'), piece(1, 1, ' world', 'bbb')].map((e) =>
      sentBefore(e, r, state),
    );
    expect(sent).toEqual([true, false, false]);
  });
});

describe('the file channel', () => {
  it('makes its folder on the first write, and reads back what each write appended', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-live-runs-'));
    dirs.push(dir); // no sessions folder yet
    const channel = fileLiveChannel(dir);
    await channel.write('s1', [piece(1, 0, 'a'), piece(1, 1, 'b')]);
    const first = await channel.read('s1');
    await channel.write('s1', [piece(1, 2, 'c')]);
    const next = await channel.read('s1', first.cursor);
    expect(first.events.map((e) => (e as { text?: string }).text)).toEqual(['a', 'b']);
    expect(next.events.map((e) => (e as { text?: string }).text)).toEqual(['c']);
  });
});
