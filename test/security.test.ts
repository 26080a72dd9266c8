// Secrets in history: with SLUICE_CODEC_KEYS set, arguments, results, thrown messages, contexts
// and approval decisions are ciphertext in Temporal; search attributes never carry arguments.
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { BatchOutput } from '../pipeline/types';
import { expandBatchOutput } from '../codec/output';
import { dataConverterFromEnv, EncryptionCodec, ENCRYPTED_ENCODING, parseCodecKeys } from '../codec/payload';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';
import { main } from '../cli';
import { SluiceClient } from '../client/client';
import { inject } from 'vitest';
import { pendingApproval } from './eventually';

const SECRETS = {
  arg: 'ARG-sk-live-4f9a1c',
  result: 'RESULT-sk-live-77b2e0',
  thrown: 'THROWN-sk-live-0c3d5e',
  context: 'CONTEXT-sk-live-9e8d7c',
  reason: 'REASON-sk-live-1a2b3c',
};

const keyB64 = randomBytes(32).toString('base64');
const env = { SLUICE_CODEC_KEYS: `k1:${keyB64}` };

const vault = defineTool({
  name: 'vault_read',
  description: 'Reads a secret.',
  input: z.object({ name: z.string(), fail: z.boolean().optional(), ask: z.boolean().optional() }),
  approval: (a) => (a.ask ? 'ask' : 'auto'),
  approvalTimeoutMs: 60_000,
  retry: { maximumAttempts: 1 },
  execute: ({ name, fail }) => {
    if (fail) throw new Error(`cannot read ${name}: ${SECRETS.thrown}`);
    return { name, value: SECRETS.result };
  },
});

let h: Harness;
let plain: Client;
beforeAll(async () => {
  h = await startHarness(
    'security',
    defineConfig({
      tools: [vault],
      postExecute: [
        function note(ctx) {
          ctx.addContext(`remember ${SECRETS.context}`);
        },
      ],
    }),
    { dataConverter: dataConverterFromEnv(env) },
  );
  plain = new Client({ connection: h.connection }); // no codec: sees what Temporal stores
});
afterAll(() => h?.close());

/** Every byte of a workflow's history as Temporal stores it. */
async function rawHistory(workflowId: string): Promise<Buffer> {
  const history = await plain.workflow.getHandle(workflowId).fetchHistory();
  return Buffer.from(temporal.api.history.v1.History.encode(history).finish());
}

