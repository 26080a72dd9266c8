// The durable agent session on a real dev server with the scripted model: the loop, the
// transcript's order, per-call errors for bad ids, limits, interrupts and continue-as-new.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { main } from '../cli';
import { loadHistories } from '../client/history';
import { replayHistories } from '../client/replay';
import { sessionHandle, startSession, type SessionRequest } from '../client/session';
import type { AgentMessage, ToolMessage } from '../pipeline/session';
import { FileResultStore } from '../stores/claim-check';
import type { SessionEvent } from '../pipeline/types';
import { conflictsPath, readSessionLog } from '../stores/sink';
import { batchWorkflowId, SESSION_ID } from '../workflows/definitions';
import {
  owningSession,
  SESSION_BATCH_WATCH_WORKFLOW,
  SESSION_STEP_MEMO,
  sessionWorkflowId,
} from '../workflows/session-definitions';
import config from './fixtures/session.config';
import { eventually, within } from './eventually';
import { startHarness, type Harness } from './harness';

let h: Harness;
let store: FileResultStore;
let n = 0;
const sid = () => `sess-${process.pid}-${Date.now()}-${++n}`;
const lines = (file: string) =>
  fs.existsSync(path.join(h.stateDir, file))
    ? fs.readFileSync(path.join(h.stateDir, file), 'utf8').trim().split('\n').filter(Boolean)
    : [];
const until = (what: string, fn: () => boolean | Promise<boolean>) => eventually(what, fn);

beforeAll(async () => {
  h = await startHarness('session', config);
  process.env.SLUICE_TEST_DIR = h.stateDir;
  store = new FileResultStore(path.join(h.stateDir, 'results'));
});
afterAll(async () => {
  await h?.close();
});

const start = (extra: Partial<SessionRequest> = {}) =>
  startSession(h.client, { sessionId: sid(), model: 'scripted', ...extra });

const shape = (t: AgentMessage[]) =>
  t.map((m) => {
    if (m.role === 'assistant') return `assistant:${m.text}|${m.toolCalls.map((c) => c.id).join(',')}`;
    if (m.role === 'tool') return `tool:${m.toolCallId}:${m.isError ? 'error' : 'ok'}`;
    return `${m.role}:${typeof m.content === 'string' ? m.content : '[blocks]'}${'source' in m && m.source ? `(${m.source})` : ''}`;
  });

/** The scripted first turn's transcript, in shape(): whichever way the model step runs. */
const FIRST_TURN = [
  'user:chat',
  'assistant:Looking.|a,a,f,',
  'tool:a:ok',
  'tool:a:error',
  'tool:f:error',
  'tool:missing-id-4:error',
  'assistant:|r',
  'tool:r:ok',
  'user:remember the milk(tool:remind)',
  'assistant:All done.|',
];

