// Session facts folded from recorded events (pipeline/facts.ts): the four looking-back examples
// and the concurrent transfers, from event streams as a batch records them; and properties over
// generated records: the call itself never counts, the order of the record does not change a fact,
// a call outside the window never counts, and a count only grows as calls are added.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CallRecord, callRecords, checkFactSpecs, type FactSpecs, foldFacts } from '../../pipeline/facts';
import type { BatchOutput, JsonObject, SessionEvent } from '../../pipeline/types';
import { carriedCalls, RECORD_KEEP_CALLS } from '../../workflows/session-facts';

const T0 = Date.parse('2026-12-01T10:00:00Z');
let seq = 0;
function ev(type: string, data: JsonObject, atMs: number): SessionEvent {
  return { type, seq: seq++, time: new Date(atMs).toISOString(), data };
}
function call(callId: string, name: string, args: JsonObject, atMs: number, turn = 1): SessionEvent {
  return ev('tool/call', { turn, step: 0, callId, name, arguments: JSON.stringify(args) }, atMs);
}
function result(callId: string, name: string, atMs: number, error?: string): SessionEvent {
  return ev(
    'tool/result',
    {
      turn: 1,
      step: 0,
      callId,
      name,
      content: [],
      isError: !!error,
      ...(error ? { error: { message: 'x', code: error } } : {}),
    },
    atMs,
  );
}

const SPECS: FactSpecs = {
  emailsLastHour: { count: { tool: 'send_email', window: '1h' } },
  refundedToday: { total: { tool: 'refund', arg: 'amount', window: '1d' } },
  accountApproved: {
    exists: { tool: 'create_account', match: { account: 'to' }, decidedBy: 'person', outcome: ['ok'] },
  },
  testsFailedThisTurn: {
    exists: { tool: 'bash', where: { command: { like: 'npm test*' } }, window: 'turn', outcome: ['failed'] },
  },
  transfersLastHour: { total: { tool: 'transfer', arg: 'amount', window: '1h' } },
};

describe('session facts from the record', () => {
  it('at most 5 emails an hour: the calls of the last hour count, older ones and denied ones do not', () => {
    const events = [
      call('e0', 'send_email', { to: 'a' }, T0 - 2 * 3_600_000),
      result('e0', 'send_email', T0 - 2 * 3_600_000),
      ...[1, 2, 3, 4].flatMap((i) => [
        call(`e${i}`, 'send_email', { to: 'a' }, T0 + i),
        result(`e${i}`, 'send_email', T0 + i),
      ]),
      call('e5', 'send_email', { to: 'b' }, T0 + 5),
      result('e5', 'send_email', T0 + 5, 'DENIED'),
      call('e6', 'send_email', { to: 'c' }, T0 + 6),
    ];
    const facts = foldFacts(SPECS, { callId: 'e6', args: { to: 'c' }, turn: 1 }, callRecords(events), T0 + 10);
    expect(facts.emailsLastHour).toBe(4);
  });

  it('refunds at most 500 a day: a running total of the amount within the day', () => {
    const events = [
      call('r1', 'refund', { amount: 200 }, T0 - 25 * 3_600_000),
      call('r2', 'refund', { amount: 300 }, T0),
      call('r3', 'refund', { amount: 150 }, T0 + 1),
    ];
    expect(
      foldFacts(SPECS, { callId: 'r4', args: { amount: 60 }, turn: 1 }, callRecords(events), T0 + 2).refundedToday,
    ).toBe(450);
  });

  it('pay only an account an earlier call created and a person approved', () => {
    const created = [
      call('c1', 'create_account', { account: 'acct-1' }, T0),
      ev('approval/decided', { id: 'a1', callId: 'c1', outcome: 'allowed-once', by: 'ana', latencyMs: 5 }, T0 + 1),
      result('c1', 'create_account', T0 + 2),
      // Created without a person: a policy allowed it.
      call('c2', 'create_account', { account: 'acct-2' }, T0 + 3),
      ev('policy/decided', { callId: 'c2', decision: 'allow', file: 'p.cedar', line: 3 }, T0 + 3),
      result('c2', 'create_account', T0 + 4),
      // Approved by nobody: the deny timeout ended the ask.
      call('c3', 'create_account', { account: 'acct-3' }, T0 + 5),
      ev('approval/decided', { id: 'a3', callId: 'c3', outcome: 'rejected', expired: true, latencyMs: 5 }, T0 + 6),
      result('c3', 'create_account', T0 + 6, 'DENIED'),
    ];
    const records = callRecords(created);
    expect(records.find((r) => r.callId === 'c1')?.decider).toEqual({ kind: 'person', who: 'ana' });
    expect(records.find((r) => r.callId === 'c2')?.decider).toEqual({ kind: 'policy', who: 'p.cedar:3' });
    const pay = (to: string) =>
      foldFacts(SPECS, { callId: 'p', args: { to }, turn: 1 }, records, T0 + 10).accountApproved;
    expect([pay('acct-1'), pay('acct-2'), pay('acct-3'), pay('acct-9')]).toEqual([true, false, false, false]);
  });

  it('no git push after a failed test run this turn: a failed run of the turn, not of an earlier one', () => {
    const earlierTurn = [call('b1', 'bash', { command: 'npm test' }, T0, 1), result('b1', 'bash', T0, 'TOOL_FAILED')];
    const thisTurn = [
      call('b2', 'bash', { command: 'npm test -- --watch=false' }, T0 + 1, 2),
      result('b2', 'bash', T0 + 1),
    ];
    const push = (events: SessionEvent[]) =>
      foldFacts(SPECS, { callId: 'p', args: { command: 'git push' }, turn: 2 }, callRecords(events), T0 + 5)
        .testsFailedThisTurn;
    expect(push([...earlierTurn, ...thisTurn])).toBe(false);
    expect(
      push([
        ...earlierTurn,
        call('b3', 'bash', { command: 'npm test' }, T0 + 2, 2),
        result('b3', 'bash', T0 + 2, 'TOOL_FAILED'),
      ]),
    ).toBe(true);
  });

  it('three concurrent 2,000 transfers: the third sees the first two in flight', () => {
    const batch = [
      call('t1', 'transfer', { amount: 2000 }, T0),
      call('t2', 'transfer', { amount: 2000 }, T0),
      call('t3', 'transfer', { amount: 2000 }, T0),
    ];
    const records = callRecords(batch);
    expect(records.map((r) => r.outcome)).toEqual(['pending', 'pending', 'pending']);
    // Each call sees the calls recorded before it in the batch.
    expect(
      foldFacts(SPECS, { callId: 't3', args: { amount: 2000 }, turn: 1 }, records.slice(0, 2), T0).transfersLastHour,
    ).toBe(4000);
  });

  it('a declaration with a bad window, name or kind is refused at start, saying what to write', () => {
    expect(() => checkFactSpecs({ x: { count: { tool: 'a', window: '1 hour' } } })).toThrow(/30m, 1h, 1d/);
    expect(() => checkFactSpecs({ 'a-b': { count: { tool: 'a' } } })).toThrow(/identifier/);
    expect(() => checkFactSpecs({ x: { sum: { tool: 'a' } } } as never)).toThrow(/count.*total.*exists/);
    expect(() => checkFactSpecs(SPECS)).not.toThrow();
  });
});

