// kill -9 of the worker process at every stage boundary of a batch, then a fresh worker.
// What must hold: every batch completes; every call has exactly one tool/result; a side effect
// runs once, except in the at-least-once window (after the effect, before the body's completion
// is recorded), which is measured; approvals signalled while no worker runs are honoured.
import { NativeConnection } from '@temporalio/worker';
import type { WorkflowHandle } from '@temporalio/client';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { temporal } from '@temporalio/proto';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { SluiceClient } from '../../client/client';
import type { BatchOutput } from '../../pipeline/types';
import { dataConverterFromEnv } from '../../codec/payload';
import { readSessionLog } from '../../stores/sink';
import { EFFECTS, OBSERVED, type HoldPoint } from '../fixtures/faults.config';
import { batch, spawnWorker, text, type ChildWorker } from '../harness';
import {
  checkBatch,
  countByTag,
  emptyFigures,
  FIXTURE,
  lines,
  printFigures,
  ROUNDS,
  sessionHas,
  waitFor,
} from './fault-kit';

let connection: NativeConnection;
let client: SluiceClient;
let dir: string;
let taskQueue: string;
let worker: ChildWorker;
const figures = emptyFigures();

// The worker processes run as in production: payloads encrypted, keys from the environment.
const workerEnv = () => ({ SLUICE_TEST_DIR: dir, SLUICE_CODEC_KEYS: codecKeys });
const codecKeys = `faults:${randomBytes(32).toString('base64')}`;

async function restartWorker(): Promise<void> {
  worker = spawnWorker(FIXTURE, taskQueue, dir, workerEnv());
  await worker.ready;
  figures.restarts++;
  down = false;
}

async function killWorker(): Promise<void> {
  await worker.kill('SIGKILL');
  figures.kills++;
  down = true;
}

/** A test that failed with the worker down must not take the next one with it. */
let down = false;
async function ensureWorker(): Promise<void> {
  if (down) await restartWorker();
}

const entered = (tag: string, point: HoldPoint) => lines(path.join(dir, `${tag}.${point}.entered`)).length;
const release = (tag: string, point: HoldPoint) => fs.writeFileSync(path.join(dir, `${tag}.${point}.release`), '');

interface Running {
  name: string;
  handle: WorkflowHandle;
  sessionId: string;
  tags: string[];
}

async function start(name: string, calls: Record<string, unknown>[]): Promise<Running> {
  const req = batch(calls.map((args) => ({ name: 'append', args })));
  const handle = await client.startBatch(req);
  figures.batches++;
  figures.calls += calls.length;
  return { name, handle, sessionId: req.sessionId, tags: calls.map((c) => String(c.tag)) };
}

async function finish(b: Running): Promise<BatchOutput> {
  const out = (await b.handle.result()) as BatchOutput;
  const check = await checkBatch(out, b.handle, dir);
  figures.lost += check.lost;
  expect(check, `batch ${b.name}`).toEqual({ lost: 0, extraResults: 0, workflowTaskFailures: 0, logProblems: [] });
  expect(out.results.map((r) => r.callId)).toEqual(b.tags.map((_, i) => `call-${i + 1}`));
  // The worker processes took SLUICE_CODEC_KEYS from their environment: no argument is in clear.
  const raw = Buffer.from(temporal.api.history.v1.History.encode(await b.handle.fetchHistory()).finish());
  for (const tag of b.tags) expect(raw.includes(tag), `${tag} in plaintext history`).toBe(false);
  return out;
}

/** Side effects per tag; anything over one outside the at-least-once window is a duplicate. */
function tallyEffects(tags: string[], windowTags: string[]): Map<string, number> {
  const effects = countByTag(path.join(dir, EFFECTS));
  const observed = countByTag(path.join(dir, OBSERVED));
  for (const tag of tags) {
    const n = effects.get(tag) ?? 0;
    if (windowTags.includes(tag)) figures.windowDuplicates += Math.max(0, n - 1);
    else figures.duplicated += Math.max(0, n - 1);
    figures.observerReruns += Math.max(0, (observed.get(tag) ?? 0) - 1);
  }
  return effects;
}

beforeAll(async () => {
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  taskQueue = `faults-kill-${process.pid}-${Date.now()}`;
  client = new SluiceClient({
    connection,
    taskQueue,
    dataConverter: dataConverterFromEnv({ SLUICE_CODEC_KEYS: codecKeys }),
  });
  dir = fs.mkdtempSync(path.join(inject('runDir'), 'faults-kill-'));
  worker = spawnWorker(FIXTURE, taskQueue, dir, workerEnv());
  await worker.ready;
});

afterAll(async () => {
  await worker?.kill('SIGKILL');
  await connection?.close();
  printFigures(`kill -9 of the worker, ${ROUNDS} round(s) (npx vitest run test/faults)`, figures);
});

