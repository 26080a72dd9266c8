// Dogwood policies through the reference interpreter (hooks/dogwood.ts), checked against the
// reference's own examples (test/fixtures/dogwood, from the dogwood-py wheel): its CLI trace
// replays to its expected output, and Sluice's call records rendered as Dogwood events reach the
// verdicts its shopping-agent README states. Needs `python3 -m pip install dogwood-py==0.0.12`.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  cedarString,
  checkDogwood,
  type DogwoodPolicySet,
  type DogwoodScope,
  decideDogwood,
  dogwoodTrace,
  loadDogwoodPolicySet,
  parseVerdicts,
  replayTrace,
} from '../../hooks/dogwood';
import { type FactSpecs, foldFacts } from '../../pipeline/facts';
import type { CallOutcome, CallRecord, JsonObject } from '../../pipeline/types';

const FIX = join(__dirname, '..', 'fixtures', 'dogwood');
const read = (...p: string[]) => readFileSync(join(FIX, ...p), 'utf8');
const T0 = Date.parse('2026-12-01T10:00:00Z');
const HOUR = 3_600_000;

function shopping(...files: string[]): DogwoodPolicySet {
  return {
    policy: files.map((f) => read('shopping', f)).join('\n'),
    policySchema: read('shopping', 'schema.cedarschema'),
    eventSchema: read('shopping', 'event.dwschema'),
    source: files.join(', '),
  };
}

// The tool names of the reference's README, each its own action under ShoppingTool.
const SHOP: DogwoodScope = {
  namespace: 'Agent',
  principal: 'Agent::OAuthUser::"alice"',
  resource: 'Agent::Gateway::"shop"',
  sessionId: 'session-1',
  actions: {
    grant_session: 'GrantSession',
    revoke_session: 'RevokeSession',
    login: 'Login',
    approve_checkout: 'ApproveCheckout',
    list_products: 'ListProducts',
    add_to_cart: 'AddToCart',
    checkout_cart: 'CheckoutCart',
  },
};

let n = 0;
function call(tool: string, args: JsonObject, at: number, outcome: CallOutcome = 'ok'): CallRecord {
  const input = {
    user: 'alice',
    session_id: 'session-1',
    cart_id: 'cart-1',
    item_id: 'book',
    category: 'book',
    amount: 0,
    quantity: 1,
    risk: 10,
    status: 'requested',
    ...args,
  };
  return { callId: `c${n++}`, tool, args: input, at, turn: 1, outcome };
}

/** Each call judged after the ones before it, as a session meets them. */
async function inTurn(set: DogwoodPolicySet, calls: CallRecord[]): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < calls.length; i++) {
    out.push((await decideDogwood(set, SHOP, calls.slice(0, i), calls[i])).decision);
  }
  return out;
}

