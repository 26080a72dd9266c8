// `sluice hook <claude|codex|gemini|opencode>`: a harness's command hook. Reads one hook payload on stdin,
// decides the call through Sluice (service.ts) and answers on stdout in the harness's dialect
// before the harness stops waiting. `sluice hook serve`: the same over HTTP, for Claude Code's
// `http` hook type (POST /claude, /codex, /gemini). `sluice hook install opencode`: the OpenCode
// plugin that runs `sluice hook opencode` (opencode-plugin.ts). docs/gateway.md has the set-up lines.
//
// Fail closed, always: malformed input, an unknown dialect, no server, no worker, no decision in
// time — each answers deny (or "ask", where the harness then asks the person itself), never allow.
import * as http from 'node:http';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { SluiceClient } from '../client';
import { connectClient } from '../../temporal/connection';
import { dataConverterFromEnv } from '../../codec/payload';
import { untilStopSignal } from '../../support/stop-signal';
import {
  answerBody,
  type HarnessDialect,
  type HarnessRequest,
  HookInputError,
  type HookReply,
  parseDialect,
  parseHookPayload,
  renderAnswer,
  renderFailure,
} from './dialects';
import { doctor, doctorDefaults, renderFindings } from './doctor';
import { DEFAULT_OPENCODE_TIMEOUT_S, pluginPath, sluiceBin, writePlugin } from './opencode-plugin';
import { decide, record } from './service';

export const HOOK_HELP = `Usage: npx sluice hook <claude|codex|gemini|opencode> [options]  a command hook: payload on stdin
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

Exit codes (command hooks): 0 the answer is on stdout; 2 blocked, the reason on stderr (bad input,
no decision possible); 1 a result could not be recorded (the tool already ran; nothing to block).`;

const DEFAULT_TIMEOUT_S = 50;
const DEFAULT_PORT = 8788;

export interface HookOptions {
  timeoutMs: number;
  approvalTimeoutMs?: number;
  address?: string;
  namespace?: string;
  taskQueue?: string;
}

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
  if (parsed.target === 'serve') return serve(parsed.options, parsed.port, parsed.host, io.stderr);
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

/** A Sluice client for one hook run; `release` closes what was opened for it (nothing for a shared one). */
export type ClientSource = () => Promise<{ sluice: SluiceClient; release(): void }>;

/** A client on a connection of its own, closed after the answer: a command hook's one run. */
export function ownClient(o: HookOptions): ClientSource {
  return async () => {
    const c = await connectClient({ address: o.address, namespace: o.namespace });
    return {
      sluice: new SluiceClient({
        connection: c.connection,
        namespace: c.namespace,
        ...(o.taskQueue ? { taskQueue: o.taskQueue } : {}),
        dataConverter: dataConverterFromEnv(),
      }),
      release: () => void c.connection.close().catch(() => undefined),
    };
  };
}

/** One client for every request of `sluice hook serve`, connected on first use and again after a failure. */
export function sharedClient(o: HookOptions): ClientSource {
  let pending: ReturnType<ClientSource> | undefined;
  return async () => {
    pending ??= ownClient(o)().catch((err) => {
      pending = undefined;
      throw err;
    });
    const { sluice } = await pending;
    return { sluice, release: () => undefined };
  };
}

/** One payload in, one reply out; never throws. `deadline` is when the harness stops waiting. */
export async function answer(
  dialect: HarnessDialect,
  text: string,
  o: HookOptions,
  deadline: number,
  client: ClientSource = ownClient(o),
): Promise<HookReply> {
  let req: HarnessRequest;
  try {
    req = parseHookPayload(dialect, text);
  } catch (err) {
    // An unreadable payload: we cannot tell a decision from a record event, so block.
    return renderFailure('decide', (err as Error).message);
  }
  // Answer before the harness gives up, with a margin for writing the reply. The service stops
  // waiting first (and says what the batch waits on); the hard stop after it covers a server
  // that does not answer at all.
  const margin = Math.min(3_000, Math.max(500, o.timeoutMs / 5));
  const answerBy = deadline - margin;
  const hardStop = deadline - margin / 3;
  let release: (() => void) | undefined;
  try {
    const work = (async () => {
      const c = await client();
      release = c.release;
      return hookOnce(req, c.sluice, o, answerBy);
    })();
    const timedOut = new Promise<HookReply>((resolve) => {
      const t = setTimeout(
        () =>
          resolve(
            fallback(
              req,
              `Sluice could not be reached or did not answer within ${Math.round(o.timeoutMs / 1000)}s (Temporal at ${o.address ?? process.env.TEMPORAL_ADDRESS ?? 'localhost:7233'})`,
            ),
          ),
        Math.max(0, hardStop - Date.now()),
      );
      t.unref();
    });
    return await Promise.race([work, timedOut]);
  } catch (err) {
    return fallback(req, `Sluice failed before deciding: ${(err as Error).message}`);
  } finally {
    release?.();
  }
}