describe('the calls a session carries', () => {
  it('appends a batch’s calls with their outcomes, drops calls past 7 days, keeps the newest 10,000', () => {
    const now = Date.now();
    const old: CallRecord = {
      callId: 'old',
      tool: 'refund',
      args: {},
      at: now - 8 * 86_400_000,
      turn: 1,
      outcome: 'ok',
    };
    const recent: CallRecord = { ...old, callId: 'recent', at: now - 1000 };
    const output = {
      events: [call('n1', 'refund', { amount: 5 }, now), result('n1', 'refund', now, 'TOOL_FAILED')],
    } as unknown as BatchOutput;
    const kept = carriedCalls([old, recent], output);
    expect(kept.map((r) => [r.callId, r.outcome])).toEqual([
      ['recent', 'ok'],
      ['n1', 'failed'],
    ]);
    const many = Array.from({ length: RECORD_KEEP_CALLS + 5 }, (_, i) => ({ ...recent, callId: `m${i}` }));
    const capped = carriedCalls(many, output);
    expect(capped).toHaveLength(RECORD_KEEP_CALLS);
    expect(capped.at(-1)?.callId).toBe('n1');
    expect(capped[0].callId).toBe('m6');
  });
});

describe('session facts: properties', () => {
  const record = fc.record({
    callId: fc.constantFrom('c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7'),
    tool: fc.constantFrom('refund', 'send_email'),
    args: fc.record({ amount: fc.integer({ min: 0, max: 1000 }), to: fc.constantFrom('a', 'b') }),
    at: fc.integer({ min: T0 - 3 * 86_400_000, max: T0 }),
    turn: fc.integer({ min: 1, max: 3 }),
    outcome: fc.constantFrom('pending', 'ok', 'failed', 'denied', 'not-run'),
  }) as fc.Arbitrary<CallRecord>;
  const unique = fc.uniqueArray(record, { selector: (r) => r.callId, maxLength: 8 });
  const specs: FactSpecs = {
    n: { count: { tool: 'refund', window: '1d' } },
    sum: { total: { tool: 'refund', arg: 'amount', window: '1d' } },
    sameTo: { count: { tool: 'send_email', match: { to: 'to' }, window: 'turn' } },
  };
  const me = { callId: 'c0', args: { to: 'a', amount: 5 }, turn: 2 };

  it('the call itself never counts, and the record order does not change a fact', () => {
    fc.assert(
      fc.property(unique, fc.infiniteStream(fc.nat()), (records, stream) => {
        const without = foldFacts(
          specs,
          me,
          records.filter((r) => r.callId !== me.callId),
          T0,
        );
        expect(foldFacts(specs, me, records, T0)).toEqual(without);
        const shuffled = records
          .map((r) => [stream.next().value, r] as const)
          .sort((a, b) => a[0] - b[0])
          .map(([, r]) => r);
        expect(foldFacts(specs, me, shuffled, T0)).toEqual(without);
      }),
    );
  });

  it('a count is the number of counted calls inside the window, and grows only as calls are added', () => {
    fc.assert(
      fc.property(unique, record, (records, extra) => {
        const inside = records.filter(
          (r) =>
            r.callId !== 'c0' &&
            r.tool === 'refund' &&
            r.at > T0 - 86_400_000 &&
            ['pending', 'ok', 'failed'].includes(r.outcome),
        );
        const f = foldFacts(specs, me, records, T0);
        expect(f.n).toBe(inside.length);
        expect(f.sum).toBe(inside.reduce((s, r) => s + (r.args.amount as number), 0));
        const more = foldFacts(specs, me, [...records.filter((r) => r.callId !== extra.callId), extra], T0);
        const less = foldFacts(
          specs,
          me,
          records.filter((r) => r.callId !== extra.callId),
          T0,
        );
        expect(more.n as number).toBeGreaterThanOrEqual(less.n as number);
      }),
    );
  });
});
