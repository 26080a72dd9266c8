// One batch of 1,000 calls, the most a batch takes: it completes, every call has exactly one
// result, and its history stays within Temporal's limits.
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { jsonBytes, MAX_CALLS_PER_BATCH, PAYLOAD_LIMIT_BYTES } from '../pipeline/budget';
import type { BatchOutput, Json } from '../pipeline/types';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';

const echo = defineTool({
  name: 'echo',
  description: 'Echo.',
  input: z.object({ text: z.string() }),
  isConcurrencySafe: () => true,
  execute: ({ text }) => text,
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness('thousand', defineConfig({ tools: [echo] }));
});
afterAll(() => h?.close());

it(`a batch of ${MAX_CALLS_PER_BATCH} calls completes within Temporal's limits`, { timeout: 600_000 }, async () => {
  const req = batch(
    Array.from({ length: MAX_CALLS_PER_BATCH }, (_, i) => ({ id: `c${i}`, name: 'echo', args: { text: `t${i}` } })),
  );
  const began = Date.now();
  const handle = await h.client.startBatch(req);
  const out = (await handle.result()) as BatchOutput;
  const ms = Date.now() - began;
  expect(out.results.map((r) => text(r.result))).toEqual(req.calls.map((_, i) => `t${i}`));
  const resultEvents = out.events.filter((e) => e.type === 'tool/result').map((e) => e.data.callId);
  expect(new Set(resultEvents).size).toBe(MAX_CALLS_PER_BATCH);
  expect(resultEvents).toHaveLength(MAX_CALLS_PER_BATCH);

  const history = await handle.fetchHistory();
  const events = history.events ?? [];
  const E = temporal.api.enums.v1.EventType;
  expect(events.filter((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_FAILED)).toEqual([]);
  const size = Number(
    [...events].reverse().find((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED)
      ?.workflowTaskStartedEventAttributes?.historySizeBytes ?? 0,
  );
  const outputBytes = jsonBytes(out as unknown as Json);
  console.log(
    `${MAX_CALLS_PER_BATCH} calls: ${ms} ms, ${events.length} history events, ${size} history bytes, output ${outputBytes} bytes`,
  );
  expect(events.length).toBeLessThan(51_200);
  expect(size).toBeLessThan(50 * 1024 * 1024);
  expect(outputBytes).toBeLessThan(PAYLOAD_LIMIT_BYTES);
});