describe('the reference examples', () => {
  it("replays the reference CLI example's trace to its expected output", async () => {
    const set = { policy: read('cli', 'policy.dw'), policySchema: read('cli', 'schema.cedarschema'), source: 'cli' };
    expect((await replayTrace(set, read('cli', 'trace.log'))).trim()).toBe(read('cli', 'expected.out').trim());
  });

  it("reaches the CLI example's verdicts from Sluice call records (the arguments as the context input)", async () => {
    const set = { policy: read('cli', 'policy.dw'), policySchema: read('cli', 'schema.cedarschema'), source: 'cli' };
    const expected = parseVerdicts(read('cli', 'expected.out')).map((v) => (v.allowed ? 'allow' : 'deny'));
    const sells = [
      { who: 'alice', shares: 25, stock: 'AMZN' },
      { who: 'bob', shares: 500, stock: 'MSFT' },
    ];
    const got = [];
    for (const s of sells) {
      const scope: DogwoodScope = {
        namespace: 'Agent',
        principal: `Agent::OAuthUser::"${s.who}"`,
        resource: 'Agent::Gateway::"trading"',
        actions: { sell_shares: 'SellShares' },
        input: 'arguments',
      };
      const c: CallRecord = {
        callId: `u-${s.who}`,
        tool: 'sell_shares',
        args: { shares: s.shares, stock: s.stock },
        at: T0,
        turn: 1,
        outcome: 'pending',
      };
      got.push((await decideDogwood(set, scope, [], c)).decision);
    }
    expect(got).toEqual(expected);
  });

  it('approval_gate: checkout only after an approval of the same cart within the hour', async () => {
    const set = shopping('approval_gate.dw');
    const approve = (at: number, cart = 'cart-1') =>
      call('approve_checkout', { cart_id: cart, status: 'approved' }, at);
    const checkout = (at: number) => call('checkout_cart', {}, at);
    expect((await decideDogwood(set, SHOP, [], checkout(T0))).decision).toBe('deny');
    expect((await decideDogwood(set, SHOP, [approve(T0)], checkout(T0 + HOUR))).decision).toBe('allow');
    expect((await decideDogwood(set, SHOP, [approve(T0)], checkout(T0 + HOUR + 1000))).decision).toBe('deny');
    expect((await decideDogwood(set, SHOP, [approve(T0, 'cart-2')], checkout(T0 + 1000))).decision).toBe('deny');
  });

  it('daily_budget: completed 20, 20, 20 → allow, allow, deny, the calls still in flight counted', async () => {
    const set = shopping('daily_budget.dw');
    const spend = (i: number) => call('checkout_cart', { amount: 20, status: 'completed' }, T0 + i * 1000, 'pending');
    expect(await inTurn(set, [spend(0), spend(1), spend(2)])).toEqual(['allow', 'allow', 'deny']);
    // A day later the window has moved past the first two.
    const later = call('checkout_cart', { amount: 20, status: 'completed' }, T0 + 24 * HOUR + 2000);
    expect((await decideDogwood(set, SHOP, [spend(0), spend(1)], later)).decision).toBe('allow');
  });

  // The reference counts the order being judged too (as daily_budget sums it): `n < 3` lets two a day.
  it('daily_order_quota: a third completed order in a day is denied; blocked attempts do not count', async () => {
    const set = shopping('daily_order_quota.dw');
    const done = (i: number) => call('checkout_cart', { status: 'completed' }, T0 + i * 1000);
    const blocked = (i: number) => call('checkout_cart', { status: 'blocked' }, T0 + i * 1000, 'denied');
    expect((await decideDogwood(set, SHOP, [done(0)], done(5))).decision).toBe('allow');
    expect((await decideDogwood(set, SHOP, [done(0), done(1)], done(5))).decision).toBe('deny');
    expect((await decideDogwood(set, SHOP, [done(0), blocked(1), blocked(2)], done(5))).decision).toBe('allow');
  });

  it('session_access: tools need a grant within the hour with no revoke since', async () => {
    const set = shopping('session_access.dw');
    const grant = (i: number) => call('grant_session', {}, T0 + i * 1000);
    const revoke = (i: number) => call('revoke_session', {}, T0 + i * 1000);
    const list = (i: number) => call('list_products', {}, T0 + i * 1000);
    expect(
      await inTurn(set, [list(0), grant(1), list(2), revoke(3), list(4), grant(5), list(6)]).then((d) => [
        d[0],
        d[2],
        d[4],
        d[6],
      ]),
    ).toEqual(['deny', 'allow', 'deny', 'allow']);
  });

  it('loads the shopping policies from their folder, and names the file a policy that does not validate is in', async () => {
    const set = await loadDogwoodPolicySet(join(FIX, 'shopping'), FIX);
    expect(set.source).toBe('shopping');
    // Cedar's rule across the set: any permit allows. Listing products is permitted only after a login or a grant.
    const list = call('list_products', {}, T0 + 1000);
    expect((await decideDogwood(set, SHOP, [], list)).decision).toBe('deny');
    expect((await decideDogwood(set, SHOP, [call('login', {}, T0)], list)).decision).toBe('allow');
    const dir = mkdtempSync(join(tmpdir(), 'dogwood-'));
    writeFileSync(join(dir, 'schema.cedarschema'), read('shopping', 'schema.cedarschema'));
    writeFileSync(join(dir, 'a.dw'), read('shopping', 'approval_gate.dw'));
    writeFileSync(join(dir, 'b.dw'), '@id("typo")\npermit(principal, action == Agent::Action::"Checkout", resource);');
    await expect(loadDogwoodPolicySet(dir, dir)).rejects.toThrow(/^b\.dw does not validate: .*unrecognized action/);
    writeFileSync(join(dir, 'more.cedarschema'), '');
    await expect(loadDogwoodPolicySet(dir, dir)).rejects.toThrow(/holds 2 \.cedarschema files/);
    rmSync(dir, { recursive: true });
  });

  it('validates a policy set at load, naming its source and what the reference found', async () => {
    const bad = {
      ...shopping('approval_gate.dw'),
      policy: 'permit(principal, action == Agent::Action::"Nope", resource);',
      source: 'bad.dw',
    };
    await expect(checkDogwood(bad)).rejects.toThrow(/bad\.dw does not validate: .*unrecognized action/);
    await expect(
      checkDogwood(shopping('approval_gate.dw', 'session_access.dw', 'daily_budget.dw')),
    ).resolves.toBeUndefined();
  });
});

