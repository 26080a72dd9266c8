// Two batches claiming the same seqs of a session: the second is told, runs nothing and records
// nothing; sent again at the right seq, it runs. The session log, the batches' outputs and the
// server agree, and no event is ever dropped without a word.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import type { SessionEvent } from '../pipeline/types';
import { defineConfig, defineTool } from '../define/config';
import { conflictsPath, JsonlSessionLog, readSessionLog } from '../stores/sink';
import { SEQ_CONFLICT } from '../workflows/definitions';
import { batch, startHarness, type Harness } from './harness';
import { pendingApproval } from './eventually';

const ran: string[] = [];
let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    'session-seq',
    defineConfig({
      tools: [
        defineTool({
          name: 'note',
          description: 'notes',
          input: z.object({ text: z.string() }),
          execute: ({ text }, ctx) => (ran.push(ctx.call.id), `noted ${text}`),
        }),
        defineTool({
          name: 'deploy',
          description: 'asks first',
          input: z.object({}),
          approval: 'ask',
          execute: (_a, ctx) => (ran.push(ctx.call.id), 'deployed'),
        }),
      ],
    }),
  );
});
afterAll(() => h?.close());

async function conflictOf(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  expect((cause as ApplicationFailure).type).toBe(SEQ_CONFLICT);
  return cause as ApplicationFailure;
}

