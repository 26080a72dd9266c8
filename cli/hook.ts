// `sluice hook <claude|codex|gemini|opencode>`: a harness's command hook. It reads one hook payload
// on stdin and answers on stdout and the exit code in its harness's protocol (servers/hook.ts);
// `hook serve` serves the same over HTTP, `hook doctor` checks the harness will run it, `hook
// install opencode` writes OpenCode's plugin that runs `sluice hook opencode`. Its options
// are its own: bin/sluice.js loads only this module for a hook, not the whole CLI.
//
// Fail closed, always: malformed input, an unknown dialect, no server, no worker, no decision in
// time — each answers deny (or "ask", where the harness then asks the person itself), never allow.
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import {
  type HarnessDialect,
  HookInputError,
  type HookReply,
  parseDialect,
  renderFailure,
} from '../client/hook/dialects';
import { doctor, doctorDefaults, renderFindings } from '../client/hook/doctor';
import { DEFAULT_OPENCODE_TIMEOUT_S, pluginPath, sluiceBin, writePlugin } from '../client/hook/opencode-plugin';
import { factsScopeProblem } from '../pipeline/facts';
import { answer, type HookOptions, serveHooks } from '../servers/hook';
import type { RawCommand } from './command';

const HOOK_HELP = `Usage: npx sluice hook <claude|codex|gemini|opencode> [options]  a command hook: payload on stdin
           npx sluice hook serve [--port N] [--host H] [options]  http hooks: POST /claude (/codex, /gemini)
           npx sluice hook install opencode [--project DIR | --global] [options]  OpenCode's plugin
           npx sluice hook doctor <claude|codex|gemini|opencode> [--project DIR]  will the harness run the hook?

Answers the harness's PreToolUse / PermissionRequest (Claude Code, Codex), BeforeTool (Gemini CLI)
or tool.execute.before (OpenCode, through the plugin \`install opencode\` writes) with Sluice's
decision, and records PostToolUse / PostToolUseFailure / AfterTool / tool.execute.after results.
Each call is a durable Sluice batch of the harness's session, decided by the worker's config
(harnessTools() from sluice/hooks; docs/gateway.md).

Options:
  --timeout S             How long the harness waits for this hook, in seconds (default 50; 600 in
                          the plugin \`install opencode\` writes): Sluice answers a little before,
                          and an ask nobody decided by then falls back to the harness's own
                          prompt where it has one, else to deny
  --approval-timeout S    Deny timeout of an ask when the worker's tool sets none (default 600)
  --port N, --host H      serve: where to listen (default 127.0.0.1:8788)
  --project DIR           doctor, install: the project the harness runs in (default: this folder)
  --global                install: for every project (~/.config/opencode/plugin/)
  --address host:port     Temporal frontend (default: TEMPORAL_ADDRESS, then localhost:7233)
  --namespace NAME        Temporal namespace (default: TEMPORAL_NAMESPACE, then "default")
  --task-queue NAME       Task queue of the Sluice worker that serves harness calls
  --facts-scope ID        The facts scope the calls count in (default harness:<session id>, the
                          harness's session): name one, e.g. user:alice, to count a person's
                          calls across sessions and harnesses (docs/policies.md)

Exit codes (command hooks): 0 the answer is on stdout; 2 blocked, the reason on stderr (bad input,
no decision possible); 1 a result could not be recorded (the tool already ran; nothing to block).`;

const DEFAULT_TIMEOUT_S = 50;
const DEFAULT_PORT = 8788;

/** Runs `sluice hook ...`; returns the exit code. `io` is the process's by default. */
export async function hookMain(
  argv: string[],
  io: { stdin: NodeJS.ReadableStream; stdout: (s: string) => void; stderr: (s: string) => void } = {
    stdin: process.stdin,
    stdout: (s) => process.stdout.write(s),
    stderr: (s) => process.stderr.write(s),
  },
): Promise<number> {
  const started = Date.now();
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(argv);
  } catch (err) {
    // A bad command line in the harness's settings: block, and say what to fix.
    return emit(io, renderFailure('decide', (err as Error).message));
  }
  if (parsed.help) {
    io.stdout(`${HOOK_HELP}\n`);
    return 0;
  }
  if (parsed.target === 'serve') return serveHooks(parsed.options, parsed.port, parsed.host, io.stderr);
  if (parsed.target === 'doctor') return runDoctor(parsed.positionals[1], parsed.project, io);
  if (parsed.target === 'install') return runInstall(parsed, io);
  let dialect: HarnessDialect;
  try {
    dialect = parseDialect(parsed.target);
  } catch (err) {
    return emit(io, renderFailure('decide', (err as Error).message));
  }
  const text = await readAll(io.stdin);
  return emit(io, await answer(dialect, text, parsed.options, started + parsed.options.timeoutMs));
}

/** `sluice hook doctor <harness>`: whether the harness will run the hook, from its files (doctor.ts). */
function runDoctor(
  harness: string | undefined,
  project: string | undefined,
  io: { stdout: (s: string) => void; stderr: (s: string) => void },
): number {
  let dialect: HarnessDialect;
  try {
    dialect = parseDialect(harness);
  } catch (err) {
    io.stderr(`sluice hook doctor: ${(err as Error).message.replace('sluice hook ', 'sluice hook doctor ')}\n`);
    return 2;
  }
  const { text, exitCode } = renderFindings(dialect, doctor(dialect, doctorDefaults(project)));
  io.stdout(text);
  return exitCode;
}

