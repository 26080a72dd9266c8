// Every decision with every worker down (issue 27 item 3): a reconcile decision sent with no
// worker up is queued by signal and applied when a worker starts; a queued one that cannot be
// taken is refused in the memo under its requestId; a reassignment by `sluice reassign` with no
// worker up is recorded when the batch runs again.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RECONCILE_UPDATE } from '../pipeline/reconcile';
import { defineConfig } from '../define/config';
import { eventually } from './eventually';
import { batch, type Harness, startHarness } from './harness';
import { openReconcileCard } from './reconcile-card';
import { runCli } from './run-cli';
import { deployTool } from './fixtures/deploy-tool';

let h: Harness;

beforeAll(async () => {
  h = await startHarness(
    'reconcile-queued',
    defineConfig({
      tools: [deployTool({ approvalLifecycle: { assignee: 'ops' } })],
    }),
  );
});
afterAll(() => h?.close());

const cli = (args: string[]) => runCli(args, { address: inject('temporalAddress') });

const openCard = (tag: string) => openReconcileCard(h, tag);

describe('decisions with every worker down', () => {
  it('a reconcile decision sent with no worker up is queued and applied when a worker starts; a bad queued one is refused in the memo', async () => {
    const good = await openCard('good');
    const bad = await openCard('bad');
    await h.stopWorker();
    try {
      const sent = await cli([
        'reconcile',
        good.reconcileId,
        '--not-done',
        '--by',
        'ops-oncall',
        '--reason',
        'checked the deploy log',
      ]);
      expect(sent.code, sent.output).toBe(0);
      expect(sent.output).toContain('queued: no worker answered');
      // Sent by signal with no evidence for "done": the workflow refuses it when it runs.
      await h.client.temporal.workflow
        .getHandle(bad.workflowId)
        .signal(RECONCILE_UPDATE, { reconcileId: bad.reconcileId, decision: 'done', by: 'eve', requestId: 'rq-bad-1' });
      // Still waiting, with no worker: nothing was applied yet.
      expect((await h.client.readApprovals(good.workflowId)).running).toBe(true);
    } finally {
      await h.startWorker();
    }
    const result = await good.handle.result();
    expect(result).toMatchObject({ outcome: 'not-done', by: 'ops-oncall', reason: 'checked the deploy log' });
    await expect(
      h.client.awaitReconcile({ workflowId: bad.workflowId, reconcileId: bad.reconcileId, requestId: 'rq-bad-1' }),
    ).rejects.toThrow('marking a call done needs evidence');
    // The card stays open for a real decision, then takes one by update (a worker answers now).
    const done = await cli(['reconcile', bad.reconcileId, '--done', '--evidence', 'release 42 is live', '--by', 'ops']);
    expect(done.code, done.output).toBe(0);
    expect(done.output).toContain('reconciled done by ops');
    // A second decision on the settled card, by its id alone: how it was reconciled, not "no batch is waiting".
    const again = await cli(['reconcile', bad.reconcileId, '--not-done', '--by', 'mallory']);
    expect(again.code, again.output).toBe(1);
    expect(again.output).toContain('not reconciled: already reconciled: done by ops at ');
  });

  it('sluice reassign with no worker up: recorded as approval/reassigned when the batch runs', async () => {
    const handle = await h.client.startBatch(batch([{ id: 'd', name: 'deploy', args: { env: 'eu' } }]));
    const p = await eventually('the ask', async () => (await h.client.readApprovals(handle.workflowId)).pending[0]);
    expect(p.assignee).toBe('ops');
    await h.stopWorker();
    try {
      const sent = await cli(['reassign', p.approvalId, '--to', 'dana', '--by', 'lead', '--reason', 'on call']);
      expect(sent.code, sent.output).toBe(0);
      expect(sent.output).toContain('reassigned to dana');
      const refused = await cli(['reassign', 'no-such-approval', '--to', 'dana', '--workflow', handle.workflowId]);
      expect(refused.code).toBe(1);
      expect(refused.output).toContain('is not waiting');
    } finally {
      await h.startWorker();
    }
    await eventually('the new assignee in the memo', async () =>
      (await h.client.readApprovals(handle.workflowId)).pending.some((x) => x.assignee === 'dana'),
    );
    await h.client.decide({ workflowId: handle.workflowId, approvalId: p.approvalId, decision: 'approve', by: 'dana' });
    const out = await handle.result();
    expect(out.events.find((e) => e.type === 'approval/reassigned')?.data).toMatchObject({
      from: 'ops',
      to: 'dana',
      by: 'lead',
      reason: 'on call',
    });
  });
});