// The docs' table maps Dogwood's aggregations onto session facts: the reference and the fold agree
// on generated sessions (the fact leaves the call being judged out, where Dogwood counts it).
describe('session facts against the reference', () => {
  const arb = fc.array(
    fc.record({
      gapS: fc.integer({ min: 0, max: 12 * 3600 }),
      amount: fc.integer({ min: 1, max: 30 }),
      completed: fc.boolean(),
    }),
    { minLength: 1, maxLength: 8 },
  );
  const specs: FactSpecs = {
    spentToday: { total: { tool: 'checkout_cart', arg: 'amount', window: '1d', where: { status: 'completed' } } },
  };

  it('daily_budget decides as a `total` fact over a day plus the call itself', async () => {
    const set = shopping('daily_budget.dw');
    await fc.assert(
      fc.asyncProperty(arb, async (steps) => {
        let at = T0;
        const calls = steps.map((s) => {
          at += s.gapS * 1000;
          return call('checkout_cart', { amount: s.amount, status: s.completed ? 'completed' : 'blocked' }, at, 'ok');
        });
        const last = calls[calls.length - 1];
        const earlier = calls.slice(0, -1);
        // Exactly a day apart is where the two differ (the next test): generated sessions stay off it.
        fc.pre(earlier.every((c) => last.at - c.at !== 24 * HOUR));
        const facts = foldFacts(specs, last, earlier, last.at);
        const own = last.args.status === 'completed' ? (last.args.amount as number) : 0;
        const viaFacts = (facts.spentToday as number) + own <= 50 ? 'allow' : 'deny';
        expect((await decideDogwood(set, SHOP, earlier, last)).decision).toBe(viaFacts);
      }),
      { numRuns: 15 },
    );
  });

  it("differs at the window's edge: Dogwood counts a call exactly a window old, a session fact does not", async () => {
    const first = call('checkout_cart', { amount: 40, status: 'completed' }, T0);
    const last = call('checkout_cart', { amount: 20, status: 'completed' }, T0 + 24 * HOUR);
    expect(foldFacts(specs, last, [first], last.at).spentToday).toBe(0);
    expect((await decideDogwood(shopping('daily_budget.dw'), SHOP, [first], last)).decision).toBe('deny');
  });
});

describe('Sluice calls as Dogwood events', () => {
  const NOTE_SCHEMA =
    'namespace Agent { entity OAuthUser; entity Gateway; action "Note" appliesTo { principal: [OAuthUser], resource: [Gateway] }; }';
  const scope: DogwoodScope = {
    namespace: 'Agent',
    principal: 'Agent::OAuthUser::"a"',
    resource: 'Agent::Gateway::"g"',
    input: 'arguments',
  };

  it('an argument string is one Cedar string whatever it holds: it matches itself and nothing else', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'binary', maxLength: 40 }),
        fc.string({ unit: 'grapheme', maxLength: 10 }),
        async (s, other) => {
          fc.pre(s !== other);
          const set = {
            policy: `permit(principal, action == Agent::Action::"Note", resource) when { context.input.note == ${cedarString(s)} };`,
            policySchema: NOTE_SCHEMA,
            source: 'note.dw',
          };
          const mk = (note: string, i: number): CallRecord => ({
            callId: `n${i}`,
            tool: 'Note',
            args: { note },
            at: T0 + i,
            turn: 1,
            outcome: 'ok',
          });
          const verdicts = parseVerdicts(await replayTrace(set, dogwoodTrace([mk(s, 0), mk(other, 1)], scope)));
          expect(verdicts.map((v) => v.allowed)).toEqual([true, false]);
        },
      ),
      { numRuns: 12 },
    );
  });

  it('refuses a number Cedar cannot hold rather than judge another one', () => {
    const c: CallRecord = { callId: 'x', tool: 'Note', args: { amount: 0.123456 }, at: T0, turn: 1, outcome: 'ok' };
    expect(() => dogwoodTrace([c], scope)).toThrow(/input\.amount is 0\.123456.*not judged/);
    expect(dogwoodTrace([{ ...c, args: { amount: 12.5 } }], scope)).toContain('decimal("12.5000")');
  });
});

describe('without the reference interpreter', () => {
  const saved = process.env.SLUICE_PYTHON;
  afterEach(() => {
    if (saved === undefined) delete process.env.SLUICE_PYTHON;
    else process.env.SLUICE_PYTHON = saved;
  });

  it('says what to install when the Python it was pointed at is not there', async () => {
    process.env.SLUICE_PYTHON = join(FIX, 'no-such-python');
    await expect(checkDogwood(shopping('approval_gate.dw'))).rejects.toThrow(/-m pip install dogwood-py==0\.0\.12/);
  });
});