describe('agentSession', () => {
  it('runs a turn: results in model order, bad ids refused per call, contexts after results, seq continuous', async () => {
    const s = await start({ system: 'be brief' });
    const outcome = await s.send('chat', { id: 'msg-1' });
    expect(outcome).toMatchObject({ messageId: 'msg-1', turn: 1, steps: 3, reason: 'done', text: 'All done.' });
    const transcript = await s.transcript(store);
    expect(shape(transcript)).toEqual(FIRST_TURN);
    const dupe = transcript[3] as ToolMessage;
    expect(dupe.error?.code).toBe('INVALID_CALL_ID');
    expect((transcript[4] as ToolMessage).content[0]).toMatchObject({
      text: expect.stringContaining('forbidden is forbidden'),
    });
    // one body per call that ran; the denied one never ran
    expect(lines('bodies.log').filter((l) => l.includes(s.sessionId))).toHaveLength(1);
    expect(lines('bodies.log')).not.toContain('forbidden ran');
    // the same message again is answered from the record, not run twice
    expect(await s.send('chat', { id: 'msg-1' })).toEqual(outcome);
    expect(lines('bodies.log').filter((l) => l.includes(s.sessionId))).toHaveLength(1);

    const view = await s.state();
    expect(view).toMatchObject({ status: 'idle', turn: 1, step: 3, messageCount: 10, usage: { steps: 3 } });
    expect(view.usage.inputTokens).toBeGreaterThan(0);
    const events = await readSessionLog(h.stateDir, s.sessionId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(events.map((e) => e.type)).toEqual([
      'session/user',
      'model/message',
      'tool/rejected',
      'tool/rejected',
      'tool/call',
      'tool/call',
      'tool/result',
      'tool/result',
      'model/message',
      'tool/call',
      'tool/result',
      'user/message',
      'model/message',
      'session/turn-ended',
    ]);
    // Each batch is started findable by its session, so it never upserts the attribute itself.
    const batch = h.client.temporal.workflow.getHandle(batchWorkflowId(s.sessionId, 1, 1));
    expect((await batch.describe()).typedSearchAttributes.get(SESSION_ID)).toBe(s.sessionId);
    const upserted = ((await batch.fetchHistory()).events ?? []).flatMap((e) =>
      Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}),
    );
    expect(upserted).not.toContain(SESSION_ID.name);
    await s.cancel();
    expect((await s.result()).endReason).toBe('cancelled');
  });

  it("a step's batch is started by the session's activity, not as its child, and names the run that owns it", async () => {
    const s = await start();
    expect((await s.send('chat', { id: 'msg-owned' })).reason).toBe('done');
    const session = await s.workflow.describe();
    const history = (await s.workflow.fetchHistory()).events ?? [];
    // No batch started as a child: the two steps with tool calls each ran the batch activity, first
    // as a local activity (its marker), and the run asked for the patch that marks it. (A batch
    // still running after the local wait has one activity run more, and after the activity's wait a
    // watch child and one more again: session-parked.test.ts.)
    const children = history.flatMap(
      (e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowType?.name ?? [],
    );
    expect(children.filter((name) => name !== SESSION_BATCH_WATCH_WORKFLOW)).toEqual([]);
    const local = history.flatMap((e) => {
      const details = e.markerRecordedEventAttributes?.details;
      const text = (k: string) => Buffer.from(details?.[k]?.payloads?.[0]?.data ?? []).toString();
      return text('data').includes('"activity_type":"sluiceSessionBatch"') ? [text('result')] : [];
    });
    expect(local).toHaveLength(2);
    const activities = history.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    expect(activities.filter((name) => name === 'sluiceSessionBatch')).toHaveLength(
      local.filter((r) => r.includes('"stillRunning"')).length + children.length,
    );
    const patches = history.flatMap((e) =>
      (e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads ?? []).map((p) =>
        Buffer.from(p.data ?? []).toString(),
      ),
    );
    expect(patches.some((p) => p.includes('sluice-session-batch-activity'))).toBe(true);
    for (const step of [1, 2]) {
      const batch = await h.client.temporal.workflow.getHandle(batchWorkflowId(s.sessionId, 1, step)).describe();
      expect(batch.parentExecution).toBeUndefined();
      expect(batch.memo?.[SESSION_STEP_MEMO]).toEqual({ workflowId: session.workflowId, runId: session.runId });
      expect(owningSession(batch)).toBe(sessionWorkflowId(s.sessionId));
      expect(batch.typedSearchAttributes.get(SESSION_ID)).toBe(s.sessionId);
    }
    await s.cancel();
  });

  it('ends at maxTurns and at the token budget, with the reason recorded', async () => {
    const a = await start({ maxTurns: 1 });
    await a.send('hello');
    expect(await a.result()).toMatchObject({ endReason: 'max-turns', turns: 1 });
    await expect(a.send('again')).rejects.toThrow(/has ended \(max-turns\)/);

    const b = await start({ tokenBudget: 30 });
    const turn = await b.send('long:50');
    expect(turn.reason).toBe('budget');
    const out = await b.result();
    expect(out.endReason).toBe('budget');
    expect(out.usage.inputTokens + out.usage.outputTokens).toBeGreaterThanOrEqual(30);
    expect(out.usage.steps).toBeLessThan(50);
  });

  it('an interrupt during a batch drains it and ends the turn; the session takes the next message', async () => {
    const s = await start();
    const turn = s.send('slow-tool:4000', { id: 'slow' });
    await until('the slow body', () => lines('started.log').some((l) => l.includes(s.sessionId)));
    await s.interrupt();
    const outcome = await turn;
    expect(outcome.reason).toBe('interrupted');
    const t = await s.transcript(store);
    expect(shape(t).slice(-1)[0]).toMatch(/^tool:s:/); // the call still has its one result
    expect((await s.send('hi')).text).toBe('echo hi');
    await s.cancel();
  });

  it('a session terminated while its batch runs: the batch is asked to cancel and drains, as a child batch was', async () => {
    const s = await start({ modelCall: { heartbeatTimeoutMs: 2_000 } });
    s.send('slow-tool:6000', { id: 'slow-gone' }).catch(() => undefined);
    await until('the slow body', () => lines('started.log').some((l) => l.includes(s.sessionId)));
    await s.workflow.terminate('the session goes away while its batch runs');
    // The batch activity's next beat finds the session gone; it cancels the batch by id.
    const batch = h.client.temporal.workflow.getHandle(batchWorkflowId(s.sessionId, 1, 1));
    await eventually(
      'the batch asked to cancel',
      async () =>
        ((await batch.fetchHistory()).events ?? []).some((e) => e.workflowExecutionCancelRequestedEventAttributes),
      { timeoutMs: 60_000 },
    );
    // It drains: the started call still ends with its result, and the batch closes.
    await eventually('the batch closed', async () => (await batch.describe()).status.name !== 'RUNNING', {
      timeoutMs: 60_000,
    });
  }, 150_000);

  it('cancel during a model call, and a Temporal cancel during a batch, end the session with reason cancelled', async () => {
    const a = await start();
    const turn = a.send('slow-model:20000', { id: 'slow' });
    // the model logs `<turn>/<step> start` as a slow call begins (only this test makes one here)
    await until('the slow model call', () => lines('model.log').some((l) => l.endsWith(' start')));
    await a.cancel();
    expect(await turn).toMatchObject({ reason: 'cancelled' });
    expect(await a.result()).toMatchObject({ endReason: 'cancelled', turns: 1, lastTurn: { reason: 'cancelled' } });
    expect(shape(await a.transcript(store, await a.result()))).toEqual(['user:slow-model:20000']);

    const b = await start();
    const t2 = b.send('slow-tool:20000', { id: 'slow-tool' });
    await until('the slow body', () => lines('started.log').some((l) => l.includes(b.sessionId)));
    await b.workflow.cancel(); // the workflow cancelled from Temporal (UI, CLI): the same clean end
    expect((await t2).reason).toBe('cancelled');
    const out = await b.result();
    expect(out.endReason).toBe('cancelled');
    // the started call still has its one result; its body was stopped, not completed
    expect(shape(await b.transcript(store, out)).slice(-1)[0]).toBe('tool:s:error');
    expect(lines('bodies.log').filter((l) => l.includes(b.sessionId))).toHaveLength(0);
    const events = await readSessionLog(h.stateDir, b.sessionId);
    expect(events[events.length - 1]).toMatchObject({ type: 'session/ended', data: { reason: 'cancelled' } });
  });

  it('a message sent by signal is answered in its turn; endWhenIdle completes the session', async () => {
    const s = await start({ endWhenIdle: true });
    await s.post('ping', { id: 'p1' });
    const out = await s.result();
    expect(out).toMatchObject({ endReason: 'idle', turns: 1, lastTurn: { messageId: 'p1', text: 'echo ping' } });
    expect(shape(await sessionHandle(h.client, s.sessionId).transcript(store, out))).toEqual([
      'user:ping',
      'assistant:echo ping|',
    ]);
  });

  it("the session's events reach a client live: an approval is seen while its batch waits, the rest in order", async () => {
    const s = await start();
    const seen: SessionEvent[] = [];
    const turn = s.send('publish', { id: 'pub' });
    for await (const e of s.events({ source: h.stateDir, intervalMs: 50 })) {
      seen.push(e);
      if (e.type === 'approval/asked') {
        // the batch waits on this very approval, so the event came while the turn was running
        const id = String(e.data.id);
        expect((await s.pendingApprovals()).map((p) => p.approvalId)).toEqual([id]);
        expect(seen.some((x) => x.type === 'session/turn-ended')).toBe(false);
        await h.client.decide({ approvalId: id, decision: 'approve', by: 'streamer' });
      }
      if (e.type === 'session/turn-ended') break;
    }
    expect((await turn).text).toBe('published notes');
    expect(seen.map((e) => e.type)).toEqual([
      'session/user',
      'model/message',
      'tool/call',
      'approval/asked',
      'approval/decided',
      'tool/result',
      'model/message',
      'session/turn-ended',
    ]);
    expect(seen[1].data).toMatchObject({ text: 'Publishing.', toolCalls: [{ id: 'p', name: 'publish' }] });
    expect(seen[4].data).toMatchObject({ outcome: 'allowed-once', by: 'streamer' });
    // a follower that starts later gets the same events from the log, and stops at the session's end
    await s.cancel();
    const replayed: string[] = [];
    for await (const e of s.events({ source: h.stateDir, intervalMs: 50 })) replayed.push(e.type);
    expect(replayed).toEqual([...seen.map((e) => e.type), 'session/ended']);
  });

  it('a session driven by updates alone continues-as-new between turns, transcript whole', async () => {
    const s = await start({ continueAsNewAfterEvents: 20 });
    const texts: string[] = [];
    for (let i = 1; i <= 4; i++) texts.push((await s.send(`hi ${i}`, { id: `u${i}` })).text);
    expect(texts).toEqual(['echo hi 1', 'echo hi 2', 'echo hi 3', 'echo hi 4']);
    await until('a second run', async () => (await s.state()).runs > 1);
    const view = await s.state();
    expect(view).toMatchObject({ status: 'idle', turn: 4, messageCount: 8 });
    expect(shape(await s.transcript(store, view))).toEqual(
      [1, 2, 3, 4].flatMap((i) => [`user:hi ${i}`, `assistant:echo hi ${i}|`]),
    );
    // an update resent after the run changed is still answered once, from the carried record
    expect((await s.send('hi 4', { id: 'u4' })).text).toBe('echo hi 4');
    // `sluice replay <session>` finds the session's runs (its search attribute) and replays them
    const lines: string[] = [];
    const code = await main(['replay', s.sessionId, '--address', inject('temporalAddress')], (l) => lines.push(l));
    expect(code, lines.join('\n')).toBe(0);
    const replayed = lines.filter((l) => l.startsWith(`ok      sluice-session:${s.sessionId} `));
    expect(replayed.length).toBeGreaterThanOrEqual(2);
    await s.cancel();
  });

  // Three parts, each its own test with its own limits, so a part that waits names what it waited for.
  it('with modelCall.local each model step is a local activity: the same turn, no activity task for it', async () => {
    const s = await start({ system: 'be brief', modelCall: { local: true } });
    const outcome = await within('the local-step turn', 60_000, s.send('chat', { id: 'msg-local' }));
    expect(outcome).toMatchObject({ messageId: 'msg-local', turn: 1, steps: 3, reason: 'done', text: 'All done.' });
    expect(shape(await s.transcript(store))).toEqual(FIRST_TURN);
    const events = await readSessionLog(h.stateDir, s.sessionId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.type === 'model/message')).toHaveLength(3);
    // The model steps left markers, not activity tasks: a model step costs no activity task and no
    // workflow task of its own.
    const history = await s.workflow.fetchHistory();
    const attrs = (key: string) => history.events!.filter((e) => (e as Record<string, unknown>)[key]);
    // The only activity tasks are the batches' (the session's activity starts each one).
    const scheduled = attrs('activityTaskScheduledEventAttributes').map(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name,
    );
    expect(scheduled.filter((name) => name !== 'sluiceSessionBatch')).toEqual([]);
    // Two batches, and one look more for each that ran past the activity's wait (a watch child).
    expect(scheduled).toHaveLength(2 + attrs('startChildWorkflowExecutionInitiatedEventAttributes').length);
    expect(attrs('markerRecordedEventAttributes').length).toBeGreaterThanOrEqual(3);
    await within('the cancel of an idle local-step session', 30_000, s.cancel());
  }, 120_000);

  it('with modelCall.local, across continue-as-new under queries, every run replays and the log stays whole', async () => {
    // A turn posted by signal: no update waits on the run, so it continues-as-new mid-turn. Four
    // sessions at once, their state queried all the while: a query that comes while a local step
    // runs makes the worker complete the open workflow task early, and on replay the step's result
    // then reaches an earlier task than it did when recorded. A run that read its history's length
    // or a patch there failed to replay ("Missing associated machine for LocalActivity", or a patch
    // marker with no command) in most runs of four such sessions.
    const many = await Promise.all(
      [1, 2, 3, 4].map(() => start({ modelCall: { local: true }, continueAsNewAfterEvents: 20 })),
    );
    await Promise.all(
      many.map(async (c) => {
        await c.post('long:8', { id: 'l1' });
        await eventually(
          `the long turn of ${c.sessionId} ended in a later run`,
          async () => {
            const v = await c.state();
            return v.runs > 1 && v.lastTurn?.text === 'finished 8';
          },
          { timeoutMs: 120_000, intervalMs: 10 },
        );
      }),
    );
    // Every run of the four replays with the workflow code their worker ran (the run's bundle), in
    // one replay worker: `sluice replay <session>` itself is the test above's, and it bundles the
    // workflow code anew each time it runs.
    const histories = (await Promise.all(many.map((c) => loadHistories(c.sessionId, h.client.temporal)))).flat();
    const replayed = await within(
      'the replay of the four sessions',
      120_000,
      replayHistories(histories, { workflowBundlePath: inject('workflowBundlePath') }),
    );
    expect(replayed.filter((r) => !r.ok)).toEqual([]);
    for (const c of many) {
      const latest = await c.workflow.fetchHistory();
      expect(
        latest.events!.filter((e) => (e as Record<string, unknown>).activityTaskScheduledEventAttributes),
      ).toHaveLength(0);
      const runs = replayed.filter((r) => r.workflowId === c.workflowId && !r.skipped);
      expect(runs.length, JSON.stringify(replayed)).toBeGreaterThanOrEqual(2);
      await within(`the cancel of ${c.sessionId}`, 30_000, c.cancel());
      // The session's log holds every event once, in order, and nothing went aside: a task replayed
      // with a query's early completion writes the same events again, and they are its own.
      const events = await readSessionLog(h.stateDir, c.sessionId);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
      expect(events.filter((e) => e.type === 'model/message')).toHaveLength(9);
      expect(fs.existsSync(conflictsPath(h.stateDir, c.sessionId))).toBe(false);
    }
  }, 300_000);

  it('with modelCall.local a cancel while a slow local model step runs ends the turn and the session as cancelled', async () => {
    // It reaches the workflow when the open workflow task is next heartbeated.
    const starts = () => lines('model.log').filter((l) => l.endsWith(' start')).length;
    const before = starts();
    const b = await start({ modelCall: { local: true } });
    const turn = b.send('slow-model:60000', { id: 'slow-local' });
    await until('the slow local model call', () => starts() > before);
    await within('the cancel of a session in a slow local step', 30_000, b.cancel());
    expect(await within('the turn after the cancel', 45_000, turn)).toMatchObject({ reason: 'cancelled' });
    expect(await within('the session result after the cancel', 30_000, b.result())).toMatchObject({
      endReason: 'cancelled',
      turns: 1,
    });
  }, 180_000);

  it('300 steps: history bytes per step stay flat, it continues-as-new, the transcript is exact', async () => {
    const steps = 300;
    const s = await start({ endWhenIdle: true, continueAsNewAfterEvents: 1_000, maxStepsPerTurn: 400 });
    await s.post(`long:${steps}`, { id: 'long' });
    const out = await s.result();
    expect(out).toMatchObject({
      endReason: 'idle',
      lastTurn: { reason: 'done', steps: steps + 1, text: `finished ${steps}` },
    });
    const events = await readSessionLog(h.stateDir, s.sessionId);
    const modelEvents = events.filter((e) => e.type === 'model/message').map((e) => e.data as Record<string, number>);
    expect(modelEvents).toHaveLength(steps + 1);
    const runs = new Set(modelEvents.map((e) => e.run));
    expect(runs.size).toBeGreaterThan(1); // continued-as-new at least once
    // bytes a step adds to its run's history: the difference between consecutive steps' sizes
    const perStep = new Map<number, number>();
    for (let i = 1; i < modelEvents.length; i++)
      if (modelEvents[i].run === modelEvents[i - 1].run)
        perStep.set(modelEvents[i].step, modelEvents[i].historyBytes - modelEvents[i - 1].historyBytes);
    const near = (k: number) => {
      const xs = [...perStep.entries()]
        .filter(([st]) => Math.abs(st - k) <= 5)
        .map(([, b]) => b)
        .sort((a, b) => a - b);
      return xs[Math.floor(xs.length / 2)];
    };
    const [at10, at100, at300] = [near(10), near(100), near(295)];
    console.log(
      `history bytes per step (median of nearby steps): step 10: ${at10}, step 100: ${at100}, step 300: ${at300}; runs: ${runs.size}`,
    );
    expect(at300).toBeLessThan(at10 * 1.25);
    expect(at100).toBeLessThan(at10 * 1.25);
    // the transcript is the whole session, in order, across the runs
    const t = await s.transcript(store, out);
    const expected = ['user:long:300'];
    for (let i = 1; i <= steps; i++) expected.push(`assistant:step ${i}|c${i}`, `tool:c${i}:ok`);
    expected.push(`assistant:finished ${steps}|`);
    expect(shape(t)).toEqual(expected);
    expect(lines('bodies.log').filter((l) => l.includes(s.sessionId))).toHaveLength(steps);
  }, 600_000); // 301 model steps and 300 batches: minutes on a loaded machine
});