/**
 * `sluice hook install opencode`: writes the plugin that runs this copy's `sluice hook opencode`
 * with the options given here (node and bin/sluice.js by absolute path: OpenCode's own runtime is
 * not node, and its PATH need not reach this project's node_modules).
 */
function runInstall(
  parsed: ReturnType<typeof parseOptions>,
  io: { stdout: (s: string) => void; stderr: (s: string) => void },
): number {
  const harness = parsed.positionals[1];
  if (harness !== 'opencode') {
    io.stderr(
      `sluice hook install: only \`opencode\` has a plugin to install${harness ? `, not ${JSON.stringify(harness)}` : ''}; Claude Code, Codex and Gemini CLI run \`sluice hook <harness>\` from their hook settings (docs/gateway.md has the lines)\n`,
    );
    return 2;
  }
  if (parsed.global && parsed.project !== undefined) {
    io.stderr('sluice hook install: give --project DIR or --global, not both\n');
    return 2;
  }
  const file = pluginPath(parsed.global ? { global: true } : { project: parsed.project ?? process.cwd() });
  const timeoutS = parsed.timeoutGiven ? parsed.options.timeoutMs / 1000 : DEFAULT_OPENCODE_TIMEOUT_S;
  const o = parsed.options;
  const command = [process.execPath, sluiceBin(), 'hook', 'opencode', '--timeout', String(timeoutS)];
  if (o.approvalTimeoutMs !== undefined) command.push('--approval-timeout', String(o.approvalTimeoutMs / 1000));
  if (o.address) command.push('--address', o.address);
  if (o.namespace) command.push('--namespace', o.namespace);
  if (o.taskQueue) command.push('--task-queue', o.taskQueue);
  if (o.factsScope !== undefined) command.push('--facts-scope', o.factsScope);
  try {
    writePlugin(file, { command, timeoutS });
  } catch (err) {
    io.stderr(`sluice hook install: ${(err as Error).message}\n`);
    return 1;
  }
  io.stdout(
    `Wrote ${file}: OpenCode asks Sluice before every tool call${parsed.global ? ' in every project' : ' in this project'}.\nCheck with: npx sluice hook doctor opencode${parsed.global ? '' : ` --project ${path.dirname(path.dirname(path.dirname(file)))}`}\n`,
  );
  return 0;
}

function parseOptions(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      timeout: { type: 'string' },
      'approval-timeout': { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      address: { type: 'string' },
      namespace: { type: 'string' },
      'task-queue': { type: 'string' },
      'facts-scope': { type: 'string' },
      project: { type: 'string' },
      global: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const seconds = (v: string | undefined, flag: string, fallbackS?: number): number | undefined => {
    if (v === undefined) return fallbackS === undefined ? undefined : fallbackS * 1000;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0)
      throw new HookInputError(`${flag} must be a positive number of seconds, not ${JSON.stringify(v)}`);
    return n * 1000;
  };
  const port = values.port === undefined ? DEFAULT_PORT : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new HookInputError(`--port must be a port number, not ${values.port}`);
  const approvalTimeoutMs = seconds(values['approval-timeout'], '--approval-timeout');
  const factsScope = values['facts-scope'];
  const badScope = factsScope === undefined ? undefined : factsScopeProblem(factsScope);
  if (badScope) throw new HookInputError(`--facts-scope: ${badScope.replace(/^factsScope /, 'the scope ')}`);
  return {
    help: values.help === true,
    target: positionals[0],
    positionals,
    project: values.project,
    global: values.global === true,
    timeoutGiven: values.timeout !== undefined,
    port,
    host: values.host ?? '127.0.0.1',
    options: {
      timeoutMs: seconds(values.timeout, '--timeout', DEFAULT_TIMEOUT_S) as number,
      ...(approvalTimeoutMs !== undefined ? { approvalTimeoutMs } : {}),
      ...(values.address ? { address: values.address } : {}),
      ...(values.namespace ? { namespace: values.namespace } : {}),
      ...(values['task-queue'] ? { taskQueue: values['task-queue'] } : {}),
      ...(factsScope !== undefined ? { factsScope } : {}),
    } satisfies HookOptions,
  };
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

function emit(io: { stdout: (s: string) => void; stderr: (s: string) => void }, reply: HookReply): number {
  if (reply.stdout) io.stdout(`${reply.stdout}\n`);
  if (reply.stderr) io.stderr(reply.stderr);
  return reply.exitCode;
}

export const hook: RawCommand = {
  name: 'hook',
  synopsis: 'hook <claude|codex|gemini|opencode>',
  summary: `Answer a harness's tool hook (stdin → stdout) with a Sluice decision;
\`hook serve\` for Claude Code http hooks, \`hook install opencode\` for OpenCode's plugin (docs/gateway.md)`,
  help: HOOK_HELP,
  raw: (argv) => hookMain(argv),
};
