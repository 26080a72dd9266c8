// The messages between a sandbox thread and the run_code bodies that use it. A thread is kept warm
// in a pool and runs one program at a time, each in a QuickJS instance of its own.
import type { Json, JsonObject } from '../../pipeline/types';

export interface SandboxLimits {
  /** CPU time the program's own code may use, summed over the run (waiting on tools is free). */
  cpuMs: number;
  /** The sandbox's whole WebAssembly memory (at least 16 MiB, which QuickJS itself needs). */
  memoryBytes: number;
  /** QuickJS's stack limit: bounds recursion depth. */
  stackBytes: number;
  /** Characters of console output kept; writing more stops the program. */
  logChars: number;
  /** Tool calls one program may make. */
  maxCalls: number;
}

export interface ThreadData {
  /** The compiled QuickJS module, shared so each run only instantiates it. */
  wasmModule: WebAssembly.Module;
  /** The memory cap of the first instance the thread prepares (later: that of its last run). */
  memoryBytes: number;
}

/** One program to run. */
export interface RunRequest {
  type: 'run';
  runId: number;
  code: string;
  toolNames: string[];
  seed: number;
  now: number;
  limits: SandboxLimits;
}

/** Why a program stopped without a result. */
export type StopKind =
  | 'error'
  | 'time'
  | 'memory'
  | 'stack'
  | 'logs'
  | 'calls'
  | 'result'
  | 'crash'
  | 'fatal'
  | 'cancelled';

export type ThreadMessage = {
  runId: number;
} /** The run's QuickJS is up; the program's CPU time starts counting. */ & (
  | { type: 'ready' }
  /** The program waits for a tool's answer; `answersSeen` lets the parent tell if one is on its way. */
  | { type: 'waiting'; answersSeen: number }
  | { type: 'log'; line: string }
  | { type: 'call'; callNo: number; name: string; args: JsonObject }
  /** The last message of a run: the thread takes no further part in it and may be given another. */
  | { type: 'done'; ok: true; result?: Json; cpuMs: number }
  | { type: 'done'; ok: false; kind: StopKind; error: string; cpuMs: number }
);

export type ParentMessage =
  | RunRequest
  | { type: 'answer'; runId: number; callNo: number; ok: true; json: string }
  | { type: 'answer'; runId: number; callNo: number; ok: false; message: string };
