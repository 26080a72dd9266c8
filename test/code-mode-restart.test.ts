// A worker killed with SIGKILL while a program waits on an approval inside it: another worker
// re-runs the program, its finished sub-calls answer from the workflow's record instead of running
// again, and the program completes.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { SluiceClient } from '../client/client';
import { batch, spawnWorker, text, type ChildWorker } from './harness';

let connection: NativeConnection;
let client: SluiceClient;
let dir: string;
let taskQueue: string;
const workers: ChildWorker[] = [];

beforeAll(async () => {
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  taskQueue = `code-mode-restart-${process.pid}-${Date.now()}`;
  client = new SluiceClient({ connection, taskQueue });
  dir = fs.mkdtempSync(path.join(inject('runDir'), 'code-mode-restart-'));
});
afterAll(async () => {
  for (const w of workers) await w.kill();
  await connection?.close();
});

const start = () => {
  const w = spawnWorker(path.join(__dirname, 'fixtures', 'code-mode.config.ts'), taskQueue, dir, { SLUICE_TEST_DIR: dir });
  workers.push(w);
  return w;
};
const lines = (file: string) => (fs.existsSync(path.join(dir, file)) ? fs.readFileSync(path.join(dir, file), 'utf8').split('\n').filter(Boolean) : []);

it('completes a program whose worker was killed while it waited on an approval, running finished sub-calls once', async () => {
  const first = start();
  await first.ready;
  // The arguments depend on Math.random and Date: the re-run only matches the record because both
  // replay identically inside the sandbox.
  const code = [
    'const picks = [];',
    'for (let i = 0; i < 2; i++) {',
    '  const pick = `${i}-${Math.random().toFixed(8)}-${Date.now()}`;',
    '  picks.push(pick);',
    '  await tools.count({ line: pick });',
    '}',
    "const approved = await tools.guarded({ line: 'after-approval' });",
    "await tools.count({ line: 'last' });",
    'return { picks, approved };',
  ].join('\n');
  const handle = await client.startBatch(batch([{ name: 'run_code', args: { code, description: 'count, ask, count' } }]));

  let pending;
  for (const deadline = Date.now() + 60_000; !pending; ) {
    pending = (await client.batchState(handle.workflowId)).pending[0];
    if (!pending && Date.now() > deadline) throw new Error('the program never reached its approval');
    if (!pending) await new Promise((r) => setTimeout(r, 200));
  }
  expect(pending).toMatchObject({ callId: 'call-1:code:2', parentCallId: 'call-1', toolName: 'guarded' });
  const before = lines('count.log');
  expect(before).toHaveLength(2);

  await first.kill('SIGKILL');
  const second = start();
  await second.ready;
  expect(await client.approve(pending.approvalId, { by: 'tester', workflowId: handle.workflowId })).toMatchObject({ outcome: 'allowed-once' });

  const out = await handle.result();
  const r = out.results[0].result;
  expect(r.isError).toBe(false);
  expect(JSON.parse(text(r).replace(/^Result:\n/, ''))).toEqual({ picks: before, approved: 'guarded after-approval' });
  expect(lines('count.log')).toEqual([...before, 'last']);
  expect(lines('guarded.log')).toEqual(['after-approval']);
  // One record per sub-call, even though the program ran twice.
  expect(out.events.filter((e) => e.type === 'tool/code-dispatch').map((e) => e.data.subCallId)).toEqual([0, 1, 2, 3].map((n) => `call-1:code:${n}`));
  expect(out.events.filter((e) => e.type === 'tool/result')).toHaveLength(1);
});
