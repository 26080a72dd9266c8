// bash: runs a shell command in the workspace, in bubblewrap's sandbox where it works (see
// sandbox.ts), else in its own process group; either way a timeout or a cancelled batch ends
// everything it started, and nothing it left running in the background outlives the call. The
// command sees only the environment variables on an allowlist, never the worker's keys.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { z } from 'zod';
import type { ToolApproval } from '../pipeline/types';
import { defineTool, toolOutput, type ToolDefinition } from '../define/config';
import { answering, ToolErrorCodes, ToolFailure } from './errors';
import type { ProtectOptions } from './fs/protect';
import { openWorkspace, protectedPath, type Workspace } from './fs/workspace';
import { execDenyRules, withExecDeny } from './exec-deny';
import { inSandbox, sandboxMode, type SandboxSetting } from './sandbox';

/** The worker's variables a command sees by default: what programs need to run, no secrets. */
export const BASH_ENV_ALLOWLIST: readonly string[] = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'LC_ALL',
  'LC_CTYPE',
  'LC_MESSAGES',
  'TERM',
  'TZ',
  'TMPDIR',
];

/** Marks every process of one fallback-mode call, so the ones that left its group can be found. */
const RUN_MARKER = 'SLUICE_BASH_RUN';

export interface BashToolOptions {
  /** The working directory of every command. */
  root: string;
  /** Default 'ask': a person approves each command. 'auto' leaves it to pre-execute hooks. */
  approval?: ToolApproval | ((args: BashArgs) => ToolApproval | Promise<ToolApproval>);
  approvalTimeoutMs?: number;
  /** When the call gives no timeout. Default 2 minutes. */
  defaultTimeoutMs?: number;
  /** The most a call may ask for. Default 10 minutes. */
  maxTimeoutMs?: number;
  /** Output beyond this is cut from the middle, keeping its start and end. Default 30,000. */
  maxOutputChars?: number;
  /**
   * The whole environment of the commands, exactly as given. Default: only the worker's
   * variables named in inheritEnv, so API and codec keys stay out of the model's reach.
   */
  env?: NodeJS.ProcessEnv;
  /** Names of the worker's variables a command sees when env is not given. Default BASH_ENV_ALLOWLIST. */
  inheritEnv?: readonly string[];
  /** Default `bash`. */
  shell?: string;
  /**
   * 'auto' (default): bubblewrap's sandbox where it runs, else the process-group fallback;
   * 'bubblewrap': the sandbox or a failed call; 'none': the fallback. See docs/tools.md.
   */
  sandbox?: SandboxSetting;
  /** Network inside the sandbox. Default false. */
  network?: boolean;
  /** Further folders the sandbox may write (the workspace and a private /tmp always). */
  writable?: string[];
  /** Protected paths, as fsTools takes them: read-only or hidden in the sandbox, refused by name outside it. */
  protect?: ProtectOptions | false;
  /**
   * When deny rules are registered (`permissionRules()`, `policyRules()`) and no sandbox runs, so
   * nothing holds them once the command starts: 'refuse' (default) fails the call; 'judgment'
   * runs it, the rules then held only by the judgment of the command's text. See docs/tools.md.
   */
  denyWithoutSandbox?: 'refuse' | 'judgment';
}

const input = z.strictObject({
  command: z.string().min(1).describe('The command to run with bash -c, in the workspace root'),
  timeout: z.number().int().min(1).optional().describe('Timeout in milliseconds'),
  description: z.string().optional().describe('What the command does, in a few words, for the person approving it'),
});
export type BashArgs = z.infer<typeof input>;

/** How long output pipes may stay open after the shell exits (held by a process outside the group). */
const PIPE_DRAIN_MS = 1000;

