// `sluice hook …` run from a test, the two ways: by the command's own function in this process
// (hookMain with the payload as its stdin, its stdout and stderr kept), or as the real
// bin/sluice.js process a harness starts. A process is a Node start that loads TypeScript through
// tsx, a CPU-second or more each: tests use it where the process is what they check (its exit
// code, its stdout apart from stderr), and the function for the rest. The in-process hook reads
// its call key from this process's environment (XDG_CONFIG_HOME), as the process reads its own.
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { hookMain } from '../cli/hook';
import { type Ran, runProcess } from './run-process';

const BIN = path.join(__dirname, '..', 'bin', 'sluice.js');

export interface HookRan extends Ran {
  /** stdout as JSON, when it is JSON. */
  json?: any;
}

/** `sluice hook <args>` answered by hookMain in this process, with `input` on its stdin. */
export async function runHook(args: string[], input: string): Promise<HookRan> {
  let stdout = '';
  let stderr = '';
  const code = await hookMain(args, {
    stdin: Readable.from([Buffer.from(input)]),
    stdout: (s) => (stdout += s),
    stderr: (s) => (stderr += s),
  });
  return withJson({ code, stdout, stderr });
}

/** The real `bin/sluice.js hook <args>` process, with `input` on its stdin. */
export async function spawnHook(args: string[], input: string, env: NodeJS.ProcessEnv): Promise<HookRan> {
  return withJson(await runProcess(process.execPath, [BIN, 'hook', ...args], { env, input }));
}

function withJson(r: Ran): HookRan {
  let json: unknown;
  try {
    json = r.stdout.trim() ? JSON.parse(r.stdout) : undefined;
  } catch {
    json = undefined;
  }
  return { ...r, json };
}
