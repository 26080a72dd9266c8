// The messages between a program's sandbox thread and the run_code body that started it.
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
  code: string;
  toolNames: string[];
  seed: number;
  now: number;
  limits: SandboxLimits;
  /** The compiled QuickJS module, shared so each run only instantiates it. */
  wasmModule: WebAssembly.Module;
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

export type ThreadMessage =
  /** QuickJS is up; the program's CPU time starts counting. */
  | { type: 'ready' }
  /** The program waits for a tool's answer; `answersSeen` lets the parent tell if one is on its way. */
  | { type: 'waiting'; answersSeen: number }
  | { type: 'log'; line: string }
  | { type: 'call'; callNo: number; name: string; args: JsonObject }
  | { type: 'done'; ok: true; result?: Json; cpuMs: number }
  | { type: 'done'; ok: false; kind: StopKind; error: string; cpuMs: number };

export type ParentMessage =
  | { type: 'answer'; callNo: number; ok: true; json: string }
  | { type: 'answer'; callNo: number; ok: false; message: string };
