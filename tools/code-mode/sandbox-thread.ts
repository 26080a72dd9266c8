// A sandbox thread, kept warm in a pool: it runs one program at a time, each in a QuickJS
// (WebAssembly) instance of its own: a fresh linear memory capped at the run's memory limit, a
// fresh runtime and context, a stack limit and a CPU budget. The thread exists so that a runaway
// program never blocks the Sluice worker's event loop (heartbeats, other calls) and can always be
// killed; the isolate itself is QuickJS, which has no fs, network, process, modules or timers at
// all. Nothing of a program outlives its run: its instance (memory, runtime, context) is dropped
// when the run ends, and the next run's instance is prepared while the thread waits, so a run only
// pays for a runtime, a context and the prelude.
import {
  type EmscriptenModuleLoaderOptions,
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSDeferredPromise,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSWASMModule,
} from 'quickjs-emscripten-core';
import variant from '@jitl/quickjs-wasmfile-release-sync';
import { parentPort, workerData } from 'node:worker_threads';
import { MAX_ARGUMENT_CHARS } from '../../pipeline/budget';
import { snapshotJson } from '../../pipeline/json';
import type { Json, JsonObject } from '../../pipeline/types';
import { GUEST_PRELUDE } from './guest-prelude';
import { mirror, type Tagged } from './mirror';
import type { ParentMessage, RunRequest, SandboxLimits, StopKind, ThreadData, ThreadMessage } from './protocol';

const WASM_PAGE = 64 * 1024;
/** The QuickJS build needs this much linear memory before the program allocates anything. */
const MIN_MEMORY_BYTES = 256 * WASM_PAGE;

const data = workerData as ThreadData;
const post = (m: ThreadMessage) => parentPort!.postMessage(m);

class Stop extends Error {
  constructor(
    readonly kind: StopKind,
    message: string,
  ) {
    super(message);
  }
}

/** A QuickJS instance no program has touched yet, with its own linear memory. */
interface Instance {
  memoryBytes: number;
  quickjs: Promise<QuickJSWASMModule>;
}

const silent = () => undefined;

function instantiate(memoryBytes: number): Instance {
  const memory = new WebAssembly.Memory({
    initial: MIN_MEMORY_BYTES / WASM_PAGE,
    maximum: Math.max(MIN_MEMORY_BYTES, memoryBytes) / WASM_PAGE,
  });
  const quickjs = newQuickJSWASMModuleFromVariant(
    newVariant(variant, {
      wasmMemory: memory,
      wasmModule: data.wasmModule,
      // QuickJS prints nothing a person needs (a wasm abort is reported as the run's error); the
      // thread's own stdout would hold the process open, so it is not piped.
      emscriptenModule: { print: silent, printErr: silent } as EmscriptenModuleLoaderOptions,
    }),
  );
  // A failure is reported by the run that uses this instance.
  quickjs.catch(() => undefined);
  return { memoryBytes, quickjs };
}

/** The instance the next run will use, prepared while the thread is idle. */
let spare: Instance | undefined = instantiate(data.memoryBytes);

/** The run in progress: where its tool answers go. */
let current: { runId: number; answers: ParentMessage[]; answersSeen: number; wake?: () => void } | undefined;

parentPort!.on('message', (m: ParentMessage) => {
  if (m.type === 'run') {
    void run(m);
    return;
  }
  if (!current || m.runId !== current.runId) return;
  current.answers.push(m);
  current.answersSeen++;
  current.wake?.();
});

async function run(req: RunRequest): Promise<void> {
  const runId = req.runId;
  if (current) {
    post({
      runId,
      type: 'done',
      ok: false,
      kind: 'crash',
      error: 'the sandbox was given a program while it ran another',
      cpuMs: 0,
    });
    return;
  }
  const state = { runId, answers: [] as ParentMessage[], answersSeen: 0, wake: undefined as (() => void) | undefined };
  current = state;
  const instance = spare?.memoryBytes === req.limits.memoryBytes ? spare : instantiate(req.limits.memoryBytes);
  spare = undefined;
  const cpu = { ms: 0 };
  let done: ThreadMessage;
  try {
    const outcome = await runProgram(req, await instance.quickjs, cpu, state);
    done = {
      runId,
      type: 'done',
      ok: true,
      ...(outcome !== undefined ? { result: outcome } : {}),
      cpuMs: Math.round(cpu.ms),
    };
  } catch (err: unknown) {
    let stop: Stop;
    if (err instanceof Stop) stop = err;
    else {
      // A throw from the host side of the sandbox: the wasm stack ran out, or QuickJS itself failed.
      const classified = classify(
        `${(err as Error)?.name ?? 'Error'}: ${(err as Error)?.message ?? String(err)}`,
        req.limits,
      );
      stop =
        classified.kind === 'error'
          ? new Stop('crash', `the sandbox failed while running the program: ${classified.message}`)
          : classified;
    }
    done = { runId, type: 'done', ok: false, kind: stop.kind, error: stop.message, cpuMs: Math.round(cpu.ms) };
  }
  // The run's instance is dropped here, never reused; the next run gets one nothing has touched.
  current = undefined;
  spare = instantiate(req.limits.memoryBytes);
  post(done);
}

