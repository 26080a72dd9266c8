// Unknown outcomes: bash must not run twice. Its worker process is killed (SIGKILL) while the
// command runs; the call ends OUTCOME_UNKNOWN (not retried, not called failed), the model is told
// plainly, and an operator card appears in `sluice approvals` and the inbox. One card is
// reconciled "done" in the inbox page (a real Chromium), one from the CLI, one run again; the
// audit shows who, why and the evidence.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SluiceClient } from '../../client/client';
import { startInbox, type Inbox } from '../../servers/inbox/server';
import type { BatchOutput, PendingApproval } from '../../pipeline/types';
import { reconcileWorkflowId } from '../../pipeline/reconcile';
import { launchBrowser } from '../chromium';
import { batch, spawnWorker, text, type ChildWorker } from '../harness';
import { poll } from '../eventually';
import { runCli } from '../run-cli';
import { checkBatch, waitFor } from './fault-kit';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'outcome.config.ts');

let connection: NativeConnection;
let client: SluiceClient;
let dir: string;
let taskQueue: string;
let worker: ChildWorker;
let inbox: Inbox;
let browser: BrowserContext;
let closeBrowser: (() => Promise<void>) | undefined;
/** alpha and beta, reconciled done; gamma, run again. */
let killed: Record<string, Killed>;

const ws = (f: string) => path.join(dir, 'ws', f);
const linesOf = (f: string) => (fs.existsSync(ws(f)) ? fs.readFileSync(ws(f), 'utf8').split('\n').filter(Boolean) : []);

const cli = (args: string[]) => runCli(args, { address: inject('temporalAddress'), taskQueue });

type Killed = { handle: WorkflowHandle; sessionId: string; out: BatchOutput };

/**
 * Bash calls that mark their start in the workspace, then wait for a `release` file: once all
 * have started, one SIGKILL of their worker, a fresh worker, and each call's outcome. One kill
 * serves every call (a worker's start is seconds of CPU), and the calls wait on a file rather
 * than a sleep, so no call can finish before the kill however slow the machine.
 */
async function killedMidCommand(tags: string[]): Promise<Record<string, Killed>> {
  const reqs = tags.map((tag) =>
    batch([
      {
        id: 'cmd',
        name: 'bash',
        args: {
          command: `echo ${tag} >> started.log; until [ -e release ]; do sleep 0.5; done; echo ${tag} >> finished.log`,
        },
      },
    ]),
  );
  const handles = await Promise.all(reqs.map((req) => client.startBatch(req)));
  await waitFor(`${tags.join(', ')} to start`, () => tags.every((tag) => linesOf('started.log').includes(tag)));
  await worker.kill('SIGKILL');
  worker = spawnWorker(FIXTURE, taskQueue, dir, { SLUICE_TEST_DIR: dir });
  await worker.ready;
  const outs = (await Promise.all(handles.map((handle) => handle.result()))) as BatchOutput[];
  // What runs from now on (the call run again) finishes.
  fs.writeFileSync(ws('release'), '');
  return Object.fromEntries(
    tags.map((tag, i) => [tag, { handle: handles[i], sessionId: reqs[i].sessionId, out: outs[i] }]),
  );
}

async function cardFor(workflowId: string): Promise<PendingApproval> {
  return waitFor(`the reconcile card of ${workflowId}`, async () =>
    (await client.approvalsOverview({ taskQueue })).pending.find(
      (p) => p.kind === 'reconcile' && p.workflowId === reconcileWorkflowId(workflowId, 'cmd'),
    ),
  );
}

beforeAll(async () => {
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  taskQueue = `faults-outcome-${process.pid}-${Date.now()}`;
  client = new SluiceClient({ connection, taskQueue });
  dir = fs.mkdtempSync(path.join(inject('runDir'), 'faults-outcome-'));
  worker = spawnWorker(FIXTURE, taskQueue, dir, { SLUICE_TEST_DIR: dir });
  await worker.ready;
  inbox = await startInbox({ client, port: 0, refreshMs: 300, taskQueue });
  ({ browser, close: closeBrowser } = await launchBrowser());
  killed = await killedMidCommand(['alpha', 'beta', 'gamma']);
});

afterAll(async () => {
  await closeBrowser?.();
  await inbox?.close();
  await worker?.kill('SIGKILL');
  await connection?.close();
});

