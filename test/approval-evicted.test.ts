// Batches waiting for a person leave the worker's sticky cache (worker/worker.ts,
// DEFAULT_MAX_CACHED_BATCHES): with more batches waiting than the cache holds, the evicted ones
// replay their history when the decision arrives and finish exactly as cached ones do.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { maxCachedWorkflows } from '../worker/main';
import { defineConfig, defineTool, type SluiceConfig } from '../define/config';
import { DEFAULT_MAX_CACHED_BATCHES } from '../worker/worker';
import { eventually } from './eventually';
import { batch, startHarness, text, type Harness } from './harness';

const ran: string[] = [];
const config: SluiceConfig = defineConfig({
  tools: [
    defineTool({
      name: 'deploy',
      description: 'deploys, once a person approves',
      input: z.object({ env: z.string() }),
      approval: 'ask',
      execute: ({ env }, ctx) => (ran.push(ctx.call.id), `deployed ${env}`),
    }),
  ],
});

const CACHE = 2;
const WAITING = 6;

let h: Harness;
beforeAll(async () => {
  h = await startHarness('approval-evicted', config, { maxCachedWorkflows: CACHE });
});
afterAll(() => h?.close());

describe('waiting batches and the sticky cache', () => {
  it('evicted waiting batches finish on their decision, by signal and by update, with one result each', async () => {
    const handles = [];
    for (let i = 0; i < WAITING; i++)
      handles.push(await h.client.startBatch(batch([{ id: `d${i}`, name: 'deploy', args: { env: `e${i}` } }])));
    // From the memo: reading it does not bring an evicted batch back into the cache.
    const pending = [];
    for (const handle of handles)
      pending.push(
        await eventually(`the ask of ${handle.workflowId}`, async () => {
          const read = await h.client.readApprovals(handle.workflowId);
          return read.pending[0];
        }),
      );
    // More batches wait than the cache holds: the rest were evicted.
    expect(h.worker.getStatus().numCachedWorkflows).toBeLessThanOrEqual(CACHE);
    expect(ran).toEqual([]);

    for (const [i, handle] of handles.entries()) {
      const p = pending[i];
      if (i % 2 === 0)
        await h.client.signalDecision({
          workflowId: handle.workflowId,
          approvalId: p.approvalId,
          decision: 'approve',
          by: 'tester',
        });
      else
        await h.client.approve(p.approvalId, { workflowId: handle.workflowId, by: 'tester', argsDigest: p.argsDigest });
    }
    const outs = await Promise.all(handles.map((handle) => handle.result()));
    for (const [i, out] of outs.entries()) {
      expect(out.results).toHaveLength(1);
      expect(out.results[0].result.isError).toBe(false);
      expect(text(out.results[0].result)).toBe(`deployed e${i}`);
      expect(out.events.filter((e) => e.type === 'tool/result')).toHaveLength(1);
      expect(out.events.map((e) => e.type)).toContain('approval/decided');
    }
    expect([...ran].sort()).toEqual(handles.map((_, i) => `d${i}`).sort());
  }, 120_000);

  it("Sluice's worker keeps 250 batches by default; SLUICE_MAX_CACHED_WORKFLOWS overrides it for `sluice worker`", async () => {
    const plain = await startHarness('approval-evicted-default', config, { autoStart: true });
    try {
      expect(plain.worker.options.maxCachedWorkflows).toBe(DEFAULT_MAX_CACHED_BATCHES);
    } finally {
      await plain.close();
    }
    expect(DEFAULT_MAX_CACHED_BATCHES).toBe(250);
    expect(maxCachedWorkflows({})).toBeUndefined();
    expect(maxCachedWorkflows({ SLUICE_MAX_CACHED_WORKFLOWS: '1000' })).toBe(1000);
    expect(maxCachedWorkflows({ SLUICE_MAX_CACHED_WORKFLOWS: '0' })).toBe(0);
    expect(() => maxCachedWorkflows({ SLUICE_MAX_CACHED_WORKFLOWS: 'lots' })).toThrow(/whole number of at least 2/);
    expect(() => maxCachedWorkflows({ SLUICE_MAX_CACHED_WORKFLOWS: '1' })).toThrow(/SLUICE_MAX_CACHED_WORKFLOWS/);
  }, 60_000);
});
