// The first hour of a new user, on the real dev server: a fresh namespace (no search attributes)
// served by a worker built the README's way (Worker.create + SluicePlugin) runs its first batch;
// a client against a namespace nobody set up is told to run `npx sluice setup`; the same
// (session, turn, step) sent again with other calls is refused, with the same calls attaches;
// `approval: 'never'` is refused where the tool is defined; a task queue no worker polls is named
// after a few seconds, for runBatch and for a session's send (or thrown with noWorker: 'fail').
import { msToTs } from '@temporalio/common/lib/time';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { SluiceClient } from '../client/client';
import { startSession } from '../client/session';
import { BatchConflictError, NoWorkerError, ServerError } from '../support/errors';
import { defineConfig, defineTool } from '../define/config';
import { SluicePlugin } from '../worker/worker';
import { eventually } from './eventually';
import { batch, text } from './harness';

const runs: string[] = [];
const config = defineConfig({
  tools: [
    defineTool({
      name: 'clock',
      description: 'tells the time',
      input: z.object({ city: z.string() }),
      execute: ({ city }, ctx) => (runs.push(`${ctx.workflowId}/${ctx.call.id}`), `noon in ${city}`),
    }),
  ],
});

let connection: NativeConnection;
const stamp = `${process.pid}-${Date.now()}`;

/** A namespace of its own on the shared dev server: Sluice's search attributes are not in it. */
async function freshNamespace(name: string): Promise<string> {
  const namespace = `${name}-${stamp}`;
  await connection.workflowService.registerNamespace({
    namespace,
    workflowExecutionRetentionPeriod: msToTs('1 day'),
  });
  // The server's namespace cache takes a moment to know it.
  await eventually(`namespace ${namespace} usable`, async () => {
    await connection.workflowService.describeNamespace({ namespace });
    const attrs = await connection.operatorService.listSearchAttributes({ namespace });
    return attrs !== undefined;
  });
  const attrs = await connection.operatorService.listSearchAttributes({ namespace });
  expect(Object.keys(attrs.customAttributes ?? {})).not.toContain('SluiceSessionId');
  return namespace;
}

beforeAll(async () => {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
});

afterAll(async () => {
  await connection?.close();
});

describe('a fresh namespace', () => {
  it('a worker with SluicePlugin registers the search attributes, and the first runBatch works', async () => {
    const namespace = await freshNamespace('plugin');
    const taskQueue = `first-hour-${stamp}`;
    const stateDir = fs.mkdtempSync(path.join(inject('runDir'), 'first-hour-'));
    const worker = await Worker.create({
      connection,
      namespace,
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      plugins: [new SluicePlugin({ config, stateDir })],
    });
    const running = worker.run();
    try {
      const sluice = new SluiceClient({ connection, namespace, taskQueue });
      // As the README's one-process example: the batch sent right after worker.run(), once.
      const out = await sluice.runBatch(batch([{ id: 'c1', name: 'clock', args: { city: 'Oslo' } }]));
      expect(text(out.results[0].result)).toBe('noon in Oslo');
      const attrs = await connection.operatorService.listSearchAttributes({ namespace });
      expect(Object.keys(attrs.customAttributes ?? {})).toEqual(
        expect.arrayContaining(['SluiceSessionId', 'SluiceAwaitingApproval', 'SluicePendingApprovals']),
      );
    } finally {
      worker.shutdown();
      await running;
    }
  });

  it('a client against a namespace nobody set up is told what to run, not a raw INVALID_ARGUMENT', async () => {
    const namespace = await freshNamespace('unset');
    const sluice = new SluiceClient({ connection, namespace, taskQueue: `unset-${stamp}`, noWorker: 'off' });
    const err = await sluice.runBatch(batch([{ id: 'c1', name: 'clock', args: { city: 'Rome' } }])).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(ServerError);
    expect(err?.message).toContain('SluiceSessionId');
    expect(err?.message).toContain('npx sluice setup');
    expect(err?.message).toContain(namespace);
  });
});

/**
 * A namespace of its own (so the queues workers poll are only this test's) with a Sluice worker on
 * `my-agent-…` that has run one batch (its plugin registered the search attributes), the client
 * side left on the default queue by the body; the workflows the body lists are terminated after.
 */
async function withWorkerOnItsOwnQueue(
  name: string,
  body: (at: { namespace: string; workerQueue: string; started: string[] }) => Promise<void>,
): Promise<void> {
  const namespace = await freshNamespace(name);
  const workerQueue = `my-agent-${stamp}`;
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue: workerQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    plugins: [new SluicePlugin({ config, stateDir: fs.mkdtempSync(path.join(inject('runDir'), `${name}-`)) })],
  });
  const running = worker.run();
  const started: string[] = [];
  try {
    await new SluiceClient({ connection, namespace, taskQueue: workerQueue }).runBatch(
      batch([{ id: 'c1', name: 'clock', args: { city: 'Oslo' } }]),
    );
    await body({ namespace, workerQueue, started });
  } finally {
    for (const id of started)
      await new SluiceClient({ connection, namespace }).temporal.workflow
        .getHandle(id)
        .terminate('test over')
        .catch(() => undefined);
    worker.shutdown();
    await running;
  }
}

