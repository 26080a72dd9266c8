// A batch of one call runs it straight through (workflows/batch.ts runOneCall) when its first
// round says so (FirstRound.straight), and otherwise through the model-order scheduler. Both must
// issue the same commands: each live history here replays as recorded (straight) and with the
// round's `straight` taken out of its marker, which sends the replay down the scheduler, as a
// batch recorded before this build replays. On the real dev server.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import type { BatchRequest } from '../client/client';
import { defineConfig, defineTool } from '../define/config';
import { codeModeTool } from '../tools/code-mode';
import { eventually, pendingApproval } from './eventually';
import { batch, startHarness, text, type Harness } from './harness';
import { echoTool, readFileTool } from './fixtures/quick-tools';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-one-call-'));
fs.writeFileSync(path.join(dir, 'a.txt'), '1');
fs.writeFileSync(path.join(dir, 'b.txt'), '2');

/** Calls whose body has started, by call id. */
const started = new Set<string>();

const config = defineConfig({
  tools: [
    echoTool,
    readFileTool(dir),
    defineTool({
      name: 'guarded',
      description: 'Returns its text, once a person approves.',
      input: z.object({ text: z.string() }),
      approval: 'ask',
      execute: ({ text }) => `approved ${text}`,
    }),
    defineTool({
      name: 'wait',
      description: 'Waits until it is cancelled.',
      input: z.object({}),
      execute: (_args, ctx) =>
        new Promise<string>((_resolve, reject) => {
          started.add(ctx.call.id);
          ctx.signal.addEventListener('abort', () => reject(new Error('cancelled')));
        }),
    }),
    codeModeTool({ limits: { cpuMs: 1_000 }, heartbeatTimeoutMs: 3_000 }),
  ],
  preExecute: [
    {
      name: 'no-secrets',
      handler: (ctx) =>
        ctx.call.name === 'echo' && ctx.call.args.text === 'secret'
          ? { kind: 'deny', reason: 'no secrets' }
          : undefined,
    },
  ],
  // A post-execute hook makes the settle a stage of its own (a local activity), so the straight
  // path's settle command is in the history to be matched on replay.
  postExecute: [
    (ctx) =>
      ctx.call.name === 'echo' && !ctx.result.isError
        ? {
            action: 'accept',
            content: [
              { type: 'text', text: `${ctx.result.content.map((b) => (b.type === 'text' ? b.text : '')).join('')}!` },
            ],
          }
        : undefined,
  ],
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness('one-call-straight', config);
});
afterAll(async () => {
  await h?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

type History = temporal.api.history.v1.IHistory;
const json = (p?: temporal.api.common.v1.IPayload | null) => Buffer.from(p?.data ?? []).toString('utf8');

/** The first round's marker (the claim and first preflight), as recorded. */
function firstRound(history: History): temporal.api.history.v1.IMarkerRecordedEventAttributes {
  const marker = (history.events ?? [])
    .map((e) => e.markerRecordedEventAttributes)
    .find((m) => m && /"activity_type":"claimThenPreflight"/.test(json(m.details?.data?.payloads?.[0])));
  if (!marker) throw new Error('no first round in the history');
  return marker;
}

const roundResult = (history: History) => JSON.parse(json(firstRound(history).details?.result?.payloads?.[0]));

/** The history as a batch recorded before this build has it: the first round without `straight`. */
function withoutStraight(history: History): History {
  const copy = temporal.api.history.v1.History.decode(temporal.api.history.v1.History.encode(history).finish());
  const payload = firstRound(copy).details?.result?.payloads?.[0];
  if (!payload) throw new Error('the first round has no result');
  const { straight, ...rest } = JSON.parse(json(payload));
  expect(straight).toBe(true);
  payload.data = new Uint8Array(Buffer.from(JSON.stringify(rest)));
  return copy;
}

/**
 * The history as the first build to write `straight` would have recorded it: that build wrote it
 * for a first group of one call whatever the batch's size.
 */
function withStraight(history: History): History {
  const copy = temporal.api.history.v1.History.decode(temporal.api.history.v1.History.encode(history).finish());
  const payload = firstRound(copy).details?.result?.payloads?.[0];
  if (!payload) throw new Error('the first round has no result');
  payload.data = new Uint8Array(Buffer.from(JSON.stringify({ ...JSON.parse(json(payload)), straight: true })));
  return copy;
}

/** Runs the batch, hands it to `during` while it runs, and returns its output and history. */
async function run(req: BatchRequest, during?: (workflowId: string) => Promise<void>) {
  const handle = await h.client.startBatch(req);
  await during?.(handle.workflowId);
  const out = await handle.result();
  const history = await h.client.temporal.workflow.getHandle(handle.workflowId).fetchHistory();
  return { out, history, workflowId: handle.workflowId };
}

async function replaysBothWays(history: History, workflowId: string): Promise<void> {
  const bundle = { workflowBundle: { codePath: inject('workflowBundlePath') } };
  await Worker.runReplayHistory(bundle, history as Parameters<typeof Worker.runReplayHistory>[1], workflowId);
  await Worker.runReplayHistory(
    bundle,
    withoutStraight(history) as Parameters<typeof Worker.runReplayHistory>[1],
    workflowId,
  );
}

describe('a batch of one call, straight through', () => {
  it('an allowed call: the first round says straight, the result is rewritten by post-execute, and both paths replay', async () => {
    const { out, history, workflowId } = await run(batch([{ name: 'echo', args: { text: 'hi' } }]));
    expect(text(out.results[0].result)).toBe('hi!');
    expect(out.events.map((e) => e.type)).toEqual(['tool/call', 'tool/result']);
    expect(roundResult(history).straight).toBe(true);
    // The settle ran as a stage of its own: its local activity is a command the replay matches.
    const settles = (history.events ?? []).filter((e) =>
      /"activity_type":"settle"/.test(json(e.markerRecordedEventAttributes?.details?.data?.payloads?.[0])),
    );
    expect(settles).toHaveLength(1);
    await replaysBothWays(history, workflowId);
  });

  it('a call pre-execute denies: it settles without a body, and both paths replay', async () => {
    const { out, history, workflowId } = await run(batch([{ name: 'echo', args: { text: 'secret' } }]));
    expect(out.results[0].result.isError).toBe(true);
    expect(text(out.results[0].result)).toContain('no secrets');
    expect((history.events ?? []).some((e) => e.activityTaskScheduledEventAttributes)).toBe(false);
    await replaysBothWays(history, workflowId);
  });

  it('a call a person approves: the ask, the guards and the body, and both paths replay', async () => {
    const { out, history, workflowId } = await run(batch([{ name: 'guarded', args: { text: 'go' } }]), async (id) => {
      const pending = await pendingApproval(h.client, id);
      await h.client.approve(pending.approvalId, { workflowId: id, by: 'ops', argsDigest: pending.argsDigest });
    });
    expect(text(out.results[0].result)).toBe('approved go');
    await replaysBothWays(history, workflowId);
  });

  it('a run_code program whose sub-calls run beside it: both paths replay', async () => {
    const code =
      "const [a, b] = await Promise.all([tools.read_file({ path: 'a.txt' }), tools.read_file({ path: 'b.txt' })]);\nreturn Number(a) + Number(b);";
    const { out, history, workflowId } = await run(batch([{ name: 'run_code', args: { code, description: 'sum' } }]));
    expect(out.results[0].result.isError).toBe(false);
    expect(text(out.results[0].result)).toContain('3');
    expect(out.events.filter((e) => e.type === 'tool/code-dispatch-start')).toHaveLength(2);
    await replaysBothWays(history, workflowId);
  });

  it('a batch cancelled while its one body runs: the body is asked to stop, the call ends ABORTED, and both paths replay', async () => {
    const req = batch([{ id: 'waiting', name: 'wait' }]);
    const { out, history, workflowId } = await run(req, async (id) => {
      await eventually('the body to start', () => started.has('waiting'));
      await h.client.temporal.workflow.getHandle(id).cancel();
    });
    expect(out.cancelled).toBe(true);
    expect(out.results[0].result.error?.code).toBe('ABORTED');
    expect(out.events.map((e) => e.type)).toEqual(['tool/call', 'tool/result']);
    expect((history.events ?? []).filter((e) => e.activityTaskCancelRequestedEventAttributes)).toHaveLength(1);
    await replaysBothWays(history, workflowId);
  });

  it('a batch of two calls keeps the scheduler: its first round does not say straight', async () => {
    const { out, history } = await run(
      batch([
        { name: 'echo', args: { text: 'a' } },
        { name: 'echo', args: { text: 'b' } },
      ]),
    );
    expect(out.results.map((r) => text(r.result))).toEqual(['a!', 'b!']);
    expect(roundResult(history)).not.toHaveProperty('straight');
  });

  it('a batch of two whose first group is one call: no straight recorded, and one recorded by the first build replays on the scheduler', async () => {
    // A call id reserved for Code Mode sub-calls is left out of every preflight group, so the
    // first group is the first call alone; the worker knows the batch has two and says nothing.
    const { out, history, workflowId } = await run(
      batch([
        { id: 'c1', name: 'echo', args: { text: 'a' } },
        { id: 'c2:code:1', name: 'echo', args: { text: 'b' } },
      ]),
    );
    expect(text(out.results[0].result)).toBe('a!');
    expect(out.results[1].result.error?.code).toBe('INVALID_ARGS');
    const round = roundResult(history);
    expect(round.preflight.results).toHaveLength(1);
    expect(round).not.toHaveProperty('straight');
    const bundle = { workflowBundle: { codePath: inject('workflowBundlePath') } };
    await Worker.runReplayHistory(
      bundle,
      withStraight(history) as Parameters<typeof Worker.runReplayHistory>[1],
      workflowId,
    );
  });
});
