// Eager start: a client sharing its NativeConnection with a worker of the same process starts each
// new batch on that worker directly. The batch runs once, a resubmission attaches to it (running or
// finished) instead of starting another, a batch refused for its seqs runs when sent again, memo
// and search attribute are there, and the output is the plain path's.
import { Connection, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { SluiceClient } from '../client/client';
import { markVersionedWorker } from '../temporal/eager-start';
import { InvalidInputError } from '../support/errors';
import type { BatchOutput } from '../pipeline/types';
import { defineConfig, defineTool, type SluiceConfig } from '../define/config';
import { createSluiceWorker } from '../worker/worker';
import { APPROVALS_MEMO, EMPTY_APPROVALS_MEMO, SEQ_CONFLICT, SESSION_ID } from '../workflows/definitions';
import { pendingApproval } from './eventually';
import { batch, startHarness, text, type Harness } from './harness';

const runs = new Map<string, number>();
const counted = (key: string) => runs.set(key, (runs.get(key) ?? 0) + 1);

let h: Harness;
let plain: SluiceClient;
let sameConfig: SluiceConfig;
beforeAll(async () => {
  sameConfig = defineConfig({
    tools: [
      defineTool({
        name: 'note',
        description: 'notes',
        input: z.object({ text: z.string() }),
        execute: ({ text }, ctx) => (counted(`${ctx.workflowId}/${ctx.call.id}`), `noted ${text}`),
      }),
      defineTool({
        name: 'deploy',
        description: 'asks first',
        input: z.object({}),
        approval: 'ask',
        execute: (_a, ctx) => (counted(`${ctx.workflowId}/${ctx.call.id}`), 'deployed'),
      }),
    ],
  });
  h = await startHarness('eager-start', sameConfig);
  // The same worker, reached without eager start: the plain path to compare with.
  plain = new SluiceClient({ connection: h.connection, taskQueue: h.taskQueue, eagerStart: false });
});
afterAll(() => h?.close());

/** Event types of a batch's history, by name. */
async function eventTypes(workflowId: string): Promise<string[]> {
  const history = await h.client.temporal.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).map((e) => temporal.api.enums.v1.EventType[e.eventType!]);
}

/** What must be the same whichever way a batch started: everything but times. */
function comparable(out: BatchOutput) {
  const { events, ...rest } = out;
  return { ...rest, events: events.map(({ time: _t, ...e }) => e) };
}

