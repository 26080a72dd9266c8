// The stage runner (workflows/placement.ts) on live batches and on every recorded batch fixture:
// each recorded batch replays on this code, and live batches with bodies side by side, barriers,
// asks raised together and a bad argument string record what the demo config says, number their
// session events without a gap, carry the one patch marker 1.0.0 batches carry (deprecated now,
// workflows/compat.ts) and replay.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SluiceClient, type BatchRequest } from '../client/client';
import { historyToJson, readHistoryFile } from '../client/history';
import { demoConfig } from '../scripts/recording';
import { SluicePlugin } from '../worker/worker';
import { expandBatchOutput } from '../codec/output';
import { PATCHES } from '../workflows/compat';
import { eventually } from './eventually';

const FIXTURES = path.join(__dirname, 'fixtures', 'histories');

let connection: NativeConnection;
let client: SluiceClient;
let worker: Worker;
let running: Promise<void>;

beforeAll(async () => {
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const config = await demoConfig();
  const taskQueue = `stage-runner-${process.pid}-${Date.now()}`;
  const stateDir = fs.mkdtempSync(path.join(inject('runDir'), 'stage-runner-'));
  worker = await Worker.create({
    connection,
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    plugins: [new SluicePlugin({ config, stateDir })],
  });
  client = new SluiceClient({ connection, taskQueue });
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await connection?.close();
});

/** Markers of a history's patches: id, and whether recorded deprecated. */
function patchMarkers(history: { events?: unknown[] | null }): { id: string; deprecated: boolean }[] {
  return (history.events ?? []).flatMap((e) => {
    const m = (e as { markerRecordedEventAttributes?: { markerName?: string; details?: Record<string, unknown> } })
      .markerRecordedEventAttributes;
    if (m?.markerName !== 'core_patch') return [];
    const data = (m.details?.['patch-data'] as { payloads?: { data?: Uint8Array | string }[] })?.payloads?.[0]?.data;
    const text = typeof data === 'string' ? Buffer.from(data, 'base64').toString() : Buffer.from(data ?? []).toString();
    const { id, deprecated } = JSON.parse(text) as { id: string; deprecated: boolean };
    return [{ id, deprecated }];
  });
}

/** Runs the batch, deciding every ask with a yes, and returns what it recorded. */
async function run(request: Omit<BatchRequest, 'sessionId'>, sessionId: string) {
  const handle = await client.startBatch({ ...request, sessionId } as BatchRequest);
  const asks = request.calls.filter((c) => c.name === 'send_email').length;
  for (let decided = 0; decided < asks; ) {
    const pending = await eventually(
      'an ask pending',
      async () => {
        // Every ask still open at once: asks raised together are decided together (on a loaded
        // machine a poll once saw the first ask alone).
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

describe('the stage runner', () => {
  it('every recorded batch fixture replays, and each carries the release marker 1.0.0 batches carry', async () => {
    let batches = 0;
    for (const release of fs.readdirSync(FIXTURES)) {
      for (const file of fs.readdirSync(path.join(FIXTURES, release)).filter((f) => f.endsWith('.json'))) {
        const { history, workflowId } = readHistoryFile(path.join(FIXTURES, release, file));
        if (!workflowId.startsWith('sluice-batch:')) continue;
        batches++;
        expect(patchMarkers(history).map((m) => m.id)).toEqual([PATCHES.batch02.id]);
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
    expect(batches).toBeGreaterThan(0);
  });

  for (const [name, request] of [
    ['the fixtures’ mixed batch', MIXED],
    ['a batch with parallel bodies, barriers and asks together', PARALLEL],
  ] as const) {
    it(`${name}: records what the config says, numbers its events without a gap, and replays`, async () => {
      const sessionId = `stage-runner-${name.length}-${Date.now()}`;
      const r = await run(request, sessionId);
      // The release marker, asked where 1.0.0 read it, recorded deprecated: nothing branches on it.
      expect(patchMarkers(r.history)).toEqual([{ id: PATCHES.batch02.id, deprecated: true }]);
      expect(r.out.results.map((x) => x.callId)).toEqual(request.calls.map((c) => c.id));
      expect(r.out.events.map((e) => e.seq)).toEqual(r.out.events.map((_, i) => i));
      // The batch did what the demo config says.
      const byId = new Map(r.out.results.map((x) => [x.callId, x.result]));
      expect(byId.get(request.calls[0].id)?.isError).toBe(false);
      for (const c of request.calls.filter((c) => c.name === 'send_email')) expect(byId.get(c.id)?.isError).toBe(false);
      for (const c of request.calls.filter((c) => c.name === 'delete_files'))
        expect(byId.get(c.id)?.isError).toBe(true);
      if (byId.has('bad')) expect(byId.get('bad')?.error?.code).toBe('INVALID_ARGS');
      expect(r.out.events.some((e) => e.type === 'approval/decided')).toBe(true);
      await Worker.runReplayHistory(
        { workflowBundle: { codePath: inject('workflowBundlePath') } },
        JSON.parse(historyToJson(r.history)),
        r.workflowId,
      );
    });
  }
});