describe('secrets in history', () => {
  it('arguments, results, thrown messages, contexts and approval decisions are ciphertext in history', async () => {
    const req = batch([
      { name: 'vault_read', args: { name: SECRETS.arg } },
      { name: 'vault_read', args: { name: SECRETS.arg, fail: true } },
      { name: 'vault_read', args: { name: SECRETS.arg, ask: true } },
    ]);
    const handle = await h.client.startBatch(req);
    const approval = await waitForPending(handle.workflowId);
    await h.client.signalDecision({
      approvalId: approval,
      workflowId: handle.workflowId,
      decision: 'approve',
      by: 'sec',
      reason: SECRETS.reason,
    });
    const out = (await handle.result()) as BatchOutput;

    // The codec-side client reads everything in clear.
    expect(text(out.results[0].result)).toContain(SECRETS.result);
    expect(text(out.results[1].result)).toContain(SECRETS.thrown);
    expect(out.messages.some((m) => m.role === 'user' && m.content.includes(SECRETS.context))).toBe(true);
    expect(out.events.find((e) => e.type === 'approval/decided')?.data.reason).toBe(SECRETS.reason);

    const raw = await rawHistory(handle.workflowId);
    for (const [what, secret] of Object.entries(SECRETS))
      expect(raw.includes(secret), `${what} in plaintext history`).toBe(false);
    // What stays json/plain is Temporal's own: search attributes and local-activity marker details.
    expect(raw.includes(ENCRYPTED_ENCODING)).toBe(true);
  });

  it('a client without the key cannot read the result, and one with the rotated key list can', async () => {
    const req = batch([{ name: 'vault_read', args: { name: 'x' } }]);
    const out = await h.client.runBatch(req);
    const id = `sluice-batch:${req.sessionId}:1:1`;
    await expect(plain.workflow.getHandle(id).result()).rejects.toThrow(/encoding|binary\/encrypted/i);
    const rotated = new SluiceClient({
      connection: h.connection,
      taskQueue: h.taskQueue,
      dataConverter: dataConverterFromEnv({
        SLUICE_CODEC_KEYS: `k2:${randomBytes(32).toString('base64')},k1:${keyB64}`,
      }),
    });
    expect(expandBatchOutput(await rotated.temporal.workflow.getHandle(id).result()).results).toEqual(out.results);
  });

  it('auditors with the key read encrypted histories: sluice audit and replay decrypt them', async () => {
    const req = batch([{ name: 'vault_read', args: { name: SECRETS.arg } }]);
    await h.client.runBatch(req);
    const id = `sluice-batch:${req.sessionId}:1:1`;
    const lines: string[] = [];
    const cli = (args: string[]) => main([...args, '--address', inject('temporalAddress')], (s) => lines.push(s));
    process.env.SLUICE_CODEC_KEYS = env.SLUICE_CODEC_KEYS;
    try {
      expect(await cli(['audit', id, '--json'])).toBe(0);
      expect(lines.join('\n')).toContain(SECRETS.arg);
      expect(await cli(['replay', id])).toBe(0);
      expect(lines.join('\n')).toMatch(/1 history\(ies\) replayed with no determinism failure/);
    } finally {
      delete process.env.SLUICE_CODEC_KEYS;
    }
  });

  it('search attributes never carry arguments', async () => {
    const req = batch([{ name: 'vault_read', args: { name: SECRETS.arg, ask: true } }]);
    const handle = await h.client.startBatch(req);
    const approval = await waitForPending(handle.workflowId);
    // Read as Temporal stores it: a key-less client's describe() cannot decode the memo, which is ciphertext.
    const desc = {
      raw: await plain.workflowService.describeWorkflowExecution({
        namespace: 'default',
        execution: { workflowId: handle.workflowId },
      }),
    };
    const attrs = JSON.stringify(desc.raw.workflowExecutionInfo?.searchAttributes ?? {});
    const decoded = Object.fromEntries(
      Object.entries(desc.raw.workflowExecutionInfo?.searchAttributes?.indexedFields ?? {}).map(([k, p]) => [
        k,
        Buffer.from(p.data ?? []).toString(),
      ]),
    );
    expect(Object.keys(decoded).sort()).toEqual(
      // TemporalChangeVersion: the patch ids the workflow took (patched()), set by the SDK.
      ['BuildIds', 'SluiceAwaitingApproval', 'SluicePendingApprovals', 'SluiceSessionId', 'TemporalChangeVersion']
        .filter((k) => k in decoded)
        .sort(),
    );
    expect(decoded.SluicePendingApprovals).toContain(approval);
    expect(decoded.SluiceSessionId).toContain(req.sessionId);
    for (const v of Object.values(decoded)) expect(v).not.toContain(SECRETS.arg);
    expect(attrs).not.toContain(Buffer.from(SECRETS.arg).toString('base64'));
    // The approvals memo (pending cards, with their arguments) is encrypted like every payload.
    const memo = Object.values(desc.raw.workflowExecutionInfo?.memo?.fields ?? {});
    expect(memo.length).toBeGreaterThan(0);
    for (const p of memo) {
      expect(Buffer.from(p.metadata?.encoding ?? []).toString()).toBe(ENCRYPTED_ENCODING);
      expect(Buffer.from(p.data ?? []).toString('latin1')).not.toContain(SECRETS.arg);
    }
    await h.client.deny(approval, { workflowId: handle.workflowId });
    await handle.result();
  });
});

const waitForPending = async (workflowId: string) => (await pendingApproval(h.client, workflowId)).approvalId;

// The codec used above really is the production one (not a stand-in): same class, same keys.
it('the harness codec is the EncryptionCodec from SLUICE_CODEC_KEYS', () => {
  const dc = dataConverterFromEnv(env)!;
  expect(dc.payloadCodecs![0]).toBeInstanceOf(EncryptionCodec);
  expect((dc.payloadCodecs![0] as EncryptionCodec).currentKeyId).toBe(parseCodecKeys(env.SLUICE_CODEC_KEYS)[0].id);
});
