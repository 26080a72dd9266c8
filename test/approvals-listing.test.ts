// Listing approvals on a shared namespace (issue 22 item 12): another team's batch, its memo
// encrypted with a key this client does not hold, made `pendingApprovals()` throw for everyone
// ("Unknown encoding: binary/encrypted"), whatever their own batches were. Now the readable ones
// are listed, the unreadable ones reported with why, and a client lists its own task queue by
// default. Two workers on the shared test server: one encrypting, one plain.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceClient } from '../client/client';
import { EncryptionCodec, encryptingDataConverter, parseCodecKeys } from '../codec/payload';
import { defineConfig } from '../define/config';
import { eventually, pendingApproval } from './eventually';
import { batch, startHarness, type Harness } from './harness';
import { deployTool } from './fixtures/deploy-tool';

const asks = defineConfig({
  tools: [deployTool({ approvalTimeoutMs: 5 * 60_000 })],
});

let other: Harness; // another team: its memos are encrypted with its own key
let ours: Harness;
let otherBatch: string;
let ourBatch: string;

beforeAll(async () => {
  const codec = new EncryptionCodec(parseCodecKeys(`team-b:${randomBytes(32).toString('base64')}`));
  other = await startHarness('listing-other', asks, { dataConverter: encryptingDataConverter(codec) });
  ours = await startHarness('listing-ours', asks);
  otherBatch = (await other.client.startBatch(batch([{ name: 'deploy', args: { env: 'theirs' } }]))).workflowId;
  ourBatch = (await ours.client.startBatch(batch([{ name: 'deploy', args: { env: 'ours' } }]))).workflowId;
  await pendingApproval(other.client, otherBatch);
  await pendingApproval(ours.client, ourBatch);
});
afterAll(async () => {
  for (const [h, id] of [
    [other, otherBatch],
    [ours, ourBatch],
  ] as const)
    await h?.client.temporal.workflow
      .getHandle(id)
      .terminate('test over')
      .catch(() => undefined);
  await other?.close();
  await ours?.close();
});

describe('pendingApprovals on a namespace shared with a team whose memos this client cannot read', () => {
  it("lists this client's own task queue by default, untouched by the other team's batch", async () => {
    // Visibility catches up with a new ask a moment later, more on a loaded machine.
    const listed = await eventually('our batch listed', async () => {
      const l = await ours.client.pendingApprovals();
      return l.length ? l : undefined;
    });
    expect(listed.map((p) => p.workflowId)).toEqual([ourBatch]);
    expect(listed.unreadable).toEqual([]);
  });

  it('across the namespace: lists what it can read and says which batch it could not, and why', async () => {
    const listed = await eventually('both batches seen', async () => {
      const l = await ours.client.pendingApprovals({ allTaskQueues: true });
      return l.some((p) => p.workflowId === ourBatch) && l.unreadable.some((u) => u.workflowId === otherBatch)
        ? l
        : undefined;
    });
    expect(listed.map((p) => p.workflowId)).toContain(ourBatch);
    expect(listed.map((p) => p.workflowId)).not.toContain(otherBatch);
    const theirs = listed.unreadable.find((u) => u.workflowId === otherBatch);
    expect(theirs?.problem).toMatch(/cannot be decoded by this client .*binary\/encrypted.*SLUICE_CODEC_KEYS/);
    // The overview the CLI and the inbox use says the same.
    const overview = await ours.client.approvalsOverview();
    expect(overview.pending.map((p) => p.workflowId)).toContain(ourBatch);
    expect(overview.unreadable.map((u) => u.workflowId)).toContain(otherBatch);
  });

  it("a client without the key, on the other team's queue, lists nothing readable and reports the batch", async () => {
    const plain = new SluiceClient({ connection: ours.connection, taskQueue: other.taskQueue });
    const listed = await eventually('the other batch seen', async () => {
      const l = await plain.pendingApprovals();
      return l.unreadable.length ? l : undefined;
    });
    expect(listed).toHaveLength(0);
    expect(listed.unreadable.map((u) => u.workflowId)).toEqual([otherBatch]);
    // With the key it reads the card.
    expect((await other.client.pendingApprovals()).map((p) => p.workflowId)).toEqual([otherBatch]);
  });
});
