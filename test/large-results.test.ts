// Results too big for Temporal: the claim check stores them aside and the model gets a preview
// with a note; a batch of many large results stays far below the history limits.
import { temporal } from '@temporalio/proto';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { HISTORY_TARGET_BYTES, jsonBytes, PAYLOAD_LIMIT_BYTES } from '../pipeline/budget';
import type { BatchOutput, Json } from '../pipeline/types';
import { FileResultStore, storedResultOf } from '../stores/claim-check';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';

const big = defineTool({
  name: 'big',
  description: 'Returns n characters of a repeating, position-marked text.',
  input: z.object({ n: z.number().int().min(0), noise: z.number().int().min(0).optional() }),
  isConcurrencySafe: () => true,
  execute: ({ n }) => makeText(n),
});

function makeText(n: number): string {
  let s = '';
  for (let i = 0; s.length < n; i++) s += `line ${i} ........................................................\n`;
  return s.slice(0, n);
}

let h: Harness;
let store: FileResultStore;
beforeAll(async () => {
  h = await startHarness(
    'large',
    defineConfig({
      tools: [big],
      preExecute: [
        function noisy(ctx) {
          const noise = (ctx.call.args as { noise?: number }).noise;
          if (noise) ctx.emit('test/noise', { pad: 'n'.repeat(noise) });
        },
      ],
      postExecute: [
        function measure(ctx) {
          ctx.emit('test/post-saw', {
            chars: ctx.result.content.map((b) => (b.type === 'text' ? b.text.length : 0)).reduce((a, b) => a + b, 0),
          });
        },
      ],
    }),
  );
  store = new FileResultStore(path.join(h.stateDir, 'results'));
});
afterAll(() => h?.close());

async function historyOf(workflowId: string) {
  const history = await h.client.temporal.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const E = temporal.api.enums.v1.EventType;
  const lastStarted = [...events].reverse().find((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  return {
    events: events.length,
    bytes: Number(lastStarted?.workflowTaskStartedEventAttributes?.historySizeBytes ?? 0),
    taskFailures: events.filter((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_FAILED).length,
  };
}

describe('claim check', () => {
  it('stores a result over the bound aside; the model gets a preview, a note and a reference', async () => {
    const full = makeText(200_000);
    const req = batch([{ name: 'big', args: { n: 200_000 } }]);
    const out = await h.client.runBatch(req);
    const r = out.results[0].result;
    const shown = text(r);
    expect(r.isError).toBe(false);
    expect(shown.length).toBeLessThan(64 * 1024 + 400);
    expect(full.startsWith(shown.slice(0, 1000))).toBe(true);
    const stored = r.meta!.storedResult as { ref: string; key: string };
    // Over 64 KiB, the body's result was stored as it crossed history, and the bound keeps that copy.
    expect(stored.key).toBe(`sluice-batch:${req.sessionId}:1:1/call-1#body`);
    expect(shown).toContain(`stored aside as ${stored.ref}`);
    expect(r.meta).toMatchObject({ truncated: true, originalChars: 200_000 });
    const kept = storedResultOf((await store.get(stored.ref))!);
    expect(text(kept)).toBe(full);
    // Post-execute saw the whole result, before the bound applied.
    expect(out.events.find((e) => e.type === 'test/post-saw')?.data.chars).toBe(200_000);
  });

  it('a body result over 64 KiB crosses history as a stored preview even when its share is larger', async () => {
    // A batch of one call: its share is far above 64 KiB, so the body's input leaves it out.
    const req = batch([{ name: 'big', args: { n: 100_000 } }]);
    const handle = await h.client.startBatch(req);
    const out = (await handle.result()) as BatchOutput;
    const r = out.results[0].result;
    expect(r.isError).toBe(false);
    expect(r.meta).toMatchObject({ truncated: true, originalChars: 100_000 });
    expect(out.events.find((e) => e.type === 'test/post-saw')?.data.chars).toBe(100_000);
    const history = await h.client.temporal.workflow.getHandle(handle.workflowId).fetchHistory();
    const body = (history.events ?? []).find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'executeBody',
    );
    const payload = (p?: temporal.api.common.v1.IPayloads | null) => Buffer.from(p?.payloads?.[0]?.data ?? []);
    expect(JSON.parse(payload(body?.activityTaskScheduledEventAttributes?.input).toString())).not.toHaveProperty(
      'inlineBytes',
    );
    const done = (history.events ?? []).find(
      (e) => e.activityTaskCompletedEventAttributes?.scheduledEventId?.toString() === body?.eventId?.toString(),
    );
    const size = payload(done?.activityTaskCompletedEventAttributes?.result).length;
    expect(size).toBeGreaterThan(0);
    expect(size).toBeLessThan(64 * 1024);
  });

  it('a body returning 10 MB completes with a preview; history stays small', async () => {
    const req = batch([{ name: 'big', args: { n: 10_000_000 } }]);
    const handle = await h.client.startBatch(req);
    const out = (await handle.result()) as BatchOutput;
    const r = out.results[0].result;
    expect(r.isError).toBe(false);
    expect(text(r)).toMatch(/showing \d+ of 10000000 characters\. The full result is stored aside as sluice-result:/);
    expect(out.events.find((e) => e.type === 'test/post-saw')?.data.chars).toBe(10_000_000);
    // The body's own result, stored once (the text as its value) and read back whole.
    const kept = storedResultOf((await store.get((r.meta!.storedResult as { ref: string }).ref))!);
    expect(text(kept).length).toBe(10_000_000);
    const hist = await historyOf(handle.workflowId);
    expect(hist.taskFailures).toBe(0);
    expect(hist.bytes).toBeLessThan(1024 * 1024);
  });

  it('150 calls of 400 KB each (60 MB in all), with 3 KB of hook events each, complete within the payload and history budgets', {
    timeout: 300_000,
  }, async () => {
    const n = 150;
    const req = batch(
      Array.from({ length: n }, (_, i) => ({ id: `c${i}`, name: 'big', args: { n: 400_000, noise: 3_000 } })),
    );
    const handle = await h.client.startBatch(req);
    const out = (await handle.result()) as BatchOutput;
    expect(out.results).toHaveLength(n);
    for (const { result } of out.results) {
      expect(result.isError).toBe(false);
      expect(result.meta?.storedResult).toBeDefined();
    }
    const outputBytes = jsonBytes(out as unknown as Json);
    const hist = await historyOf(handle.workflowId);
    console.log(
      `large batch: ${n} calls x 400 KB -> output ${outputBytes} bytes, history ${hist.events} events / ${hist.bytes} bytes`,
    );
    expect(outputBytes).toBeLessThan(PAYLOAD_LIMIT_BYTES);
    expect(hist.bytes).toBeLessThan(HISTORY_TARGET_BYTES + 2 * 1024 * 1024);
    expect(hist.events).toBeLessThan(10_240);
    expect(hist.taskFailures).toBe(0);
  });
});
