// A session step whose batch waits on a person, past the batch activity's bounded wait: the
// activity leaves its worker slot and the step waits on a watch (workflows/session-batch-watch.ts).
// On a worker with three activity slots, four sessions wait on approvals while a fifth session's
// model step still runs; the batch's output reaches its step once, through a worker restart, an
// interrupt, and the session's termination (the batch drains, as a child batch did).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type SessionHandle, startSession } from '../client/session';
import { SluiceClient } from '../client/client';
import type { AgentMessage } from '../pipeline/session';
import { FileResultStore } from '../stores/claim-check';
import { conflictsPath, readSessionLog } from '../stores/sink';
import { SluicePlugin } from '../worker/worker';
import { batchWorkflowId } from '../workflows/definitions';
import { SESSION_BATCH_WATCH_WORKFLOW } from '../workflows/session-definitions';
import config from './fixtures/session.config';
import { eventually } from './eventually';

/** Fewer than the sessions that wait at once: a held slot each would leave none for a model step. */
const ACTIVITY_SLOTS = 3;

let connection: NativeConnection;
let client: SluiceClient;
let taskQueue: string;
let stateDir: string;
let store: FileResultStore;
let worker: { stop(): Promise<void> } | undefined;
let n = 0;
const sid = () => `parked-${process.pid}-${Date.now()}-${++n}`;

/** A worker with few activity slots, as the harness would start it otherwise. */
async function startWorker(): Promise<void> {
  const w = await Worker.create({
    connection,
    taskQueue,
    plugins: [new SluicePlugin({ config, stateDir })],
    workflowBundle: { codePath: inject('workflowBundlePath') },
    maxConcurrentActivityTaskExecutions: ACTIVITY_SLOTS,
    stickyQueueScheduleToStartTimeout: 3_000,
  });
  const running = w.run();
  worker = {
    async stop() {
      while (w.getState() === 'INITIALIZED') await new Promise((r) => setTimeout(r, 10));
      w.shutdown();
      await running;
    },
  };
}

beforeAll(async () => {
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  taskQueue = `session-parked-${process.pid}-${Date.now()}`;
  stateDir = fs.mkdtempSync(path.join(inject('runDir'), 'session-parked-'));
  process.env.SLUICE_TEST_DIR = stateDir;
  client = new SluiceClient({ connection, taskQueue });
  store = new FileResultStore(path.join(stateDir, 'results'));
  await startWorker();
});
afterAll(async () => {
  await worker?.stop();
  await connection?.close();
});

const start = () => startSession(client, { sessionId: sid(), model: 'scripted' });
const history = async (s: SessionHandle) => (await s.workflow.fetchHistory()).events ?? [];
const bodies = () => {
  const file = path.join(stateDir, 'bodies.log');
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n') : [];
};

type HistoryEvent = Awaited<ReturnType<typeof history>>[number];
/** The watches a session's run started, each named by its id (`<batch id>:watch-<look>`). */
const watchesOf = (events: HistoryEvent[]) =>
  events.flatMap((e) => {
    const a = e.startChildWorkflowExecutionInitiatedEventAttributes;
    return a?.workflowType?.name === SESSION_BATCH_WATCH_WORKFLOW ? [a.workflowId ?? ''] : [];
  });

/** The meeting point: the step's batch activity has returned and the step waits on a watch. */
function parked(s: SessionHandle) {
  return eventually(
    `session ${s.sessionId} waiting on its batch with no activity`,
    async () => watchesOf(await history(s)).length > 0,
    { timeoutMs: 90_000 },
  );
}

async function approve(s: SessionHandle): Promise<void> {
  const [p] = await eventually(`an approval of ${s.sessionId}`, async () => {
    const pending = await s.pendingApprovals();
    return pending.length ? pending : undefined;
  });
  await client.decide({ approvalId: p.approvalId, decision: 'approve', by: 'parked-test' });
}

/** The session log numbers each event once: nothing recorded twice under one seq. */
async function logWhole(s: SessionHandle): Promise<void> {
  const conflicts = conflictsPath(stateDir, s.sessionId);
  expect(fs.existsSync(conflicts) ? fs.readFileSync(conflicts, 'utf8') : '').toBe('');
  const seqs = (await readSessionLog(stateDir, s.sessionId)).map((e) => e.seq);
  expect(seqs).toEqual(seqs.map((_, i) => i));
}

/** The turn's transcript: one result for the publish call, whatever route its output took. */
const toolResults = (t: AgentMessage[]) => t.filter((m) => m.role === 'tool').map((m) => m.toolCallId);