describe('unknown outcomes', () => {
  it('a bash call whose worker is killed mid-command ends OUTCOME_UNKNOWN; reconciled done in the inbox and from the CLI; the audit shows who and why', {
    timeout: 240_000,
  }, async () => {
    const { alpha: a, beta: b } = killed;
    for (const x of [a, b]) {
      const r = x.out.results[0].result;
      expect(r.isError).toBe(true);
      expect(r.error?.code).toBe('OUTCOME_UNKNOWN');
      // The model is told plainly: unknown, not run again, check before repeating.
      expect(text(r)).toContain('The outcome of this bash call is unknown');
      expect(text(r)).toContain('It was not run again');
      expect(text(r)).toMatch(/reconcile id [0-9a-f-]{36}/);
      const check = await checkBatch(x.out, x.handle, dir);
      expect(check).toEqual({ lost: 0, extraResults: 0, workflowTaskFailures: 0, logProblems: [] });
    }
    // Never run twice: each command started once.
    expect(linesOf('started.log').sort()).toEqual(['alpha', 'beta', 'gamma']);

    const cardA = await cardFor(a.handle.workflowId);
    const cardB = await cardFor(b.handle.workflowId);
    expect(cardA).toMatchObject({ toolName: 'bash', callId: 'cmd', sessionId: a.sessionId });
    expect(cardA.reason).toContain('the worker running it stopped answering');
    const listed = await cli(['approvals']);
    expect(listed.code, listed.output).toBe(0);
    expect(listed.output).toContain(`OUTCOME UNKNOWN ${cardA.approvalId}`);
    expect(listed.output).toContain(`npx sluice reconcile ${cardB.approvalId} --done --evidence`);

    // Approving is not reconciling; done without evidence is refused.
    const approve = await cli(['approve', cardB.approvalId]);
    expect(approve.code).toBe(1);
    expect(approve.output).toContain('is not an approval but an unknown outcome to reconcile');
    const bare = await cli(['reconcile', cardB.approvalId, '--done']);
    expect(bare.code).toBe(2);
    expect(bare.output).toContain('--done needs --evidence');

    // A: in the inbox page, by a person who typed their name.
    const page = await browser.newPage();
    await page.goto(inbox.url);
    await page.fill('#approver', 'dana');
    const card = page.locator(`article.card[data-approval-id="${cardA.approvalId}"]`);
    await card.waitFor({ timeout: 30_000 });
    await poll(() => card.locator('h3').textContent()).toContain('Outcome unknown');
    await card.locator('button[data-decision="done"]').click();
    await poll(() => card.locator('.status').textContent()).toContain('needs evidence');
    await card.locator('textarea.evidence').fill('started.log has alpha; the deploy log shows it finished');
    await card.locator('input.reason').fill('checked the workspace');
    await card.locator('button[data-decision="done"]').click();
    await expect
      .poll(() => card.locator('.status').textContent(), { timeout: 30_000 })
      .toContain('Reconciled done by dana: checked the workspace');
    await page.close();

    // B: from the CLI.
    const done = await cli([
      'reconcile',
      cardB.approvalId,
      '--done',
      '--evidence',
      'beta is in started.log',
      '--by',
      'carol',
      '--reason',
      'saw the effect',
    ]);
    expect(done.code, done.output).toBe(0);
    expect(done.output).toContain('reconciled done by carol (saw the effect)');
    const again = await cli(['reconcile', cardB.approvalId, '--not-done', '--by', 'mallory']);
    expect(again.code).toBe(1);
    expect(again.output).toContain('already reconciled: done by carol (saw the effect)');
    // Named by its workflow (as when visibility still lists it for a moment after it closed): the
    // refusal says how it was reconciled, not that the workflow is missing.
    const named = await cli(['reconcile', cardB.approvalId, '--not-done', '--workflow', cardB.workflowId]);
    expect(named.code).toBe(1);
    expect(named.output).toContain('already reconciled: done by carol (saw the effect)');

    // Both cards are gone from the list; the reconciliations are the workflows' results.
    await waitFor('the cards to leave the list', async () => {
      const ids = (await client.approvalsOverview({ taskQueue })).pending.map((p) => p.approvalId);
      return !ids.includes(cardA.approvalId) && !ids.includes(cardB.approvalId);
    });
    const resultA = await client.temporal.workflow.getHandle(cardA.workflowId).result();
    expect(resultA).toMatchObject({
      outcome: 'done',
      by: 'dana',
      reason: 'checked the workspace',
      evidence: 'started.log has alpha; the deploy log shows it finished',
    });

    // The audit of each session shows the lost attempt and who reconciled it, why, with what.
    const auditA = await cli(['audit', a.sessionId]);
    expect(auditA.code, auditA.output).toBe(0);
    expect(auditA.output).toContain('OUTCOME_UNKNOWN');
    expect(auditA.output).toContain('reconciled done by dana: checked the workspace');
    expect(auditA.output).toContain('evidence: started.log has alpha; the deploy log shows it finished');
    // B audited by its batch id alone: the reconcile workflow's history comes with it.
    const auditB = await cli(['audit', b.handle.workflowId, '--json']);
    const jsonB = JSON.parse(auditB.output);
    const callB = jsonB.batches
      .flatMap((x: { calls: unknown[] }) => x.calls)
      .find((c: { callId: string }) => c.callId === 'cmd');
    // Batch and reconcile histories replay with the current workflow code.
    const replayed = await cli(['replay', a.sessionId]);
    expect(replayed.code, replayed.output).toBe(0);
    expect(replayed.output).toContain('2 history(ies) replayed with no determinism failure');
    expect(callB.reconciliation).toMatchObject({
      status: 'done',
      by: 'carol',
      reason: 'saw the effect',
      evidence: 'beta is in started.log',
    });
  });

  it('run again runs the body once more and returns its result', { timeout: 120_000 }, async () => {
    const c = killed.gamma;
    expect(c.out.results[0].result.error?.code).toBe('OUTCOME_UNKNOWN');
    const card = await cardFor(c.handle.workflowId);
    const r = await cli([
      'reconcile',
      card.approvalId,
      '--run-again',
      '--by',
      'erin',
      '--reason',
      'it did not run',
      '--json',
    ]);
    expect(r.code, r.output).toBe(0);
    const rec = JSON.parse(r.output);
    expect(rec).toMatchObject({ outcome: 'ran-again', by: 'erin', rerun: { isError: false } });
    expect(linesOf('started.log').filter((l) => l === 'gamma')).toHaveLength(2);
    expect(linesOf('finished.log')).toContain('gamma');
  });
});