describe('kill -9 of the worker at every stage boundary', () => {
  for (let round = 1; round <= ROUNDS; round++) {
    const t = (s: string) => `r${round}-${s}`;

    it(`round ${round}: calls held in pre-execute, approval, body, after the side effect and post-execute; a second kill during recovery`, {
      timeout: 300_000,
    }, async () => {
      await ensureWorker();
      const held: [string, HoldPoint, Record<string, unknown>?][] = [
        ['pre', 'pre'],
        ['body', 'body'],
        ['window', 'after-effect'],
        ['window-keyed', 'after-effect', { keyed: true }],
        ['post', 'post'],
      ];
      const batches: Running[] = [];
      for (const [name, point, extra] of held) {
        batches.push(
          await start(name, [
            { tag: t(`${name}-a`) },
            { tag: t(`${name}-b`), holdAt: point, ...extra },
            { tag: t(`${name}-c`) },
          ]),
        );
      }
      const approve = await start('approve-by-signal', [
        { tag: t('ap-a') },
        { tag: t('ap-yes'), ask: true },
        { tag: t('ap-c') },
      ]);
      const deny = await start('deny-by-signal', [{ tag: t('ap-no'), ask: true }]);
      const twice = await start('killed-twice', [{ tag: t('twice-a') }, { tag: t('twice-b'), holdAt: 'body' }]);

      // Every call sits where it should: the kill lands in each stage at once.
      for (const [name, point] of held)
        await waitFor(`${t(name)}-b in ${point}`, () => entered(t(`${name}-b`), point) > 0);
      await waitFor('twice-b in its body', () => entered(t('twice-b'), 'body') > 0);
      const asked = async (b: Running, callId: string) =>
        (await readSessionLog(dir, b.sessionId)).find((e) => e.type === 'approval/asked' && e.data.callId === callId)
          ?.data.id as string | undefined;
      const yesId = await waitFor('the approval of ap-yes', () => asked(approve, 'call-2'));
      const noId = await waitFor('the approval of ap-no', () => asked(deny, 'call-1'));

      await killWorker();
      figures.windowKills += 2; // window and window-keyed were both past their side effect
      // No worker runs: the decisions go in by signal, which the server accepts and keeps.
      await client.signalDecision({
        approvalId: yesId,
        workflowId: approve.handle.workflowId,
        decision: 'approve',
        by: 'fault-test',
      });
      await client.signalDecision({
        approvalId: noId,
        workflowId: deny.handle.workflowId,
        decision: 'deny',
        by: 'fault-test',
        reason: 'not now',
      });
      for (const [name, point] of held) release(t(`${name}-b`), point);
      await restartWorker();

      const outs = new Map<string, BatchOutput>();
      for (const b of [...batches, approve, deny]) outs.set(b.name, await finish(b));

      // The body of twice-b was retried on the new worker and holds again: kill that one too.
      await waitFor('twice-b in its body again', () => entered(t('twice-b'), 'body') > 1);
      await killWorker();
      release(t('twice-b'), 'body');
      await restartWorker();
      outs.set(twice.name, await finish(twice));

      const tags = [...batches, approve, deny, twice].flatMap((b) => b.tags);
      const effects = tallyEffects(tags, [t('window-b'), t('window-keyed-b')]);
      for (const tag of tags) {
        const expected = tag === t('ap-no') ? 0 : tag === t('window-b') ? 2 : 1;
        expect(effects.get(tag) ?? 0, `side effects of ${tag}`).toBe(expected);
      }
      const decided = (name: string) => outs.get(name)!.events.find((e) => e.type === 'approval/decided')!.data;
      expect(decided('approve-by-signal')).toMatchObject({ outcome: 'allowed-once', by: 'fault-test' });
      expect(decided('deny-by-signal')).toMatchObject({ outcome: 'rejected', by: 'fault-test', reason: 'not now' });
      expect(outs.get('deny-by-signal')!.results[0].result.error?.code).toBe('DENIED');
      for (const [name, out] of outs) {
        if (name !== 'deny-by-signal')
          for (const r of out.results) expect(text(r.result), `${name} ${r.callId}`).toMatch(/^appended /);
      }
    });

    it(`round ${round}: one kill right after a tool/call and between two results`, { timeout: 300_000 }, async () => {
      await ensureWorker();
      // atc and br-b are held in pre-execute (right after their tool/call) until released, so the
      // kill lands in that window however slow the machine is (a fixed delay could run out first).
      const afterCall = await start('after-tool-call', [{ tag: t('atc'), holdAt: 'pre' }]);
      const between = await start('between-results', [{ tag: t('br-a') }, { tag: t('br-b'), holdAt: 'pre' }]);
      // Pre-execute runs right after the call's tool/call (which the session log file does not show
      // while the call is held there, so the test waits for the hold itself).
      await waitFor('atc in pre-execute', () => entered(t('atc'), 'pre') > 0);
      await waitFor('br-b in pre-execute', () => entered(t('br-b'), 'pre') > 0);
      await waitFor('the tool/result of br-a', () =>
        sessionHas(dir, between.sessionId, (e) => e.type === 'tool/result' && e.data.callId === 'call-1'),
      );
      await killWorker();
      // The kill landed where intended: neither pending call had its result yet.
      expect(await sessionHas(dir, afterCall.sessionId, (e) => e.type === 'tool/result')).toBe(false);
      expect(
        await sessionHas(dir, between.sessionId, (e) => e.type === 'tool/result' && e.data.callId === 'call-2'),
      ).toBe(false);
      release(t('atc'), 'pre');
      release(t('br-b'), 'pre');
      await restartWorker();
      await finish(afterCall);
      await finish(between);
      const effects = tallyEffects([...afterCall.tags, ...between.tags], []);
      for (const tag of [...afterCall.tags, ...between.tags])
        expect(effects.get(tag), `side effects of ${tag}`).toBe(1);
    });
  }
});