describe('eager start', () => {
  it('is asked for by default on a NativeConnection, and never on a plain client Connection', async () => {
    expect(h.client.eagerStart).toBe(true);
    expect(plain.eagerStart).toBe(false);
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      expect(new SluiceClient({ connection, taskQueue: h.taskQueue }).eagerStart).toBe(false);
      expect(() => new SluiceClient({ connection, taskQueue: h.taskQueue, eagerStart: true })).toThrow(
        InvalidInputError,
      );
      expect(() => new SluiceClient({ connection, taskQueue: h.taskQueue, eagerStart: true })).toThrow(
        /eagerStart needs the NativeConnection a worker of this process uses/,
      );
    } finally {
      await connection.close();
    }
  });

  it('runs the batch once on this process, attaches when resubmitted, and gives the plain path’s output', async () => {
    const req = batch([
      { id: 'n1', name: 'note', args: { text: 'one' } },
      { id: 'n2', name: 'note', args: { text: 'two' } },
    ]);
    const handle = await h.client.startBatch(req);
    expect(handle.eagerlyStarted).toBe(true);
    const out = await handle.result();
    expect(out.results.map((r) => text(r.result))).toEqual(['noted one', 'noted two']);

    // Resubmitted after it finished: the same output, nothing started, nothing run again.
    const again = await h.client.startBatch(req);
    expect(again.eagerlyStarted).toBe(false);
    expect(again.workflowId).toBe(handle.workflowId);
    expect(await again.result()).toEqual(out);
    expect(await h.client.runBatch(req)).toEqual(out);
    expect(runs.get(`${handle.workflowId}/n1`)).toBe(1);
    expect(runs.get(`${handle.workflowId}/n2`)).toBe(1);
    const types = await eventTypes(handle.workflowId);
    expect(types.filter((t) => t === 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED')).toHaveLength(1);
    expect(types.filter((t) => t === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED')).toHaveLength(2);

    // Started eagerly, the batch still carries its memo and search attribute from the start.
    const desc = await handle.describe();
    expect(desc.memo?.[APPROVALS_MEMO]).toEqual(EMPTY_APPROVALS_MEMO);
    expect(desc.typedSearchAttributes.get(SESSION_ID)).toBe(req.sessionId);

    // The same calls on the plain path (another session): the same output but for times.
    const plainReq = { ...req, sessionId: `${req.sessionId}-plain` };
    const plainHandle = await plain.startBatch(plainReq);
    expect(plainHandle.eagerlyStarted).toBe(false);
    const plainOut = await plainHandle.result();
    expect(comparable({ ...plainOut, sessionId: req.sessionId })).toEqual(comparable(out));
    expect(await eventTypes(plainHandle.workflowId)).toEqual(types);
  });

  it('a resubmission while the batch runs attaches to the running batch; one approval, one run', async () => {
    const req = batch([{ id: 'd1', name: 'deploy' }]);
    const first = await h.client.startBatch(req);
    expect(first.eagerlyStarted).toBe(true);
    const pending = await pendingApproval(h.client, first.workflowId);
    const second = await h.client.startBatch(req);
    expect(second.eagerlyStarted).toBe(false);
    expect(first.firstExecutionRunId).toBeTruthy();
    expect(second.firstExecutionRunId).toBe(first.firstExecutionRunId);
    await h.client.approve(pending.approvalId, { workflowId: first.workflowId, by: 'test' });
    const [a, b] = await Promise.all([first.result(), second.result()]);
    expect(b).toEqual(a);
    expect(text(a.results[0].result)).toBe('deployed');
    expect(runs.get(`${first.workflowId}/d1`)).toBe(1);
  });

  it('a batch refused for its seqs runs, eagerly, when sent again at the seq it was told', async () => {
    const first = batch([{ id: 'a1', name: 'note', args: { text: 'one' } }]);
    const out1 = await h.client.runBatch(first);
    const second = {
      ...batch([{ id: 'b1', name: 'note', args: { text: 'two' } }]),
      sessionId: first.sessionId,
      step: 2,
    };
    const refused = await h.client.startBatch(second);
    expect(refused.eagerlyStarted).toBe(true);
    const failure = await refused.result().then(
      () => undefined,
      (e) => e,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect((failure as WorkflowFailedError).cause).toBeInstanceOf(ApplicationFailure);
    expect(((failure as WorkflowFailedError).cause as ApplicationFailure).type).toBe(SEQ_CONFLICT);
    const refusedRun = refused.firstExecutionRunId;
    expect(refusedRun).toBeTruthy();
    expect(runs.get(`${refused.workflowId}/b1`)).toBeUndefined();

    const retried = await h.client.startBatch({ ...second, startSeq: out1.nextSeq });
    expect(retried.workflowId).toBe(refused.workflowId);
    expect(retried.eagerlyStarted).toBe(true);
    expect(retried.firstExecutionRunId).toBeTruthy();
    expect(retried.firstExecutionRunId).not.toBe(refusedRun);
    const out2 = await retried.result();
    expect(text(out2.results[0].result)).toBe('noted two');
    expect(out2.events[0].seq).toBe(out1.nextSeq);
    expect(runs.get(`${retried.workflowId}/b1`)).toBe(1);
  });

  it('is not asked for on a task queue where this process runs a versioned Sluice worker, even with eagerStart: true', async () => {
    const taskQueue = `${h.taskQueue}-versioned`;
    const worker = await createSluiceWorker({
      connection: h.connection,
      taskQueue,
      config: sameConfig,
      stateDir: h.stateDir,
      workflowBundle: { codePath: inject('workflowBundlePath') },
    });
    const running = worker.run();
    try {
      const auto = new SluiceClient({ connection: h.connection, taskQueue });
      const forced = new SluiceClient({ connection: h.connection, taskQueue, eagerStart: true });
      const before = await auto.startBatch(batch([{ id: 'v0', name: 'note', args: { text: 'v0' } }]));
      expect(before.eagerlyStarted).toBe(true);
      // What SluicePlugin does for a worker with workerDeploymentOptions.useWorkerVersioning
      // (test/upgrade.test.ts has the real versioned workers).
      markVersionedWorker('default', taskQueue);
      const after = await auto.startBatch(batch([{ id: 'v1', name: 'note', args: { text: 'v1' } }]));
      expect(after.eagerlyStarted).toBe(false);
      const asked = await forced.startBatch(batch([{ id: 'v2', name: 'note', args: { text: 'v2' } }]));
      expect(asked.eagerlyStarted).toBe(false);
      for (const [handle, t] of [
        [before, 'v0'],
        [after, 'v1'],
        [asked, 'v2'],
      ] as const)
        expect(text((await handle.result()).results[0].result)).toBe(`noted ${t}`);
    } finally {
      worker.shutdown();
      await running;
    }
  });

  it('with no worker of this process on the task queue, the batch starts the plain way and waits for one', async () => {
    const elsewhere = new SluiceClient({
      connection: h.connection,
      taskQueue: `${h.taskQueue}-nobody`,
      eagerStart: true,
    });
    const handle = await elsewhere.startBatch(batch([{ id: 'x1', name: 'note', args: { text: 'x' } }]));
    try {
      expect(handle.eagerlyStarted).toBe(false);
      expect((await handle.describe()).status.name).toBe('RUNNING');
      expect(await eventTypes(handle.workflowId)).toEqual([
        'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
        'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED',
      ]);
    } finally {
      await handle.terminate('test: nobody polls this task queue');
    }
  });
});
