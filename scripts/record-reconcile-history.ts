// Records the unknown-outcome histories of a release under test/fixtures/histories/<release>/:
// one batch whose four at-most-once calls are all lost (each ran past its time limit), so the
// batch opened a reconcile card (a reconcileCall workflow) for each, and those four workflows as
// people settled them:
//
//   reconcile-batch.json      the batch: four calls ended OUTCOME_UNKNOWN, four cards started
//   reconcile-done.json       done without evidence, by signal: refused in the memo; then done
//                             with evidence, by update
//   reconcile-not-done.json   not done, by signal (as a decision queued with no worker up arrives)
//   reconcile-run-again.json  run again, by update: the body is lost again (the update fails and
//                             the card returns); a not-done signal sent while that run was on is
//                             refused (a decision is being applied); run again once more: the body
//                             runs and its result is the outcome
//   reconcile-verified.json   run again of a tool only verified approvers may decide: a typed name
//                             by signal refused; a token outside the tool's groups refused after
//                             the identity check ran; a verified approver's run again runs it
//
// test/replay.test.ts (through `sluice replay test/fixtures/histories`) replays them against the
// current workflow code, so a change to workflows/reconcile.ts that would break a card waiting for
// a person fails CI. Record once per release that changed the reconcile workflow; a release's
// histories are never re-recorded unless --force says so:
//
//   npx tsx scripts/record-reconcile-history.ts [--release 1.0.0] [--force]
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { z } from 'zod';
import type { SluiceClient } from '../client/client';
import { historyToJson } from '../client/history';
import { defineConfig, defineTool } from '../define/config';
import { RECONCILE_UPDATE, type Reconciliation, reconcileWorkflowId } from '../pipeline/reconcile';
import type { BatchOutput, MemoRefusal } from '../pipeline/types';
import { fixtureFile, RELEASE, withRecordingWorker, writeFixture } from './recording';

export const RECONCILE_FIXTURES = ['batch', 'done', 'not-done', 'run-again', 'verified'] as const;
export const RECONCILE_SESSION = 'fixture-reconcile';

/** How long one attempt may run: a lost attempt runs past it; the stale signal is sent inside it. */
const ATTEMPT_MS = 8_000;
const SHARED = 'fixture-shared-secret-for-reconcile-tokens';

/** Which attempts of each env are lost (1-based): the rest return at once. */
const LOST: Record<string, number[]> = { staging: [1], qa: [1], prod: [1, 2], v2: [1] };
const attempts = new Map<string, number>();

