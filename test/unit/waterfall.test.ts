// The execute waterfall's compose, tested the way koa-compose and hono test theirs: order, the
// value passing back out, short-circuit, errors in both directions, and a second next().
import { describe, expect, it } from 'vitest';
import { compose, type Layer, NextCalledTwice } from '../../pipeline/waterfall';

const layer = <R>(name: string, run: Layer<R>['run']): Layer<R> => ({ name, run });

describe('compose', () => {
  it('runs layers outermost first, the innermost last, and unwinds in reverse', async () => {
    const trace: string[] = [];
    const mk = (n: string) =>
      layer<string>(n, async (next) => {
        trace.push(`${n} in`);
        const out = await next();
        trace.push(`${n} out`);
        return `${n}(${out})`;
      });
    const run = compose([mk('a'), mk('b'), mk('c')], async () => {
      trace.push('body');
      return 'x';
    });
    expect(await run()).toBe('a(b(c(x)))');
    expect(trace).toEqual(['a in', 'b in', 'c in', 'body', 'c out', 'b out', 'a out']);
  });

  it('with no layers is the innermost function', async () => {
    expect(await compose([], async () => 7)()).toBe(7);
  });

  it('a layer that does not call next() short-circuits: nothing inside it runs', async () => {
    let inner = 0;
    const run = compose(
      [layer('cache', () => 'cached'), layer('never', async (next) => (inner++, next()))],
      async () => {
        inner++;
        return 'fresh';
      },
    );
    expect(await run()).toBe('cached');
    expect(inner).toBe(0);
  });

  it('refuses a second next() with an error naming the layer, and does not run the body again', async () => {
    let bodies = 0;
    const run = compose([layer<string>('retry twice', async (next) => (await next()) + (await next()))], async () => {
      bodies++;
      return 'x';
    });
    const err = (await run().catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(NextCalledTwice);
    expect(err.message).toMatch(/^retry twice called next\(\) more than once/);
    expect(bodies).toBe(1);
  });

  it('a layer may catch the refusal of a second next() and still answer with the first result', async () => {
    const run = compose(
      [
        layer<string>('careful', async (next) => {
          const first = await next();
          await next().catch(() => undefined);
          return first;
        }),
      ],
      async () => 'once',
    );
    expect(await run()).toBe('once');
  });

  it('two next() calls from the same layer at once are refused too', async () => {
    let bodies = 0;
    const run = compose([layer('fan-out', (next) => Promise.all([next(), next()]).then((a) => a.join()))], async () => {
      bodies++;
      return 'x';
    });
    await expect(run()).rejects.toThrow(NextCalledTwice);
    expect(bodies).toBe(1);
  });

  it('each run of the composed function is independent', async () => {
    let bodies = 0;
    const run = compose([layer('pass', (next) => next())], async () => ++bodies);
    expect(await run()).toBe(1);
    expect(await run()).toBe(2);
  });

  it('errors travel outward: a layer can catch what the body threw, or let it through', async () => {
    const boom = async (): Promise<string> => {
      throw new Error('body failed');
    };
    const caught = compose([layer('guard', (next) => next().catch((e: Error) => `caught: ${e.message}`))], boom);
    expect(await caught()).toBe('caught: body failed');
    const through = compose([layer('pass', (next) => next())], boom);
    await expect(through()).rejects.toThrow('body failed');
  });

  it('a layer that throws synchronously rejects the run instead of throwing out of it', async () => {
    const run = compose(
      [
        layer<string>('sync thrower', () => {
          throw new Error('no');
        }),
      ],
      async () => 'x',
    );
    const p = run();
    expect(p).toBeInstanceOf(Promise);
    await expect(p).rejects.toThrow('no');
  });

  it('layers may return plain values as well as promises', async () => {
    const run = compose([layer<number>('plain', () => 1)], async () => 2);
    expect(await run()).toBe(1);
  });
});
