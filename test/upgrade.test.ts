// Upgrades with worker versioning: version N starts batches that wait for a person; version N+1,
// a real change to the workflow code that cannot replay N's histories, is deployed beside it and
// made current. The waiting batches are approved and finish on N's workers; new batches run on
// N+1; each version's histories replay with that version's code.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { bundleWorkflowCode, type Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { main } from '../cli';
import { batchVersion, deploymentStatus, setCurrentVersion } from '../client/deployment';
import { replayHistories } from '../client/replay';
import { defineConfig, defineTool } from '../define/config';
import { conflictsPath, readSessionLog } from '../stores/sink';
import { createSluiceWorker } from '../worker/worker';
import { batch, startHarness, type Harness } from './harness';
import { pendingApproval } from './eventually';

const ROOT = path.join(__dirname, '..');
const ranOn: Record<string, string> = {};
const config = (buildId: string) =>
  defineConfig({
    tools: [
      defineTool({
        name: 'deploy',
        description: 'asks first',
        input: z.object({ env: z.string() }),
        approval: 'ask',
        execute: ({ env }, ctx) => {
          ranOn[ctx.call.id] = buildId;
          return `deployed ${env}`;
        },
      }),
    ],
  });

let h: Harness;
let v2BundlePath: string;
const workers: { worker: Worker; running: Promise<void> }[] = [];
const deploymentName = `sluice-upgrade-${process.pid}-${Date.now()}`;

/** Version N+1: the workflow code with a timer first thing, so N's histories no longer replay on it. */
async function bundleNextVersion(dir: string): Promise<string> {
  for (const sub of ['workflows', 'pipeline', 'codec'])
    fs.cpSync(path.join(ROOT, sub), path.join(dir, sub), { recursive: true });
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  const file = path.join(dir, 'workflows', 'batch.ts');
  const before = fs.readFileSync(file, 'utf8');
  const start = 'export async function toolBatch(input: BatchInput): Promise<BatchOutputWire> {';
  expect(before).toContain(start);
  fs.writeFileSync(
    file,
    `import { sleep } from '@temporalio/workflow';\n${before.replace(start, `${start}\n  await sleep('1 ms');`)}`,
  );
  const bundle = await bundleWorkflowCode({
    workflowsPath: path.join(dir, 'workflows', 'index.ts'),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: console.error },
  });
  const out = path.join(dir, 'workflow-bundle.js');
  fs.writeFileSync(out, bundle.code);
  return out;
}

async function startVersion(buildId: string, codePath: string): Promise<void> {
  const worker = await createSluiceWorker({
    connection: h.connection,
    taskQueue: h.taskQueue,
    config: config(buildId),
    stateDir: h.stateDir,
    workflowBundle: { codePath },
    deployment: { name: deploymentName, buildId },
    // No workflow cache: every workflow task replays the batch's whole history on this version's
    // code, so a batch routed to the wrong version would fail with a nondeterminism error.
    maxCachedWorkflows: 0,
  });
  workers.push({ worker, running: worker.run() });
}

// N+1 registers its query after its first timer: until then the query is refused (a probe that
// throws counts as "not yet").
const pendingOf = (workflowId: string) => pendingApproval(h.client, workflowId);

beforeAll(async () => {
  h = await startHarness('upgrade', config('unused'), { autoStart: false });
  v2BundlePath = await bundleNextVersion(fs.mkdtempSync(path.join(inject('runDir'), 'v2-')));
});
afterAll(async () => {
  for (const w of workers) w.worker.shutdown();
  await Promise.all(workers.map((w) => w.running));
  await h?.close();
});