describe('a session step whose batch waits on a person', () => {
  it('holds no activity slot while it waits: four sessions wait on approvals, a fifth still gets its model step', async () => {
    const waiting = await Promise.all([1, 2, 3, 4].map(() => start()));
    const turns = waiting.map((s) => s.send('publish', { id: 'pub' }));
    for (const s of waiting) await parked(s);
    // With a slot held by each waiting batch activity, this model step would never get one.
    const other = await start();
    expect((await other.send('hello')).text).toBe('echo hello');
    for (const s of waiting) await approve(s);
    const outcomes = await Promise.all(turns);
    expect(outcomes.map((o) => [o.reason, o.text])).toEqual(waiting.map(() => ['done', 'published notes']));
    for (const s of waiting) {
      expect(toolResults(await s.transcript(store))).toEqual(['p']);
      expect(bodies().filter((l) => l.includes(s.sessionId))).toHaveLength(1);
      // The output came from a run of the activity after the watch, attached to the ended batch:
      // one run more than the watches (a loaded worker may look once more, never answer twice).
      const events = await history(s);
      const ran = events.filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'sluiceSessionBatch',
      );
      expect(ran.length).toBeGreaterThanOrEqual(2);
      expect(ran.length).toBe(watchesOf(events).length + 1);
    }
    await Promise.all([...waiting, other].map((s) => s.cancel()));
  }, 240_000);

  it('hands the output over once after the worker is stopped while the step waits, and started again', async () => {
    const s = await start();
    const turn = s.send('publish', { id: 'pub' });
    await parked(s);
    await worker?.stop();
    await startWorker();
    await approve(s);
    expect((await turn).text).toBe('published notes');
    expect(toolResults(await s.transcript(store))).toEqual(['p']);
    expect(bodies().filter((l) => l.includes(s.sessionId))).toHaveLength(1);
    await s.cancel();
  }, 180_000);

  it('an interrupt while the step waits cancels the batch, which drains, and the turn ends interrupted', async () => {
    const s = await start();
    const turn = s.send('publish', { id: 'pub' });
    await parked(s);
    await s.interrupt();
    expect((await turn).reason).toBe('interrupted');
    expect(bodies().filter((l) => l.includes(s.sessionId))).toEqual([]);
    // The call still has its one result (aborted), as after an interrupt of a running batch.
    expect(toolResults(await s.transcript(store))).toEqual(['p']);
    expect((await s.send('hello', { id: 'after' })).text).toBe('echo hello');
    await s.cancel();
  }, 180_000);

  it('a session terminated while its step waits: the watch is cancelled (parent-close) and asks the batch to cancel; it drains', async () => {
    const s = await start();
    s.send('publish', { id: 'pub' }).catch(() => undefined);
    await parked(s);
    await s.workflow.terminate('the session goes away while its batch waits on a person');
    const batch = client.temporal.workflow.getHandle(batchWorkflowId(s.sessionId, 1, 1));
    await eventually(
      'the batch asked to cancel',
      async () =>
        ((await batch.fetchHistory()).events ?? []).some((e) => e.workflowExecutionCancelRequestedEventAttributes),
      { timeoutMs: 60_000 },
    );
    await eventually('the batch closed', async () => (await batch.describe()).status.name === 'COMPLETED', {
      timeoutMs: 60_000,
    });
    expect(bodies().filter((l) => l.includes(s.sessionId))).toEqual([]);
  }, 180_000);
});

describe('the watch a waiting step runs', () => {
  it('ends at once when the batch has closed before it asks (the batch ended while the activity returned)', async () => {
    const s = await start();
    expect((await s.send('chat', { id: 'closed' })).reason).toBe('done');
    const batchId = batchWorkflowId(s.sessionId, 1, 1);
    const watch = await client.temporal.workflow.start(SESSION_BATCH_WATCH_WORKFLOW, {
      taskQueue,
      workflowId: `${batchId}:watch-test`,
      args: [{ batchId }],
    });
    expect(await watch.result()).toBe('ended');
    await s.cancel();
  }, 120_000);

  it('is told by the batch when it ends, once it has asked; a batch nobody asks signals nobody', async () => {
    const s = await start();
    const turn = s.send('publish', { id: 'pub' });
    await parked(s);
    const batchId = batchWorkflowId(s.sessionId, 1, 1);
    const batchEvents = async () => (await client.temporal.workflow.getHandle(batchId).fetchHistory()).events ?? [];
    await eventually('the ask reached the batch', async () =>
      (await batchEvents()).some(
        (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'sluice.batch.endWanted',
      ),
    );
    await approve(s);
    expect((await turn).text).toBe('published notes');
    await logWhole(s);
    const sent = (await batchEvents()).filter((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes);
    expect(sent.map((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName)).toEqual([
      'sluice.session.batchEnded',
    ]);
    // The next turn's batches need nobody: each one that ended within the activity's wait (on a
    // loaded machine maybe not every one) was asked nothing and signalled nobody.
    expect((await s.send('chat', { id: 'fast' })).reason).toBe('done');
    const watched = watchesOf(await history(s));
    for (const step of [1, 2]) {
      const id = batchWorkflowId(s.sessionId, 2, step);
      const events = (await client.temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
      if (watched.some((w) => w.startsWith(`${id}:`))) continue;
      expect(events.filter((e) => e.workflowExecutionSignaledEventAttributes)).toEqual([]);
      expect(events.filter((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes)).toEqual([]);
    }
    await s.cancel();
  }, 180_000);
});
