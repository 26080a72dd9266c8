// A harness's hook answered: one hook payload in, the harness's answer out, decided through Sluice
// (client/hook/service.ts) before the harness stops waiting. `answer` is a command hook's one run
// (`sluice hook <claude|codex|gemini|opencode>`, cli/hook.ts); `serveHooks` the same over HTTP, for Claude
// Code's `http` hook type (POST /claude, /codex, /gemini). docs/gateway.md has the set-up lines.
//
// Fail closed, always: malformed input, an unknown dialect, no server, no worker, no decision in
// time — each answers deny (or "ask", where the harness then asks the person itself), never allow.
import * as http from 'node:http';
import { SluiceClient } from '../client/client';
import { connectClient } from '../temporal/connection';
import { dataConverterFromEnv } from '../codec/payload';
import { untilStopSignal } from '../support/stop-signal';
import {
  answerBody,
  type HarnessDialect,
  type HarnessRequest,
  type HookReply,
  parseDialect,
  parseHookPayload,
  renderAnswer,
  renderFailure,
} from '../client/hook/dialects';
import { decide, record } from '../client/hook/service';

export interface HookOptions {
  timeoutMs: number;
  approvalTimeoutMs?: number;
  address?: string;
  namespace?: string;
  taskQueue?: string;
  /** The facts scope of the calls (`--facts-scope`); default `harness:<the harness's session id>`. */
  factsScope?: string;
}

/** A Sluice client for one hook run; `release` closes what was opened for it (nothing for a shared one). */
type ClientSource = () => Promise<{ sluice: SluiceClient; release(): void }>;

/** A client on a connection of its own, closed after the answer: a command hook's one run. */
function ownClient(o: HookOptions): ClientSource {
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
    ...(o.factsScope !== undefined ? { factsScope: o.factsScope } : {}),
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

/**
 * `sluice hook serve`, the HTTP form for Claude Code's `http` hooks: POST /<dialect> with the hook
 * JSON; 200 with the answer. Serves until a stop signal; returns the exit code.
 */
export async function serveHooks(
  o: HookOptions,
  port: number,
  host: string,
  log: (s: string) => void,
): Promise<number> {
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
