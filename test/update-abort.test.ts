// An update the server aborts is sent again. When an activity finishes while the worker completes
// the workflow in an update's task (a denied call ending its batch while the approvers' notice
// returns), the server refuses the task and aborts the update with FAILED_PRECONDITION; a person's
// `sluice approvals deny` then failed though nothing was decided (seen in CI as a flaky
// ask-terms.test.ts). Here the race is made on purpose against the real server: the update's
// handler holds its task while the test finishes the activity, once with the SDK's executeUpdate
// (the abort is what the server answers) and once with Sluice's (sent again, answered once).
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker, DefaultLogger } from '@temporalio/worker';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { abortedForTaskFailure, executeUpdate } from '../temporal/update';
import { finish } from './fixtures/update-abort/workflows';

const taskQueue = `update-abort-${process.pid}`;
let client: Client;
let workerConnection: NativeConnection;
let worker: Worker;
let running: Promise<void>;
/** Each started activity's release: the test finishes it when it chooses. */
const releases: (() => void)[] = [];

beforeAll(async () => {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const address = inject('temporalAddress');
  client = new Client({ connection: await Connection.connect({ address }) });
  workerConnection = await NativeConnection.connect({ address });
  worker = await Worker.create({
    connection: workerConnection,
    taskQueue,
    workflowsPath: path.join(__dirname, 'fixtures/update-abort/workflows.ts'),
    // The handler blocks its thread for HOLD_TASK_MS on purpose, under the 5 s the SDK gives one
    // activation of a workflow's code.
    activities: { hold: () => new Promise<void>((r) => releases.push(r)) },
  });
  running = worker.run();
});
afterAll(async () => {
  worker?.shutdown();
  await running;
  await workerConnection?.close();
  await client?.connection.close();
});

/**
 * Starts the workflow, sends the update with `send`, and finishes the activity once the update's
 * workflow task is out with the worker (the server's describe shows the task started).
 */
async function race(send: (h: ReturnType<Client['workflow']['getHandle']>) => Promise<string>) {
  const handle = await client.workflow.start('endsOnUpdate', { taskQueue, workflowId: `ends-${Date.now()}` });
  const activity = releases.length + 1;
  while (releases.length < activity) await new Promise((r) => setTimeout(r, 20));
  const sent = send(handle).then(
    (v) => ({ ok: true as const, v }),
    (err: unknown) => ({ ok: false as const, err }),
  );
  for (;;) {
    const d = await client.workflowService.describeWorkflowExecution({
      namespace: 'default',
      execution: { workflowId: handle.workflowId },
    });
    // PENDING_WORKFLOW_TASK_STATE_STARTED: the update's task is with the worker, held by its handler.
    if (d.pendingWorkflowTask?.state === 2) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  releases[activity - 1]();
  return { handle, outcome: await sent };
}

describe('an update aborted for a failed workflow task', () => {
  it('is what the server answers when an activity finishes while the update ends the workflow', async () => {
    const { handle, outcome } = await race((h) => h.executeUpdate(finish, { args: ['once'], updateId: 'plain' }));
    expect(outcome.ok).toBe(false);
    expect(abortedForTaskFailure(!outcome.ok && outcome.err)).toBe(true);
    // Nothing of it was accepted: the workflow still waits for the word.
    const d = await handle.describe();
    expect(d.status.name).toBe('RUNNING');
    await handle.terminate('the test is done with it');
  });

  it("is sent again by Sluice's executeUpdate, and answered once", async () => {
    const { handle, outcome } = await race((h) => executeUpdate(h, finish, { args: ['once'], updateId: 'sluice' }));
    expect(outcome).toEqual({ ok: true, v: 'once' });
    expect(await handle.result()).toBe('once');
    const history = await handle.fetchHistory();
    const accepted = (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
    expect(accepted).toHaveLength(1);
    const failedTasks = (history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes);
    expect(failedTasks.length).toBeGreaterThanOrEqual(1);
  });
});
