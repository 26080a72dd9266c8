// One program run, inside its own worker thread: a fresh QuickJS (WebAssembly) instance with a
// hard memory cap, a stack limit and a CPU budget. The thread exists so that a runaway program
// never blocks the Sluice worker's event loop (heartbeats, other calls) and can always be killed;
// the isolate itself is QuickJS, which has no fs, network, process, modules or timers at all.
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSDeferredPromise,
  type QuickJSHandle,
} from 'quickjs-emscripten-core';
import variant from '@jitl/quickjs-wasmfile-release-sync';
import { parentPort, workerData } from 'node:worker_threads';
import { MAX_ARGUMENT_CHARS } from '../../pipeline/budget';
import { snapshotJson } from '../../pipeline/json';
import type { Json, JsonObject } from '../../pipeline/types';
import { GUEST_PRELUDE } from './guest-prelude';
import { mirror, type Tagged } from './mirror';
import type { ParentMessage, StopKind, ThreadData, ThreadMessage } from './protocol';

const WASM_PAGE = 64 * 1024;
/** The QuickJS build needs this much linear memory before the program allocates anything. */
const MIN_MEMORY_BYTES = 256 * WASM_PAGE;

const data = workerData as ThreadData;
const post = (m: ThreadMessage) => parentPort!.postMessage(m);
/** CPU time the program's code has used so far. */
let cpuMs = 0;

class Stop extends Error {
  constructor(
    readonly kind: StopKind,
    message: string,
  ) {
    super(message);
  }
}

async function main(): Promise<void> {
  const { limits } = data;
  const memory = new WebAssembly.Memory({
    initial: MIN_MEMORY_BYTES / WASM_PAGE,
    maximum: Math.max(MIN_MEMORY_BYTES, limits.memoryBytes) / WASM_PAGE,
  });
  const quickjs = await newQuickJSWASMModuleFromVariant(
    newVariant(variant, { wasmMemory: memory, wasmModule: data.wasmModule }),
  );
  const runtime = quickjs.newRuntime();
  // QuickJS's own accounting misses large blocks in this build; the fixed-size linear memory above
  // is the hard cap, this only makes small-object floods fail a little earlier.
  runtime.setMemoryLimit(limits.memoryBytes);
  runtime.setMaxStackSize(limits.stackBytes);
  runtime.setModuleLoader(() => ({
    error: new Error('run_code programs cannot import modules; call tools.<name>(args) instead'),
  }));

  let sliceStart: number | undefined;
  let stop: Stop | undefined;
  runtime.setInterruptHandler(() => {
    if (stop) return true;
    if (sliceStart !== undefined && cpuMs + (performance.now() - sliceStart) > limits.cpuMs) {
      stop = new Stop(
        'time',
        `the program used more than ${limits.cpuMs} ms of CPU time (the limit) and was stopped. Look for an endless loop, or do less work per run_code call.`,
      );
      return true;
    }
    return false;
  });
  /** Runs guest code, counting its time against the CPU budget. */
  const inGuest = <T>(f: () => T): T => {
    sliceStart = performance.now();
    try {
      return f();
    } finally {
      cpuMs += performance.now() - sliceStart;
      sliceStart = undefined;
    }
  };

  const ctx = runtime.newContext();
  const pending = new Map<number, QuickJSDeferredPromise>();
  let callNo = 0;
  let logChars = 0;

  const host = ctx.newObject();
  ctx
    .newFunction('call', (nameHandle, describedHandle) => {
      if (stop) return rejected(ctx, stop.message);
      const name = ctx.getString(nameHandle);
      let args: JsonObject;
      try {
        args = checkArguments(name, ctx.getString(describedHandle));
      } catch (err) {
        return rejected(ctx, (err as Error).message);
      }
      if (callNo >= limits.maxCalls) {
        stop ??= new Stop(
          'calls',
          `the program made more than ${limits.maxCalls} tool calls (the limit for one run_code call) and was stopped; split the work across several run_code calls.`,
        );
        return rejected(ctx, stop.message);
      }
      const deferred = ctx.newPromise();
      pending.set(callNo, deferred);
      post({ type: 'call', callNo, name, args });
      callNo++;
      return deferred.handle;
    })
    .consume((f) => ctx.setProp(host, 'call', f));
  ctx
    .newFunction('log', (levelHandle, textHandle) => {
      if (stop) return;
      const level = ctx.getString(levelHandle);
      let line = (level === 'log' ? '' : `[${level}] `) + ctx.getString(textHandle);
      if (logChars + line.length + 1 > limits.logChars) {
        line = line.slice(0, Math.max(0, limits.logChars - logChars));
        stop = new Stop(
          'logs',
          `the program wrote more than ${limits.logChars} characters of logs (the limit) and was stopped; log less, or return a summary as the result.`,
        );
      }
      logChars += line.length + 1;
      post({ type: 'log', line });
    })
    .consume((f) => ctx.setProp(host, 'log', f));

  post({ type: 'ready' });
  const names = ctx.newArray();
  data.toolNames.forEach((n, i) => ctx.newString(n).consume((h) => ctx.setProp(names, i, h)));

  let programPromise: QuickJSHandle;
  {
    const preludeResult = inGuest(() => ctx.evalCode(GUEST_PRELUDE, 'sluice-prelude.js'));
    const prelude = ctx.unwrapResult(preludeResult);
    const args = [host, names, ctx.newNumber(data.seed), ctx.newNumber(data.now), ctx.newString(data.code)];
    const started = inGuest(() => ctx.callFunction(prelude, ctx.undefined, ...args));
    if (started.error) {
      const thrown = started.error;
      throw stop ?? new Stop('error', describeError(ctx, thrown));
    }
    programPromise = started.value;
  }

  for (;;) {
    const jobs = inGuest(() => runtime.executePendingJobs());
    if (jobs.error) jobs.error.dispose();
    if (stop) throw stop;
    const state = ctx.getPromiseState(programPromise);
    if (state.type === 'fulfilled') {
      const described = ctx.getString(state.value);
      const result = checkResult(described);
      post({ type: 'done', ok: true, ...(result !== undefined ? { result } : {}), cpuMs: Math.round(cpuMs) });
      return;
    }
    if (state.type === 'rejected') throw classify(describeError(ctx, state.error));
    if (pending.size === 0 && !runtime.hasPendingJob()) {
      throw new Stop(
        'error',
        'the program is waiting on a promise that nothing will ever settle: in run_code only tools.<name>() calls complete later (there are no timers or events)',
      );
    }
    if (pending.size > 0 && !runtime.hasPendingJob()) {
      const answer = await nextAnswer();
      const deferred = pending.get(answer.callNo)!;
      pending.delete(answer.callNo);
      if (answer.ok) deferred.resolve(ctx.newString(answer.json));
      else deferred.reject(ctx.newError(answer.message));
    }
  }
}