async function runProgram(
  req: RunRequest,
  quickjs: QuickJSWASMModule,
  cpu: { ms: number },
  state: NonNullable<typeof current>,
): Promise<Json | undefined> {
  const { limits } = req;
  const budget = new Budget(limits, cpu);
  const runtime = quickjs.newRuntime();
  // QuickJS's own accounting misses large blocks in this build; the fixed-size linear memory
  // is the hard cap, this only makes small-object floods fail a little earlier.
  runtime.setMemoryLimit(limits.memoryBytes);
  runtime.setMaxStackSize(limits.stackBytes);
  runtime.setModuleLoader(() => ({
    error: new Error('run_code programs cannot import modules; call tools.<name>(args) instead'),
  }));
  runtime.setInterruptHandler(() => budget.interrupted());

  const ctx = runtime.newContext();
  const pending = new Map<number, QuickJSDeferredPromise>();
  const host = ctx.newObject();
  ctx.newFunction('call', hostCall(ctx, req, budget, pending)).consume((f) => ctx.setProp(host, 'call', f));
  ctx.newFunction('log', hostLog(ctx, req, budget)).consume((f) => ctx.setProp(host, 'log', f));

  post({ runId: req.runId, type: 'ready' });
  const program = startProgram(ctx, req, host, budget);
  return runToEnd(runtime, ctx, program, pending, budget, state);
}

/**
 * The run's CPU budget and the reason it must stop, shared by QuickJS's interrupt handler, the
 * host functions and the loop that drives the program: whichever finds a limit passed sets `stop`,
 * and the program is stopped at the next point the interpreter checks.
 */
class Budget {
  stop: Stop | undefined;
  /** When the guest code now running began; undefined while the host runs. */
  private sliceStart: number | undefined;

  constructor(
    readonly limits: SandboxLimits,
    private readonly cpu: { ms: number },
  ) {}

  /** QuickJS's interrupt handler: true stops the guest. */
  interrupted(): boolean {
    if (this.stop) return true;
    if (this.sliceStart !== undefined && this.cpu.ms + (performance.now() - this.sliceStart) > this.limits.cpuMs) {
      this.stop = new Stop(
        'time',
        `the program used more than ${this.limits.cpuMs} ms of CPU time (the limit) and was stopped. Look for an endless loop, or do less work per run_code call.`,
      );
      return true;
    }
    return false;
  }

  /** Runs guest code, counting its time against the CPU budget. */
  inGuest<T>(f: () => T): T {
    this.sliceStart = performance.now();
    try {
      return f();
    } finally {
      this.cpu.ms += performance.now() - this.sliceStart;
      this.sliceStart = undefined;
    }
  }
}

/**
 * `tools.<name>(args)` in the guest: checks the name and arguments, counts the call against the
 * run's limit, posts it to the parent and returns a promise its answer will settle. A bad call is
 * a rejection the program may catch; one over the limit stops the run.
 */
function hostCall(
  ctx: QuickJSContext,
  req: RunRequest,
  budget: Budget,
  pending: Map<number, QuickJSDeferredPromise>,
): (nameHandle: QuickJSHandle, describedHandle: QuickJSHandle) => QuickJSHandle {
  const { limits, runId } = req;
  let callNo = 0;
  return (nameHandle, describedHandle) => {
    if (budget.stop) return rejected(ctx, budget.stop.message);
    const name = ctx.getString(nameHandle);
    let args: JsonObject;
    try {
      args = checkArguments(name, ctx.getString(describedHandle), req.toolNames);
    } catch (err) {
      return rejected(ctx, (err as Error).message);
    }
    if (callNo >= limits.maxCalls) {
      budget.stop ??= new Stop(
        'calls',
        `the program made more than ${limits.maxCalls} tool calls (the limit for one run_code call) and was stopped; split the work across several run_code calls.`,
      );
      return rejected(ctx, budget.stop.message);
    }
    const deferred = ctx.newPromise();
    pending.set(callNo, deferred);
    post({ runId, type: 'call', callNo, name, args });
    callNo++;
    return deferred.handle;
  };
}

