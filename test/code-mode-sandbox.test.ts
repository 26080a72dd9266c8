// The sandbox on its own: a program in a QuickJS thread, its tool calls answered by a function.
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../pipeline/types';
import { runProgram, type SandboxLimits } from '../tools/code-mode';
import { sandboxPoolStats } from '../tools/code-mode/sandbox';

type Call = { index: number; name: string; args: JsonObject };
type SentCall = Parameters<Parameters<typeof runProgram>[0]['callTool']>[0];
type Answer = Awaited<ReturnType<Parameters<typeof runProgram>[0]['callTool']>>;

function run(
  code: string,
  opts: {
    answer?: (c: SentCall) => Answer | Promise<Answer>;
    seed?: string;
    limits?: Partial<SandboxLimits>;
    signal?: AbortSignal;
    watchdogMs?: number;
  } = {},
) {
  const calls: Call[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const outcome = runProgram({
    code,
    toolNames: ['echo', 'fail'],
    seed: opts.seed ?? 'wf/call-1',
    now: Date.UTC(2024, 0, 2, 3, 4, 5),
    limits: { cpuMs: 2_000, ...opts.limits },
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.watchdogMs !== undefined ? { watchdogMs: opts.watchdogMs } : {}),
    async callTool(call) {
      calls.push({ index: call.index, name: call.name, args: call.args });
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      try {
        return await (
          opts.answer ??
          ((c: SentCall) => (c.name === 'fail' ? { ok: false, message: `no ${c.index}` } : { ok: true, value: c.args }))
        )(call);
      } finally {
        inFlight--;
      }
    },
  });
  return outcome.then((o) => ({ ...o, calls, maxInFlight }));
}

describe('sandbox: results, logs and tool calls', () => {
  it('returns the program result and its console output', async () => {
    const out = await run(
      "console.log('n', 1, { a: [1] }, null, undefined);\nconsole.warn(new TypeError('careful'));\nreturn { sum: 1 + 2 };",
    );
    expect(out).toMatchObject({
      ok: true,
      result: { sum: 3 },
      logs: ['n 1 {"a":[1]} null undefined', '[warn] TypeError: careful'],
      calls: [],
    });
  });

  it('has no result when the program returns nothing', async () => {
    const out = await run('const x = 1;');
    expect(out.ok).toBe(true);
    expect('result' in out).toBe(false);
  });

  it('hands a tool value to the program and serializes calls in submission order', async () => {
    const out = await run(
      'const [a, b, c] = await Promise.all([tools.echo({ n: 1 }), tools.echo({ n: 2 }), tools.echo({ n: 3 })]);\nreturn [a.n, b.n, c.n];',
      {
        answer: async (c) => {
          await new Promise((r) => setTimeout(r, 20));
          return { ok: true, value: c.args };
        },
      },
    );
    expect(out.result).toEqual([1, 2, 3]);
    expect(out.calls.map((c) => [c.index, c.args.n])).toEqual([
      [0, 1],
      [1, 2],
      [2, 3],
    ]);
    expect(out.maxInFlight).toBe(1);
  });

  it('rejects a failed call with its message only, as an Error the program can catch', async () => {
    const out = await run(
      'try { await tools.fail({}); } catch (e) { return [e instanceof Error, e.name, e.message, typeof e.code, typeof e.cause]; }',
    );
    expect(out.result).toEqual([true, 'Error', 'no 0', 'undefined', 'undefined']);
  });

  it('passes no arguments as {}, and refuses arguments that are not a lossless JSON object', async () => {
    const out = await run(
      [
        'class Point { constructor() { this.x = 1; } }',
        'const bad = [[1, 2], "text", new Point(), { a: -0 }, { a: [1, , 3] }, { [Symbol("s")]: 1 }, { get a() { return 1; } }, { a: new Date() }];',
        'const why = [];',
        'for (const args of bad) { try { await tools.echo(args); why.push("accepted"); } catch (e) { why.push(e.message); } }',
        'await tools.echo();',
        'return why;',
      ].join('\n'),
    );
    expect(out.result).toEqual([
      'arguments of tools.echo() must be an object, e.g. tools.echo({ ... })',
      'arguments of tools.echo() must be an object, e.g. tools.echo({ ... })',
      'arguments is not lossless JSON: an instance of Point, not a plain object',
      'arguments.a is not lossless JSON: -0 would become 0',
      'arguments.a is not lossless JSON: an array with holes or extra properties',
      'arguments is not lossless JSON: symbol key Symbol(guest symbol 0)',
      'arguments.a is not lossless JSON: a getter/setter property',
      'arguments.a is not lossless JSON: an instance of Date, not a plain object',
    ]);
    expect(out.calls).toEqual([{ index: 0, name: 'echo', args: {} }]);
  });

  it('offers only the tools it was given', async () => {
    const out = await run(
      'return [Object.keys(tools), typeof tools.run_code, typeof host, typeof globalThis.__sluice];',
    );
    expect(out.result).toEqual([['echo', 'fail'], 'undefined', 'undefined', 'undefined']);
    const missing = await run("await tools.read_file({ path: 'x' });");
    expect(missing).toMatchObject({
      ok: false,
      kind: 'error',
      error: expect.stringMatching(/^TypeError: not a function/),
    });
  });

  it('does not count time spent waiting on tools against the CPU budget', async () => {
    const out = await run("await tools.echo({}); await tools.echo({}); return 'done';", {
      limits: { cpuMs: 300 },
      answer: async (c) => {
        await new Promise((r) => setTimeout(r, 400));
        return { ok: true, value: c.args };
      },
    });
    expect(out).toMatchObject({ ok: true, result: 'done' });
  });
});

