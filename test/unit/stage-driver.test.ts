// runStage (workflows/stage-runner.ts) must have an async function's microtask timing exactly: the
// stage code became Stages (`yield* runner.preflight(ref)`) where it read `preflightNow(ref) ??
// await preflight(ref)`, and one microtask more or less on a call's way can move its commands
// before or after a concurrent call's in a workflow activation, against the order a recorded
// history holds. So several coroutines run side by side, once as async functions in the old shape
// and once as Stages, their waits released in generated "activations" (several in one
// synchronous block, as a workflow activation's jobs), with a ticker chain beside them that logs
// every microtask: the two logs must be the same, line for line. A driver with one tick more on
// a result at hand is told apart, so the check can fail.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runStage, type Stage, waitFor } from '../../workflows/stage-runner';

type Step = { kind: 'now' } | { kind: 'throw' } | { kind: 'wait'; at: number; fail: boolean };
interface Plan {
  coroutines: Step[][];
  activations: number;
  /** Within an activation, the waits are released in this order (by index into all waits). */
  order: number[];
}

const ACTIVATIONS = 4;
const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'now' as const }), weight: 4 },
  { arbitrary: fc.constant({ kind: 'throw' as const }), weight: 1 },
  {
    arbitrary: fc.record({ kind: fc.constant('wait' as const), at: fc.nat(ACTIVATIONS - 1), fail: fc.boolean() }),
    weight: 4,
  },
);
const plan: fc.Arbitrary<Plan> = fc
  .array(fc.array(step, { maxLength: 6 }), { minLength: 1, maxLength: 4 })
  .chain((coroutines) => {
    const waits = coroutines.flat().filter((s) => s.kind === 'wait').length;
    return fc
      .shuffledSubarray([...Array(waits).keys()], { minLength: waits, maxLength: waits })
      .map((order) => ({ coroutines, activations: ACTIVATIONS, order }));
  });

interface Deferred {
  promise: Promise<string>;
  resolve(v: string): void;
  reject(e: Error): void;
}
function deferred(): Deferred {
  let resolve!: (v: string) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<string>((res, rej) => ((resolve = res), (reject = rej)));
  // A rejection nobody waits for yet is not an unhandled one: the coroutine waits for it later.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

type Runner = (
  id: number,
  steps: Step[],
  log: (line: string) => void,
  wait: (i: number) => Promise<string>,
) => Promise<string>;

/** The old shape: an async function, `atHand ?? await promise`. */
const asAsyncFunction: Runner = async (id, steps, log, wait) => {
  for (const [i, s] of steps.entries()) {
    if (s.kind === 'throw') throw new Error(`${id}.${i}`);
    try {
      const atHand = s.kind === 'now' ? `now ${i}` : undefined;
      log(`${id}.${i} got ${atHand ?? (await wait(i))}`);
    } catch {
      log(`${id}.${i} caught`);
    }
  }
  return `${id} returned`;
};

/** The placement's shape: at hand, or wait for it. */
function* placement(atHand: string | undefined, wait: () => Promise<string>): Stage<string> {
  return atHand ?? (yield* waitFor(wait()));
}

function* coroutine(id: number, steps: Step[], log: (line: string) => void, wait: (i: number) => Promise<string>) {
  for (const [i, s] of steps.entries()) {
    if (s.kind === 'throw') throw new Error(`${id}.${i}`);
    try {
      log(`${id}.${i} got ${yield* placement(s.kind === 'now' ? `now ${i}` : undefined, () => wait(i))}`);
    } catch {
      log(`${id}.${i} caught`);
    }
  }
  return `${id} returned`;
}

const asStage =
  (drive: <T>(s: Stage<T>) => Promise<T>): Runner =>
  (id, steps, log, wait) =>
    drive(coroutine(id, steps, log, wait));

/** Runs the plan's coroutines side by side and returns everything they (and the ticker) logged, in order. */
async function logOf(p: Plan, run: Runner): Promise<string[]> {
  const log: string[] = [];
  const waits = p.coroutines.flatMap((steps, id) =>
    steps.flatMap((s, i) => (s.kind === 'wait' ? [{ id, i, step: s, d: deferred() }] : [])),
  );
  const waitOf = (id: number) => (i: number) => waits.find((w) => w.id === id && w.i === i)!.d.promise;
  const ended = p.coroutines.map((steps, id) =>
    run(id, steps, (line) => log.push(line), waitOf(id)).then(
      (v) => void log.push(`${id} done: ${v}`),
      (e: Error) => void log.push(`${id} failed: ${e.message}`),
    ),
  );
  for (let a = 0; a < p.activations; a++) {
    log.push(`activation ${a}`);
    for (const k of p.order) {
      const w = waits[k];
      if (w.step.kind !== 'wait' || w.step.at !== a) continue;
      if (w.step.fail) w.d.reject(new Error('failed'));
      else w.d.resolve(`waited ${w.id}.${w.i}`);
    }
    // A ticker beside the coroutines: its lines say in which microtask each coroutine line came.
    let tick: Promise<void> = Promise.resolve();
    for (let t = 0; t < 12; t++) tick = tick.then(() => void log.push(`tick ${a}.${t}`));
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(ended);
  return log;
}

/** A driver like runStage but one microtask late on every step: what the old `?? await` form saved. */
function oneTickLate<T>(stage: Stage<T>): Promise<T> {
  return Promise.resolve().then(() => runStage(stage));
}

describe('runStage', () => {
  it('has the microtask timing of an async function: the same log, line for line, for any plan', async () => {
    await fc.assert(
      fc.asyncProperty(plan, async (p) => {
        expect(await logOf(p, asStage(runStage))).toEqual(await logOf(p, asAsyncFunction));
      }),
      { numRuns: 300 },
    );
  });

  it('tells a driver one tick late apart (the check can fail)', async () => {
    const out = await fc.check(
      fc.asyncProperty(plan, async (p) => {
        expect(await logOf(p, asStage(oneTickLate))).toEqual(await logOf(p, asAsyncFunction));
      }),
      { numRuns: 300 },
    );
    expect(out.failed).toBe(true);
  });

  it('a rejection is thrown where the Stage waited, and a throw rejects its promise', async () => {
    const seen: string[] = [];
    function* stage(): Stage<string> {
      try {
        yield* waitFor(Promise.reject(new Error('no worker')));
      } catch (err) {
        seen.push((err as Error).message);
      }
      throw new Error('after the catch');
    }
    await expect(runStage(stage())).rejects.toThrow('after the catch');
    expect(seen).toEqual(['no worker']);
  });
});