/** `console.*` in the guest: each line goes to the parent; the line that passes the log limit is cut and stops the run. */
function hostLog(
  ctx: QuickJSContext,
  req: RunRequest,
  budget: Budget,
): (levelHandle: QuickJSHandle, textHandle: QuickJSHandle) => void {
  const { limits, runId } = req;
  let logChars = 0;
  return (levelHandle, textHandle) => {
    if (budget.stop) return;
    const level = ctx.getString(levelHandle);
    let line = (level === 'log' ? '' : `[${level}] `) + ctx.getString(textHandle);
    if (logChars + line.length + 1 > limits.logChars) {
      line = line.slice(0, Math.max(0, limits.logChars - logChars));
      budget.stop = new Stop(
        'logs',
        `the program wrote more than ${limits.logChars} characters of logs (the limit) and was stopped; log less, or return a summary as the result.`,
      );
    }
    logChars += line.length + 1;
    post({ runId, type: 'log', line });
  };
}

/** Evaluates the prelude and calls it with the program: the program's promise, or the run stopped. */
function startProgram(ctx: QuickJSContext, req: RunRequest, host: QuickJSHandle, budget: Budget): QuickJSHandle {
  const names = ctx.newArray();
  req.toolNames.forEach((n, i) => ctx.newString(n).consume((h) => ctx.setProp(names, i, h)));
  const preludeResult = budget.inGuest(() => ctx.evalCode(GUEST_PRELUDE, 'sluice-prelude.js'));
  const prelude = ctx.unwrapResult(preludeResult);
  const args = [host, names, ctx.newNumber(req.seed), ctx.newNumber(req.now), ctx.newString(req.code)];
  const started = budget.inGuest(() => ctx.callFunction(prelude, ctx.undefined, ...args));
  if (started.error) {
    const thrown = started.error;
    throw budget.stop ?? new Stop('error', describeError(ctx, thrown));
  }
  return started.value;
}

/**
 * Drives the program until its promise settles: runs the guest's pending jobs, and when only tool
 * answers can move it, waits for the next one and settles its promise. A program waiting on
 * nothing that could ever settle is stopped rather than left to hang.
 */
async function runToEnd(
  runtime: QuickJSRuntime,
  ctx: QuickJSContext,
  program: QuickJSHandle,
  pending: Map<number, QuickJSDeferredPromise>,
  budget: Budget,
  state: NonNullable<typeof current>,
): Promise<Json | undefined> {
  for (;;) {
    const jobs = budget.inGuest(() => runtime.executePendingJobs());
    if (jobs.error) jobs.error.dispose();
    if (budget.stop) throw budget.stop;
    const promiseState = ctx.getPromiseState(program);
    if (promiseState.type === 'fulfilled') return checkResult(ctx.getString(promiseState.value));
    if (promiseState.type === 'rejected') throw classify(describeError(ctx, promiseState.error), budget.limits);
    if (pending.size === 0 && !runtime.hasPendingJob()) {
      throw new Stop(
        'error',
        'the program is waiting on a promise that nothing will ever settle: in run_code only tools.<name>() calls complete later (there are no timers or events)',
      );
    }
    if (pending.size > 0 && !runtime.hasPendingJob()) {
      const answer = await nextAnswer(state);
      if (answer.type !== 'answer') continue;
      const deferred = pending.get(answer.callNo)!;
      pending.delete(answer.callNo);
      if (answer.ok) deferred.resolve(ctx.newString(answer.json));
      else deferred.reject(ctx.newError(answer.message));
    }
  }
}

async function nextAnswer(state: NonNullable<typeof current>): Promise<ParentMessage> {
  while (state.answers.length === 0) {
    post({ runId: state.runId, type: 'waiting', answersSeen: state.answersSeen });
    await new Promise<void>((r) => {
      state.wake = r;
    });
  }
  return state.answers.shift()!;
}

function checkArguments(name: string, described: string, toolNames: string[]): JsonObject {
  if (!toolNames.includes(name)) throw new Error(`there is no tool ${JSON.stringify(name)} a program can call`);
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

function classify(described: string, limits: SandboxLimits): Stop {
  if (/^InternalError: out of memory/.test(described)) {
    return new Stop(
      'memory',
      `the program ran out of memory (the limit is ${Math.round(limits.memoryBytes / 2 ** 20)} MB) and was stopped. ${described}`,
    );
  }
  if (/^(InternalError|RangeError): (stack overflow|Maximum call stack)/.test(described)) {
    return new Stop(
      'stack',
      `the program overflowed its stack (the limit is ${Math.round(limits.stackBytes / 1024)} KB): look for endless or very deep recursion. ${described}`,
    );
  }
  return new Stop('error', described);
}