describe('sandbox: the same run replays identically', () => {
  const probe =
    'return [Math.random(), Math.random(), Date.now(), new Date().toISOString(), typeof Date(), new Date(0).getTime(), new Date() instanceof Date];';

  it('seeds Math.random from the call and freezes the clock', async () => {
    const [a, b, c] = await Promise.all([run(probe), run(probe), run(probe, { seed: 'wf/call-2' })]);
    expect(a.result).toEqual(b.result);
    const [r1, r2, now, iso, str, epoch, isDate] = a.result as unknown[];
    expect(r1).not.toBe(r2);
    expect([now, iso, str, epoch, isDate]).toEqual([
      Date.UTC(2024, 0, 2, 3, 4, 5),
      '2024-01-02T03:04:05.000Z',
      'string',
      0,
      true,
    ]);
    expect((c.result as unknown[])[0]).not.toBe(r1);
  });
});

describe('sandbox: failures and limits', () => {
  it('ends a program that did not await its call once that call is taken, and makes none of the calls behind it', async () => {
    // The batch workflow must have the call before it hears that the program ended: then it
    // settles the call every time, rather than now running it and now refusing it (run-code.ts).
    const order: string[] = [];
    const answers: ((a: Answer) => void)[] = [];
    const out = await run(
      "tools.echo({ n: 1 }).catch(() => {});\ntools.echo({ n: 2 }).catch(() => {});\nreturn 'done';",
      {
        answer: (c) => {
          setTimeout(() => {
            order.push(`taken ${c.index}`);
            c.taken();
          }, 300);
          return new Promise<Answer>((r) => answers.push(r));
        },
      },
    ).then((o) => (order.push('ended'), o));
    expect(order).toEqual(['taken 0', 'ended']);
    expect(out).toMatchObject({ ok: true, result: 'done', calls: [{ index: 0, name: 'echo', args: { n: 1 } }] });
    // The answer that comes after the end goes nowhere.
    for (const a of answers) a({ ok: true, value: 1 });
  });

  it('ends a program whose unawaited call is answered without being marked taken once it is answered', async () => {
    let answered = false;
    const out = await run("tools.echo({ n: 1 });\nreturn 'done';", {
      answer: () => new Promise<Answer>((r) => setTimeout(() => ((answered = true), r({ ok: true, value: 1 })), 300)),
    });
    expect(answered).toBe(true);
    expect(out).toMatchObject({ ok: true, result: 'done', calls: [{ index: 0 }] });
  });

  it('stops the run on a fatal answer, without further calls', async () => {
    const out = await run('await tools.echo({ a: 1 });\nawait tools.echo({ a: 2 });', {
      answer: () => ({ fatal: 'the program is not deterministic' }),
    });
    expect(out).toMatchObject({ ok: false, kind: 'fatal', error: 'the program is not deterministic' });
    expect(out.calls).toHaveLength(1);
  });

  it('fails the run when answering a call throws, so the body can be retried', async () => {
    await expect(
      run('await tools.echo({});', { answer: () => Promise.reject(new Error('server unreachable')) }),
    ).rejects.toThrow('server unreachable');
  });

  it('stops a program that makes more calls than allowed', async () => {
    const out = await run('for (let i = 0; ; i++) { try { await tools.echo({ i }); } catch (e) {} }', {
      limits: { maxCalls: 3 },
    });
    expect(out).toMatchObject({
      ok: false,
      kind: 'calls',
      error:
        'the program made more than 3 tool calls (the limit for one run_code call) and was stopped; split the work across several run_code calls.',
    });
    expect(out.calls).toHaveLength(3);
  });

  it('reports a result that is not JSON', async () => {
    const out = await run('return { f() {} };');
    expect(out).toMatchObject({
      ok: false,
      kind: 'result',
      error: expect.stringContaining(
        "the program's return value cannot be recorded: result.f is not lossless JSON: a function has no JSON form",
      ),
    });
  });

  it('reports a program that waits on a promise nothing settles', async () => {
    const out = await run('await new Promise(() => {});');
    expect(out).toMatchObject({
      ok: false,
      kind: 'error',
      error: expect.stringContaining('waiting on a promise that nothing will ever settle'),
    });
  });

  it('reports syntax errors and throws with the program line', async () => {
    expect((await run('const a = 1;\nconst b = ;')).error).toBe(
      "SyntaxError: unexpected token in expression: ';'\n  at program:2:11",
    );
    expect((await run("const a = 1;\nthrow new RangeError('bad ' + a);")).error).toBe(
      'RangeError: bad 1\n  at anonymous (program:2:21)',
    );
    expect((await run('throw { code: 7 };')).error).toBe('the program threw {"code":7}');
  });

  it('has no way out: no process, require, import, timers, network or eval of host code', async () => {
    const out = await run(
      "return ['process', 'require', 'module', 'setTimeout', 'setInterval', 'queueMicrotask', 'fetch', 'XMLHttpRequest', 'WebAssembly', 'std', 'os'].map((n) => typeof globalThis[n]);",
    );
    expect(out.result).toEqual(Array(11).fill('undefined'));
    expect((await run("return (0, eval)('typeof process');")).result).toBe('undefined');
  });

  it('stops an endless loop that catches everything, at the CPU budget', async () => {
    const out = await run('for (;;) { try { for (;;) {} } catch (e) {} }', { limits: { cpuMs: 500 } });
    expect(out).toMatchObject({ ok: false, kind: 'time' });
    expect(out.cpuMs).toBeGreaterThanOrEqual(500);
  });

  it('caps memory even for a program that catches out-of-memory errors', async () => {
    const out = await run(
      'const keep = [];\ntry { for (;;) keep.push(new Array(100000).fill(1)); } catch (e) { return [String(e), keep.length]; }',
      { limits: { memoryBytes: 32 * 2 ** 20 } },
    );
    const [error, arrays] = out.result as [string, number];
    expect(error).toBe('InternalError: out of memory');
    // 100,000 elements of 8 bytes each: the arrays kept fit in the 32 MB cap.
    expect(arrays * 100_000 * 8).toBeLessThan(32 * 2 ** 20);
  });

  it('keeps the logs up to the cap and stops the program there', async () => {
    const out = await run("for (let i = 0; i < 1000; i++) console.log('line ' + i);\nreturn 'unreachable';", {
      limits: { logChars: 100 },
    });
    expect(out).toMatchObject({ ok: false, kind: 'logs' });
    expect(out.logs.join('\n').length).toBeLessThanOrEqual(100);
    expect(out.logs[0]).toBe('line 0');
  });

  it('stops when the run is cancelled', async () => {
    const abort = new AbortController();
    const out = run('await tools.echo({});', {
      signal: abort.signal,
      answer: () => {
        abort.abort();
        return new Promise<Answer>(() => undefined);
      },
    });
    expect(await out).toMatchObject({ ok: false, kind: 'cancelled' });
  });
});

