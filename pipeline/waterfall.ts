// The execute waterfall as a pure compose, in the manner of koa-compose: each layer gets a
// `next` that runs the rest of the chain and, at the bottom, the innermost function (the tool
// body). A layer may call next() at most once: a second call would run the body again, so it is
// refused with an error that names the layer. Pure, so it is tested without a worker.

export interface Layer<R> {
  /** How errors name the layer, e.g. `execute wrapper timing`. */
  name: string;
  run(next: () => Promise<R>): Promise<R> | R;
}

export class NextCalledTwice extends Error {
  constructor(readonly layer: string) {
    super(
      `${layer} called next() more than once; next() runs the rest of the chain and the tool body, so it may be called at most once per call`,
    );
    this.name = 'NextCalledTwice';
  }
}

/** Layers in order, outermost first; each run of the result runs the chain once. */
export function compose<R>(layers: readonly Layer<R>[], innermost: () => Promise<R>): () => Promise<R> {
  const chain = [...layers];
  return () => {
    // The deepest layer reached so far in this run: a next() that would reach it again is a second call.
    let reached = -1;
    const from = (i: number): Promise<R> => {
      if (i <= reached) return Promise.reject(new NextCalledTwice(chain[i - 1].name));
      reached = i;
      try {
        return Promise.resolve(i === chain.length ? innermost() : chain[i].run(() => from(i + 1)));
      } catch (err) {
        return Promise.reject(err);
      }
    };
    return from(0);
  };
}
