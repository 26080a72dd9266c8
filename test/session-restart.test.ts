// A session survives its worker: killed with SIGKILL during a model call, during a batch and
// between turns, the session goes on with no turn lost or repeated, each tool body completing
// once, and a transcript identical to a run that was never interrupted.
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSession, type SessionHandle } from '../client/session';
import type { AgentMessage, TurnOutcome } from '../pipeline/session';
import { FileResultStore } from '../stores/claim-check';
import { readSessionLog } from '../stores/sink';
import { killableWorker } from './harness';
import { eventually } from './eventually';

const CONFIG = path.join(__dirname, 'fixtures', 'session.config.ts');
const k = killableWorker('session-restart', CONFIG);
const { lines, start: startWorker } = k;
const until = (what: string, fn: () => boolean | Promise<boolean>) => eventually(what, fn);
const kill = () => k.kill();
const MESSAGES = ['slow-model:3000', 'slow-tool:3000', 'chat'];
const open = (sessionId: string) =>
  startSession(k.h.client, {
    sessionId,
    model: 'scripted',
    modelCall: { heartbeatTimeoutMs: 2_000, initialIntervalMs: 200 },
  });
const transcriptOf = (s: SessionHandle) => s.transcript(new FileResultStore(path.join(k.h.stateDir, 'results')));

describe('a session across worker crashes', () => {
  it('SIGKILL during a model call, during a batch and between turns: nothing lost, nothing twice', async () => {
    await startWorker();
    // The reference: the same messages, never interrupted.
    const ref = await open(`ref-${process.pid}-${Date.now()}`);
    const refOutcomes: TurnOutcome[] = [];
    for (const [i, m] of MESSAGES.entries()) refOutcomes.push(await ref.send(m, { id: `m${i}` }));
    const expected: AgentMessage[] = await transcriptOf(ref);

    const s = await open(`crash-${process.pid}-${Date.now()}`);
    const mine = (l: string) => l.includes(s.sessionId);
    const outcomes: TurnOutcome[] = [];

    // 1. during the model call
    const modelStarts = () => lines('model.log').filter((l) => l === '1/1 start').length;
    const before = modelStarts();
    const t1 = s.send(MESSAGES[0], { id: 'm0' });
    await until('the model call', () => modelStarts() > before);
    await kill();
    await startWorker();
    outcomes.push(await t1);
    expect(modelStarts() - before).toBe(2); // the killed call, then its retry

    // 2. during the batch (the body sleeps; it has started but not finished)
    const t2 = s.send(MESSAGES[1], { id: 'm1' });
    await until('the tool body', () => lines('started.log').filter(mine).length >= 2);
    await kill();
    await startWorker();
    outcomes.push(await t2);

    // 3. between turns: the worker dies idle; the message is sent while none runs
    await kill();
    const t3 = s.send(MESSAGES[2], { id: 'm2' });
    // Not a margin the result depends on: the update is admitted by the server whenever it
    // arrives; this only makes it likely to arrive while no worker runs. The turn's outcome is
    // asserted below either way.
    await new Promise((r) => setTimeout(r, 500));
    await startWorker();
    outcomes.push(await t3);

    expect(outcomes.map((o) => [o.turn, o.reason, o.steps, o.text])).toEqual(
      refOutcomes.map((o) => [o.turn, o.reason, o.steps, o.text]),
    );
    expect(await transcriptOf(s)).toEqual(expected);
    // each body completed exactly once per call, though one was started twice
    const done = lines('bodies.log').filter(mine);
    expect(done).toHaveLength(new Set(done).size);
    expect(done).toHaveLength(lines('bodies.log').filter((l) => l.includes(ref.sessionId)).length);
    expect(lines('started.log').filter(mine).length).toBe(done.length + 1);
    // the session log has every event once, seq continuous, one session/user per turn
    const events = await readSessionLog(k.h.stateDir, s.sessionId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.type === 'session/user')).toHaveLength(3);
    expect(events.filter((e) => e.type === 'session/turn-ended')).toHaveLength(3);
    await s.cancel();
    await ref.cancel();
  }, 180_000);
});