describe('sandbox: warm threads are reused, programs are not', () => {
  /** Runs `code` on a thread that ran a program before: no new thread may start for it. */
  async function onWarmThread(code: string, opts: Parameters<typeof run>[1] = {}) {
    await run('return 0');
    const before = sandboxPoolStats();
    expect(before.idle).toBeGreaterThan(0);
    const out = await run(code, opts);
    expect(sandboxPoolStats().started).toBe(before.started);
    return out;
  }

  it('gives the next program on the same thread none of the globals, prototypes or built-ins the last one changed', async () => {
    const first = await onWarmThread(
      [
        "globalThis.leaked = 'secret from the first program';",
        'Object.prototype.polluted = 1;',
        'Array.prototype.push = function () { return -1; };',
        'JSON.stringify = () => "forged";',
        'Math.random = () => 4;',
        'Object.freeze(Object.prototype);',
        'return typeof leaked;',
      ].join('\n'),
    );
    expect(first).toMatchObject({ ok: true, result: 'string' });
    const second = await onWarmThread(
      'const a = []; a.push(1);\nreturn [typeof globalThis.leaked, ({}).polluted === undefined, a.length, JSON.stringify([1]), Math.random() !== 4, Object.isFrozen(Object.prototype)];',
    );
    expect(second).toMatchObject({ ok: true, result: ['undefined', true, 1, '[1]', true, false] });
  });

  it('gives a program its whole memory even after the last one on the thread ran out of it', async () => {
    const fill =
      'const keep = [];\ntry { for (;;) keep.push(new Array(100000).fill(1)); } catch (e) { return [String(e), keep.length]; }';
    const limits = { memoryBytes: 32 * 2 ** 20 };
    const first = await onWarmThread(fill, { limits });
    const second = await onWarmThread(fill, { limits });
    const [error, arrays] = first.result as [string, number];
    expect(error).toBe('InternalError: out of memory');
    // A fresh instance each run: the second program fits as much as the first did.
    expect(second.result).toEqual([error, arrays]);
  });

  it('kills a thread the watchdog finds stuck, never reuses it, and runs the next program on a sound one', async () => {
    await run('return 0');
    const before = sandboxPoolStats();
    // The CPU limit would stop this loop only after a minute: the watchdog, set lower, kills the thread.
    const stuck = await run('for (;;) {}', { limits: { cpuMs: 60_000 }, watchdogMs: 300 });
    expect(stuck).toMatchObject({
      ok: false,
      kind: 'time',
      error:
        'the program did not yield within 300 ms of running (the CPU limit is 60000 ms) and its sandbox was killed',
    });
    // The warm thread ran the stuck program and was terminated: it left the pool.
    expect(sandboxPoolStats().idle).toBe(before.idle - 1);
    const after = await run('globalThis.x = (globalThis.x ?? 0) + 1; return [x, typeof tools.echo];');
    expect(after).toMatchObject({ ok: true, result: [1, 'function'] });
  });

  it('does not reuse a thread whose run was cancelled or ended by a fatal answer', async () => {
    await run('return 0');
    const { idle } = sandboxPoolStats();
    const fatal = await run('await tools.echo({});', { answer: () => ({ fatal: 'stop here' }) });
    expect(fatal).toMatchObject({ ok: false, kind: 'fatal' });
    expect(sandboxPoolStats().idle).toBe(idle - 1);
    const next = await run('return (await tools.echo({ n: 2 })).n');
    expect(next).toMatchObject({ ok: true, result: 2 });
  });

  it('runs programs side by side on separate threads, each with its own state', async () => {
    const outs = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        run(`globalThis.n = (globalThis.n ?? 0) + ${i + 1}; await tools.echo({ i: ${i} }); return n;`),
      ),
    );
    expect(outs.map((o) => o.result)).toEqual([1, 2, 3, 4]);
  });
});