export function bashTool(opts: BashToolOptions): ToolDefinition<BashArgs> {
  if (typeof opts?.root !== 'string' || !opts.root)
    throw new Error('bashTool needs a workspace root: bashTool({ root: "path/to/workspace" })');
  const defaultTimeoutMs = opts.defaultTimeoutMs ?? 120_000;
  const maxTimeoutMs = Math.max(opts.maxTimeoutMs ?? 600_000, defaultTimeoutMs);
  const maxOutputChars = opts.maxOutputChars ?? 30_000;
  return defineTool({
    name: 'bash',
    aliases: ['Bash'],
    description:
      `Runs a shell command (bash -c) in the workspace root and returns its output (stdout and stderr together) and exit code. ` +
      `Timeout: timeout ms, default ${defaultTimeoutMs}, at most ${maxTimeoutMs}; on timeout the command and everything it started are killed. ` +
      `Output over ${maxOutputChars} characters is cut from the middle. Background processes do not outlive the command. ` +
      'Only the workspace (and a private /tmp) may be writable, the network may be off, and hook settings and Sluice state are off limits. ' +
      'Prefer read, edit, glob and grep for files.',
    input,
    approval: opts.approval ?? 'ask',
    ...(opts.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: opts.approvalTimeoutMs } : {}),
    // A command is not idempotent: never run twice. A lost attempt (worker killed mid-command)
    // ends OUTCOME_UNKNOWN and an operator reconciles it.
    retry: { maximumAttempts: 1 },
    atMostOnce: true,
    timeoutMs: maxTimeoutMs + 60_000,
    presentCall: (a) => ({
      title: 'Run command',
      summary: a.description ?? a.command,
      fields: { command: a.command, ...(a.timeout ? { timeout: a.timeout } : {}) },
    }),
    execute: (args, ctx) =>
      answering(async () => {
        const ws = await openWorkspace(opts.root, { protect: opts.protect });
        const timeoutMs = Math.min(args.timeout ?? defaultTimeoutMs, maxTimeoutMs);
        const mode = await sandboxMode(opts.sandbox ?? 'auto');
        const env = opts.env ? { ...opts.env } : allowlisted(opts.inheritEnv ?? BASH_ENV_ALLOWLIST);
        const shell = opts.shell ?? 'bash';
        const common = { cwd: ws.realRoot, env, timeoutMs, signal: ctx.signal, maxOutputChars };
        let run: GroupRun;
        if (mode === 'bubblewrap') {
          const sandbox = { network: opts.network === true, writable: opts.writable ?? [] };
          run = await withExecDeny(execDenyRules(), { pathEnv: env.PATH, shell }, (deny) =>
            inSandbox(ws, sandbox, (bwrapArgs) =>
              runSandboxed(() => [...bwrapArgs(), ...deny.args, '--', deny.shell, '-c', args.command], common),
            ),
          );
        } else {
          if (opts.denyWithoutSandbox !== 'judgment') refuseUnheldDenies();
          refuseProtectedMentions(ws, args.command);
          run = await runInGroup(shell, ['-c', args.command], { ...common, marker: randomBytes(12).toString('hex') });
        }
        if (run.aborted)
          throw new Error('the command was stopped because the batch was cancelled; its process group was killed');
        const status = run.timedOut
          ? `[timed out after ${timeoutMs} ms; the command and its child processes were killed]`
          : run.exitCode !== null
            ? `[exit code: ${run.exitCode}]`
            : `[killed by signal ${run.signal}]`;
        const body = run.output.length ? run.output.replace(/\n?$/, '\n') : '(no output)\n';
        const text = `${body}${run.cutChars ? `[${run.cutChars} characters of output were cut from the middle]\n` : ''}${status}`;
        const meta = {
          exitCode: run.exitCode,
          signal: run.signal,
          timedOut: run.timedOut,
          outputCut: run.cutChars,
          sandbox: mode,
        };
        if (run.timedOut) {
          const message = `the command timed out after ${timeoutMs} ms and was killed with everything it started. Run it with a longer timeout (at most ${maxTimeoutMs}), or make it finish sooner.`;
          return toolOutput({
            isError: true,
            error: { message, code: ToolErrorCodes.COMMAND_TIMEOUT },
            content: [{ type: 'text', text: `Error: ${message}\n${text}` }],
            meta,
          });
        }
        return toolOutput({ content: [{ type: 'text', text }], meta });
      }),
  });
}

/** Tries to set a sandbox up, in all; then the call fails saying the command did not run. */
const SANDBOX_ATTEMPTS = 4;

