// Every worker killed: what waits for a person is still listed (inbox in Chromium, `sluice
// approvals`), `sluice approve` queues a decision bound to the digest shown, and once a worker
// is back the call runs exactly once; a wrong digest queued the same way is refused and recorded.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Inbox } from '../servers/inbox/server';
import type { PendingApproval } from '../pipeline/types';
import { defineConfig } from '../define/config';
import { batch, spawnWorker, text, type ChildWorker, type Harness } from './harness';
import { poll } from './eventually';
import { type InboxSetup, startInboxSetup } from './inbox-setup';
import { startCli } from './run-cli';

const CONFIG = path.join(__dirname, 'fixtures', 'restart.config.ts');

let setup: InboxSetup | undefined;
let h: Harness;
let inbox: Inbox;
let browser: BrowserContext;
let worker: ChildWorker | undefined;

beforeAll(async () => {
  // The client side only: the workers are separate processes this test kills.
  setup = await startInboxSetup('no-worker', defineConfig({ tools: [] }), { autoStart: false });
  ({ h, inbox, browser } = setup);
});

afterAll(async () => {
  await worker?.kill();
  await setup?.close();
});

const eventually = <T>(fn: () => Promise<T> | T) => poll(fn, { timeoutMs: 60_000, intervalMs: 200 });

const cli = (args: string[]) => startCli(args, { address: inject('temporalAddress'), taskQueue: h.taskQueue });

function startWorker(): ChildWorker {
  return spawnWorker(CONFIG, h.taskQueue, h.stateDir, { SLUICE_TEST_DIR: h.stateDir });
}

describe('approvals with every worker down', () => {
  it('lists, queues a digest-bound decision, and runs the call once when a worker is back', async () => {
    worker = startWorker();
    await worker.ready;
    const handle = await h.client.startBatch(
      batch([{ id: 'a', name: 'append', args: { line: 'approved-line' } }], {
        options: { approvalTimeoutMs: 600_000 },
      }),
    );
    let pending: PendingApproval | undefined;
    await eventually(async () => {
      pending = (await h.client.readApprovals(handle.workflowId)).pending.find((p) => p.callId === 'a');
      return pending !== undefined;
    }).toBe(true);
    await worker.kill('SIGKILL');
    worker = undefined;

    // The inbox lists the card from the memo, and says no worker runs the batch.
    const page = await browser.newPage();
    await page.goto(inbox.url);
    await page.fill('#approver', 'alice');
    const card = page.locator(`article.card[data-workflow-id="${handle.workflowId}"][data-call-id="a"]`);
    await card.waitFor({ timeout: 60_000 });
    expect(await card.locator('.digest-value').textContent()).toBe(pending!.argsDigest);
    expect(await card.locator('h3').textContent()).toBe(pending!.card.title);
    await eventually(() =>
      page.locator(`.batch[data-workflow-id="${handle.workflowId}"] .sub`).first().textContent(),
    ).toContain('no worker is running this batch');

    // `sluice approvals` lists it too, with its card and digest.
    const listed = cli(['approvals']);
    expect(await listed.done).toBe(0);
    const listing = listed.lines.join('\n');
    expect(listing).toContain(`approval ${pending!.approvalId}`);
    expect(listing).toContain(pending!.card.title);
    expect(listing).toContain(pending!.argsDigest);

    // A decision bound to a digest nobody was shown is queued the same way ...
    const wrong = cli(['deny', pending!.approvalId, '--by', 'mallory', '--digest', `sha256:${'0'.repeat(64)}`]);
    expect(await wrong.done).toBe(0);
    expect(wrong.lines.join('\n')).toMatch(/warning: the digest you gave is not the one/);
    expect(wrong.lines.join('\n')).toMatch(/queued: no worker answered batch/);

    // ... and the right one, which waits for its outcome.
    const approve = cli(['approve', pending!.approvalId, '--by', 'alice', '--reason', 'ticket 7', '--wait']);
    await eventually(() => approve.lines.join('\n')).toMatch(/queued: no worker answered batch .*bound to digest/);
    expect(approve.lines.join('\n')).toContain(pending!.argsDigest);

    worker = startWorker();
    expect(await approve.done).toBe(0);
    expect(approve.lines.at(-1)).toBe(`${pending!.approvalId}: allowed-once by alice`);

    const out = await handle.result();
    expect(text(out.results[0].result)).toBe('appended approved-line');
    expect(fs.readFileSync(path.join(h.stateDir, 'done.log'), 'utf8')).toBe('approved-line\n');
    expect(out.events.filter((e) => e.type === 'approval/refused').map((e) => e.data)).toEqual([
      expect.objectContaining({ code: 'digest-mismatch', via: 'signal', by: 'mallory', decision: 'deny' }),
    ]);
    expect(out.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({
      outcome: 'allowed-once',
      by: 'alice',
      reason: 'ticket 7',
    });
    // The page learns how it ended once the worker is back.
    await eventually(() => card.getAttribute('data-state')).toBe('completed');
    await page.close();
  }, 240_000); // two worker starts and three CLI runs: minutes on a loaded machine
});
