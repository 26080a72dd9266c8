// Runs one program in a sandbox thread and relays its tool calls, one at a time in the order the
// program made them, to whoever runs them (the run_code body: the batch workflow). The thread
// enforces the CPU budget, memory cap and stack limit itself; this side adds a watchdog that kills
// the thread outright if it ever stops answering.
//
// Threads are pooled: starting one (a V8 isolate, the module graph, QuickJS) costs hundreds of
// milliseconds, a run in a warm one a few. Reuse is safe because a thread gives every run a
// QuickJS instance of its own (fresh linear memory, runtime and context; see sandbox-thread.ts),
// and only a thread that ended its run itself goes back to the pool: one killed by the watchdog,
// a cancel or a failed sub-call is terminated and never reused.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { MAX_SUBCALLS_PER_PROGRAM } from '../../pipeline/code-mode';
import { sha256Hex } from '../../pipeline/digest';
import type { Json, JsonObject } from '../../pipeline/types';
import { requireOptional } from '../../support/optional';
import type { ParentMessage, SandboxLimits, StopKind, ThreadData, ThreadMessage } from './protocol';

export type { SandboxLimits, StopKind } from './protocol';

export const DEFAULT_LIMITS: SandboxLimits = {
  cpuMs: 10_000,
  memoryBytes: 64 * 2 ** 20,
  stackBytes: 512 * 1024,
  logChars: 100_000,
  maxCalls: MAX_SUBCALLS_PER_PROGRAM,
};

/** How a sub-call ended, for the program: a value, a rejection it may catch, or the end of the run. */
type SubCallAnswer =
  | { ok: true; value: Json }
  | { ok: false; message: string }
  | { fatal: string; kind?: 'fatal' | 'cancelled' };

interface RunProgramOptions {
  code: string;
  /** The tools the program may call as `tools.<name>(args)`. */
  toolNames: string[];
  /** Seeds Math.random: the same seed gives the same sequence on every run. */
  seed: string;
  /** What Date.now() returns throughout the run. */
  now: number;
  limits?: Partial<SandboxLimits>;
  /**
   * Runs one sub-call; called one at a time, in the order the program made the calls. A throw ends
   * the run with that error. Call `taken()` once whoever runs the call has taken it (or refused
   * it), when that comes before the answer: a program that ends with a call it did not await ends
   * only once that call is taken (or answered), so whether the call runs never races the program's
   * end. Calls still waiting their turn when the program ends are not made.
   */
  callTool(call: { index: number; name: string; args: JsonObject; taken: () => void }): Promise<SubCallAnswer>;
  signal?: AbortSignal;
  /**
   * Time the thread may run without answering (summed over the run, like the CPU budget) before it
   * is killed outright; by default the CPU limit plus 5 s. The CPU limit stops an ordinary program
   * first: this is for a thread stuck where QuickJS cannot interrupt it.
   */
  watchdogMs?: number;
}

export interface ProgramOutcome {
  ok: boolean;
  result?: Json;
  logs: string[];
  error?: string;
  kind?: StopKind;
  /** Sub-calls answered. */
  calls: number;
  cpuMs: number;
  /** Wall time of the run in this process, from taking a sandbox to the outcome (waiting on tools included). */
  wallMs: number;
}

/** Time a thread may go without yielding beyond its CPU budget before it is killed. */
const WATCHDOG_GRACE_MS = 5_000;
/** Loading the TypeScript entry and instantiating QuickJS; generous for a loaded machine. */
const STARTUP_TIMEOUT_MS = 60_000;

let compiled: Promise<WebAssembly.Module> | undefined;
function quickjsModule(): Promise<WebAssembly.Module> {
  // QuickJS is an optional peer dependency: both packages are looked for here, in the worker's
  // main thread, so a missing one is named before a sandbox thread starts.
  const QUICKJS = ['quickjs-emscripten-core', '@jitl/quickjs-wasmfile-release-sync'];
  const wasm = requireOptional(
    QUICKJS[0],
    'code mode (codeModeTool)',
    () => {
      require.resolve(QUICKJS[0]);
      return require.resolve(`${QUICKJS[1]}/wasm`);
    },
    [QUICKJS[1]],
  );
  compiled ??= fs.promises.readFile(wasm).then((bytes) => WebAssembly.compile(bytes));
  return compiled;
}

function threadSource(): string {
  const entry = path.join(__dirname, `sandbox-thread${path.extname(__filename)}`);
  // Under tsx (the Sluice worker, the tests) the thread must register it too to load TypeScript.
  // Paths are absolute: an eval'd thread resolves modules from the process's working directory.
  return `${entry.endsWith('.ts') ? `require(${JSON.stringify(require.resolve('tsx/cjs'))});\n` : ''}require(${JSON.stringify(entry)});`;
}

/** Warm threads kept waiting for the next program. */
const MAX_IDLE_THREADS = Math.max(1, Math.min(4, os.availableParallelism?.() ?? os.cpus().length));
/** A thread is retired after this many runs, so nothing the host side accumulates can grow for ever. */
const MAX_RUNS_PER_THREAD = 500;