/**
 * bwrap, run again when it could not set the sandbox up: then the command did not start, so
 * running it again cannot run it twice. That happens when a worker process beside this one
 * removes a stand-in this bwrap was about to mount on (inSandbox orders it within one process);
 * the arguments are built again for each attempt, as the workspace is then.
 * bwrap reports the command's exit on its status descriptor only when the command ran; without
 * that report its own error was all it printed, and that is not the command's output.
 */
async function runSandboxed(args: () => string[], common: Parameters<typeof runInGroup>[2]): Promise<GroupRun> {
  for (let attempt = 1; ; attempt++) {
    const run = await runInGroup('bwrap', ['--json-status-fd', '3', ...args()], { ...common, status: true });
    if (run.status?.includes('"exit-code"') || run.timedOut || run.aborted) return run;
    if (attempt === SANDBOX_ATTEMPTS)
      throw new ToolFailure(
        `the sandbox could not be set up, so the command did not run (${SANDBOX_ATTEMPTS} tries): ${run.output.trim().split('\n')[0] || `bwrap exited with ${run.exitCode ?? run.signal}`}. Check that bubblewrap works on the worker (docs/tools.md), or run bash with sandbox: 'none'.`,
        ToolErrorCodes.SANDBOX_FAILED,
      );
    await new Promise((r) => setTimeout(r, 25 * attempt));
  }
}

interface GroupRun {
  /** With `status`: what bwrap wrote on its status descriptor (fd 3). */
  status?: string;
  output: string;
  cutChars: number;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  aborted: boolean;
}

/**
 * Runs a program as the leader of a new process group and ends the whole group. With a marker,
 * every process carrying it in its environment is ended too: `setsid` takes a process out of the
 * group, but not out of the environment it inherited.
 */
function runInGroup(
  file: string,
  args: string[],
  o: {
    cwd: string;
    env: NodeJS.ProcessEnv;
    timeoutMs: number;
    signal?: AbortSignal;
    maxOutputChars: number;
    marker?: string;
    /** A pipe on fd 3 for bwrap's --json-status-fd, read into GroupRun.status. */
    status?: boolean;
  },
): Promise<GroupRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: o.cwd,
      env: o.marker ? { ...o.env, [RUN_MARKER]: o.marker } : o.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', o.status ? 'pipe' : 'ignore'],
    });
    const { out, status, pipes, pipesClosed } = readPipes(child, o.maxOutputChars);
    const pgid = child.pid;
    let timedOut = false;
    let aborted = false;
    const killGroup = () => {
      if (pgid !== undefined)
        try {
          process.kill(-pgid, 'SIGKILL');
        } catch {
          // ESRCH: the group is already gone
        }
      if (o.marker) void killMarked(o.marker);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, o.timeoutMs);
    const onAbort = () => {
      aborted = true;
      killGroup();
    };
    if (o.signal?.aborted) onAbort();
    else o.signal?.addEventListener('abort', onAbort, { once: true });

    child.once('error', (err) => {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      reject(new Error(`could not start ${file}: ${err.message}`));
    });
    child.once('exit', async (code, signal) => {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      // The shell is done; whatever it left behind in its group goes with it.
      killGroup();
      if (o.marker) await killMarked(o.marker);
      const drained = await Promise.race([
        pipesClosed.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), PIPE_DRAIN_MS)),
      ]);
      if (!drained) for (const p of pipes) p.destroy();
      resolve({
        ...(o.status ? { status: status.text } : {}),
        output: out.text(),
        cutChars: out.cut,
        exitCode: code,
        signal,
        timedOut,
        aborted,
      });
    });
  });
}

