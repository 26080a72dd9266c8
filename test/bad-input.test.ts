// Bad input of every kind gets a clear error result (or a clear refusal before anything starts),
// loses nothing else in the batch, and never fails a workflow task.
import { WorkflowNotFoundError } from '@temporalio/client';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { z } from 'zod';
import { main, readCallsFile, UsageError } from '../cli';
import { SluiceError } from '../client/client';
import { MAX_ARGUMENT_CHARS } from '../pipeline/budget';
import type { BatchOutput } from '../pipeline/types';
import { defineConfig, defineTool } from '../define/config';
import { historyEventTypes } from './faults/fault-kit';
import { batch, startHarness, text, type Harness } from './harness';
import { eventually, pendingApproval } from './eventually';

class Point {
  constructor(readonly x = 1) {}
}
const BAD_VALUES: Record<string, () => unknown> = {
  bigint: () => ({ n: 10n }),
  cycle: () => {
    const a: Record<string, unknown> = { name: 'a' };
    a.self = a;
    return a;
  },
  undefined: () => ({ a: undefined }),
  nan: () => ({ ratio: NaN }),
  infinity: () => [Infinity],
  negativeZero: () => ({ z: -0 }),
  classInstance: () => ({ p: new Point() }),
  date: () => ({ when: new Date(0) }),
  map: () => new Map([['a', 1]]),
  throwingGetter: () => ({
    get secret(): string {
      throw new Error('getter exploded');
    },
  }),
  symbolKey: () => ({ [Symbol('s')]: 1 }),
  fn: () => ({ f: () => 1 }),
};

const echo = defineTool({
  name: 'echo',
  description: 'Echo.',
  input: z.object({ text: z.string() }),
  execute: ({ text }) => text,
});
const bad = defineTool({
  name: 'bad_value',
  description: 'Returns a value that is not lossless JSON.',
  input: z.object({ kind: z.enum(Object.keys(BAD_VALUES) as [string, ...string[]]) }),
  execute: ({ kind }) => BAD_VALUES[kind](),
});
const ask = defineTool({
  name: 'ask_me',
  description: 'Asks first.',
  input: z.object({}),
  approval: 'ask',
  approvalTimeoutMs: 1_500,
  execute: () => 'ran',
});
const askLong = defineTool({
  name: 'ask_long',
  description: 'Asks, with time to answer.',
  input: z.object({}),
  approval: 'ask',
  approvalTimeoutMs: 60_000,
  execute: () => 'ran',
});

let h: Harness;
const started: string[] = [];
beforeAll(async () => {
  h = await startHarness(
    'bad-input',
    defineConfig({
      tools: [echo, bad, ask, askLong],
      preExecute: [
        function picky(ctx) {
          const t = (ctx.call.args as { text?: string }).text;
          if (t === 'deny-without-reason') return { kind: 'deny' } as never;
          if (t === 'kind-maybe') return { kind: 'maybe' } as never;
          if (t === 'number') return 42 as never;
        },
      ],
      postExecute: [
        function greedy(ctx) {
          if ((ctx.call.args as { text?: string }).text === 'both')
            return { action: 'accept', content: [{ type: 'text', text: 'x' }], value: 'y' };
        },
      ],
    }),
  );
});
afterAll(() => h?.close());

// No bad input may fail a workflow task: every batch's history is checked.
afterEach(async () => {
  for (const id of started.splice(0)) {
    const types = await historyEventTypes(h.client.temporal.workflow.getHandle(id));
    expect(
      types.filter((t) => t === 'EVENT_TYPE_WORKFLOW_TASK_FAILED'),
      id,
    ).toEqual([]);
  }
});

async function run(calls: { name: string; args?: object | string }[], extra = {}): Promise<BatchOutput> {
  const handle = await h.client.startBatch(batch(calls, extra));
  started.push(handle.workflowId);
  return (await handle.result()) as BatchOutput;
}

const err = (out: BatchOutput, i: number) => ({
  code: out.results[i].result.error?.code,
  text: text(out.results[i].result),
});

