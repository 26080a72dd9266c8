// Run again on an unknown outcome is held to the tool's approver rule (issue 22 item 13): a tool
// with approverGroups was re-run on a typed name by `reconcile --run-again`. The reconcile
// workflow is started here as a batch starts it for a lost attempt, on a real worker.
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { main } from '../cli';
import { RECONCILE_WORKFLOW, type ReconcileInput, reconcileWorkflowId } from '../pipeline/reconcile';
import { defineConfig, defineTool } from '../define/config';
import { eventually } from './eventually';
import { startHarness, type Harness } from './harness';

const SHARED = 'a-shared-secret-for-hs256-tokens-in-reconcile';
let h: Harness;
let sealPublic: JWK;
let runs = 0;

beforeAll(async () => {
  const seal = await generateKeyPair('ECDH-ES', { crv: 'P-256', extractable: true });
  sealPublic = await exportJWK(seal.publicKey);
  h = await startHarness(
    'reconcile-verified',
    defineConfig({
      tools: [
        defineTool({
          name: 'deploy',
          description: 'deploys (release group only; never twice)',
          input: z.object({ env: z.string() }),
          approval: 'ask',
          approverGroups: ['release'],
          atMostOnce: true,
          execute: ({ env }) => {
            runs++;
            return `deployed ${env}`;
          },
        }),
      ],
      approvers: { sealKey: (await exportJWK(seal.privateKey)) as Record<string, unknown>, sharedKey: SHARED },
    }),
  );
});
afterAll(() => h?.close());

const token = (sub: string, groups: string[]) =>
  new SignJWT({ groups })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(SHARED));

async function lostDeploy() {
  const batchWorkflowId = `sluice-batch:rv-${process.pid}-${Date.now()}:1:1`;
  const ref = {
    workflowId: batchWorkflowId,
    sessionId: 'rv',
    turn: 1,
    step: 1,
    callId: 'c1',
    name: 'deploy',
    args: { env: 'prod' },
    argsDigest: `hmac-sha256:${'ab'.repeat(32)}`,
    idempotencyKey: `${batchWorkflowId}/c1`,
    state: {},
  };
  const input: ReconcileInput = {
    reconcileId: `rc-${process.pid}-${Date.now()}`,
    batchWorkflowId,
    sessionId: 'rv',
    turn: 1,
    step: 1,
    callId: 'c1',
    toolName: 'deploy',
    ref: ref as ReconcileInput['ref'],
    profile: {
      concurrencySafe: false,
      timeoutMs: 60_000,
      heartbeatTimeoutMs: 30_000,
      retry: { maximumAttempts: 1 },
      approval: 'ask',
      identityRequired: true,
      approverGroups: ['release'],
      finalizes: false,
      atMostOnce: true,
    },
    card: { title: 'deploy prod' },
    problem: 'deploy started, then the worker running it stopped answering',
  };
  const workflowId = reconcileWorkflowId(batchWorkflowId, 'c1');
  await h.client.temporal.workflow.start(RECONCILE_WORKFLOW, { taskQueue: h.taskQueue, workflowId, args: [input] });
  await eventually('the reconcile card', async () =>
    (await h.client.readApprovals(workflowId)).pending.find((p) => p.approvalId === input.reconcileId),
  );
  return { id: input.reconcileId, workflowId };
}

describe('reconcile --run-again of a tool with approverGroups', () => {
  it('refuses a typed name and a token outside the groups, runs nothing, and runs once for a verified approver in them', async () => {
    const { id, workflowId } = await lostDeploy();
    const refusal = (p: Promise<unknown>) =>
      p.then(
        () => 'ran',
        (e: Error) => e.message,
      );

    const typed = await refusal(
      h.client.reconcile({ reconcileId: id, workflowId, decision: 'run-again', by: 'mallory' }),
    );
    expect(typed).toMatch(/deploy may only be run again by a verified approver in release.*a typed name is not enough/);
    const lines: string[] = [];
    const code = await main(
      [
        'reconcile',
        id,
        '--run-again',
        '--by',
        'mallory',
        '--address',
        inject('temporalAddress'),
        '--task-queue',
        h.taskQueue,
      ],
      (s) => lines.push(s),
    );
    expect(code).toBe(1);
    expect(lines.join('\n')).toContain('may only be run again by a verified approver');

    const outsider = await refusal(
      h.client.reconcile({
        reconcileId: id,
        workflowId,
        decision: 'run-again',
        by: 'mallory',
        identityToken: await token('mallory@example.com', ['dev']),
        sealKey: sealPublic,
      }),
    );
    expect(outsider).toContain('mallory@example.com is not in a group that may approve deploy');
    expect(runs).toBe(0);

    const done = await h.client.reconcile({
      reconcileId: id,
      workflowId,
      decision: 'run-again',
      by: 'typed-name-ignored',
      identityToken: await token('ada@example.com', ['release']),
      sealKey: sealPublic,
    });
    expect(done).toMatchObject({
      outcome: 'ran-again',
      by: 'ada@example.com',
      rerun: { isError: false, text: 'deployed prod' },
    });
    expect(runs).toBe(1);
  });

  it('done and not-done stay a person’s word, identity or not (nothing runs)', async () => {
    const { id, workflowId } = await lostDeploy();
    const r = await h.client.reconcile({ reconcileId: id, workflowId, decision: 'not-done', by: 'carol' });
    expect(r).toMatchObject({ outcome: 'not-done', by: 'carol' });
  });
});