/** stdout and stderr into one capped text, fd 3 (when piped) into `status`, and when all have closed. */
function readPipes(child: ChildProcess, maxOutputChars: number) {
  const out = new CappedOutput(maxOutputChars);
  // Pipes, by runInGroup's stdio (fd 3 only with `status`).
  const [stdout, stderr] = [child.stdout as Readable, child.stderr as Readable];
  const statusPipe = child.stdio[3] as Readable | null;
  const status = { text: '' };
  statusPipe?.on('data', (chunk: Buffer) => {
    status.text += chunk.toString('utf8');
  });
  for (const stream of [stdout, stderr]) {
    const decoder = new StringDecoder('utf8');
    stream.on('data', (chunk: Buffer) => out.add(decoder.write(chunk)));
    stream.on('end', () => out.add(decoder.end()));
  }
  const pipes = statusPipe ? [stdout, stderr, statusPipe] : [stdout, stderr];
  const pipesClosed = Promise.all(pipes.map((s) => new Promise<void>((r) => s.once('close', () => r()))));
  return { out, status, pipes, pipesClosed };
}

function allowlisted(names: readonly string[]): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of names) if (process.env[name] !== undefined) env[name] = process.env[name];
  return env;
}

/**
 * Outside the sandbox nothing stops a command from writing a hook file; refusing commands that
 * name a protected path stops the plain attempt, not a determined one (a glob, a variable). The
 * approval is then the guard; docs/tools.md says so.
 */
function refuseProtectedMentions(ws: Workspace, command: string): void {
  const p = ws.protection;
  const named = [...p.names, ...p.readOnly, ...p.hidden].flatMap((x) => [
    x,
    x.startsWith(ws.realRoot) ? x.slice(ws.realRoot.length + 1) : x,
  ]);
  const hit = named.find((n) => n && command.includes(n));
  if (hit !== undefined)
    throw protectedPath(
      hit,
      'is protected (hook settings or scripts, or Sluice state), and bash runs without a sandbox here, so commands that name it are refused',
    );
}

/**
 * Without the sandbox a denied program started in a way the command's text does not show would
 * run: with deny rules registered, the fallback refuses rather than hold them by judgment alone.
 */
function refuseUnheldDenies(): void {
  const rules = execDenyRules();
  if (!rules.length) return;
  throw new ToolFailure(
    `the command did not run: deny rules apply (${JSON.stringify(rules[0].rule)} in ${rules[0].file}${rules.length > 1 ? ` and ${rules.length - 1} more` : ''}) and bash runs without its sandbox here, where nothing holds them once the command starts. Install bubblewrap on the worker (docs/tools.md), or accept the judgment of the command text alone with bashTool({ denyWithoutSandbox: 'judgment' }).`,
    ToolErrorCodes.SANDBOX_FAILED,
  );
}

/** Kills every process whose environment carries this run's marker, until none is left. */
async function killMarked(marker: string): Promise<void> {
  const needle = Buffer.from(`${RUN_MARKER}=${marker}\0`);
  // Done after two scans in a row find none: a process in the middle of an exec (`setsid -f`'s
  // child becoming the command) can show an empty environment to one scan.
  let clean = 0;
  for (let round = 0; round < 20 && clean < 2; round++) {
    const pids: number[] = [];
    for (const name of await fs.readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
      const environ = await fs.readFile(`/proc/${name}/environ`).catch(() => undefined);
      if (environ?.includes(needle)) pids.push(Number(name));
    }
    if (pids.length === 0) {
      clean++;
      await new Promise((r) => setTimeout(r, 10));
      continue;
    }
    clean = 0;
    for (const pid of pids)
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
  }
}

/** Keeps the start and the end of a long output, counting what was dropped in between. */
class CappedOutput {
  private head = '';
  private tail = '';
  cut = 0;
  constructor(private readonly max: number) {}

  add(s: string) {
    if (!s) return;
    const half = Math.floor(this.max / 2);
    if (this.head.length < half) {
      const take = s.slice(0, half - this.head.length);
      this.head += take;
      s = s.slice(take.length);
    }
    this.tail += s;
    const keep = this.max - this.head.length;
    if (this.tail.length > keep * 2) {
      this.cut += this.tail.length - keep;
      this.tail = this.tail.slice(-keep);
    }
  }

  text(): string {
    const keep = this.max - this.head.length;
    if (this.tail.length > keep) {
      this.cut += this.tail.length - keep;
      this.tail = this.tail.slice(-keep);
    }
    return this.cut ? `${this.head}\n[...]\n${this.tail}` : this.head + this.tail;
  }
}
