// A local model step whose worker is lost mid-stream (modelCall.local): two worker processes on one
// state folder (the file stores and the file live channel), one at a time. The first streams the
// step's first piece and is killed with SIGKILL; the second replays the session and runs the local
// step again from attempt 1, its pieces numbered from 0 again. Each execution stamps its own run on
// its pieces, so a follower voids the lost run's pieces before the new run's and shows the answer
// once; without runs it showed the first piece twice. The session log stays whole: the second
// worker's repeat of the turn's first event (another workflow time) is the session's own, not a conflict.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LiveEvent } from '../pipeline/live';
import { startSession } from '../client/session';
import { followSessionEvents } from '../client/session-events';
import type { SessionEvent } from '../pipeline/types';
import { conflictsPath, readSessionLog } from '../stores/sink';
import { eventually } from './eventually';
import { type ChildWorker, type Harness, spawnWorker, startHarness } from './harness';
import { ANSWER, type StreamProvider, startStreamProvider } from './stream-provider';

type Followed = SessionEvent | LiveEvent;
type Delta = Extract<LiveEvent, { type: 'live/delta' }>;

const CONFIG = path.join(__dirname, 'fixtures', 'session.config.ts');
let provider: StreamProvider;
let h: Harness;
let dir: string;
const workers: ChildWorker[] = [];

beforeAll(async () => {
  provider = await startStreamProvider();
  // This process only starts the session and follows it; the workers are children.
  h = await startHarness('live-local-lost', { tools: [] }, { autoStart: false });
  dir = path.join(h.stateDir, 'shared');
  fs.mkdirSync(dir, { recursive: true });
}, 120_000);
afterAll(async () => {
  for (const w of workers) await w.kill();
  await h?.close();
  await provider?.close();
});

function worker(): ChildWorker {
  const w = spawnWorker(CONFIG, h.taskQueue, dir, {
    SLUICE_TEST_DIR: dir,
    OPENAI_API_KEY: 'sk-test-live-local-lost',
    OPENAI_BASE_URL: `${provider.base}/v1`,
    ANTHROPIC_API_KEY: 'sk-ant-test-live-local-lost',
    ANTHROPIC_BASE_URL: provider.base,
  });
  workers.push(w);
  return w;
}

const deltas = (seen: Followed[]) => seen.filter((e): e is Delta => e.type === 'live/delta');
const runOf = (e: LiveEvent) => `${e.run ?? '-'}/${e.attempt}`;
/** What a follower shows: the text pieces of every (run, attempt) not voided. */
function shownText(seen: Followed[]): string {
  const voided = new Set(seen.filter((e) => e.type === 'live/void').map((e) => runOf(e as LiveEvent)));
  return deltas(seen)
    .filter((d) => d.kind === 'text' && !voided.has(runOf(d)))
    .map((d) => d.text)
    .join('');
}

describe('a local model step whose worker is lost', () => {
  it("the next worker runs it again from attempt 1; followers see the lost run's pieces voided before the new run's, the answer once", {
    timeout: 240_000,
  }, async () => {
    const model = 'gate-local-lost';
    const first = worker();
    await first.ready;
    const s = await startSession(h.client, {
      sessionId: `live-local-lost-${process.pid}-${Date.now()}`,
      model: `anthropic:${model}`,
      modelCall: { local: true },
    });
    const seen: Followed[] = [];
    const stop = new AbortController();
    const following = (async () => {
      for await (const e of followSessionEvents(dir, s.sessionId, { live: true, signal: stop.signal })) seen.push(e);
    })();
    const turn = s.send('say hello');

    // The first piece, from the first worker, while the provider holds the rest.
    await eventually('the first piece', () => shownText(seen) === ANSWER[0], { timeoutMs: 90_000 });
    const lost = deltas(seen)[0];
    expect(lost).toMatchObject({ attempt: 1, n: 0 });
    expect(lost.run).toMatch(/^[0-9a-f]+$/);
    await first.kill('SIGKILL');

    // The second worker takes the session once the first one's workflow task times out, replays
    // it and runs the local step again: its request reaches the provider and is held the same way.
    const second = worker();
    await second.ready;
    await eventually('the step run again on the second worker', () => provider.requests(model) >= 2, {
      timeoutMs: 120_000,
    });
    provider.release(model);

    expect(await turn).toMatchObject({ reason: 'done', text: ANSWER.join('') });
    // The session log is whole: the second worker re-recorded the turn's first event with another
    // workflow time (the task that scheduled the local step never completed), and the sink took it
    // for the session's own repeat, not another writer's events numbered over the log.
    const logged = () => readSessionLog(dir, s.sessionId);
    await eventually(
      'the turn recorded in the session log',
      async () => (await logged()).some((e) => e.type === 'session/turn-ended'),
      { timeoutMs: 60_000 },
    );
    const log = await logged();
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i));
    expect(log.filter((e) => e.type === 'session/user')).toHaveLength(1);
    expect(log.some((e) => e.type === 'model/message')).toBe(true);
    expect(fs.existsSync(conflictsPath(dir, s.sessionId))).toBe(false);
    await eventually("the new run's pieces", () => shownText(seen) === ANSWER.join(''), { timeoutMs: 60_000 });
    stop.abort();
    await following;

    // The new run started at attempt 1 again, numbered from 0 again: only its run differs.
    const fresh = deltas(seen).filter((d) => d.run !== lost.run);
    expect(fresh[0]).toMatchObject({ attempt: 1, n: 0 });
    // The lost run is voided after its piece and before the new run's first, for its worker was lost.
    const voided = seen.findIndex((e) => e.type === 'live/void' && (e as LiveEvent).run === lost.run);
    expect(voided).toBeGreaterThan(seen.indexOf(lost));
    expect(voided).toBeLessThan(seen.indexOf(fresh[0]));
    expect((seen[voided] as LiveEvent & { reason: string }).reason).toMatch(/worker running the step was lost/);
    // The answer shows once; each (run, attempt, n) once; no third run.
    expect(shownText(seen)).toBe(ANSWER.join(''));
    const keys = deltas(seen).map((d) => `${runOf(d)}/${d.n}`);
    expect(keys).toEqual([...new Set(keys)]);
    expect(deltas(seen).filter((d) => d.run !== lost.run && d.run !== fresh[0].run)).toEqual([]);

    await s.cancel();
    await s.result();
  });
});