interface SandboxThread {
  worker: Worker;
  runs: number;
  exited: boolean;
  /** The run using the thread, if any. */
  onMessage?: (m: ThreadMessage) => void;
  onGone?: (why: { error: Error } | { exitCode: number }) => void;
}

const idle: SandboxThread[] = [];
let threadsStarted = 0;
let nextRunId = 1;

/** How the pool stands: warm threads waiting, and threads started since the process began. */
export function sandboxPoolStats(): { idle: number; started: number } {
  return { idle: idle.length, started: threadsStarted };
}

async function startThread(memoryBytes: number): Promise<SandboxThread> {
  const data: ThreadData = { wasmModule: await quickjsModule(), memoryBytes };
  const worker = new Worker(threadSource(), {
    eval: true,
    workerData: data,
    resourceLimits: { stackSizeMb: 8, maxOldGenerationSizeMb: 256 },
  });
  threadsStarted++;
  const thread: SandboxThread = { worker, runs: 0, exited: false };
  worker.on('message', (m: ThreadMessage) => thread.onMessage?.(m));
  worker.on('error', (error) => {
    forget(thread);
    thread.onGone?.({ error });
  });
  worker.on('exit', (exitCode) => {
    thread.exited = true;
    forget(thread);
    thread.onGone?.({ exitCode });
  });
  return thread;
}

function forget(thread: SandboxThread): void {
  const at = idle.indexOf(thread);
  if (at >= 0) idle.splice(at, 1);
}

async function acquire(memoryBytes: number): Promise<SandboxThread> {
  const warm = idle.pop();
  if (warm) {
    warm.worker.ref();
    return warm;
  }
  return startThread(memoryBytes);
}

/** A thread whose program ended on its own goes back to the pool; it starts the next run on a fresh instance. */
function release(thread: SandboxThread): void {
  thread.onMessage = undefined;
  thread.onGone = undefined;
  thread.runs++;
  if (thread.exited) return;
  if (thread.runs >= MAX_RUNS_PER_THREAD || idle.length >= MAX_IDLE_THREADS) {
    void thread.worker.terminate();
    return;
  }
  thread.worker.unref();
  idle.push(thread);
}

/** A thread stopped from outside (watchdog, cancel, a failed sub-call) is never reused. */
function discard(thread: SandboxThread): void {
  thread.onMessage = undefined;
  thread.onGone = undefined;
  forget(thread);
  void thread.worker.terminate();
}

const CANCELLED = 'the run_code call was cancelled and its program was stopped';

export async function runProgram(opts: RunProgramOptions): Promise<ProgramOutcome> {
  const limits: SandboxLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  if (opts.signal?.aborted)
    return { ok: false, kind: 'cancelled', error: CANCELLED, logs: [], calls: 0, cpuMs: 0, wallMs: 0 };
  const began = performance.now();
  const thread = await acquire(limits.memoryBytes);
  const runId = nextRunId++;
  return new Promise<ProgramOutcome>((resolve, reject) => {
    new ProgramRun(thread, runId, opts, limits, began, { resolve, reject }).start();
  });
}

/**
 * The thread's running time, summed over the spells it is busy (not waiting on a tool's answer),
 * and the one timer that kills it when that sum passes the limit. Before the program is ready the
 * same timer bounds the thread's startup instead.
 */
class Watchdog {
  /** Time the thread has been busy, not counting a spell still under way. */
  busyMs = 0;
  private busySince: number | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly limitMs: number,
    private readonly expired: () => void,
  ) {}

  startup(ms: number, timedOut: () => void): void {
    this.timer = setTimeout(timedOut, ms);
  }

  busy(): void {
    if (this.busySince !== undefined) return;
    this.busySince = Date.now();
    clearTimeout(this.timer);
    this.timer = setTimeout(this.expired, Math.max(0, this.limitMs - this.busyMs));
  }

  idle(): void {
    if (this.busySince === undefined) return;
    this.busyMs += Date.now() - this.busySince;
    this.busySince = undefined;
    clearTimeout(this.timer);
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}

type SubCall = Extract<ThreadMessage, { type: 'call' }>;

/**
 * One program's run on a thread, from the run message to its outcome: it keeps the program's logs,
 * relays its sub-calls one at a time in the order it made them, and ends the run once, whichever
 * comes first of the program ending itself, the watchdog, a cancel, a failed sub-call and the
 * thread dying.
 */
class ProgramRun {
  private finished = false;
  /** The thread said its QuickJS is up: a later exit is the program's crash, not a failed start. */
  private ready = false;
  private readonly logs: string[] = [];
  private calls = 0;
  private readonly queue: SubCall[] = [];
  private draining = false;
  /** The program has returned or thrown: no more sub-calls are made or answered. */
  private programEnded = false;
  /** Until the sub-call being made is taken by whoever runs it (or answered). */
  private sending: Promise<void> | undefined;
  /** Answers posted so far: a `waiting` that has seen fewer has one on its way, so the thread is still busy. */
  private answersSent = 0;
  private readonly watchdog: Watchdog;
  private readonly onAbort = () => this.fail('cancelled', CANCELLED);

