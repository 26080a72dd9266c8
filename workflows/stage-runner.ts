// Where and how cheaply the quick stages run, as the stage code sees it (implemented by
// workflows/placement.ts). The stage code (call-pipeline.ts, approval-stage.ts) asks for a stage
// here and never sees the look-ahead groups or local and regular activities.
//
// Pre-execute and settle are Stages: `const pre = yield* runner.preflight(ref)` is one step in
// the stage code, and the placement alone decides whether the result is at hand (run ahead with an
// earlier call, or settled here in the workflow) or waited for. A Stage is a generator that
// yields only the promises it waits for; runStage drives a method written as one, with exactly the
// microtask timing an async function with `await` on those promises has, so a result at hand costs
// no tick at all. That is the point: within one workflow activation the calls run side by side,
// and a tick more on one call's way can move its commands (activities, local activities) before
// or after another call's, which a recorded history holds in one order. (An `await` on a result
// at hand is such a tick: the batches recorded since 0.2 took it without one.)
// test/unit/stage-driver.test.ts checks the timing against async functions; test/replay-order.test.ts
// checks that recorded batches replay their calls in the order the code that recorded them did.
import type { CallRef, GuardsResult, PreflightResult, SettleResult, ToolProfile } from '../pipeline/stages';
import type { SettleRequest } from '../codec/stages';
import type { ToolCall } from '../pipeline/types';
import type { Admission } from './admission';

/** A call waiting for its settle (stages 9–12), as the runner needs to know it. */
export interface PendingSettle {
  /** The admission the settle is for: a result settled ahead serves that admission only. */
  admission: Admission;
  /** Undefined when a preflight never ran for the call. */
  profile?: ToolProfile;
  /** The settle request at a given share; undefined for a call that never got as far as a reference. */
  request?: (share: number) => SettleRequest;
}

export type SettleWith = PendingSettle & { request: (share: number) => SettleRequest };

export interface StageRunner {
  /** 4 (and 6 when nobody is asked): at hand when run ahead for this very call, else waited for. */
  preflight(ref: CallRef): Stage<PreflightResult>;
  /** The later calls whose pre-execute, run ahead on the current state, asks a person too. */
  asksAfter(call: ToolCall): Promise<{ call: ToolCall; ref: CallRef; result: PreflightResult }[]>;
  /** 6 after a person said yes: one call, since the approval came in between. */
  guards(ref: CallRef): Promise<GuardsResult>;
  /** A call is ready to settle (its body is over or never ran): a settle group may take it along. */
  readyToSettle(call: ToolCall, pending: PendingSettle): void;
  /** 9–12: at hand when settled ahead with an earlier call or here in the workflow, else waited for. */
  settle(call: ToolCall, pending: SettleWith, share: number): Stage<SettleResult>;
  /** A body patched the session state: preflights run ahead on the old state are stale. */
  stateChanged(): void;
  /** A body that runs alone ended: asks raised ahead are re-checked. */
  bodyEnded(): void;
}

/**
 * A step that may wait: a generator that yields the promises it waits for and returns its value.
 * Written `yield* stage` where an async function would write `await promise`; a Stage that
 * returns without yielding has its value at hand and costs no microtask.
 */
export type Stage<T> = Generator<Promise<unknown>, T, unknown>;

/** Waits for a promise inside a Stage, as `await` would: `const x = yield* waitFor(p)`. */
export function* waitFor<T>(promise: Promise<T>): Stage<T> {
  return (yield promise) as T;
}

/**
 * Runs a Stage to its end, with an async function's timing: it starts at once, resumes in the
 * microtask after each promise it waits for settles (a rejection is thrown where it waited), and
 * its promise settles as the async function's would. Nothing else: no tick of its own.
 */
export function runStage<T>(stage: Stage<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const step = (next: () => IteratorResult<Promise<unknown>, T>) => {
      let r: IteratorResult<Promise<unknown>, T>;
      try {
        r = next();
      } catch (err) {
        reject(err);
        return;
      }
      if (r.done) resolve(r.value);
      else
        r.value.then(
          (v) => step(() => stage.next(v)),
          (err) => step(() => stage.throw(err)),
        );
    };
    step(() => stage.next());
  });
}
