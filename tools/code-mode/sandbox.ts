// Runs one program in a fresh sandbox thread and relays its tool calls, one at a time in the
// order the program made them, to whoever runs them (the run_code body: the batch workflow).
// The thread enforces the CPU budget, memory cap and stack limit itself; this side adds a
// watchdog that kills the thread outright if it ever stops answering.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { MAX_SUBCALLS_PER_PROGRAM } from '../../pipeline/code-mode';
import { sha256Hex } from '../../pipeline/digest';
import type { Json, JsonObject } from '../../pipeline/types';
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
export type SubCallAnswer =
  | { ok: true; value: Json }
  | { ok: false; message: string }
  | { fatal: string; kind?: 'fatal' | 'cancelled' };

export interface RunProgramOptions {
  code: string;
  /** The tools the program may call as `tools.<name>(args)`. */
  toolNames: string[];
  /** Seeds Math.random: the same seed gives the same sequence on every run. */
  seed: string;
  /** What Date.now() returns throughout the run. */
  now: number;
  limits?: Partial<SandboxLimits>;
  /** Runs one sub-call; called one at a time, in the order the program made the calls. A throw ends the run with that error. */
  callTool(call: { index: number; name: string; args: JsonObject }): Promise<SubCallAnswer>;
  signal?: AbortSignal;
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
}

/** Time a thread may go without yielding beyond its CPU budget before it is killed. */
const WATCHDOG_GRACE_MS = 5_000;
/** Loading the TypeScript entry and instantiating QuickJS; generous for a loaded machine. */
const STARTUP_TIMEOUT_MS = 60_000;

let compiled: Promise<WebAssembly.Module> | undefined;
function quickjsModule(): Promise<WebAssembly.Module> {
  compiled ??= fs.promises
    .readFile(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm'))
    .then((bytes) => WebAssembly.compile(bytes));
  return compiled;
}

function threadSource(): string {
  const entry = path.join(__dirname, `sandbox-thread${path.extname(__filename)}`);
  // Under tsx (the Sluice worker, the tests) the thread must register it too to load TypeScript.
  // Paths are absolute: an eval'd thread resolves modules from the process's working directory.
  return `${entry.endsWith('.ts') ? `require(${JSON.stringify(require.resolve('tsx/cjs'))});\n` : ''}require(${JSON.stringify(entry)});`;
}

export async function runProgram(opts: RunProgramOptions): Promise<ProgramOutcome> {
  const limits: SandboxLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const data: ThreadData = {
    code: opts.code,
    toolNames: [...opts.toolNames],
    seed: parseInt(sha256Hex(opts.seed).slice(0, 8), 16),
    now: opts.now,
    limits,
    wasmModule: await quickjsModule(),
  };
  const thread = new Worker(threadSource(), {
    eval: true,
    workerData: data,
    resourceLimits: { stackSizeMb: 8, maxOldGenerationSizeMb: 256 },
    stdout: true,
    stderr: true,
  });
  // QuickJS prints nothing a person needs (a wasm abort is reported as the thread's error).
  thread.stdout.resume();
  thread.stderr.resume();
  const logs: string[] = [];
  let calls = 0;

  return new Promise<ProgramOutcome>((resolve, reject) => {
    let finished = false;
    let ready = false;
    const queue: Extract<ThreadMessage, { type: 'call' }>[] = [];
    let draining = false;
    // Watchdog bookkeeping: the thread is busy unless it said it waits and no answer is on its way.
    let busySince: number | undefined;
    let busyMs = 0;
    let answersSent = 0;
    let timer: NodeJS.Timeout | undefined;

    const finish = (outcome: Omit<ProgramOutcome, 'logs' | 'calls'> | Error) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      void thread.terminate();
      if (outcome instanceof Error) reject(outcome);
      else resolve({ ...outcome, logs, calls });
    };
    const fail = (kind: StopKind, error: string) => finish({ ok: false, kind, error, cpuMs: Math.round(busyMs) });
    const arm = () => {
      clearTimeout(timer);
      const left = Math.max(0, limits.cpuMs - busyMs) + WATCHDOG_GRACE_MS;
      timer = setTimeout(
        () =>
          fail(
            'time',
            `the program did not yield within ${limits.cpuMs + WATCHDOG_GRACE_MS} ms of running (the CPU limit is ${limits.cpuMs} ms) and its sandbox was killed`,
          ),
        left,
      );
    };
    const busy = () => {
      if (busySince !== undefined) return;
      busySince = Date.now();
      arm();
    };
    const idle = () => {
      if (busySince === undefined) return;
      busyMs += Date.now() - busySince;
      busySince = undefined;
      clearTimeout(timer);
    };
    const onAbort = () => fail('cancelled', 'the run_code call was cancelled and its program was stopped');
    if (opts.signal?.aborted) return onAbort();
    opts.signal?.addEventListener('abort', onAbort);
    timer = setTimeout(
      () => fail('crash', `the sandbox did not start within ${STARTUP_TIMEOUT_MS} ms`),
      STARTUP_TIMEOUT_MS,
    );

    const answer = (m: ParentMessage) => {
      answersSent++;
      busy();
      thread.postMessage(m);
    };
    const drain = async () => {
      if (draining) return;
      draining = true;
      try {
        while (queue.length && !finished) {
          const call = queue.shift()!;
          let got: SubCallAnswer;
          try {
            got = await opts.callTool({ index: call.callNo, name: call.name, args: call.args });
          } catch (err) {
            return finish(err instanceof Error ? err : new Error(String(err)));
          }
          if (finished) return;
          calls++;
          if ('fatal' in got) return fail(got.kind ?? 'fatal', got.fatal);
          answer(
            got.ok
              ? { type: 'answer', callNo: call.callNo, ok: true, json: JSON.stringify(got.value) }
              : { type: 'answer', callNo: call.callNo, ok: false, message: got.message },
          );
        }
      } finally {
        draining = false;
      }
    };

    thread.on('message', (m: ThreadMessage) => {
      if (finished) return;
      switch (m.type) {
        case 'ready':
          ready = true;
          busy();
          return;
        case 'waiting':
          if (m.answersSeen === answersSent) idle();
          return;
        case 'log':
          logs.push(m.line);
          return;
        case 'call':
          queue.push(m);
          void drain();
          return;
        case 'done':
          idle();
          return finish(
            m.ok
              ? { ok: true, ...(m.result !== undefined ? { result: m.result } : {}), cpuMs: m.cpuMs }
              : { ok: false, kind: m.kind, error: m.error, cpuMs: m.cpuMs },
          );
      }
    });
    thread.on('error', (err) => fail('crash', `the sandbox failed while running the program: ${err.message}`));
    thread.on('exit', (code) =>
      fail('crash', `the sandbox ${ready ? 'stopped' : 'failed to start'} unexpectedly (exit code ${code})`),
    );
  });
}
