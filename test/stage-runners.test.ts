// The two stage runners (workflows/placement.ts) against each other, as zod tests its compiler
// against its schemas: the same batches, run live once on the lean runner and once on the legacy
// one, record the same calls, outcomes and session events; every recorded fixture replays on the
// runner its release chose, and both live histories replay too. The legacy runner is reached the
// way an old history reaches it: a worker that declines the patches that turn the lean one on.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SluiceClient, type BatchRequest } from '../client/client';
import { historyToJson, readHistoryFile } from '../client/history';
import { demoConfig } from '../scripts/recording';
import type { BatchOutput, SessionEvent } from '../pipeline/types';
import { SluicePlugin } from '../worker/worker';
import { expandBatchOutput } from '../pipeline/output';
import { eventually } from './eventually';

const FIXTURES = path.join(__dirname, 'fixtures', 'histories');
/** The patches whose markers select the lean runner (workflows/compat.ts). */
const LEAN_PATCHES = ['sluice-batch-0.2', 'sluice-lean-awaits'];

type Runner = 'lean' | 'legacy';
let connection: NativeConnection;
const workers: { runner: Runner; client: SluiceClient; worker: Worker; running: Promise<void> }[] = [];

beforeAll(async () => {
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const config = await demoConfig();
  for (const runner of ['lean', 'legacy'] as const) {
    const taskQueue = `stage-runners-${runner}-${process.pid}-${Date.now()}`;
    const stateDir = fs.mkdtempSync(path.join(inject('runDir'), `stage-runners-${runner}-`));
    const worker = await Worker.create({
      connection,
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      plugins: [new SluicePlugin({ config, stateDir })],
      // A live batch on the legacy worker takes the path of a batch recorded before the lean
      // runner: the patches that choose the lean one read false, as in such a history.
      ...(runner === 'legacy'
        ? { patchActivationCallback: ({ patchId }: { patchId: string }) => !LEAN_PATCHES.includes(patchId) }
        : {}),
    });
    workers.push({ runner, client: new SluiceClient({ connection, taskQueue }), worker, running: worker.run() });
  }
});

afterAll(async () => {
  for (const w of workers) w.worker.shutdown();
  await Promise.all(workers.map((w) => w.running.catch(() => undefined)));
  await connection?.close();
});

/** Markers of a history's patches, by id. */
function patchIds(history: { events?: unknown[] | null }): string[] {
  return (history.events ?? []).flatMap((e) => {
    const m = (e as { markerRecordedEventAttributes?: { markerName?: string; details?: Record<string, unknown> } })
      .markerRecordedEventAttributes;
    if (m?.markerName !== 'core_patch') return [];
    const data = (m.details?.['patch-data'] as { payloads?: { data?: Uint8Array | string }[] })?.payloads?.[0]?.data;
    const text = typeof data === 'string' ? Buffer.from(data, 'base64').toString() : Buffer.from(data ?? []).toString();
    return [JSON.parse(text).id as string];
  });
}

const runnerOf = (ids: string[]): Runner => (ids.some((id) => LEAN_PATCHES.includes(id)) ? 'lean' : 'legacy');

/** A session event as both runners must record it: no times, approval ids or this run's workflow id. */
function comparable(e: SessionEvent, workflowId: string): unknown {
  const { id: _id, expiresAt: _e, latencyMs: _l, ...data } = e.data as Record<string, unknown>;
  return { seq: e.seq, type: e.type, data: JSON.parse(JSON.stringify(data).split(workflowId).join('<batch>')) };
}

/** Each call's session events in order (batch-wide events under ''), without their seq. */
function byCall(events: SessionEvent[], workflowId: string): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const e of events) {
    const { seq: _seq, ...rest } = comparable(e, workflowId) as { seq: number };
    const callId = String((e.data as { callId?: unknown }).callId ?? '');
    (out[callId] ??= []).push(rest);
  }
  return out;
}

function comparableOutput(out: BatchOutput, workflowId: string): unknown {
  return JSON.parse(
    JSON.stringify({
      messages: out.messages,
      results: out.results,
      nextSeq: out.nextSeq,
      cancelled: out.cancelled,
      concludesTurn: out.concludesTurn,
      state: out.state,
    })
      .split(workflowId)
      .join('<batch>'),
  );
}

/** Runs the batch on one runner, deciding every ask with a yes, and returns what it recorded. */
async function run(runner: Runner, request: Omit<BatchRequest, 'sessionId'>, sessionId: string) {
  const { client } = workers.find((w) => w.runner === runner)!;
  const handle = await client.startBatch({ ...request, sessionId } as BatchRequest);
  const asks = request.calls.filter((c) => c.name === 'send_email').length;
  for (let decided = 0; decided < asks; ) {
    const pending = await eventually(
      `an ask pending on the ${runner} runner`,
      async () => {
        // Every ask still open at once: asks raised together are decided together on both
        // runners, so neither records a decision between two asks the other recorded side by side
        // (on a loaded machine a poll once saw the first ask alone).
        const p = (await client.batchState(handle.workflowId)).pending;
        return p.length >= asks - decided ? p : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 200 },
    );
    for (const p of pending) {
      await client.approve(p.approvalId, {
        workflowId: handle.workflowId,
        by: 'differential',
        argsDigest: p.argsDigest,
      });
      decided++;
    }
  }
  const out = expandBatchOutput(await handle.result());
  const history = await handle.fetchHistory();
  return { workflowId: handle.workflowId, out, history };
}