describe('a task queue no worker polls', () => {
  it('runBatch warns after a few seconds, naming the queue and the one a worker polls; fail mode throws', async () => {
    // What the README's first reader did: the worker on its queue, the client on the default one.
    await withWorkerOnItsOwnQueue('no-worker', async ({ namespace, workerQueue, started: lost }) => {
      const warnings: string[] = [];
      const warned = new SluiceClient({
        connection,
        namespace,
        noWorkerAfterMs: 1_000,
        onWarning: (m) => warnings.push(m),
      });
      const req = batch([{ id: 'c1', name: 'clock', args: { city: 'Rome' } }]);
      const waiting = warned.runBatch(req);
      waiting.catch(() => undefined);
      lost.push((await warned.startBatch(req)).workflowId);
      const warning = await eventually('the no-worker warning', () => warnings[0], { timeoutMs: 60_000 });
      expect(warning).toContain("no worker is polling task queue 'sluice'");
      expect(warning).toContain(`'${workerQueue}'`);
      expect(warning).toContain("noWorker: 'off'");
      expect(warnings).toHaveLength(1);

      const failing = new SluiceClient({ connection, namespace, noWorker: 'fail', noWorkerAfterMs: 1_000 });
      const req2 = batch([{ id: 'c1', name: 'clock', args: { city: 'Lima' } }]);
      const err = await failing.runBatch(req2).then(
        () => undefined,
        (e: Error) => e,
      );
      lost.push((await failing.startBatch(req2)).workflowId);
      expect(err).toBeInstanceOf(NoWorkerError);
      expect(err?.message).toContain("task queue 'sluice'");
      expect((err as NoWorkerError).taskQueue).toBe('sluice');
    });
  });
});

describe('a session on a task queue no worker polls', () => {
  it('send warns after a few seconds, naming the queue and the one a worker polls; fail mode throws', async () => {
    // The README's session snippet as its first reader ran it: startSession on a client without
    // taskQueue (so 'sluice'), the worker on its own queue. The session starts (a start needs no
    // worker); its first send is what would wait forever.
    await withWorkerOnItsOwnQueue('session-no-worker', async ({ namespace, workerQueue, started: sessions }) => {
      const warnings: string[] = [];
      const warned = new SluiceClient({
        connection,
        namespace,
        noWorkerAfterMs: 1_000,
        onWarning: (m) => warnings.push(m),
      });
      const session = await startSession(warned, { sessionId: `lost-${stamp}`, model: 'openai:gpt-4.1' });
      sessions.push(session.workflowId);
      const sent = session.send('What time is it in Oslo?');
      sent.catch(() => undefined);
      const warning = await eventually('the no-worker warning', () => warnings[0], { timeoutMs: 60_000 });
      expect(warning).toContain("no worker is polling task queue 'sluice'");
      expect(warning).toContain(`the message to session lost-${stamp}`);
      expect(warning).toContain(`'${workerQueue}'`);
      expect(warnings).toHaveLength(1);

      const failing = new SluiceClient({ connection, namespace, noWorker: 'fail', noWorkerAfterMs: 1_000 });
      const other = await startSession(failing, { sessionId: `lost-fail-${stamp}`, model: 'openai:gpt-4.1' });
      sessions.push(other.workflowId);
      const err = await other.send('What time is it in Oslo?').then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err).toBeInstanceOf(NoWorkerError);
      expect(err?.message).toContain("task queue 'sluice'");
      expect((err as NoWorkerError).taskQueue).toBe('sluice');
    });
  });
});

describe('resubmitting a (session, turn, step)', () => {
  let worker: Worker;
  let running: Promise<void>;
  let sluice: SluiceClient;
  const taskQueue = `resubmit-${stamp}`;

  beforeAll(async () => {
    worker = await Worker.create({
      connection,
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      plugins: [new SluicePlugin({ config, stateDir: fs.mkdtempSync(path.join(inject('runDir'), 'resubmit-')) })],
    });
    running = worker.run();
    sluice = new SluiceClient({ connection, taskQueue });
  });

  afterAll(async () => {
    worker?.shutdown();
    await running;
  });

  it('with the same calls attaches to the finished batch: the body ran once', async () => {
    const req = batch([{ id: 'c1', name: 'clock', args: { city: 'Lima' } }]);
    const first = await sluice.runBatch(req);
    const again = await sluice.runBatch(req);
    expect(again).toEqual(first);
    const handle = await sluice.startBatch(req);
    expect(runs.filter((r) => r === `${handle.workflowId}/c1`)).toHaveLength(1);
  });

  it('with other calls is refused, naming the batch and what to do; nothing runs', async () => {
    const req = batch([{ id: 'c1', name: 'clock', args: { city: 'Lima' } }]);
    const first = await sluice.runBatch(req);
    const other = { ...req, calls: [{ id: 'c1', name: 'clock', arguments: JSON.stringify({ city: 'Quito' }) }] };
    const err = await sluice.runBatch(other).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(BatchConflictError);
    expect(err?.message).toContain('other calls');
    expect(err?.message).toContain(`step ${req.step + 1}`);
    expect(text(first.results[0].result)).toBe('noon in Lima');
    expect(runs.some((r) => r.endsWith('/c1') && r.includes(req.sessionId) && r.includes('Quito'))).toBe(false);
  });
});

describe("approval: 'never'", () => {
  it('is refused at defineTool, naming deny and auto', () => {
    const define = () =>
      defineTool({
        name: 'send_email',
        description: 'sends',
        input: z.object({}),
        approval: 'never' as never,
        execute: () => 'sent',
      });
    expect(define).toThrow(/approval: 'deny'/);
    expect(define).toThrow(/approval: 'auto'/);
    expect(define).toThrow(/OpenAI/);
  });

  it('is refused by defineConfig for a tool written without defineTool', () => {
    expect(() =>
      defineConfig({
        tools: [{ name: 't', description: 'd', input: z.object({}), approval: 'never', execute: () => 'x' } as never],
      }),
    ).toThrow(/'deny'/);
  });
});
