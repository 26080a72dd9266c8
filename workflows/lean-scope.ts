// A cancellation scope whose `run` makes one promise where the SDK's makes two. The SDK runs the
// function in an async method (`return await fn()`): the method's own promise and the one its
// `await` makes. Every workflow promise costs a stack trace from the SDK's promise hook (for its
// stack trace query), and Sluice runs every tool body in a scope (docs/performance.md, "Worker CPU
// per call: where it goes"). Here the function's promise is chained with one `then`, which settles
// in the same microtask the async method's promise would, with the same value or error: commands
// come out in the same order, so recorded histories replay (test/unit/lean-scope.test.ts compares
// the timing with the SDK's own scope).
import { CancellationScope } from '@temporalio/workflow';

const same = <T>(value: T): T => value;

export class LeanScope extends CancellationScope {
  protected override runInContext<T>(fn: () => Promise<T>): Promise<T> {
    // A timeout needs the SDK's timer scope around the function, and its clean-up after it.
    if (this.timeout) return super.runInContext(fn);
    let running: Promise<T>;
    try {
      running = fn();
    } catch (err) {
      // As the async method's promise: rejected at once.
      return Promise.reject(err);
    }
    // `Promise.resolve` is what `await` applies: a native promise is taken as it is.
    return Promise.resolve(running).then(same);
  }
}
