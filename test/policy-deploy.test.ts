// A policy cannot change under a waiting approval, across a Worker Deployment version change (issue
// 26 item 5), on the real dev server: version v1 reads one `.claude/settings.json` and asks for four
// calls; the file is changed and version v2, reading it, is deployed and made current; the waiting
// batches (pinned to v1, as every batch is) are moved to v2 the way docs/upgrading.md does it (a
// versioning override), and v1's worker stops. The approvals are then given, and each call is
// judged by v2 under the current file: now denied → denied; now allowed → runs; the same rule still
// asks → runs; another rule asks → denied. Each re-check is recorded as policy/rechecked with the
// digest the ask was bound to (v1's) and the one that judged it (v2's).
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { batchVersion, setCurrentVersion } from '../client/deployment';
import { defineConfig } from '../define/config';
import { policyRules } from '../hooks';
import type { BatchOutput } from '../pipeline/types';
import { bashTool } from '../tools';
import { createSluiceWorker } from '../worker/worker';
import { eventually, pendingApproval } from './eventually';
import { batch, type Harness, startHarness, text } from './harness';

let h: Harness;
let ws: string;
const deploymentName = `sluice-policy-deploy-${process.pid}-${Date.now()}`;
const versions = new Map<string, { worker: Worker; running: Promise<void> }>();

const settings = (permissions: object) =>
  fs.writeFileSync(path.join(ws, '.claude', 'settings.json'), JSON.stringify({ permissions }, null, 2));

/** A version's worker: its policy is the workspace's files as they are when it starts. */
async function startVersion(buildId: string): Promise<string> {
  const policy = policyRules({ workspace: ws });
  const worker = await createSluiceWorker({
    connection: h.connection,
    taskQueue: h.taskQueue,
    config: defineConfig({
      tools: [bashTool({ root: ws, approval: policy.approval('bash') })],
      preExecute: [...policy.preExecute],
    }),
    stateDir: h.stateDir,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    deployment: { name: deploymentName, buildId },
  });
  versions.set(buildId, { worker, running: worker.run() });
  return policy.digest;
}

async function stopVersion(buildId: string): Promise<void> {
  const v = versions.get(buildId);
  if (!v) return;
  versions.delete(buildId);
  await eventually(`${buildId}'s worker running`, async () => v.worker.getState() !== 'INITIALIZED');
  v.worker.shutdown();
  await v.running;
}

/** Moves a waiting batch to another version (`temporal workflow update-options --versioning-override-*`). */
async function moveBatch(workflowId: string, buildId: string): Promise<void> {
  await h.client.temporal.workflowService.updateWorkflowExecutionOptions({
    namespace: h.client.temporal.options.namespace,
    workflowExecution: { workflowId },
    workflowExecutionOptions: {
      versioningOverride: {
        pinned: {
          behavior: temporal.api.workflow.v1.VersioningOverride.PinnedOverrideBehavior.PINNED_OVERRIDE_BEHAVIOR_PINNED,
          version: { deploymentName, buildId },
        },
      },
    },
    updateMask: { paths: ['versioning_override'] },
  });
}

beforeAll(async () => {
  h = await startHarness('policy-deploy', { tools: [] }, { autoStart: false });
  ws = fs.realpathSync(fs.mkdtempSync(path.join(inject('runDir'), 'policy-deploy-')));
  fs.mkdirSync(path.join(ws, '.claude'));
  settings({ ask: ['Bash(touch a.txt)', 'Bash(touch b.txt)', 'Bash(touch c.txt)', 'Bash(touch d.txt)'] });
});
afterAll(async () => {
  for (const buildId of [...versions.keys()]) await stopVersion(buildId);
  await h?.close();
});

describe('an approval waiting across a Worker Deployment version change', () => {
  // Two versions and four batches on a loaded machine: minutes, not the default minute.
  it('is judged by the new version under its policy, and the record names both digests', {
    timeout: 600_000,
  }, async () => {
    const v1Digest = await startVersion('v1');
    await setCurrentVersion(h.client.temporal, deploymentName, 'v1', { waitMs: 120_000 });
    const names = ['a', 'b', 'c', 'd'];
    const handles = await Promise.all(
      names.map((n) =>
        h.client.startBatch(
          batch([{ id: n, name: 'bash', args: { command: `touch ${n}.txt` } }], {
            options: { approvalTimeoutMs: 600_000 },
          }),
        ),
      ),
    );
    const asked = await Promise.all(
      handles.map((hd) => pendingApproval(h.client, hd.workflowId, () => true, { timeoutMs: 120_000 })),
    );
    for (const [i, p] of asked.entries())
      expect(p.policy).toMatchObject({
        digest: v1Digest,
        decision: 'ask',
        rule: { file: '.claude/settings.json', text: `Bash(touch ${names[i]}.txt)` },
      });
    for (const hd of handles)
      expect(await batchVersion(h.client.temporal, hd.workflowId)).toEqual({ buildId: 'v1', behavior: 'pinned' });

    // v2: the same code, a changed policy file. It takes over: current for new batches, the waiting
    // ones moved to it, v1's worker gone.
    settings({
      deny: ['Bash(touch a.txt)'],
      allow: ['Bash(touch b.txt)'],
      ask: ['Bash(touch c.txt)', 'Bash(touch d.txt:*)'],
    });
    const v2Digest = await startVersion('v2');
    expect(v2Digest).not.toBe(v1Digest);
    await setCurrentVersion(h.client.temporal, deploymentName, 'v2', { waitMs: 120_000 });
    for (const hd of handles) await moveBatch(hd.workflowId, 'v2');
    await stopVersion('v1');

    for (const p of asked) await h.client.approve(p.approvalId, { by: 'reviewer', workflowId: p.workflowId });
    const outs: BatchOutput[] = await Promise.all(handles.map((hd) => hd.result()));
    const [a, b, c, d] = outs.map((o) => o.results[0].result);
    const rechecked = outs.map((o) => o.events.find((e) => e.type === 'policy/rechecked')?.data);
    for (const r of rechecked) expect(r).toMatchObject({ askedUnder: { digest: v1Digest }, now: { digest: v2Digest } });

    expect(a.error?.code).toBe('DENIED');
    expect(text(a)).toContain('it is now denied by .claude/settings.json: `Bash(touch a.txt)`');
    expect(fs.existsSync(path.join(ws, 'a.txt'))).toBe(false);
    expect(rechecked[0]).toMatchObject({ outcome: 'denied', callId: 'a' });

    expect(b.isError).toBe(false);
    expect(fs.existsSync(path.join(ws, 'b.txt'))).toBe(true);
    expect(rechecked[1]).toMatchObject({ outcome: 'allowed', now: { decision: 'allow' } });

    expect(c.isError).toBe(false);
    expect(fs.existsSync(path.join(ws, 'c.txt'))).toBe(true);
    expect(rechecked[2]).toMatchObject({ outcome: 'same-rule' });

    expect(d.error?.code).toBe('DENIED');
    expect(text(d)).toContain('it is now asked by .claude/settings.json: `Bash(touch d.txt:*)`');
    expect(fs.existsSync(path.join(ws, 'd.txt'))).toBe(false);
    expect(rechecked[3]).toMatchObject({ outcome: 'other-rule' });

    // v2 finished them: each batch is on v2, where the re-check ran.
    for (const hd of handles)
      expect(await batchVersion(h.client.temporal, hd.workflowId)).toMatchObject({ buildId: 'v2' });
  });
});