const MIXED: Omit<BatchRequest, 'sessionId'> = {
  turn: 1,
  step: 1,
  calls: [
    { id: 'weather', name: 'get_weather', arguments: { city: 'Lisbon' } },
    { id: 'delete', name: 'delete_files', arguments: { pattern: 'scratch/**' } },
    { id: 'email', name: 'send_email', arguments: { to: 'ada@example.com', subject: 'Hi', body: 'Lisbon is sunny.' } },
    { id: 'quote', name: 'fetch_quote', arguments: { symbol: 'TMPRL' } },
    { id: 'customer', name: 'lookup_customer', arguments: { id: '42' } },
  ],
};

/** Bodies side by side and barriers between them, two asks raised together, a bad argument string. */
const PARALLEL: Omit<BatchRequest, 'sessionId'> = {
  turn: 1,
  step: 1,
  options: { maxParallel: 2 },
  calls: [
    { id: 'w1', name: 'get_weather', arguments: { city: 'Oslo' } },
    { id: 'w2', name: 'get_weather', arguments: { city: 'Rome' } },
    { id: 'w3', name: 'get_weather', arguments: { city: 'Lima' } },
    { id: 'c1', name: 'lookup_customer', arguments: { id: '7' } },
    { id: 'e1', name: 'send_email', arguments: { to: 'a@example.com', subject: 'a', body: 'a' } },
    { id: 'e2', name: 'send_email', arguments: { to: 'b@example.com', subject: 'b', body: 'b' } },
    { id: 'bad', name: 'get_weather', arguments: '{"city": ' as unknown as string },
    { id: 'q1', name: 'fetch_quote', arguments: { symbol: 'X' } },
    { id: 'w4', name: 'get_weather', arguments: { city: 'Kyiv' } },
  ],
};

describe('the lean and the legacy stage runner', () => {
  it('every recorded batch fixture replays, on the runner its release chose, and both runners have fixtures', async () => {
    const seen = new Set<Runner>();
    for (const release of fs.readdirSync(FIXTURES)) {
      for (const file of fs.readdirSync(path.join(FIXTURES, release)).filter((f) => f.endsWith('.json'))) {
        const { history, workflowId } = readHistoryFile(path.join(FIXTURES, release, file));
        if (!workflowId.startsWith('sluice-batch:')) continue;
        seen.add(runnerOf(patchIds(history)));
        // Replayed under its own workflow id: a batch that opened reconcile cards derives their
        // ids from it, and a replay under another id starts children the history never had.
        await Worker.runReplayHistory(
          { workflowBundle: { codePath: inject('workflowBundlePath') } },
          history,
          workflowId,
        ).catch((err: Error) => {
          throw new Error(`${release}/${file} did not replay: ${err.message}`, { cause: err });
        });
      }
    }
    expect([...seen].sort()).toEqual(['lean', 'legacy']);
  });

  for (const [name, request] of [
    ['the fixtures’ mixed batch', MIXED],
    ['a batch with parallel bodies, barriers and asks together', PARALLEL],
  ] as const) {
    it(`${name}: both runners record the same outcomes and session events, and both histories replay`, async () => {
      const sessionId = `stage-runners-${name.length}-${Date.now()}`;
      const lean = await run('lean', request, `${sessionId}-lean`);
      const legacy = await run('legacy', request, `${sessionId}-legacy`);
      // Each really ran on its runner.
      expect(runnerOf(patchIds(lean.history))).toBe('lean');
      expect(patchIds(legacy.history)).not.toContain('sluice-lean-awaits');
      expect(runnerOf(patchIds(legacy.history))).toBe('legacy');

      expect(lean.out.results.length).toBe(request.calls.length);
      expect(comparableOutput(legacy.out, legacy.workflowId)).toEqual(comparableOutput(lean.out, lean.workflowId));
      // Session events call by call, in order. Across calls the order is the order the two
      // decisions arrived in: the second yes is a separate signal, and the first call's body may
      // finish between the two on one run and not on the other, so the interleaving of two calls
      // is not the runner's to choose. Both runners number their events 0..n-1 with no gap.
      expect(byCall(legacy.out.events, legacy.workflowId)).toEqual(byCall(lean.out.events, lean.workflowId));
      for (const r of [lean, legacy]) expect(r.out.events.map((e) => e.seq)).toEqual(r.out.events.map((_, i) => i));
      // The batch did what the demo config says, so the comparison compared something.
      const byId = new Map(lean.out.results.map((r) => [r.callId, r.result]));
      expect(byId.get(request.calls[0].id)?.isError).toBe(false);
      expect(lean.out.events.some((e) => e.type === 'approval/decided')).toBe(true);

      for (const r of [lean, legacy])
        await Worker.runReplayHistory(
          { workflowBundle: { codePath: inject('workflowBundlePath') } },
          JSON.parse(historyToJson(r.history)),
          r.workflowId,
        );
    });
  }
});
