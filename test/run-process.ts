// A program run to its end with its output kept: the hook processes of test/hook.test.ts, the
// harness CLIs and `sluice` commands of test/harness-cli-*.test.ts.
import { spawn } from 'node:child_process';

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `file args`, writing `input` to its stdin when given; resolves once it exited and its output is read. */
export function runProcess(
  file: string,
  args: string[],
  o: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: o.cwd,
      env: o.env ?? process.env,
      stdio: [o.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d) => (stdout += d));
    child.stderr?.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    if (o.input !== undefined) child.stdin?.end(o.input);
  });
}
