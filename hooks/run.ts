// Running one hook command: a shell in its own process group, JSON on stdin, output collected up
// to a bound, and the whole group killed when the hook outlives its timeout.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';

export interface HookRun {
  /** Null when the process was killed by a signal, timed out, or never started. */
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  timedOut: boolean;
  /** Why the command could not be started at all (e.g. a missing working directory). */
  spawnError?: string;
}

interface RunOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  stdin: string;
  timeoutMs: number;
}

/** Output past this is dropped: a hook's answer is a small JSON object or a short reason. */
const MAX_OUTPUT_BYTES = 1 << 20;
/** After the shell exits, how long stragglers it left holding stdout/stderr may keep them open. */
const STDIO_GRACE_MS = 1000;

// Claude Code documents hook commands as bash commands; fall back to sh where bash is missing.
const BASH = ['/bin/bash', '/usr/bin/bash'].find((p) => fs.existsSync(p));
const SHELL = BASH ?? '/bin/sh';
// `--norc`: bash runs ~/.bashrc for a non-interactive top-level shell whose stdin is a socket (it
// takes that for sshd), and Node's stdin pipe is a socket; the hook environment is an allowlist
// with no SHLVL, so every hook was such a shell. A user's .bashrc then ran before every hook:
// slow, with its side effects, and a `pyenv init` in it waited a minute on a stale lock.
const SHELL_ARGS = BASH ? ['--norc', '-c'] : ['-c'];

export function runHookCommand(command: string, opts: RunOptions): Promise<HookRun> {
  const started = Date.now();
  return new Promise((resolve) => {
    const out = new Collector();
    const err = new Collector();
    let timedOut = false;
    let settled = false;
    let exit: { code: number | null; signal: string | null } | undefined;
    const timers: NodeJS.Timeout[] = [];

    const finish = (spawnError?: string) => {
      if (settled) return;
      settled = true;
      timers.forEach(clearTimeout);
      child.stdout?.destroy();
      child.stderr?.destroy();
      resolve({
        exitCode: timedOut || spawnError ? null : (exit?.code ?? null),
        signal: timedOut ? null : (exit?.signal ?? null),
        stdout: out.text(),
        stderr: err.text(),
        durationMs: Date.now() - started,
        timedOut,
        ...(spawnError ? { spawnError } : {}),
      });
    };

    const child = spawn(SHELL, [...SHELL_ARGS, command], {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.on('error', (e) => finish(e.message));
    child.stdout.on('data', (b: Buffer) => out.add(b));
    child.stderr.on('data', (b: Buffer) => err.add(b));
    // A hook that exits without reading its input closes the pipe under us: that is its business.
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.stdin);

    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // Background children may keep the pipes open; the hook's answer is what the shell wrote.
      timers.push(setTimeout(() => finish(), STDIO_GRACE_MS));
    });
    child.on('close', () => finish());

    timers.push(
      setTimeout(() => {
        if (settled || exit) return;
        timedOut = true;
        // The whole group, so a `sleep` or a server the hook started dies with it.
        killGroup(child.pid);
        timers.push(setTimeout(() => finish(), STDIO_GRACE_MS));
      }, opts.timeoutMs),
    );
  });
}

function killGroup(pid: number | undefined): void {
  if (!pid) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // the group is already gone
  }
}

class Collector {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private dropped = false;

  add(b: Buffer): void {
    if (this.size >= MAX_OUTPUT_BYTES) {
      this.dropped = true;
      return;
    }
    const room = MAX_OUTPUT_BYTES - this.size;
    if (b.length > room) this.dropped = true;
    const kept = b.length > room ? b.subarray(0, room) : b;
    this.chunks.push(kept);
    this.size += kept.length;
  }

  text(): string {
    const s = Buffer.concat(this.chunks).toString('utf8');
    return this.dropped ? `${s}\n[output truncated at ${MAX_OUTPUT_BYTES} bytes]` : s;
  }
}
