// What Temporal stores in clear even with payload encryption on: update ids. They must not name
// the approver or carry the arguments' digest, and the digest approvers see must be keyed, so a
// PIN cannot be guessed back from it in 10,000 tries (the review's attack), against the real server.
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { canonicalJson } from '../pipeline/json';
import { codeModeTool } from '../tools/code-mode';
import { DEFAULT_DIGEST_KEY, digestKeyFromEnv, keyedArgsDigest } from '../codec/args-digest';
import { dataConverterFromEnv } from '../codec/payload';
import { defineConfig, defineTool } from '../define/config';
import { pendingApproval } from './eventually';
import { batch, startHarness, text, type Harness } from './harness';

// The worker derives its digest key from the codec key it reads at start, as a deployment would.
process.env.SLUICE_CODEC_KEYS = `k1:${randomBytes(32).toString('base64')}`;
delete process.env.SLUICE_DIGEST_KEY;

const unlock = defineTool({
  name: 'unlock',
  description: 'Unlocks the door with a PIN (asks first).',
  input: z.object({ pin: z.string() }),
  approval: 'ask',
  execute: () => 'unlocked',
});

let h: Harness;
let plain: Client;
beforeAll(async () => {
  h = await startHarness('digest-privacy', defineConfig({ tools: [unlock, codeModeTool()] }), {
    dataConverter: dataConverterFromEnv(),
  });
  plain = new Client({ connection: h.connection }); // no codec: sees what Temporal stores
});
afterAll(() => h?.close());

const pendingIn = (workflowId: string) => pendingApproval(h.client, workflowId);

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/** Every update id in a history as Temporal stores it, and the history's raw bytes. */
async function stored(workflowId: string): Promise<{ ids: string[]; raw: string }> {
  const history = await plain.workflow.getHandle(workflowId).fetchHistory();
  const ids = new Set<string>();
  for (const e of history.events ?? []) {
    const accepted = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.meta?.updateId;
    const completed = e.workflowExecutionUpdateCompletedEventAttributes?.meta?.updateId;
    for (const id of [accepted, completed]) if (id) ids.add(id);
  }
  const raw = Buffer.from(temporal.api.history.v1.History.encode(history).finish()).toString('latin1');
  return { ids: [...ids], raw };
}

describe('update ids and the approval digest', () => {
  it('carry no approver name and no digest; the digest is keyed, and a 4-digit PIN is not guessed back', async () => {
    // A model's call, decided by update.
    const direct = await h.client.startBatch(batch([{ id: 'u1', name: 'unlock', args: { pin: '4821' } }]));
    const p1 = await pendingIn(direct.workflowId);
    expect(p1.argsDigest).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    await h.client.approve(p1.approvalId, {
      workflowId: direct.workflowId,
      by: 'alice-approver',
      argsDigest: p1.argsDigest,
    });
    // Sent again (a retry, a double click): the same update, the same answer, no refusal.
    await h.client.approve(p1.approvalId, {
      workflowId: direct.workflowId,
      by: 'alice-approver',
      argsDigest: p1.argsDigest,
    });
    expect(text((await direct.result()).results[0].result)).toBe('unlocked');

    // A Code Mode sub-call, decided by update.
    const program = "return await tools.unlock({ pin: '0077' });";
    const coded = await h.client.startBatch(
      batch([{ id: 'P', name: 'run_code', args: { code: program, description: 'unlock' } }]),
    );
    const p2 = await pendingIn(coded.workflowId);
    await h.client.approve(p2.approvalId, {
      workflowId: coded.workflowId,
      by: 'bob-approver',
      argsDigest: p2.argsDigest,
    });
    expect(text((await coded.result()).results[0].result)).toBe('Result:\nunlocked');

    // The review's attack: 10,000 candidate PINs, hashed the way the digest used to be.
    const known = [p1.argsDigest, p2.argsDigest];
    for (let n = 0; n < 10_000; n++) {
      const args = canonicalJson({ pin: String(n).padStart(4, '0') });
      expect(known).not.toContain(`sha256:${sha(args)}`);
      expect(known).not.toContain(keyedArgsDigest({ pin: String(n).padStart(4, '0') }, DEFAULT_DIGEST_KEY));
    }

    for (const [wf, names, digest] of [
      [direct.workflowId, ['alice-approver'], p1.argsDigest],
      [coded.workflowId, ['bob-approver'], p2.argsDigest],
    ] as const) {
      const { ids, raw } = await stored(wf);
      expect(ids.length).toBeGreaterThan(0);
      for (const id of ids) {
        for (const name of names) expect(id).not.toContain(name);
        expect(id).not.toMatch(/sha256|hmac|unlock/);
        expect(id).not.toContain(digest.slice('hmac-sha256:'.length, 40));
      }
      // Nor anywhere else Temporal keeps in clear: the payloads are ciphertext.
      for (const name of names) expect(raw).not.toContain(name);
      expect(raw).not.toContain(digest.slice('hmac-sha256:'.length));
    }
    const codeIds = (await stored(coded.workflowId)).ids.filter((id) => id.startsWith('sluice-code:'));
    expect(codeIds).toEqual(['sluice-code:P:0']);
  });
});

describe('the digest key', () => {
  it('is SLUICE_DIGEST_KEY, else derived from the first codec key, else the documented default', () => {
    const codec = `k1:${randomBytes(32).toString('base64')}`;
    expect(digestKeyFromEnv({ SLUICE_DIGEST_KEY: 'own', SLUICE_CODEC_KEYS: codec })).toBe('own');
    const derived = digestKeyFromEnv({ SLUICE_CODEC_KEYS: codec });
    expect(derived).toMatch(/^[0-9a-f]{64}$/);
    expect(digestKeyFromEnv({ SLUICE_CODEC_KEYS: `${codec},k0:${randomBytes(32).toString('base64')}` })).toBe(derived);
    expect(digestKeyFromEnv({})).toBe(DEFAULT_DIGEST_KEY);
    // A value the codec would refuse does not stop a worker that does not encrypt (a secret planted
    // in the environment, say): it still keys the digest, and differently from any other value.
    expect(digestKeyFromEnv({ SLUICE_CODEC_KEYS: 'k1:short' })).toMatch(/^[0-9a-f]{64}$/);
    expect(digestKeyFromEnv({ SLUICE_CODEC_KEYS: 'k1:short' })).not.toBe(
      digestKeyFromEnv({ SLUICE_CODEC_KEYS: 'k1:other' }),
    );
    const args = { pin: '1234' };
    expect(keyedArgsDigest(args, 'a')).not.toBe(keyedArgsDigest(args, 'b'));
    expect(keyedArgsDigest(args, 'a')).toBe(keyedArgsDigest({ pin: '1234' }, 'a'));
  });
});