function checkArguments(name: string, described: string): JsonObject {
  if (!data.toolNames.includes(name)) throw new Error(`there is no tool ${JSON.stringify(name)} a program can call`);
  const value = snapshotJson(mirror(JSON.parse(described) as Tagged), 'arguments');
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new Error(`arguments of tools.${name}() must be an object, e.g. tools.${name}({ ... })`);
  // The same limit as a model's own call: larger arguments would not fit a Temporal payload.
  const chars = JSON.stringify(value).length;
  if (chars > MAX_ARGUMENT_CHARS)
    throw new Error(
      `the arguments of tools.${name}() are ${chars} characters of JSON, over the ${MAX_ARGUMENT_CHARS}-character limit for one call, so the call was not made. Split the work into smaller calls (e.g. write a large file in parts).`,
    );
  return value as JsonObject;
}

function checkResult(described: string): Json | undefined {
  const tagged = JSON.parse(described) as Tagged;
  if (tagged[0] === 'x' && tagged[1] === 'undefined') return undefined;
  try {
    return snapshotJson(mirror(tagged), 'result');
  } catch (err) {
    throw new Stop(
      'result',
      `the program's return value cannot be recorded: ${(err as Error).message}. Return plain JSON data (objects, arrays, strings, finite numbers, booleans, null).`,
    );
  }
}

function rejected(ctx: QuickJSContext, message: string): QuickJSHandle {
  const deferred = ctx.newPromise();
  deferred.reject(ctx.newError(message));
  return deferred.handle;
}

/** The guest error as a person reads it: name, message, and the program's own stack frames. */
function describeError(ctx: QuickJSContext, handle: QuickJSHandle): string {
  const e = ctx.dump(handle) as unknown;
  if (e && typeof e === 'object' && 'message' in e) {
    const err = e as { name?: string; message?: string; stack?: string };
    const frames = String(err.stack ?? '')
      .split('\n')
      .filter((l) => l.includes('<input>'))
      .map((l) => l.replace(/<input>:(\d+)/, (_, n: string) => `program:${Math.max(1, Number(n) - 2)}`).trim());
    return [
      `${err.name ?? 'Error'}: ${err.message}`,
      ...collapse(frames)
        .slice(0, 10)
        .map((f) => `  ${f}`),
    ].join('\n');
  }
  let shown: string;
  try {
    shown = JSON.stringify(e) ?? String(e);
  } catch {
    shown = String(e);
  }
  return `the program threw ${shown.slice(0, 500)}`;
}

/** Deep recursion repeats one frame thousands of times: show it once, with the count. */
function collapse(frames: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < frames.length; ) {
    let j = i;
    while (j < frames.length && frames[j] === frames[i]) j++;
    out.push(j - i > 1 ? `${frames[i]} (${j - i} times)` : frames[i]);
    i = j;
  }
  return out;
}

function classify(described: string): Stop {
  if (/^InternalError: out of memory/.test(described)) {
    return new Stop(
      'memory',
      `the program ran out of memory (the limit is ${Math.round(data.limits.memoryBytes / 2 ** 20)} MB) and was stopped. ${described}`,
    );
  }
  if (/^(InternalError|RangeError): (stack overflow|Maximum call stack)/.test(described)) {
    return new Stop(
      'stack',
      `the program overflowed its stack (the limit is ${Math.round(data.limits.stackBytes / 1024)} KB): look for endless or very deep recursion. ${described}`,
    );
  }
  return new Stop('error', described);
}

const answers: ParentMessage[] = [];
let answersSeen = 0;
let wake: (() => void) | undefined;
parentPort!.on('message', (m: ParentMessage) => {
  answers.push(m);
  answersSeen++;
  wake?.();
});
async function nextAnswer(): Promise<ParentMessage> {
  while (answers.length === 0) {
    post({ type: 'waiting', answersSeen });
    await new Promise<void>((r) => (wake = r));
  }
  return answers.shift()!;
}

main().catch((err: unknown) => {
  let stop: Stop;
  if (err instanceof Stop) stop = err;
  else {
    // A throw from the host side of the sandbox: the wasm stack ran out, or QuickJS itself failed.
    const classified = classify(`${(err as Error)?.name ?? 'Error'}: ${(err as Error)?.message ?? String(err)}`);
    stop =
      classified.kind === 'error'
        ? new Stop('crash', `the sandbox failed while running the program: ${classified.message}`)
        : classified;
  }
  post({ type: 'done', ok: false, kind: stop.kind, error: stop.message, cpuMs: Math.round(cpuMs) });
});
