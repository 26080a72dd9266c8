// Results for machines: the tool message carries the error code and, while nothing rewrote it, the
// tool's structured value; the workflow returns each result's content once (its results entry and
// tool/result event refer to the tool message), and every reader gets the full shape back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toAISDKResults } from '../agent/convert';
import { expandBatchOutput, type BatchOutputWire } from '../codec/output';
import type { ModelMessage } from '../pipeline/types';
import { defineConfig, defineTool, toolOutput } from '../define/config';
import { readSessionLog } from '../stores/sink';
import { batch, startHarness, type Harness } from './harness';

const rows = Array.from({ length: 50 }, (_, i) => ({ id: i, name: `row ${i}` }));
const tools = [
  defineTool({ name: 'rows', description: 'A structured value.', input: z.object({}), execute: () => ({ rows }) }),
  defineTool({
    name: 'rows_rewritten',
    description: 'A structured value a post-execute handler rewrites.',
    input: z.object({}),
    execute: () => ({ rows }),
  }),
  defineTool({
    name: 'mcp_like',
    description: 'Its own text plus a structured value, as MCP tools give them.',
    input: z.object({}),
    execute: () => toolOutput({ content: [{ type: 'text', text: '50 rows' }], value: { count: 50 } }),
  }),
  defineTool({
    name: 'long_text',
    description: 'A 20 KB text with a marker that occurs once in it.',
    input: z.object({}),
    execute: () => `UNIQUE-MARKER ${'x'.repeat(20 * 1024)}`,
  }),
  defineTool({
    name: 'dangerous',
    description: 'Always asks; nobody is listening.',
    input: z.object({}),
    approval: 'deny',
    execute: () => 'ran',
  }),
  defineTool({
    name: 'where',
    description: 'Says which session, turn and step its body ran for.',
    input: z.object({}),
    execute: (_args, ctx) => ({ sessionId: ctx.sessionId, turn: ctx.turn, step: ctx.step, key: ctx.idempotencyKey }),
  }),
  defineTool({
    name: 'typed',
    description: 'Takes a number.',
    input: z.object({ n: z.number() }),
    execute: ({ n }) => ({ doubled: n * 2 }),
  }),
];

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    'machine',
    defineConfig({
      tools,
      postExecute: [
        function rewrite(ctx) {
          if (ctx.call.name === 'rows_rewritten')
            return { action: 'accept', content: [{ type: 'text', text: 'rows hidden' }] };
          return undefined;
        },
      ],
    }),
  );
});
afterAll(() => h?.close());

const tool = (m: ModelMessage) => m as Extract<ModelMessage, { role: 'tool' }>;