describe('calls', () => {
  it('an unknown tool, arguments that are not JSON, not an object, or fail the schema: error results, and the good call runs', async () => {
    const out = await run([
      { name: 'no_such_tool', args: {} },
      { name: 'echo', args: '{"text": "unterminated' },
      { name: 'echo', args: '[1, 2]' },
      { name: 'echo', args: { text: 42 } },
      { name: 'echo', args: { text: 'fine' } },
    ]);
    expect(err(out, 0)).toEqual({
      code: 'UNKNOWN_TOOL',
      text: expect.stringMatching(/^Error: unknown tool "no_such_tool"; the available tools are: echo, bad_value/),
    });
    expect(err(out, 1)).toEqual({
      code: 'INVALID_ARGS',
      text: expect.stringMatching(/^Error: arguments is not lossless JSON: not valid JSON/),
    });
    expect(err(out, 2)).toEqual({
      code: 'INVALID_ARGS',
      text: 'Error: arguments is not lossless JSON: must be a JSON object',
    });
    expect(err(out, 3)).toEqual({
      code: 'INVALID_ARGS',
      text: expect.stringMatching(/invalid arguments for echo: text: .*Fix the arguments/),
    });
    expect(text(out.results[4].result)).toBe('fine');
    expect(out.events.filter((e) => e.type === 'tool/result')).toHaveLength(5);
  });

  it('3 MB of arguments: the call gets INVALID_ARGS saying so; the rest of the batch runs', async () => {
    const huge = JSON.stringify({ text: 'x'.repeat(3 * 1024 * 1024) });
    const out = await run([
      { name: 'echo', args: huge },
      { name: 'echo', args: { text: 'after' } },
    ]);
    expect(err(out, 0)).toEqual({
      code: 'INVALID_ARGS',
      text: `Error: the arguments were ${huge.length} characters, over the ${MAX_ARGUMENT_CHARS}-character limit for one call, so they were not sent and the call did not run. Split the work into smaller calls (e.g. write a large file in parts).`,
    });
    expect(text(out.results[1].result)).toBe('after');
    expect(out.events.find((e) => e.type === 'tool/call')?.data).toMatchObject({ argumentsChars: huge.length });
  });

  it('a batch over the input limit, or over 1,000 calls, is refused before anything starts', async () => {
    const big = batch(Array.from({ length: 6 }, (_, i) => ({ name: 'echo', args: { text: 'y'.repeat(200_000 + i) } })));
    await expect(h.client.startBatch(big)).rejects.toThrow(SluiceError);
    await expect(h.client.startBatch(big)).rejects.toThrow(
      /over the 1048576-byte limit for one batch .* no batch was started/,
    );
    await expect(
      h.client.temporal.workflow.getHandle(`sluice-batch:${big.sessionId}:1:1`).describe(),
    ).rejects.toBeInstanceOf(WorkflowNotFoundError);
    const many = batch(Array.from({ length: 1001 }, (_, i) => ({ id: `c${i}`, name: 'echo', args: { text: 'x' } })));
    await expect(h.client.startBatch(many)).rejects.toThrow(/at most 1000 calls \(this one has 1001\)/);
  });
});

describe('results', () => {
  it.each(Object.keys(BAD_VALUES))('a body returning a value with %s gets INVALID_TOOL_OUTPUT', async (kind) => {
    const out = await run([
      { name: 'bad_value', args: { kind } },
      { name: 'echo', args: { text: 'still here' } },
    ]);
    const e = err(out, 0);
    expect(e.code).toBe('INVALID_TOOL_OUTPUT');
    // The body ran: the result says its effects happened rather than that the call failed.
    expect(e.text).toMatch(
      /^bad_value ran to the end, so its effects happened, but the value it returned cannot be recorded: .*is not lossless JSON/,
    );
    expect(out.results[0].result.isError).toBe(false);
    expect(text(out.results[1].result)).toBe('still here');
  });

  it('extension answers that are garbage fail the call closed, with a message naming the extension', async () => {
    const out = await run([
      { name: 'echo', args: { text: 'deny-without-reason' } },
      { name: 'echo', args: { text: 'kind-maybe' } },
      { name: 'echo', args: { text: 'number' } },
      { name: 'echo', args: { text: 'both' } },
    ]);
    expect(err(out, 0).text).toMatch(
      /pre-execute handler picky threw: pre-execute handler picky denied without a reason/,
    );
    expect(err(out, 1).text).toMatch(
      /pre-execute handler picky returned \{"kind":"maybe"\}; a pre-execute handler returns/,
    );
    expect(err(out, 2).text).toMatch(/pre-execute handler picky returned number 42/);
    expect(err(out, 3).text).toMatch(
      /post-execute handler greedy threw: post-execute handler greedy replaced both content and value/,
    );
    for (let i = 0; i < 4; i++) expect(out.results[i].result.error?.code).toBe('PIPELINE_FAILED');
  });
});