/** Runs past the attempt's time limit when this attempt is to be lost, else returns at once. */
async function attempt(env: string, signal: AbortSignal): Promise<string> {
  const n = (attempts.get(env) ?? 0) + 1;
  attempts.set(env, n);
  if (LOST[env]?.includes(n))
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ATTEMPT_MS + 4_000);
      signal.addEventListener('abort', () => {
        clearTimeout(t);
        resolve();
      });
    });
  return `deployed ${env}`;
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>): Promise<T> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`the recording waited two minutes for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Fails the recording (nothing is written) when a card did not take the path its history is for. */
function expectThat(ok: boolean, what: string): void {
  if (!ok) throw new Error(`the recording did not go as planned: ${what}; nothing was written, run it again`);
}

type Files = Record<(typeof RECONCILE_FIXTURES)[number], string>;

/** The release's fixture files, refusing to overwrite a recorded release without --force. */
function fixtureFiles(argv: string[]): Files {
  const at = argv.indexOf('--release');
  const release = at >= 0 ? argv[at + 1] : RELEASE;
  if (!release || !/^[\w.-]+$/.test(release)) throw new Error('--release takes a release name such as 1.0.0');
  const files = Object.fromEntries(
    RECONCILE_FIXTURES.map((name) => [name, fixtureFile(release, `reconcile-${name}.json`)]),
  ) as Files;
  const recorded = Object.values(files).filter((f) => fs.existsSync(f));
  if (recorded.length && !argv.includes('--force'))
    throw new Error(
      `${recorded.map((f) => path.relative(process.cwd(), f)).join(', ')} exist: release ${release} was recorded already. Record a new release (--release NAME, or bump package.json's version), or pass --force if this release's reconcile workflow really changed before it shipped.`,
    );
  return files;
}

/** Signs identity tokens for the verified card; the worker holds the seal's private key. */
interface Identity {
  sealKey: Record<string, unknown>;
  token(sub: string, groups: string[]): Promise<string>;
}

/** Two at-most-once tools whose lost attempts run past their limit; `release` wants verified approvers. */
async function recordingConfig() {
  const seal = await generateKeyPair('ECDH-ES', { crv: 'P-256', extractable: true });
  const identity: Identity = {
    sealKey: (await exportJWK(seal.publicKey)) as Record<string, unknown>,
    token: (sub, groups) =>
      new SignJWT({ groups })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(sub)
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign(new TextEncoder().encode(SHARED)),
  };
  const lost = { atMostOnce: true, timeoutMs: ATTEMPT_MS, heartbeatTimeoutMs: 60_000, isConcurrencySafe: () => true };
  const config = defineConfig({
    tools: [
      defineTool({
        name: 'deploy',
        description: 'deploys; must not run twice',
        input: z.object({ env: z.string() }),
        presentCall: ({ env }) => ({ title: `Deploy ${env}` }),
        execute: ({ env }, ctx) => attempt(env, ctx.signal),
        ...lost,
      }),
      defineTool({
        name: 'release',
        description: 'releases; must not run twice; only the release group decides',
        input: z.object({ version: z.string() }),
        approval: 'auto',
        approverGroups: ['release'],
        execute: ({ version }, ctx) => attempt(version, ctx.signal),
        ...lost,
      }),
    ],
    approvers: { sealKey: (await exportJWK(seal.privateKey)) as Record<string, unknown>, sharedKey: SHARED },
  });
  return { config, identity };
}

/** A reconcile card of the batch, once it waits for a person. */
async function card(client: SluiceClient, batchWorkflowId: string, callId: string) {
  const workflowId = reconcileWorkflowId(batchWorkflowId, callId);
  const p = await until(`the card of ${callId}`, async () => (await client.readApprovals(workflowId)).pending[0]);
  return { workflowId, reconcileId: p.approvalId, wf: client.temporal.workflow.getHandle(workflowId) };
}

/** done: refused without evidence (by signal, recorded in the memo), then taken with it. */
async function decideDone(client: SluiceClient, batchWorkflowId: string): Promise<Reconciliation> {
  const done = await card(client, batchWorkflowId, 'done');
  await done.wf.signal(RECONCILE_UPDATE, {
    reconcileId: done.reconcileId,
    decision: 'done',
    by: 'eve',
    requestId: 'rq-no-evidence',
  });
  const noEvidence = await refusal(client, done.workflowId, 'rq-no-evidence');
  expectThat(noEvidence.message.includes('needs evidence'), `done without evidence: ${noEvidence.message}`);
  const settled = await client.approvals.reconcile({
    workflowId: done.workflowId,
    reconcileId: done.reconcileId,
    decision: 'done',
    by: 'carol',
    reason: 'saw the effect',
    evidence: 'staging serves the new build',
  });
  expectThat(settled.outcome === 'done', `done: ${settled.outcome}`);
  return settled;
}

/** not done: by signal, as a decision queued while no worker was up reaches the workflow. */
async function decideNotDone(client: SluiceClient, batchWorkflowId: string): Promise<Reconciliation> {
  const notDone = await card(client, batchWorkflowId, 'not-done');
  await notDone.wf.signal(RECONCILE_UPDATE, {
    reconcileId: notDone.reconcileId,
    decision: 'not-done',
    by: 'ops-oncall',
    reason: 'checked the deploy log',
    requestId: 'rq-not-done',
  });
  const settled = (await notDone.wf.result()) as Reconciliation;
  expectThat(settled.outcome === 'not-done', `not done: ${settled.outcome}`);
  return settled;
}

/** run again: lost again while a stale not-done arrives, the card returns; run again runs it. */
async function decideRunAgain(client: SluiceClient, batchWorkflowId: string): Promise<Reconciliation> {
  const again = await card(client, batchWorkflowId, 'run-again');
  const first = client.approvals
    .reconcile({ workflowId: again.workflowId, reconcileId: again.reconcileId, decision: 'run-again', by: 'erin' })
    .then(
      () => 'ran',
      (e: Error) => e.message,
    );
  await until('the run again to start', async () => (await client.batchState(again.workflowId)).status === 'running');
  await again.wf.signal(RECONCILE_UPDATE, {
    reconcileId: again.reconcileId,
    decision: 'not-done',
    by: 'mallory',
    requestId: 'rq-stale',
  });
  const stale = await refusal(client, again.workflowId, 'rq-stale');
  expectThat(stale.code === 'decided', `the not-done sent during the run again: ${stale.code} ${stale.message}`);
  const lostAgain = await first;
  expectThat(lostAgain.includes('was lost too'), `the first run again: ${lostAgain}`);
  await until('the card back', async () => (await client.readApprovals(again.workflowId)).pending[0]);
  return ranAgain(
    'run-again',
    await client.approvals.reconcile({
      workflowId: again.workflowId,
      reconcileId: again.reconcileId,
      decision: 'run-again',
      by: 'erin',
      reason: 'the second try timed out before it deployed',
    }),
  );
}

/** verified: a typed name is refused, a token outside the groups fails the identity check. */
async function decideVerified(client: SluiceClient, batchWorkflowId: string, id: Identity): Promise<Reconciliation> {
  const verified = await card(client, batchWorkflowId, 'verified');
  await verified.wf.signal(RECONCILE_UPDATE, {
    reconcileId: verified.reconcileId,
    decision: 'run-again',
    by: 'mallory',
    requestId: 'rq-typed-name',
  });
  const typed = await refusal(client, verified.workflowId, 'rq-typed-name');
  expectThat(typed.message.includes('verified approver'), `the typed name: ${typed.message}`);
  const decide = { workflowId: verified.workflowId, reconcileId: verified.reconcileId, decision: 'run-again' } as const;
  const outsider = await client.approvals
    .reconcile({
      ...decide,
      by: 'mallory',
      identityToken: await id.token('mallory@example.com', ['dev']),
      sealKey: id.sealKey,
    })
    .then(
      () => 'ran',
      (e: Error) => e.message,
    );
  expectThat(outsider.includes('not in a group'), `the token outside the groups: ${outsider}`);
  const settled = ranAgain(
    'verified',
    await client.approvals.reconcile({
      ...decide,
      by: 'typed-name-ignored',
      identityToken: await id.token('ada@example.com', ['release']),
      sealKey: id.sealKey,
    }),
  );
  expectThat(settled.by === 'ada@example.com', `verified by ${settled.by}`);
  return settled;
}

function ranAgain(name: string, settled: Reconciliation): Reconciliation {
  expectThat(
    settled.outcome === 'ran-again' && settled.rerun?.isError === false,
    `${name}: ${JSON.stringify(settled)}`,
  );
  return settled;
}

async function main(argv: string[]) {
  const files = fixtureFiles(argv);
  const { config, identity } = await recordingConfig();

  Runtime.install({ logger: new DefaultLogger('ERROR') });
  await withRecordingWorker(config, async ({ client }) => {
    const handle = await client.startBatch({
      sessionId: RECONCILE_SESSION,
      turn: 1,
      step: 1,
      calls: [
        { id: 'done', name: 'deploy', arguments: { env: 'staging' } },
        { id: 'not-done', name: 'deploy', arguments: { env: 'qa' } },
        { id: 'run-again', name: 'deploy', arguments: { env: 'prod' } },
        { id: 'verified', name: 'release', arguments: { version: 'v2' } },
      ],
    });
    const batch = (await handle.result()) as BatchOutput;
    for (const r of batch.results)
      expectThat(r.result.error?.code === 'OUTCOME_UNKNOWN', `${r.callId} ended ${r.result.error?.code ?? 'well'}`);

    // The cards in this order: the run again's lost attempt must not overlap another's.
    await decideDone(client, handle.workflowId);
    await decideNotDone(client, handle.workflowId);
    await decideRunAgain(client, handle.workflowId);
    await decideVerified(client, handle.workflowId, identity);

    writeFixture(files.batch, JSON.parse(historyToJson(await handle.fetchHistory())), { tmp: true });
    for (const name of ['done', 'not-done', 'run-again', 'verified'] as const) {
      const wf = client.temporal.workflow.getHandle(reconcileWorkflowId(handle.workflowId, name));
      await wf.result();
      writeFixture(files[name], JSON.parse(historyToJson(await wf.fetchHistory())), { tmp: true });
    }
  });
}

/** A signal's refusal, once the workflow has recorded it in its memo under the request id. */
function refusal(client: SluiceClient, workflowId: string, requestId: string): Promise<MemoRefusal> {
  return until(`the refusal of ${requestId}`, async () =>
    (await client.readApprovals(workflowId)).memo?.refused.find((r) => r.requestId === requestId),
  );
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (err) => {
      console.error(`record-reconcile-history failed: ${err.message ?? err}`);
      process.exit(1);
    },
  );
}