describe('tool messages for machines', () => {
  it('carry the error code of every kind of error result, and the untouched structured value', async () => {
    const req = batch([
      { id: 'a', name: 'rows' },
      { id: 'b', name: 'rows_rewritten' },
      { id: 'c', name: 'mcp_like' },
      { id: 'd', name: 'dangerous' },
      { id: 'e', name: 'typed', args: { n: 'two' } },
      { id: 'f', name: 'no_such_tool' },
      { id: 'g', name: 'typed', args: { n: 2 } },
    ]);
    const out = await h.client.runBatch(req);
    const m = out.messages.map(tool);
    expect(m[0].value).toEqual({ rows });
    expect(m[0].error).toBeUndefined();
    // A post-execute handler changed what the model reads: the value no longer matches it.
    expect(m[1].value).toBeUndefined();
    expect(m[1].content).toEqual([{ type: 'text', text: 'rows hidden' }]);
    // A tool's own content beside its value (MCP's content + structuredContent): both go.
    expect(m[2].value).toEqual({ count: 50 });
    expect(m[2].content).toEqual([{ type: 'text', text: '50 rows' }]);
    expect(m.slice(3, 6).map((x) => [x.isError, x.error?.code, x.value])).toEqual([
      [true, 'DENIED', undefined],
      [true, 'INVALID_ARGS', undefined],
      [true, 'UNKNOWN_TOOL', undefined],
    ]);
    expect(m[3].error?.message).toMatch(/\S/);
    expect(m[6].value).toEqual({ doubled: 4 });

    // The results entries read the same content and value: the very same objects.
    out.results.forEach((r, i) => {
      expect(r.result.content).toBe(m[i].content);
      expect(r.result.value).toBe(m[i].value);
    });

    // A converter passes them on: the AI SDK gets JSON for a value, a denial as a denial.
    const parts = toAISDKResults(out.messages).flatMap((x) => x.content as { output: { type: string } }[]);
    expect(parts.map((p) => p.output.type)).toEqual([
      'json',
      'text',
      'json',
      'execution-denied',
      'error-text',
      'error-text',
      'json',
    ]);
  });

  it('the workflow returns a result’s content once; readers get it back whole', async () => {
    const req = batch([{ id: 'big', name: 'long_text' }]);
    const handle = await h.client.startBatch(req);
    const out = await handle.result();
    const raw = (await h.client.temporal.workflow.getHandle(handle.workflowId).result()) as BatchOutputWire;
    const rawJson = JSON.stringify(raw);
    expect(rawJson.split('UNIQUE-MARKER').length - 1).toBe(1);
    expect(rawJson.length).toBeLessThan(20 * 1024 + 2048);
    // Packed 4: content in messages goes without saying.
    expect(raw.packed).toBe(4);
    expect(raw.results?.[0]?.result?.content).toBeUndefined();
    const rawResult = raw.events.find((e) => ('type' in e ? e.type === 'tool/result' : 'tool/result' in e));
    expect(rawResult).toBeDefined();
    expect(JSON.stringify(rawResult)).not.toContain('UNIQUE-MARKER');

    // The client's result, the expanded raw result and the session log all show the content.
    expect(expandBatchOutput(raw)).toEqual(out);
    const event = out.events.find((e) => e.type === 'tool/result');
    expect(event?.data.content).toBe(out.messages[0].content);
    expect(out.results[0].result.content).toBe(out.messages[0].content);
    const logged = (await readSessionLog(h.stateDir, req.sessionId)).find((e) => e.type === 'tool/result');
    expect(JSON.stringify(logged?.data.content)).toContain('UNIQUE-MARKER');
    // Key for key as the sink logged it (the audit compares the log with the batch's events).
    expect(JSON.stringify(event)).toBe(JSON.stringify(logged));
    // A string value is its own content: it is not carried twice.
    expect(tool(out.messages[0]).value).toBeUndefined();
  });

  it('a body reads its session id, turn and step from the workflow id, which its input leaves them to', async () => {
    // A session id with the separator in it: the turn and step are the id's last two parts.
    const req = batch([{ id: 'w', name: 'where' }], { sessionId: `team:a:${Date.now()}`, turn: 3, step: 2 });
    const handle = await h.client.startBatch(req);
    const out = await handle.result();
    expect(tool(out.messages[0]).value).toEqual({
      sessionId: req.sessionId,
      turn: 3,
      step: 2,
      key: `${handle.workflowId}/w`,
    });
    const history = await h.client.temporal.workflow.getHandle(handle.workflowId).fetchHistory();
    const scheduled = (history.events ?? []).find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'executeBody',
    );
    const payload = scheduled?.activityTaskScheduledEventAttributes?.input?.payloads?.[0];
    const input = JSON.parse(Buffer.from(payload?.data ?? []).toString('utf8'));
    expect(input).toMatchObject({ callId: 'w', name: 'where' });
    for (const k of ['sessionId', 'turn', 'step', 'workflowId', 'idempotencyKey']) expect(input).not.toHaveProperty(k);
    // The raw output is packed; read back, it is what the client returned, key for key.
    const raw = (await h.client.temporal.workflow.getHandle(handle.workflowId).result()) as BatchOutputWire;
    expect(raw.packed).toBe(4);
    expect(raw.results).toBeUndefined();
    expect(JSON.stringify(expandBatchOutput(raw))).toBe(JSON.stringify(out));
  });

  it('outputs of batches from before content-once read as they are', () => {
    const old = {
      sessionId: 's',
      turn: 1,
      step: 1,
      messages: [
        {
          role: 'tool' as const,
          toolCallId: 'a',
          toolName: 't',
          content: [{ type: 'text' as const, text: 'x' }],
          isError: false,
        },
      ],
      results: [
        { callId: 'a', name: 't', result: { content: [{ type: 'text' as const, text: 'x' }], isError: false } },
      ],
      events: [],
      nextSeq: 0,
      concludesTurn: false,
      cancelled: false,
      state: {},
    };
    expect(expandBatchOutput(old)).toBe(old);
    const broken: BatchOutputWire = {
      ...old,
      contentIn: 'messages',
      messages: [],
      results: [{ callId: 'a', name: 't', result: { isError: false } }],
    };
    expect(() => expandBatchOutput(broken)).toThrow(/refers to the tool message of call "a"/);
  });
});
