import { Connection } from '@temporalio/client';
// The Temporal dev server itself is killed (-9) and restarted on the same database file in the
// middle of a batch: once while a body runs, once while a call waits for approval. This file runs
// its own dev server; the shared one keeps serving the other test files.
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { SluiceClient } from '../../client/client';
import type { BatchOutput } from '../../pipeline/types';
import { freePort, portOpen, startDevServer, type DevServer } from '../../temporal/dev-server';
import { readSessionLog } from '../../stores/sink';
import { createSluiceWorker } from '../../worker/worker';
import { batch, text } from '../harness';
import { EFFECTS } from '../fixtures/faults.config';
import { checkBatch, countByTag, emptyFigures, lines, printFigures, waitFor } from './fault-kit';

let server: DevServer;
let port: number;
let dbFile: string;
let dir: string;
let workerConnection: NativeConnection;
let clientConnection: NativeConnection;
let worker: Worker;
let running: Promise<void>;
const figures = emptyFigures();

async function startServer(): Promise<void> {
  server = await startDevServer({ stateDir: path.resolve('.sluice'), port, headless: true, dbFile });
  // Started means serving: the default namespace answers at once, with no retry of our own (an
  // open port alone once let a first call meet "Frontend is not healthy yet").
  const probe = await Connection.connect({ address: server.address });
  try {
    await probe.workflowService.describeNamespace({ namespace: 'default' });
  } finally {
    await probe.close();
  }
}

async function killServer(): Promise<void> {
  process.kill(server.pid!, 'SIGKILL');
  await waitFor('the dev server to go away', async () => !(await portOpen('127.0.0.1', port)));
  figures.kills++;
}

beforeAll(async () => {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  dir = fs.mkdtempSync(path.join(inject('runDir'), 'faults-server-'));
  process.env.SLUICE_TEST_DIR = dir;
  port = await freePort();
  dbFile = path.join(dir, 'temporal.db');
  await startServer();
  const config = (await import('../fixtures/faults.config')).default;
  const taskQueue = `faults-server-${process.pid}`;
  workerConnection = await NativeConnection.connect({ address: `127.0.0.1:${port}` });
  clientConnection = await NativeConnection.connect({ address: `127.0.0.1:${port}` });
  worker = await createSluiceWorker({
    connection: workerConnection,
    taskQueue,
    config,
    stateDir: dir,
    workflowBundle: { codePath: inject('workflowBundlePath') },
  });
  running = worker.run();
  client = new SluiceClient({ connection: clientConnection, taskQueue });
});

let client: SluiceClient;

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await workerConnection?.close();
  await clientConnection?.close();
  await server?.stop();
  printFigures('restart of the Temporal dev server (npx vitest run test/faults)', figures);
});

describe('restart of the Temporal dev server mid-batch', () => {
  it('loses nothing when the server dies during a body and during an approval wait', { timeout: 300_000 }, async () => {
    const req = batch([
      { name: 'append', args: { tag: 'srv-a' } },
      { name: 'append', args: { tag: 'srv-b', holdAt: 'body' } },
      { name: 'append', args: { tag: 'srv-c', ask: true } },
      { name: 'append', args: { tag: 'srv-d' } },
    ]);
    const handle = await client.startBatch(req);
    figures.batches++;
    figures.calls += req.calls.length;

    // 1. The server dies while srv-b's body runs; the body finishes while it is down.
    await waitFor('srv-b in its body', () => lines(path.join(dir, 'srv-b.body.entered')).length > 0);
    await killServer();
    fs.writeFileSync(path.join(dir, 'srv-b.body.release'), '');
    await startServer();
    figures.restarts++;

    // 2. The server dies while srv-c waits for a person; the approval arrives after the restart.
    const approvalId = await waitFor(
      'the approval of srv-c',
      async () =>
        (await readSessionLog(dir, req.sessionId)).find((e) => e.type === 'approval/asked')?.data.id as
          | string
          | undefined,
      120_000,
    );
    await killServer();
    await startServer();
    figures.restarts++;
    // Visibility (search attributes) catches up with the restarted server a moment later.
    const workflowId = await waitFor('the batch to be listed as awaiting approval', () =>
      client.findApproval(approvalId).catch(() => undefined),
    );
    await client.signalDecision({ approvalId, workflowId, decision: 'approve', by: 'after-restart' });

    const out = (await handle.result()) as BatchOutput;
    const check = await checkBatch(out, handle, dir);
    figures.lost += check.lost;
    expect(check).toEqual({ lost: 0, extraResults: 0, workflowTaskFailures: 0, logProblems: [] });
    expect(out.results.map((r) => text(r.result))).toEqual([
      'appended srv-a',
      'appended srv-b',
      'appended srv-c',
      'appended srv-d',
    ]);
    expect(out.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({
      outcome: 'allowed-once',
      by: 'after-restart',
    });
    const effects = countByTag(path.join(dir, EFFECTS));
    for (const tag of ['srv-a', 'srv-b', 'srv-c', 'srv-d']) {
      figures.duplicated += Math.max(0, (effects.get(tag) ?? 0) - 1);
      expect(effects.get(tag), tag).toBe(1);
    }
  });
});
