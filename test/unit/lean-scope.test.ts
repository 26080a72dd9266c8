// LeanScope (workflows/lean-scope.ts) must settle `run`'s promise in the very microtask the SDK's
// CancellationScope settles it, with the same value or error: tool bodies and whole batches run
// in it, and one microtask more or less on a call's way can move its commands before or after a
// concurrent call's within a workflow activation, against the order a recorded history holds. So
// several bodies run side by side, once in each scope, each awaiting `scope.run(fn)` as
// CallPipeline.executeBody does, with `fn` resolving, rejecting or throwing at once as generated,
// and the waits released in generated "activations" with a ticker chain beside them that logs every
// microtask: the two logs must be the same, line for line. A scope one tick early is told apart.
import { AsyncLocalStorage } from 'node:async_hooks';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';

// The workflow sandbox gives the SDK Node's AsyncLocalStorage; outside it the SDK's scopes have
// none, so it is put where the SDK looks before its module loads.
type Scopes = typeof import('@temporalio/workflow/lib/cancellation-scope');
type CancellationScope = InstanceType<Scopes['CancellationScope']>;
let scopes: Scopes;
let LeanScope: typeof import('../../workflows/lean-scope').LeanScope;
let EarlyScope: Scopes['CancellationScope'];
beforeAll(async () => {
  Object.assign(globalThis, { AsyncLocalStorage });
  scopes = await import('@temporalio/workflow/lib/cancellation-scope');
  ({ LeanScope } = await import('../../workflows/lean-scope'));
  /** A scope that hands back the function's own promise: one microtask early. */
  EarlyScope = class extends scopes.CancellationScope {
    protected override runInContext<T>(fn: () => Promise<T>): Promise<T> {
      return fn();
    }
  };
});

type Body = { kind: 'throw' } | { kind: 'wait'; at: number; fail: boolean };
interface Plan {
  bodies: Body[];
  activations: number;
  /** Within an activation, the waits are released in this order (by body index). */
  order: number[];
}

const ACTIVATIONS = 3;
const body: fc.Arbitrary<Body> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'throw' as const }), weight: 1 },
  {
    arbitrary: fc.record({ kind: fc.constant('wait' as const), at: fc.nat(ACTIVATIONS - 1), fail: fc.boolean() }),
    weight: 5,
  },
);
const plan: fc.Arbitrary<Plan> = fc
  .array(body, { minLength: 1, maxLength: 6 })
  .chain((bodies) =>
    fc
      .shuffledSubarray([...bodies.keys()], { minLength: bodies.length, maxLength: bodies.length })
      .map((order) => ({ bodies, activations: ACTIVATIONS, order })),
  );

type MakeScope = (parent: CancellationScope) => CancellationScope;

/** Runs the plan's bodies side by side in one scope and returns everything they (and the ticker) logged, in order. */
async function logOf(p: Plan, make: MakeScope): Promise<string[]> {
  const lines: string[] = [];
  const log = (line: string) => void lines.push(line);
  const scope = make(new scopes.RootCancellationScope());
  const releases: ((fail: boolean) => void)[] = [];
  const ended = p.bodies.map(async (b, i) => {
    const fn = (): Promise<string> => {
      if (b.kind === 'throw') throw new Error(`body ${i} threw`);
      return new Promise<string>((resolve, reject) => {
        releases[i] = (fail) => (fail ? reject(new Error(`body ${i} failed`)) : resolve(`body ${i} done`));
      });
    };
    try {
      log(`${i} got ${await scope.run(fn)}`);
    } catch (err) {
      log(`${i} caught ${(err as Error).message}`);
    }
  });
  for (let a = 0; a < p.activations; a++) {
    log(`activation ${a}`);
    for (const i of p.order) {
      const b = p.bodies[i];
      if (b.kind === 'wait' && b.at === a) releases[i](b.fail);
    }
    let tick: Promise<void> = Promise.resolve();
    for (let t = 0; t < 8; t++) tick = tick.then(() => log(`tick ${a}.${t}`));
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(ended);
  return lines;
}

const sdk: MakeScope = (parent) => new scopes.CancellationScope({ cancellable: true, parent });
const lean: MakeScope = (parent) => new LeanScope({ cancellable: true, parent });
const early: MakeScope = (parent) => new EarlyScope({ cancellable: true, parent });

describe('LeanScope', () => {
  it("settles run's promise in the SDK scope's microtask, with its value or error, for any plan", async () => {
    await fc.assert(
      fc.asyncProperty(plan, async (p) => {
        expect(await logOf(p, lean)).toEqual(await logOf(p, sdk));
      }),
      { numRuns: 300 },
    );
  });

  it('tells a scope one microtask early apart (the check can fail)', async () => {
    const out = await fc.check(
      fc.asyncProperty(plan, async (p) => {
        expect(await logOf(p, early)).toEqual(await logOf(p, sdk));
      }),
      { numRuns: 300 },
    );
    expect(out.failed).toBe(true);
  });

  it('makes the function current while it runs, as the SDK scope does', async () => {
    const scope = new LeanScope({ cancellable: true, parent: new scopes.RootCancellationScope() });
    let current: CancellationScope | undefined;
    await scope.run(async () => {
      current = scopes.CancellationScope.current();
    });
    expect(current).toBe(scope);
  });
});