describe('approval messages', () => {
  it('garbage signals, unknown ids, wrong digests and duplicates are ignored; the first valid decision wins', async () => {
    const req = batch([{ name: 'ask_long', args: {} }]);
    const handle = await h.client.startBatch(req);
    started.push(handle.workflowId);
    const pending = await waitForPending(handle.workflowId);
    const wf = h.client.temporal.workflow.getHandle(handle.workflowId);
    for (const garbage of [
      null,
      'approve',
      42,
      [],
      {},
      { approvalId: 5 },
      { approvalId: pending.approvalId, decision: 'maybe' },
      { approvalId: 'nope', decision: 'approve' },
    ]) {
      await wf.signal('sluice.decide', garbage);
    }
    await h.client.signalDecision({
      approvalId: pending.approvalId,
      workflowId: handle.workflowId,
      decision: 'approve',
      by: 'forger',
      argsDigest: 'sha256:bad',
    });
    // Still waiting: nothing above counted.
    const state = await h.client.batchState(handle.workflowId);
    expect(state.pending.map((p) => p.approvalId)).toEqual([pending.approvalId]);
    await h.client.signalDecision({
      approvalId: pending.approvalId,
      workflowId: handle.workflowId,
      decision: 'approve',
      by: 'first',
    });
    await h.client.signalDecision({
      approvalId: pending.approvalId,
      workflowId: handle.workflowId,
      decision: 'deny',
      by: 'second',
    });
    const out = (await handle.result()) as BatchOutput;
    expect(out.events.filter((e) => e.type === 'approval/decided').map((e) => [e.data.outcome, e.data.by])).toEqual([
      ['allowed-once', 'first'],
    ]);
    expect(text(out.results[0].result)).toBe('ran');
  });

  it('a decision after the deny timeout is refused (update) or ignored (signal); the call stays denied', async () => {
    const req = batch([
      { name: 'ask_me', args: {} },
      { name: 'ask_long', args: {} },
    ]);
    const handle = await h.client.startBatch(req);
    started.push(handle.workflowId);
    const first = await waitForPending(handle.workflowId, (p) => p.callId === 'call-1');
    const second = await waitForPending(handle.workflowId, (p) => p.callId === 'call-2');
    // Both are asked together; wait until the first has expired, while the second still waits.
    await eventually('the first ask to expire', async () =>
      (await h.client.batchState(handle.workflowId)).decided.some((d) => d.callId === 'call-1'),
    );
    await expect(h.client.approve(first.approvalId, { workflowId: handle.workflowId })).rejects.toThrow(
      /expired at .*: nobody decided before the deny timeout, so the call was denied/,
    );
    await h.client.signalDecision({ approvalId: first.approvalId, workflowId: handle.workflowId, decision: 'approve' });
    await h.client.approve(second.approvalId, { workflowId: handle.workflowId });
    const out = (await handle.result()) as BatchOutput;
    expect(err(out, 0)).toEqual({
      code: 'DENIED',
      text: expect.stringMatching(/approval was required but not given \(no decision within 2s \(deny timeout\)\)/),
    });
    expect(text(out.results[1].result)).toBe('ran');
  });
});

describe('batch files (sluice batch)', () => {
  const dir = () => fs.mkdtempSync(path.join(inject('runDir'), 'cli-'));
  const write = (name: string, body: string) => {
    const f = path.join(dir(), name);
    fs.writeFileSync(f, body);
    return f;
  };

  it('a missing file, bad JSON or no calls array: a usage error that shows the expected shape', () => {
    expect(() => readCallsFile(path.join(dir(), 'none.json'), {})).toThrow(/cannot read .*none.json: no such file/);
    expect(() => readCallsFile(write('bad.json', '{"calls": [}'), {})).toThrow(UsageError);
    expect(() => readCallsFile(write('bad.json', '{"calls": [}'), {})).toThrow(
      /is not valid JSON .*Expected \{"sessionId"/,
    );
    expect(() => readCallsFile(write('nocalls.json', '{"sessionId": "s"}'), {})).toThrow(/has no "calls" array/);
    expect(() => readCallsFile(write('null.json', 'null'), {})).toThrow(/has no "calls" array/);
  });

  it('the CLI prints the problem and exits non-zero, for a bad file and for malformed calls', async () => {
    const lines: string[] = [];
    expect(await main(['batch', write('bad.json', 'nope')], (s) => lines.push(s))).toBe(2);
    expect(lines.join('\n')).toMatch(/sluice batch: .*bad.json is not valid JSON/);
    lines.length = 0;
    const malformed = write(
      'malformed.json',
      JSON.stringify({ sessionId: `malformed-${Date.now()}`, calls: [{ id: 'a', arguments: '{}' }] }),
    );
    expect(
      await main(['batch', malformed, '--address', inject('temporalAddress'), '--task-queue', h.taskQueue], (s) =>
        lines.push(s),
      ),
    ).toBe(1);
    expect(lines.join('\n')).toMatch(/malformed batch: calls\[0\]\.name must be a non-empty string/);
  });
});

const waitForPending = (workflowId: string, match?: (p: { callId: string }) => boolean) =>
  pendingApproval(h.client, workflowId, match);
