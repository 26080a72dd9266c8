// The fact store for one machine (stores/fact-store.ts) and a scope's record in the pre-execute
// stage (activities/facts-scope.ts), without a worker: a call written any number of times, in any
// order of its batches' writes, is one call; a settle gives it its outcome; a batch reads the
// others' calls, never its own; a store that throws, or none, leaves a short record that says why.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { withFactsScope } from '../../activities/facts-scope';
import {
  beyondReach,
  type CallRecord,
  type FactSpecs,
  factsScopeProblem,
  foldFacts,
  RECORD_KEEP_MS,
} from '../../pipeline/facts';
import type { CallRef } from '../../pipeline/stages';
import type { SessionEvent } from '../../pipeline/types';
import { type FactStore, fileFactStore, PRUNE_AFTER_MS } from '../../stores/fact-store';

const NOW = Date.parse('2026-12-01T10:00:00Z');

function rec(callId: string, at = NOW): CallRecord {
  return { callId, tool: 'send_email', args: { to: callId }, at, turn: 1, outcome: 'pending' };
}

/** A call written, then the scope read, as the pre-execute stage does for a call a fact-reading policy judges. */
async function record(store: FactStore, scope: string, workflowId: string, call: CallRecord, since: number) {
  await store.write(scope, workflowId, call);
  return store.read(scope, workflowId, since);
}

function tmpStore(): FactStore {
  return fileFactStore(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-facts-')));
}

function ref(patch: Partial<CallRef> = {}): CallRef {
  return {
    workflowId: 'wf-x',
    sessionId: 's',
    turn: 1,
    step: 1,
    callId: 'x1',
    name: 'send_email',
    args: { to: 'x' },
    argsDigest: 'd',
    idempotencyKey: 'wf-x/x1',
    state: {},
    record: { calls: [], now: NOW, reach: 'batch' },
    factsScope: 'user:alice',
    ...patch,
  };
}

describe('the file fact store', () => {
  it('writes repeated any number of times, by any batch, hold each call once; a batch never reads its own', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('wf-a', 'wf-b', 'wf-c'), fc.constantFrom('c1', 'c2')), { maxLength: 12 }),
        async (writes) => {
          const store = tmpStore();
          for (const [wf, id] of writes) await record(store, 'team:x', wf, rec(id), 0);
          const seen = await record(store, 'team:x', 'wf-reader', rec('r1'), 0);
          const expected = [...new Set(writes.map(([wf, id]) => `${wf}/${id}`))].sort();
          expect(seen.map((r) => r.callId).sort()).toEqual(expected);
          // The reader's own call is in the store for the others, not in what it reads.
          expect((await record(store, 'team:x', 'wf-a', rec('c9'), 0)).map((r) => r.callId)).toContain('wf-reader/r1');
        },
      ),
      { numRuns: 30 },
    );
  });

  it("a settle gives a call its decider and outcome; another scope's calls and old ones are never read", async () => {
    const store = tmpStore();
    await record(store, 'user:alice', 'wf-a', rec('a1'), 0);
    await record(store, 'user:alice', 'wf-a', rec('a2', NOW - 7_200_000), 0);
    await record(store, 'user:bob', 'wf-b', rec('b1'), 0);
    const events: SessionEvent[] = [
      {
        seq: 3,
        time: new Date(NOW).toISOString(),
        type: 'policy/decided',
        data: { callId: 'a1', decision: 'deny', file: 'f', line: 2 },
      },
      {
        seq: 4,
        time: new Date(NOW).toISOString(),
        type: 'tool/result',
        data: { callId: 'a1', isError: true, error: { code: 'DENIED' } },
      },
    ];
    await store.settle('wf-a', events);
    await store.settle('wf-never-wrote', events);
    const seen = await record(store, 'user:alice', 'wf-r', rec('r1'), NOW - 3_600_000);
    expect(seen).toEqual([
      { ...rec('wf-a/a1'), args: { to: 'a1' }, outcome: 'denied', decider: { kind: 'policy', who: 'f:2' } },
    ]);
  });
});

