// Running `sluice` from a test, the two ways a user meets it. In process through the CLI's entry
// (`main`), with everything it prints captured line by line: fast, and the common case. Or as the
// real bin/sluice.js in a child process, for what only a process shows: the exit status, stdout
// apart from stderr, the environment it inherits.
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { main } from '../cli';

/** The checkout's bin, as a user runs it (from the checkout it runs the TypeScript source). */
export const SLUICE_BIN = path.join(__dirname, '..', 'bin', 'sluice.js');

/** Where a command talks to: appended as `--address` and `--task-queue` when given. */
export interface CliTarget {
  address?: string;
  taskQueue?: string;
}

export interface CliRun {
  /** The exit code `main` returned. */
  code: number;
  /** Every line printed, joined with newlines. */
  output: string;
}

function targeted(args: string[], target: CliTarget): string[] {
  return [
    ...args,
    ...(target.address === undefined ? [] : ['--address', target.address]),
    ...(target.taskQueue === undefined ? [] : ['--task-queue', target.taskQueue]),
  ];
}

/** Starts a command and returns at once: `lines` fills as it prints, `done` gives its exit code. */
export function startCli(args: string[], target: CliTarget = {}): { lines: string[]; done: Promise<number> } {
  const lines: string[] = [];
  const done = main(targeted(args, target), (s) => lines.push(s));
  return { lines, done };
}

/** Runs a command in process to its end. */
export async function runCli(args: string[], target: CliTarget = {}): Promise<CliRun> {
  const { lines, done } = startCli(args, target);
  const code = await done;
  return { code, output: lines.join('\n') };
}

/**
 * Runs bin/sluice.js in a child process to its end; `env` is added to this process's environment.
 * With `timeoutMs` a command that hangs is killed (its status is then null and `error` says so).
 */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs?: number): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [SLUICE_BIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    ...(timeoutMs ? { timeout: timeoutMs } : {}),
  });
}