describe('session seqs', () => {
  it('a batch that reuses a start seq is refused before it runs anything, and runs when sent again at the right seq', async () => {
    const first = batch([{ id: 'a1', name: 'note', args: { text: 'one' } }]);
    const out1 = await h.client.runBatch(first);
    const session = first.sessionId;
    // The caller forgot startSeq: the batch would number its events from 0 again.
    const second = { ...batch([{ id: 'b1', name: 'note', args: { text: 'two' } }]), sessionId: session, step: 2 };
    const refused = await conflictOf(h.client.runBatch(second));
    expect(refused.message).toContain(`already has events up to seq ${out1.nextSeq - 1}`);
    expect(refused.message).toContain(`startSeq ${out1.nextSeq}`);
    expect(refused.details?.[0]).toEqual({ nextSeq: out1.nextSeq });
    expect(ran).not.toContain('b1');
    expect(await readSessionLog(h.stateDir, session)).toEqual(out1.events);

    // Sent again with the seq it was told: the same batch id runs this time.
    const out2 = await h.client.runBatch({ ...second, startSeq: out1.nextSeq });
    expect(ran).toContain('b1');
    // The worker writes the log after the workflow task that ended the batch: it can trail the result.
    await expect
      .poll(() => readSessionLog(h.stateDir, session), { timeout: 30_000 })
      .toEqual([...out1.events, ...out2.events]);
    const logged = await readSessionLog(h.stateDir, session);
    expect(logged.map((e) => e.seq)).toEqual(logged.map((_, i) => i));
    expect(await h.client.sessionEvents(session)).toEqual(logged);
    expect(fs.existsSync(conflictsPath(h.stateDir, session))).toBe(false);
  });

  it('two batches started in parallel at the same seq: exactly one runs, the other is refused and told', async () => {
    const a = batch([{ id: 'p1', name: 'deploy' }]);
    const b = { ...batch([{ id: 'p2', name: 'deploy' }]), sessionId: a.sessionId, step: 2 };
    const [handleA, handleB] = await Promise.all([h.client.startBatch(a), h.client.startBatch(b)]);
    const settled = await Promise.race([
      handleA.result().then(
        () => 'a completed',
        () => 'a failed',
      ),
      handleB.result().then(
        () => 'b completed',
        () => 'b failed',
      ),
    ]);
    // Neither can complete before its approval: the first to end is the refused one.
    expect(['a failed', 'b failed']).toContain(settled);
    const [loser, winner, winnerCall] = settled === 'a failed' ? [handleA, handleB, 'p2'] : [handleB, handleA, 'p1'];
    const refused = await conflictOf(loser.result());
    expect(refused.message).toMatch(/already has events up to seq \d+|claimed its seqs from 0 first/);
    const pending = await pendingApproval(h.client, winner.workflowId);
    await h.client.approve(pending.approvalId, { workflowId: winner.workflowId, by: 'test' });
    const out = await winner.result();
    expect(ran).toContain(winnerCall);
    await expect.poll(() => readSessionLog(h.stateDir, a.sessionId), { timeout: 30_000 }).toEqual(out.events);
  });

  it('events numbered over seqs the log holds are kept aside with their batch and reported, never dropped', async () => {
    const dir = fs.mkdtempSync(path.join(inject('runDir'), 'sink-'));
    const warnings: string[] = [];
    const log = new JsonlSessionLog(dir, (m) => warnings.push(m));
    const ev = (seq: number, text: string): SessionEvent => ({
      type: 'tool/call',
      seq,
      time: '2026-12-01T00:00:00.000Z',
      data: { text },
    });
    const mine = [ev(0, 'a0'), ev(1, 'a1'), ev(2, 'a2')];
    await log.append('s', mine, 'batch-a');
    await log.append('s', mine, 'batch-a'); // a replay: the same events again, skipped quietly
    expect(warnings).toEqual([]);
    const theirs = [ev(0, 'b0'), ev(1, 'b1'), ev(2, 'b2'), ev(3, 'b3')];
    await log.append('s', theirs.slice(0, 2), 'batch-b');
    await log.append('s', theirs.slice(2), 'batch-b'); // past the overlap, still not in the log
    expect(await readSessionLog(dir, 's')).toEqual(mine);
    const kept = fs
      .readFileSync(conflictsPath(dir, 's'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(kept).toEqual(theirs.map((event) => ({ batch: 'batch-b', event })));
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('batch batch-b numbered 2 event(s) of session s at seqs the log already holds');
    // Claims: the log's seqs and earlier claims are taken.
    expect(await log.claim('s', 2, 'batch-c')).toMatchObject({ ok: false, nextSeq: 3 });
    expect(await log.claim('s', 3, 'batch-c')).toEqual({ ok: true });
    expect(await log.claim('s', 3, 'batch-c')).toEqual({ ok: true }); // run again: still its own
    expect(await log.claim('s', 3, 'batch-d')).toMatchObject({ ok: false, nextSeq: 4 });
  });

  it("a replay that repeats a claimed batch's events with other times is the same events again, not a conflict", async () => {
    const dir = fs.mkdtempSync(path.join(inject('runDir'), 'sink-'));
    const warnings: string[] = [];
    const log = new JsonlSessionLog(dir, (m) => warnings.push(m));
    const ev = (seq: number, text: string, time: string): SessionEvent => ({
      type: 'tool/call',
      seq,
      time,
      data: { text },
    });
    expect(await log.claim('s', 0, 'batch-a')).toEqual({ ok: true });
    await log.append(
      's',
      [ev(0, 'a0', '2026-12-01T00:00:01.000Z'), ev(1, 'a1', '2026-12-01T00:00:01.000Z')],
      'batch-a',
    );
    // Replayed after an eviction: workflow time of the first task moved back; then one new event.
    const replayed = [ev(0, 'a0', '2026-12-01T00:00:00.000Z'), ev(1, 'a1', '2026-12-01T00:00:00.000Z')];
    await log.append('s', [...replayed, ev(2, 'a2', '2026-12-01T00:00:02.000Z')], 'batch-a');
    expect(warnings).toEqual([]);
    expect(fs.existsSync(conflictsPath(dir, 's'))).toBe(false);
    expect((await readSessionLog(dir, 's')).map((e) => e.data.text)).toEqual(['a0', 'a1', 'a2']);
    // Another batch that claimed later seqs owns them: batch-a numbering into them is a conflict.
    expect(await log.claim('s', 3, 'batch-b')).toEqual({ ok: true });
    await log.append('s', [ev(3, 'b3', '2026-12-01T00:00:03.000Z')], 'batch-b');
    await log.append('s', [ev(3, 'a3', '2026-12-01T00:00:04.000Z')], 'batch-a');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('batch batch-a numbered 1 event(s)');
  });
});
