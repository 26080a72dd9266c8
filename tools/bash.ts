// bash: runs a shell command in the workspace. The command gets its own process group, so a
// timeout or a cancelled batch ends everything it started, not just the shell; and nothing it
// left running in the background outlives the call.
import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import { z } from 'zod';
import type { ApprovalPolicy } from '../pipeline/types';
import { defineTool, toolOutput, type ToolDefinition } from '../worker/config';
import { answering, ToolErrorCodes } from './errors';
import { openWorkspace } from './fs/workspace';

export interface BashToolOptions {
  /** The working directory of every command. */
  root: string;
  /** Default 'ask': a person approves each command. 'auto' leaves it to pre-execute hooks. */
  approval?: ApprovalPolicy | ((args: BashArgs) => ApprovalPolicy);
  approvalTimeoutMs?: number;
  /** When the call gives no timeout. Default 2 minutes. */
  defaultTimeoutMs?: number;
  /** The most a call may ask for. Default 10 minutes. */
  maxTimeoutMs?: number;
  /** Output beyond this is cut from the middle, keeping its start and end. Default 30,000. */
  maxOutputChars?: number;
  /** The environment of the commands; default: the worker's own. */
  env?: NodeJS.ProcessEnv;
  /** Default `bash`. */
  shell?: string;
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
      'Prefer read, edit, glob and grep for files.',
    input,
    approval: opts.approval ?? 'ask',
    ...(opts.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: opts.approvalTimeoutMs } : {}),
    // A command is not idempotent: after a crash it is reported as failed, never run twice.
    retry: { maximumAttempts: 1 },
    timeoutMs: maxTimeoutMs + 60_000,
    presentCall: (a) => ({
      title: 'Run command',
      summary: a.description ?? a.command,
      fields: { command: a.command, ...(a.timeout ? { timeout: a.timeout } : {}) },
    }),
    execute: (args, ctx) =>
      answering(async () => {
        const { realRoot } = await openWorkspace(opts.root);
        const timeoutMs = Math.min(args.timeout ?? defaultTimeoutMs, maxTimeoutMs);
        const run = await runInGroup(opts.shell ?? 'bash', args.command, {
          cwd: realRoot,
          env: opts.env ?? process.env,
          timeoutMs,
          signal: ctx.signal,
          maxOutputChars,
        });
        if (run.aborted)
          throw new Error('the command was stopped because the batch was cancelled; its process group was killed');
        const status = run.timedOut
          ? `[timed out after ${timeoutMs} ms; the command and its child processes were killed]`
          : run.exitCode !== null
            ? `[exit code: ${run.exitCode}]`
            : `[killed by signal ${run.signal}]`;
        const body = run.output.length ? run.output.replace(/\n?$/, '\n') : '(no output)\n';
        const text = `${body}${run.cutChars ? `[${run.cutChars} characters of output were cut from the middle]\n` : ''}${status}`;
        const meta = { exitCode: run.exitCode, signal: run.signal, timedOut: run.timedOut, outputCut: run.cutChars };
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

export interface GroupRun {
  output: string;
  cutChars: number;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  aborted: boolean;
}

/** Runs `shell -c command` as the leader of a new process group and ends the whole group. */
export function runInGroup(
  shell: string,
  command: string,
  o: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number; signal?: AbortSignal; maxOutputChars: number },
): Promise<GroupRun> {
  return new Promise((resolve, reject) => {
    const out = new CappedOutput(o.maxOutputChars);
    const child = spawn(shell, ['-c', command], {
      cwd: o.cwd,
      env: o.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const pgid = child.pid;
    let timedOut = false;
    let aborted = false;
    const killGroup = () => {
      if (pgid === undefined) return;
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        // ESRCH: the group is already gone
      }
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

    for (const stream of [child.stdout, child.stderr]) {
      const decoder = new StringDecoder('utf8');
      stream.on('data', (chunk: Buffer) => out.add(decoder.write(chunk)));
      stream.on('end', () => out.add(decoder.end()));
    }
    const pipesClosed = Promise.all(
      [child.stdout, child.stderr].map((s) => new Promise<void>((r) => s.once('close', () => r()))),
    );

    child.once('error', (err) => {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      reject(new Error(`could not start ${shell}: ${err.message}`));
    });
    child.once('exit', async (code, signal) => {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      // The shell is done; whatever it left behind in its group goes with it.
      killGroup();
      const drained = await Promise.race([
        pipesClosed.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), PIPE_DRAIN_MS)),
      ]);
      if (!drained) {
        child.stdout.destroy();
        child.stderr.destroy();
      }
      resolve({ output: out.text(), cutChars: out.cut, exitCode: code, signal, timedOut, aborted });
    });
  });
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
