// A worker killed with SIGKILL mid-body and mid-approval, then restarted: the batch completes and
// every call has exactly one tool/result.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchOutput } from '../pipeline/types';
import { readSessionLog } from '../stores/sink';
import { batch, spawnWorker, startHarness, type ChildWorker, type Harness } from './harness';
import { eventually } from './eventually';

const CONFIG = path.join(__dirname, 'fixtures', 'restart.config.ts');
let h: Harness;
let dir: string;
let worker: ChildWorker | undefined;

beforeAll(async () => {
  // The harness gives a client and a task queue; the workers are child processes we can kill.
  h = await startHarness('restart', { tools: [] }, { autoStart: false });
  dir = h.stateDir;
});
afterAll(async () => {
  await worker?.kill();
  await h?.close();
});

const lines = (file: string) =>
  fs.existsSync(path.join(dir, file))
    ? fs.readFileSync(path.join(dir, file), 'utf8').trim().split('\n').filter(Boolean)
    : [];
const until = (what: string, fn: () => boolean | Promise<boolean>) => eventually(what, fn);
const start = async () => {
  worker = spawnWorker(CONFIG, h.taskQueue, dir, { SLUICE_TEST_DIR: dir });
  await worker.ready;
};
const oneResultPerCall = (out: BatchOutput) => {
  for (const c of out.results)
    expect(out.events.filter((e) => e.type === 'tool/result' && e.data.callId === c.callId)).toHaveLength(1);
};

describe('worker restarts', () => {
  it('mid-body: the interrupted body runs again on the new worker, and completes once', async () => {
    await start();
    const req = batch([{ id: 'b1', name: 'slow_append', args: { line: 'mid-body', delayMs: 3_000 } }]);
    const handle = await h.client.startBatch(req);
    await until('the body to start', () => lines('started.log').includes('mid-body'));
    await worker!.kill('SIGKILL');
    await start();
    const out = await handle.result();
    expect(out.results[0].result.isError).toBe(false);
    oneResultPerCall(out);
    expect(lines('started.log').filter((l) => l === 'mid-body')).toHaveLength(2); // re-run after the kill
    expect(lines('done.log').filter((l) => l.startsWith('mid-body '))).toHaveLength(1);
    // both runs saw the same idempotency key
    expect(lines('done.log').find((l) => l.startsWith('mid-body '))).toBe(`mid-body ${handle.workflowId}/b1`);
    // the JSONL log holds every event exactly once, in seq order, across both workers
    const log = await readSessionLog(dir, req.sessionId);
    expect(log).toEqual(out.events);
    await worker!.kill('SIGTERM');
  });

  it('mid-approval: a decision sent while no worker runs is honoured after the restart', async () => {
    await start();
    const handle = await h.client.startBatch(
      batch([{ id: 'a1', name: 'append', args: { line: 'approved-line' } }], {
        options: { approvalTimeoutMs: 60_000 },
      }),
    );
    let approvalId = '';
    await until('the ask', async () => {
      const state = await h.client.batchState(handle.workflowId).catch(() => undefined);
      approvalId = state?.pending[0]?.approvalId ?? '';
      return approvalId !== '';
    });
    // search attributes reach visibility a moment after the workflow task that set them
    await until('the approval to be searchable', () =>
      h.client.findApproval(approvalId).then(
        () => true,
        () => false,
      ),
    );
    await worker!.kill('SIGKILL');
    // no worker: the search attribute still finds the batch, and the signal is accepted
    await h.client.signalDecision({ approvalId, decision: 'approve', by: 'night-shift' });
    await start();
    const out = await handle.result();
    expect(out.results[0].result.isError).toBe(false);
    expect(out.events.find((e) => e.type === 'approval/decided')!.data).toMatchObject({
      outcome: 'allowed-once',
      by: 'night-shift',
    });
    oneResultPerCall(out);
    expect(lines('done.log').filter((l) => l === 'approved-line')).toHaveLength(1);
    await worker!.kill('SIGTERM');
  });
});