describe('upgrades', () => {
  it('batches waiting on version N finish on N while N+1 runs new batches; each version replays its own histories', async () => {
    const temporal = h.client.temporal;
    await startVersion('v1', inject('workflowBundlePath'));
    await setCurrentVersion(temporal, deploymentName, 'v1');

    const old = await Promise.all(
      ['staging', 'prod'].map((env) =>
        h.client.startBatch(batch([{ id: `old-${env}`, name: 'deploy', args: { env } }])),
      ),
    );
    const oldPending = await Promise.all(old.map((b) => pendingOf(b.workflowId)));
    for (const b of old)
      expect(await batchVersion(temporal, b.workflowId)).toEqual({ buildId: 'v1', behavior: 'pinned' });

    // Deploy N+1 beside N, and make it current.
    await startVersion('v2', v2BundlePath);
    await setCurrentVersion(temporal, deploymentName, 'v2');
    const status = await deploymentStatus(temporal, deploymentName);
    expect(status.current).toBe('v2');
    expect(status.versions.map((v) => v.buildId).sort()).toEqual(['v1', 'v2']);

    const fresh = await h.client.startBatch(batch([{ id: 'new-dev', name: 'deploy', args: { env: 'dev' } }]));
    // Both versions' workers run in this process on the client's connection: an eager start would
    // hand the batch to either of them, whatever the current version is.
    expect(fresh.eagerlyStarted).toBe(false);
    const freshPending = await pendingOf(fresh.workflowId);
    expect(await batchVersion(temporal, fresh.workflowId)).toEqual({ buildId: 'v2', behavior: 'pinned' });

    // The old batches are approved now, and finish on N.
    for (const [i, b] of old.entries())
      await h.client.approve(oldPending[i].approvalId, { workflowId: b.workflowId, by: 'upgrade-test' });
    await h.client.approve(freshPending.approvalId, { workflowId: fresh.workflowId, by: 'upgrade-test' });
    for (const b of old) expect((await b.result()).results[0].result.isError).toBeFalsy();
    expect((await fresh.result()).results[0].result.isError).toBeFalsy();
    expect(ranOn).toMatchObject({ 'old-staging': 'v1', 'old-prod': 'v1', 'new-dev': 'v2' });
    // Replayed from history in every task, each batch still logs its events once, in the log.
    for (const b of [...old, fresh]) {
      const sessionId = b.workflowId.split(':')[1]; // sluice-batch:<session>:<turn>:<step>
      expect((await readSessionLog(h.stateDir, sessionId)).map((e) => e.type)).toEqual(
        (await b.result()).events.map((e) => e.type),
      );
      expect(fs.existsSync(conflictsPath(h.stateDir, sessionId))).toBe(false);
    }
    for (const b of old) expect(await batchVersion(temporal, b.workflowId)).toMatchObject({ buildId: 'v1' });
    expect(await batchVersion(temporal, fresh.workflowId)).toMatchObject({ buildId: 'v2' });

    // N+1 is a real change: its batches begin with a timer, N's never do.
    const oldHistory = await old[0].fetchHistory();
    const newHistory = await fresh.fetchHistory();
    const firstCommand = (hist: typeof oldHistory) => {
      const events = hist.events ?? [];
      return events[events.findIndex((e) => e.workflowTaskCompletedEventAttributes) + 1];
    };
    expect(firstCommand(oldHistory).timerStartedEventAttributes).toBeFalsy();
    expect(firstCommand(newHistory).timerStartedEventAttributes).toBeTruthy();

    // Each version's histories replay on that version's code, and N's would break on N+1's.
    const v1 = [{ workflowId: old[0].workflowId, history: oldHistory, source: 'v1' }];
    const v2 = [{ workflowId: fresh.workflowId, history: newHistory, source: 'v2' }];
    expect(await replayHistories(v1, { workflowBundlePath: inject('workflowBundlePath') })).toMatchObject([
      { ok: true },
    ]);
    expect(await replayHistories(v2, { workflowBundlePath: v2BundlePath })).toMatchObject([{ ok: true }]);
    expect(await replayHistories(v1, { workflowBundlePath: v2BundlePath })).toMatchObject([
      { ok: false, failure: 'nondeterminism' },
    ]);

    // Once N's batches are done, N drains: the point at which its workers can be retired.
    const drained = await deploymentStatus(temporal, deploymentName);
    expect(drained.versions.find((v) => v.buildId === 'v1')?.status).toMatch(/draining|drained|inactive/);
  });

  it('`sluice worker` takes the version as --deployment and --build-id, and refuses one without the other', async () => {
    const lines: string[] = [];
    const code = await main(['worker', '--deployment', deploymentName, '--address', inject('temporalAddress')], (l) =>
      lines.push(l),
    );
    expect(code).toBe(1);
    expect(lines.join('\n')).toContain('needs both a deployment name and a build id');
    expect(lines.join('\n')).toContain('--build-id');
    const help: string[] = [];
    expect(await main(['worker', '--help'], (l) => help.push(l))).toBe(0);
    expect(help.join('\n')).toMatch(/--deployment NAME[\s\S]*--build-id ID/);
  });
});