  constructor(
    private readonly thread: SandboxThread,
    private readonly runId: number,
    private readonly opts: RunProgramOptions,
    private readonly limits: SandboxLimits,
    private readonly began: number,
    private readonly settle: { resolve(outcome: ProgramOutcome): void; reject(err: Error): void },
  ) {
    const watchdogMs = opts.watchdogMs ?? limits.cpuMs + WATCHDOG_GRACE_MS;
    this.watchdog = new Watchdog(watchdogMs, () =>
      this.fail(
        'time',
        `the program did not yield within ${watchdogMs} ms of running (the CPU limit is ${limits.cpuMs} ms) and its sandbox was killed`,
      ),
    );
  }

  start(): void {
    // The signal may have fired while a thread was being taken.
    if (this.opts.signal?.aborted) {
      this.onAbort();
      return;
    }
    this.opts.signal?.addEventListener('abort', this.onAbort);
    this.watchdog.startup(STARTUP_TIMEOUT_MS, () =>
      this.fail('crash', `the sandbox did not start within ${STARTUP_TIMEOUT_MS} ms`),
    );
    this.thread.onMessage = (m) => this.onMessage(m);
    this.thread.onGone = (why) => this.onGone(why);
    this.thread.worker.postMessage({
      type: 'run',
      runId: this.runId,
      code: this.opts.code,
      toolNames: [...this.opts.toolNames],
      seed: parseInt(sha256Hex(this.opts.seed).slice(0, 8), 16),
      now: this.opts.now,
      limits: this.limits,
    } satisfies ParentMessage);
  }

  private onMessage(m: ThreadMessage): void {
    if (this.finished || m.runId !== this.runId) return;
    switch (m.type) {
      case 'ready':
        this.ready = true;
        this.watchdog.busy();
        return;
      case 'waiting':
        if (m.answersSeen === this.answersSent) this.watchdog.idle();
        return;
      case 'log':
        this.logs.push(m.line);
        return;
      case 'call':
        this.queue.push(m);
        void this.drain();
        return;
      case 'done': {
        this.watchdog.idle();
        this.programEnded = true;
        const outcome = m.ok
          ? { ok: true, ...(m.result !== undefined ? { result: m.result } : {}), cpuMs: m.cpuMs }
          : { ok: false, kind: m.kind, error: m.error, cpuMs: m.cpuMs };
        // A call the program made and did not await may be on its way: the run ends once it is
        // taken, so the caller (the batch workflow) has it before it hears that the program ended.
        if (this.sending) void this.sending.then(() => this.finish(outcome, true));
        else this.finish(outcome, true);
      }
    }
  }

  private onGone(why: { error: Error } | { exitCode: number }): void {
    if ('error' in why) this.fail('crash', `the sandbox failed while running the program: ${why.error.message}`);
    else
      this.fail(
        'crash',
        `the sandbox ${this.ready ? 'stopped' : 'failed to start'} unexpectedly (exit code ${why.exitCode})`,
      );
  }

  /**
   * Runs the queued sub-calls one at a time; a call that arrives meanwhile waits its turn. A throw
   * from `callTool` rejects the run; a fatal answer ends it without answering the program.
   */
  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length && !this.finished && !this.programEnded) {
        const call = this.queue.shift()!;
        let got: SubCallAnswer;
        let taken = () => {};
        this.sending = new Promise<void>((r) => {
          taken = r;
        });
        try {
          got = await this.opts.callTool({ index: call.callNo, name: call.name, args: call.args, taken });
        } catch (err) {
          return this.finish(err instanceof Error ? err : new Error(String(err)));
        } finally {
          taken();
          this.sending = undefined;
        }
        if (this.finished || this.programEnded) return;
        this.calls++;
        if ('fatal' in got) return this.fail(got.kind ?? 'fatal', got.fatal);
        this.answer(
          got.ok
            ? { type: 'answer', runId: this.runId, callNo: call.callNo, ok: true, json: JSON.stringify(got.value) }
            : { type: 'answer', runId: this.runId, callNo: call.callNo, ok: false, message: got.message },
        );
      }
    } finally {
      this.draining = false;
    }
  }

  /** An answer makes the thread busy again until it says it waits having seen it. */
  private answer(m: ParentMessage): void {
    this.answersSent++;
    this.watchdog.busy();
    this.thread.worker.postMessage(m);
  }

  private fail(kind: StopKind, error: string): void {
    this.finish({ ok: false, kind, error, cpuMs: Math.round(this.watchdog.busyMs) });
  }

  /** Ends the run once. `reuse`: the thread ended the run itself and may take another. */
  private finish(outcome: Omit<ProgramOutcome, 'logs' | 'calls' | 'wallMs'> | Error, reuse = false): void {
    if (this.finished) return;
    this.finished = true;
    this.watchdog.stop();
    this.opts.signal?.removeEventListener('abort', this.onAbort);
    if (reuse) release(this.thread);
    else discard(this.thread);
    if (outcome instanceof Error) this.settle.reject(outcome);
    else
      this.settle.resolve({
        ...outcome,
        logs: this.logs,
        calls: this.calls,
        wallMs: Math.round((performance.now() - this.began) * 10) / 10,
      });
  }
}