/** The decision (or the recorded result) for one parsed request, as the command-hook reply. */
async function hookOnce(
  req: HarnessRequest,
  sluice: SluiceClient,
  o: HookOptions,
  answerBy: number,
): Promise<HookReply> {
  const service = {
    sluice,
    deadline: answerBy,
    budgetMs: o.timeoutMs,
    ...(o.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: o.approvalTimeoutMs } : {}),
  };
  if (req.kind === 'record') {
    try {
      await record(req, service);
      return { exitCode: 0, stdout: '', stderr: '' };
    } catch (err) {
      return renderFailure('record', `the ${req.event} result was not recorded: ${(err as Error).message}`);
    }
  }
  const decided = await decide(req, service);
  return renderAnswer(req.dialect, req.event, decided.answer);
}

/** Where Sluice has no answer: ask where the harness can ask the person itself, deny otherwise. */
function fallback(req: HarnessRequest, why: string): HookReply {
  if (req.kind === 'record') return renderFailure('record', `${why}; the ${req.event} result was not recorded`);
  const reason = `${why}. Not allowed, so this answer fails closed.`;
  // A PermissionRequest's "ask" is no output at all: the reason goes to stderr, where the harness
  // keeps it (its debug log, a verbose transcript), instead of vanishing.
  return { ...renderAnswer(req.dialect, req.event, { decision: 'ask', reason }), stderr: `sluice hook: ${reason}\n` };
}

/** The HTTP form, for Claude Code's `http` hooks: POST /<dialect> with the hook JSON; 200 with the answer. */
async function serve(o: HookOptions, port: number, host: string, log: (s: string) => void): Promise<number> {
  const client = sharedClient(o);
  let allowedHosts: string[] = [];
  const server = http.createServer((request, response) => {
    const started = Date.now();
    const dialectName = (request.url ?? '').split('?')[0].replace(/^\/+|\/+$/g, '');
    // Claude Code treats a non-2xx answer or a dropped connection as a non-blocking error and
    // runs the call: every refusal here is a 200 whose body denies.
    const reply = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(body === undefined ? '' : JSON.stringify(body));
    };
    if (request.method !== 'POST') return reply(405, { error: 'POST the hook JSON to /claude, /codex or /gemini' });
    // Harnesses are programs, not web pages: a request a browser sends for a page (it carries an
    // Origin, or a Host that is not ours after a DNS name was rebound to 127.0.0.1) is refused, so
    // no site the person visits can ask for decisions or record results in their sessions.
    if (
      request.headers.origin !== undefined ||
      (allowedHosts.length && !allowedHosts.includes(request.headers.host ?? ''))
    )
      return reply(403, { error: 'requests from web pages (an Origin, or a Host other than this server) are refused' });
    let dialect: HarnessDialect;
    try {
      dialect = parseDialect(dialectName || undefined);
    } catch (err) {
      return reply(200, denyBody((err as Error).message));
    }
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= 4 * 1024 * 1024) chunks.push(c);
    });
    request.on('end', async () => {
      if (size > 4 * 1024 * 1024) return reply(200, denyBody('the hook payload is over 4 MiB; denied'));
      const text = Buffer.concat(chunks).toString('utf8');
      const out = await answer(dialect, text, o, started + o.timeoutMs, client);
      if (out.exitCode === 0) return reply(200, out.stdout ? JSON.parse(out.stdout) : {});
      // Bad input or a failed record: a deny body for a call that has not run yet, an error otherwise.
      let kind: 'decide' | 'record' = 'decide';
      try {
        kind = parseHookPayload(dialect, text).kind;
      } catch {
        kind = 'decide';
      }
      const why = out.stderr.trim().replace(/^sluice hook: /, '');
      if (kind === 'record') return reply(200, { systemMessage: why });
      const event = eventOf(text);
      return reply(
        200,
        event === 'PermissionRequest'
          ? answerBody(dialect, 'PermissionRequest', { decision: 'deny', reason: why })
          : denyBody(why, dialect),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  if (host === 'localhost' || host === '::1' || host.startsWith('127.'))
    allowedHosts = [`127.0.0.1:${bound}`, `localhost:${bound}`, `[::1]:${bound}`, `${host}:${bound}`];
  log(`sluice hook: serving http hooks on http://${host}:${bound}/claude\n`);
  await untilStopSignal();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return 0;
}

function denyBody(reason: string, dialect: HarnessDialect = 'claude'): unknown {
  return answerBody(dialect, dialect === 'gemini' ? 'BeforeTool' : 'PreToolUse', { decision: 'deny', reason });
}

function eventOf(text: string): string | undefined {
  try {
    const doc = JSON.parse(text);
    return typeof doc?.hook_event_name === 'string' ? doc.hook_event_name : undefined;
  } catch {
    return undefined;
  }
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
