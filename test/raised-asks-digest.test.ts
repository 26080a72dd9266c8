// Issue 22 item 3: asks raised early (a later call's ask raised together with the first, from the
// look-ahead's preflight) showed a plain `sha256:` digest of their arguments while the first ask
// showed the keyed `hmac-sha256:` one. Several asks raised together, on the real dev server: every
// digest on every surface (state query, memo, session log, audit) is keyed, and decisions bound to
// the keyed digests are taken.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { auditHistories } from '../client/audit';
import { readSessionLog } from '../stores/sink';
import { defineConfig, defineTool } from '../define/config';
import { pendingApprovals } from './eventually';
import { batch, startHarness, text, type Harness } from './harness';

const config = defineConfig({
  tools: [
    defineTool({
      name: 'unlock',
      description: 'unlocks a door with a PIN (asks first)',
      input: z.object({ pin: z.string() }),
      approval: 'ask',
      execute: ({ pin }) => `unlocked ${pin.length}`,
    }),
  ],
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness('raised-asks-digest', config);
});
afterAll(() => h?.close());

/** Every `…sha256:<hex>` in a JSON text: the keyed ones and any plain one. */
function digestsIn(json: string): { keyed: string[]; plain: string[] } {
  const keyed = json.match(/hmac-sha256:[0-9a-f]{64}/g) ?? [];
  const plain = json.match(/(?<!hmac-)sha256:[0-9a-f]{64}/g) ?? [];
  return { keyed, plain };
}

describe('asks raised together', () => {
  it('every digest on every surface is keyed, for the first ask and those raised with it', async () => {
    const req = batch([
      { id: 'a', name: 'unlock', args: { pin: '1111' } },
      { id: 'b', name: 'unlock', args: { pin: '2222' } },
      { id: 'c', name: 'unlock', args: { pin: '3333' } },
      { id: 'd', name: 'unlock', args: { pin: '4444' } },
    ]);
    const handle = await h.client.startBatch(req);
    const pending = await pendingApprovals(h.client, handle.workflowId, 4);
    expect(pending.map((p) => p.callId).sort()).toEqual(['a', 'b', 'c', 'd']);
    for (const p of pending) expect(p.argsDigest).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    // Four different arguments, four different digests.
    expect(new Set(pending.map((p) => p.argsDigest)).size).toBe(4);

    // The state query (a worker answers it) and the memo (the server keeps it).
    const state = await h.client.batchState(handle.workflowId);
    expect(state.pending).toHaveLength(4);
    const stateDigests = digestsIn(JSON.stringify(state));
    expect(stateDigests.plain).toEqual([]);
    expect(new Set(stateDigests.keyed)).toEqual(new Set(pending.map((p) => p.argsDigest)));
    const { memo } = await h.client.readApprovals(handle.workflowId);
    expect(digestsIn(JSON.stringify(memo)).plain).toEqual([]);

    // Decided in reverse order, each by update bound to the digest shown (the update requires it).
    for (const p of [...pending].reverse())
      await h.client.approve(p.approvalId, { workflowId: handle.workflowId, by: 'ops', argsDigest: p.argsDigest });
    const out = await handle.result();
    expect(out.results.map((r) => text(r.result))).toEqual(['unlocked 4', 'unlocked 4', 'unlocked 4', 'unlocked 4']);

    // The session log the worker wrote, and the audit rebuilt from the history alone.
    const events = await readSessionLog(h.stateDir, req.sessionId);
    const asked = events.filter((e) => e.type === 'approval/asked');
    expect(asked).toHaveLength(4);
    for (const e of asked) expect(String(e.data.argsDigest)).toMatch(/^hmac-sha256:/);
    expect(digestsIn(JSON.stringify(events)).plain).toEqual([]);
    expect(digestsIn(JSON.stringify(out)).plain).toEqual([]);
    const history = await h.client.temporal.workflow.getHandle(handle.workflowId).fetchHistory();
    const audit = auditHistories([{ workflowId: handle.workflowId, history, source: 'server' }]);
    const auditDigests = digestsIn(JSON.stringify(audit));
    expect(auditDigests.plain).toEqual([]);
    expect(auditDigests.keyed.length).toBeGreaterThanOrEqual(4);
  });
});
