// Issue 22 item 4: one `sluice.decide` whose pin value or `scope` nests 60,000 arrays deep (about
// 120 KB) overflowed the workflow's stack in JSON.stringify (the pin shape check, the field check):
// every workflow task failed, the deny timeout and every later decision were dead. Sent here as
// raw payloads (no client-side JSON.stringify could build them), by signal and by update, for a
// pending approval and for a random approval id: each is recorded as a refusal, a valid decision
// afterwards still decides, and the deny timeout still fires.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineConfig, defineTool } from '../define/config';
import { eventually, pendingApproval } from './eventually';
import { batch, startHarness, text, type Harness } from './harness';

const config = defineConfig({
  tools: [
    defineTool({
      name: 'send',
      description: 'sends a message (asks first)',
      input: z.object({ to: z.string() }),
      approval: 'ask',
      execute: ({ to }) => `sent to ${to}`,
    }),
  ],
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness('decision-depth', config);
});
afterAll(() => h?.close());

const DEPTH = 60_000;
const deep = `${'['.repeat(DEPTH)}1${']'.repeat(DEPTH)}`;

/** A decision's JSON with `deep` spliced in where `"@DEEP@"` stands: built as text, never walked here. */
const hostile = (decision: object) => Buffer.from(JSON.stringify(decision).replace('"@DEEP@"', deep), 'utf8');

const payload = (data: Buffer) => ({ metadata: { encoding: Buffer.from('json/plain') }, data });

async function signalRaw(workflowId: string, data: Buffer): Promise<void> {
  const t = h.client.temporal;
  await t.workflowService.signalWorkflowExecution({
    namespace: t.options.namespace,
    workflowExecution: { workflowId },
    signalName: 'sluice.decide',
    input: { payloads: [payload(data)] },
    identity: 'decision-depth-test',
    requestId: randomUUID(),
  });
}

/** An update with a raw payload; resolves to its outcome once completed. */
async function updateRaw(workflowId: string, data: Buffer) {
  const t = h.client.temporal;
  const res = await t.workflowService.updateWorkflowExecution({
    namespace: t.options.namespace,
    workflowExecution: { workflowId },
    waitPolicy: { lifecycleStage: 3 /* COMPLETED */ },
    request: {
      meta: { updateId: randomUUID(), identity: 'decision-depth-test' },
      input: { name: 'sluice.decide', args: { payloads: [payload(data)] } },
    },
  });
  return res.outcome;
}

const refusedIn = async (workflowId: string, n: number) =>
  eventually(`${n} refusal(s) in the memo of ${workflowId}`, async () => {
    const { memo } = await h.client.readApprovals(workflowId);
    const refused = memo?.refused ?? [];
    return refused.length >= n && refused;
  });

describe('a decision nested too deep', () => {
  it('is refused by signal and by update, pending or random id; a valid decision then decides', async () => {
    const handle = await h.client.startBatch(batch([{ id: 'm', name: 'send', args: { to: 'ada' } }]));
    const p = await pendingApproval(h.client, handle.workflowId);

    // By signal: scope nested deep, for the pending approval and for a random id; pins nested deep.
    await signalRaw(
      handle.workflowId,
      hostile({ approvalId: p.approvalId, decision: 'approve', scope: '@DEEP@', argsDigest: p.argsDigest }),
    );
    await signalRaw(handle.workflowId, hostile({ approvalId: randomUUID(), decision: 'approve', scope: '@DEEP@' }));
    await signalRaw(
      handle.workflowId,
      hostile({
        approvalId: p.approvalId,
        decision: 'approve',
        scope: 'session',
        pins: [{ path: 'to', equals: '@DEEP@' }],
        argsDigest: p.argsDigest,
      }),
    );
    // By update: refused to the sender, and recorded.
    const outcome = await updateRaw(
      handle.workflowId,
      hostile({
        approvalId: p.approvalId,
        decision: 'approve',
        scope: 'session',
        pins: [{ path: 'to', equals: '@DEEP@' }],
        argsDigest: p.argsDigest,
      }),
    );
    expect(outcome?.failure?.message).toMatch(/nests arrays\/objects more than \d+ levels deep/);

    const refused = await refusedIn(handle.workflowId, 4);
    expect(refused.map((r) => r.code)).toEqual(['malformed', 'malformed', 'malformed', 'malformed']);
    expect(refused.map((r) => r.via)).toEqual(['signal', 'signal', 'signal', 'update']);
    expect(refused[0].message).toMatch(/nothing was decided/);

    // The batch is alive: the query answers, the ask still waits, and a valid decision decides it.
    const state = await h.client.batchState(handle.workflowId);
    expect(state.pending.map((x) => x.approvalId)).toEqual([p.approvalId]);
    await h.client.approve(p.approvalId, { workflowId: handle.workflowId, by: 'ops', argsDigest: p.argsDigest });
    const out = await handle.result();
    expect(text(out.results[0].result)).toBe('sent to ada');
  });

  it('leaves the deny timeout working', async () => {
    const handle = await h.client.startBatch(
      batch([{ id: 't', name: 'send', args: { to: 'bob' } }], { options: { approvalTimeoutMs: 3_000 } }),
    );
    const p = await pendingApproval(h.client, handle.workflowId);
    await signalRaw(
      handle.workflowId,
      hostile({ approvalId: p.approvalId, decision: 'approve', scope: '@DEEP@', argsDigest: p.argsDigest }),
    );
    const out = await handle.result();
    expect(out.results[0].result.isError).toBe(true);
    expect(out.results[0].result.error?.code).toBe('DENIED');
    expect(text(out.results[0].result)).toMatch(/deny timeout/);
  });
});