describe('pruning the file store', () => {
  it('for any declared windows and calls of any age, a prune at any time changes no fact a read then folds, and removes the old', async () => {
    const windows = fc.constantFrom('1m', '30m', '1h', '1d', '7d', 'turn', undefined);
    const calls = fc.array(fc.tuple(fc.integer({ min: 0, max: 25 * 86_400_000 }), fc.integer({ min: 1, max: 3 })), {
      maxLength: 25,
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(windows, { minLength: 1, maxLength: 4 }),
        calls,
        fc.nat(10 * 86_400_000),
        async (ws, cs, later) => {
          const now = Date.now();
          const store = tmpStore();
          for (const [i, [age, turn]] of cs.entries())
            await store.write('team:x', `wf-${i}`, { ...rec(`c${i}`, now - age), turn });
          const specs: FactSpecs = Object.fromEntries(
            ws.map((window, i) => [`f${i}`, { count: { tool: 'send_email', ...(window ? { window } : {}) } }]),
          );
          const at = now + later;
          const facts = async () =>
            foldFacts(
              specs,
              { callId: 'r', args: {}, turn: 2 },
              await store.read('team:x', 'wf-r', at - RECORD_KEEP_MS),
              at,
            );
          const before = await facts();
          await store.prune('team:x', at);
          expect(await facts()).toEqual(before);
          // What is left is younger than the prune's age and the day it ends in.
          for (const c of await store.read('team:x', 'wf-r', 0))
            expect(c.at).toBeGreaterThan(at - PRUNE_AFTER_MS - 86_400_000);
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('a call of a batch with a facts scope', () => {
  it("reads the scope's calls before the batch's own, and reaches the scope", async () => {
    const store = tmpStore();
    await record(store, 'user:alice', 'wf-other', rec('o1'), 0);
    const own = rec('x0');
    const got = await withFactsScope(
      { facts: store },
      ref({ record: { calls: [own], now: NOW, reach: 'batch' } }),
      true,
    );
    expect(got.record?.reach).toBe('scope');
    expect(got.record?.calls.map((c) => c.callId)).toEqual(['wf-other/o1', 'x0']);
    expect(beyondReach(['emailsLastHour'], got.record)).toEqual([]);
  });

  it('a store that throws, no store, or a bad scope: the record stays the batch own and says why', async () => {
    const down: FactStore = {
      where: 'the test store',
      write: async () => {
        throw new Error('connect ECONNREFUSED');
      },
      read: async () => [],
      settle: async () => undefined,
      ran: async () => undefined,
      prune: async () => undefined,
    };
    const thrown = await withFactsScope({ facts: down }, ref(), true);
    expect(thrown.record).toMatchObject({ reach: 'batch' });
    expect(thrown.record?.unreadable).toMatch(/the fact store at the test store could not be reached .*ECONNREFUSED/);
    expect(beyondReach(['emailsLastHour'], thrown.record)).toEqual(['emailsLastHour']);
    expect((await withFactsScope({}, ref(), true)).record?.unreadable).toMatch(/this worker has no fact store/);
    expect((await withFactsScope({ facts: down }, ref({ factsScope: 'a\nb' }), true)).record?.unreadable).toMatch(
      /control character/,
    );
  });

  it('a batch without a scope is left as it is', async () => {
    const plain = ref({ factsScope: undefined });
    expect(await withFactsScope({ facts: tmpStore() }, plain, true)).toBe(plain);
  });

  it('scopes: a printable line up to 256 characters', () => {
    expect(factsScopeProblem('user:alice')).toBeUndefined();
    expect(factsScopeProblem('')).toMatch(/non-empty/);
    expect(factsScopeProblem('x'.repeat(257))).toMatch(/256 or fewer/);
    expect(factsScopeProblem('team:\u0007')).toMatch(/control character/);
  });
});
