// A worker killed with SIGKILL while programs wait on approvals inside them: another worker re-runs
// the programs. An honest program's finished sub-calls answer from the workflow's record instead
// of running again, and it completes; a program that asks for something else on its re-run is
// refused as non-deterministic.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { SluiceClient } from '../client/client';
import type { PendingApproval } from '../pipeline/types';
import { batch, spawnWorker, text, type ChildWorker } from './harness';
import { pendingApproval } from './eventually';

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

const start = (env: Record<string, string> = {}) => {
  const w = spawnWorker(path.join(__dirname, 'fixtures', 'code-mode.config.ts'), taskQueue, dir, {
    SLUICE_TEST_DIR: dir,
    ...env,
  });
  workers.push(w);
  return w;
};
const lines = (file: string, prefix: string) =>
  fs.existsSync(path.join(dir, file))
    ? fs
        .readFileSync(path.join(dir, file), 'utf8')
        .split('\n')
        .filter((l) => l.startsWith(prefix))
    : [];

const pendingOf = (workflowId: string): Promise<PendingApproval> =>
  pendingApproval(client, workflowId, undefined, { timeoutMs: 60_000 });

it('re-runs programs after SIGKILL: finished sub-calls run once, a changed program is refused', async () => {
  const first = start();
  await first.ready;
  // The arguments depend on Math.random and Date: the re-run only matches the record because both
  // replay identically inside the sandbox.
  const honest = [
    'const picks = [];',
    'for (let i = 0; i < 2; i++) {',
    '  const pick = `A-${i}-${Math.random().toFixed(8)}-${Date.now()}`;',
    '  picks.push(pick);',
    '  await tools.count({ line: pick });',
    '}',
    "const approved = await tools.guarded({ line: 'A-after-approval' });",
    "await tools.count({ line: 'A-last' });",
    'return { picks, approved };',
  ].join('\n');
  // Depends on which tools the worker serves, which the restart changes.
  const changing =
    "await tools.count({ line: 'B ' + Object.keys(tools).join(',') });\nawait tools.guarded({ line: 'B' });\nreturn 'unreachable';";
  const a = await client.startBatch(
    batch([{ name: 'run_code', args: { code: honest, description: 'count, ask, count' } }]),
  );
  const b = await client.startBatch(
    batch([{ name: 'run_code', args: { code: changing, description: 'list tools, ask' } }]),
  );
  const [pendingA] = await Promise.all([pendingOf(a.workflowId), pendingOf(b.workflowId)]);
  expect(pendingA).toMatchObject({ callId: 'call-1:code:2', parentCallId: 'call-1', toolName: 'guarded' });
  const before = lines('count.log', 'A-');
  expect(before).toHaveLength(2);
  expect(lines('count.log', 'B ')).toEqual(['B count,guarded']);

  await first.kill('SIGKILL');
  const second = start({ SLUICE_EXTRA_TOOL: '1' });
  await second.ready;
  expect(await client.approve(pendingA.approvalId, { by: 'tester', workflowId: a.workflowId })).toMatchObject({
    outcome: 'allowed-once',
  });

  const outA = await a.result();
  const r = outA.results[0].result;
  expect(r.isError).toBe(false);
  expect(JSON.parse(text(r).replace(/^Result:\n/, ''))).toEqual({
    picks: before,
    approved: 'guarded A-after-approval',
  });
  expect(lines('count.log', 'A-')).toEqual([...before, 'A-last']);
  expect(lines('guarded.log', 'A-')).toEqual(['A-after-approval']);
  // One record per sub-call, even though the program ran twice.
  expect(outA.events.filter((e) => e.type === 'tool/code-dispatch').map((e) => e.data.subCallId)).toEqual(
    [0, 1, 2, 3].map((n) => `call-1:code:${n}`),
  );
  expect(outA.events.filter((e) => e.type === 'tool/result')).toHaveLength(1);

  const outB = await b.result();
  const rb = outB.results[0].result;
  expect(rb.error?.code).toBe('CODE_RUN_FAILED');
  expect(rb.error?.message).toMatch(
    /^the program failed: the program of run_code call call-1 is not deterministic: re-run after a restart, its sub-call #0 is count \(arguments sha256:\w+\), but the first run's sub-call #0 was count \(arguments sha256:\w+\)/,
  );
  expect(lines('count.log', 'B ')).toEqual(['B count,guarded']);
  // The sub-call that waited for a person was given up with its program, and never ran.
  expect(outB.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({
    outcome: 'cancelled',
    reason: 'the program of call-1 ended',
  });
  expect(lines('guarded.log', 'B')).toEqual([]);
});
