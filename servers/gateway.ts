// `sluice gateway`'s server: MCP in front of the tools of a Sluice config (docs/gateway.md); its
// options, config and token are cli/gateway.ts's.
//
// An MCP client (Claude Code, Codex, Gemini CLI, Cursor, the inspector) connects over stdio or
// Streamable HTTP and sees the config's tools: its own and the upstream MCP servers' (`mcpTools`).
// Every `tools/call` becomes a one-call Sluice batch on the worker's task queue, so it goes through
// the whole pipeline — pre-execute, guards, approval with its deny timeout, the body (the upstream
// call, run by the worker), post-execute, finalize — and the MCP answer is the finalized result,
// `isError` as Sluice decided it. The gateway runs no tool itself: a worker with the same config
// does, so a gateway that dies mid-call loses nothing (the batch goes on, and the same call sent
// again attaches to it).
//
// Which batch. The client's MCP session is a Sluice session (stdio: the gateway process, or
// `--session`; HTTP: the Mcp-Session-Id), each call one step of it, keyed by the JSON-RPC request
// id, the tool name and the arguments: the same request sent again attaches to its batch. Over
// HTTP each SSE event id names the call it belongs to (callEvents), so a client whose response
// stream broke resumes it (GET with Last-Event-ID) at any gateway process, restarted or not.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import * as http from 'node:http';
import { isIP } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { CallToolResult, JSONRPCMessage, Tool } from '@modelcontextprotocol/sdk/types.js';
import { WorkflowNotFoundError } from '@temporalio/client';
import { expandBatchOutput } from '../codec/output';
import { canonicalJson } from '../pipeline/json';
import type { BatchOutput, Json, PendingApproval } from '../pipeline/types';
import { elicitedBy } from '../pipeline/approval-rules';
import { approvalLink } from '../activities/approval-links';
import type { ApprovalLinkSettings, ToolSchema } from '../define/config';
import { requireOptional } from '../support/optional';
import type { BatchHandle, SluiceClient } from '../client/client';
import { startInOwnBlock } from '../client/hook/service';
import { batchWorkflowId } from '../workflows/definitions';

/** How often a waiting call tells the client it still waits (MCP progress notifications). */
const PROGRESS_MS = 3_000;
/** Bodies over this are refused before parsing: a client that sends garbage gets a clear error. */
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;
/** How many ended sessions' ids one HTTP gateway remembers (to refuse them, not re-open them). */
const MAX_ENDED = 10_000;

// The MCP SDK is an optional peer dependency, loaded when the gateway starts.
type McpServerSdk = typeof import('@modelcontextprotocol/sdk/server/index.js') &
  typeof import('@modelcontextprotocol/sdk/server/stdio.js') &
  typeof import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js') &
  typeof import('@modelcontextprotocol/sdk/types.js');
function mcpSdk(): McpServerSdk {
  return requireOptional<McpServerSdk>('@modelcontextprotocol/sdk', '`sluice gateway`', () => ({
    ...require('@modelcontextprotocol/sdk/server/index.js'),
    ...require('@modelcontextprotocol/sdk/server/stdio.js'),
    ...require('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
    ...require('@modelcontextprotocol/sdk/types.js'),
  }));
}
type WebTransport = InstanceType<McpServerSdk['WebStandardStreamableHTTPServerTransport']>;

export interface GatewayOptions {
  /** The tools the client sees: the worker's config's (or its manifest's). */
  tools: ToolSchema[];
  sluice: SluiceClient;
  /** Deny timeout of asks when the tool sets none (BatchOptions.approvalTimeoutMs). */
  approvalTimeoutMs?: number;
  /**
   * Where one-time approval links point (the inbox) and their key: a client that supports URL
   * elicitation is sent the link for the approval its call waits on.
   */
  links?: ApprovalLinkSettings;
  /**
   * The answer a client gives in an elicitation form decides a plain ask (`--elicitation-decides`),
   * recorded as that client's, unverified. Off: no form is offered (a URL elicitation's link to the
   * inbox still is). A quorum ask, or one only a verified approver may decide, is never offered one.
   */
  elicitationDecides?: boolean;
  log?: (line: string) => void;
}

/**
 * The batch step of one tools/call: (JSON-RPC request id, tool name, arguments) as a 48-bit whole
 * number, so the same request sent again is the same batch, and a new request another.
 */
export function gatewayStep(requestId: string | number, name: string, args: unknown): number {
  const hex = createHash('sha256')
    .update(canonicalJson([String(requestId), name, (args ?? {}) as Json]))
    .digest('hex');
  return Number.parseInt(hex.slice(0, 12), 16);
}

/** An MCP server (not yet connected to a transport) whose tools run as Sluice batches of `sessionId`. */
export function gatewayServer(opts: GatewayOptions, sessionId: () => string): Server {
  const sdk = mcpSdk();
  const server = new sdk.Server(
    { name: 'sluice-gateway', version: '1' },
    {
      capabilities: { tools: {} },
      instructions:
        'Every tool call runs through Sluice: policy may deny it, and a call that needs approval waits for a person (progress notifications say which approval).',
    },
  );
  const byName = new Map(opts.tools.map((t) => [t.name, t]));
  server.setRequestHandler(sdk.ListToolsRequestSchema, async () => ({
    tools: opts.tools.map(
      (t): Tool => ({ name: t.name, description: t.description, inputSchema: t.inputSchema as Tool['inputSchema'] }),
    ),
  }));
  server.setRequestHandler(sdk.CallToolRequestSchema, async (request, extra) => {
    const { name } = request.params;
    const args = request.params.arguments ?? {};
    if (!byName.has(name))
      throw new sdk.McpError(
        sdk.ErrorCode.InvalidParams,
        `unknown tool ${JSON.stringify(name)}: this gateway serves ${[...byName.keys()].join(', ') || 'no tools'}`,
      );
    const progressToken = request.params._meta?.progressToken;
    return await run(opts, sessionId(), extra.requestId, name, args, extra.signal, {
      progress: async (message, n) => {
        if (progressToken === undefined) return;
        await extra
          .sendNotification({ method: 'notifications/progress', params: { progressToken, progress: n, message } })
          .catch(() => undefined);
      },
      ...(elicitingAsker(server, sdk, opts, extra) ?? {}),
    });
  });
  return server;
}

/** What a waiting call tells the client: progress, and (when it supports elicitation) the ask itself. */
interface Waiting {
  progress(message: string, n: number): Promise<void>;
  /** Called once per approval the call waits on; `signal` aborts when the batch no longer waits. */
  ask?(pending: PendingApproval, signal: AbortSignal): Promise<void>;
  /** Called once when the batch has finished (a URL elicitation is then complete). */
  done?(): Promise<void>;
}

/**
 * Starts (or attaches to) the call's batch and waits for its output, the MCP answer. Calls of one client session
 * may run at once (a client need not wait for one answer before it sends the next request), so no
 * call knows the previous batch's nextSeq: each batch takes its own block of seqs and is
 * renumbered if another claimed first, as `sluice hook`'s are (startInOwnBlock, client/hook/service.ts).
 */
async function run(
  opts: GatewayOptions,
  sessionId: string,
  requestId: string | number,
  name: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
  waiting: Waiting,
): Promise<CallToolResult> {
  const request = {
    sessionId,
    turn: 0,
    step: gatewayStep(requestId, name, args),
    calls: [{ id: `mcp-${requestId}`, name, arguments: JSON.stringify(args) }],
    ...(opts.approvalTimeoutMs !== undefined ? { options: { approvalTimeoutMs: opts.approvalTimeoutMs } } : {}),
  };
  // A finished batch's output never changes: the same request sent again is answered from memory,
  // with no round trip. Only a cache: a restarted gateway finds the batch through Temporal. It keeps
  // the answer, not the output (whose events and session state the answer does not need).
  const finished = finishedBatches(opts);
  const known = finished.get(batchWorkflowId(sessionId, 0, request.step));
  if (known) return known;
  const { handle, value: out } = await startInOwnBlock(opts.sluice, request, (h) =>
    waitFor(h, opts.sluice, signal, waiting),
  );
  const answer = toMcpResult(out, handle.workflowId);
  finished.set(handle.workflowId, answer);
  return answer;
}

/** The answers of finished batches one gateway (its GatewayOptions) gave, newest last, bounded. */
const finishedByGateway = new WeakMap<GatewayOptions, FinishedBatches>();
const MAX_FINISHED = 1_000;
const MAX_FINISHED_CHARS = 64 * 1024 * 1024;
function finishedBatches(opts: GatewayOptions): FinishedBatches {
  let f = finishedByGateway.get(opts);
  if (!f) finishedByGateway.set(opts, (f = new FinishedBatches()));
  return f;
}
class FinishedBatches {
  private readonly entries = new Map<string, { answer: CallToolResult; chars: number }>();
  private chars = 0;
  get(workflowId: string): CallToolResult | undefined {
    const e = this.entries.get(workflowId);
    if (!e) return undefined;
    this.entries.delete(workflowId);
    this.entries.set(workflowId, e);
    return e.answer;
  }
  set(workflowId: string, answer: CallToolResult) {
    const chars = answerChars(answer);
    if (chars > MAX_FINISHED_CHARS / 8 || this.entries.has(workflowId)) return;
    this.entries.set(workflowId, { answer, chars });
    this.chars += chars;
    for (const [id, e] of this.entries) {
      if (this.entries.size <= MAX_FINISHED && this.chars <= MAX_FINISHED_CHARS) break;
      this.entries.delete(id);
      this.chars -= e.chars;
    }
  }
}

/**
 * About how many characters an answer holds (what the cache bounds), counted without serializing
 * it (the cache used to stringify every output it kept): its blocks' text and data, which are
 * most of it, and its structured value walked; a few characters for everything else. No less than
 * the length of its JSON unless its strings hold characters JSON escapes.
 */
export function answerChars(answer: CallToolResult): number {
  let n = 64;
  for (const b of answer.content)
    n += 32 + (b.type === 'text' ? b.text.length : b.type === 'image' || b.type === 'audio' ? b.data.length : 0);
  return n + (answer.structuredContent ? jsonChars(answer.structuredContent) : 0);
}

/** `v`'s characters: strings and keys by their length, numbers as the longest a double prints, the JSON punctuation. */
function jsonChars(v: unknown): number {
  if (typeof v === 'string') return v.length + 2;
  if (typeof v === 'number') return 24;
  if (v === null || typeof v !== 'object') return 5;
  let n = 2;
  if (Array.isArray(v)) for (const x of v) n += jsonChars(x) + 1;
  else for (const [k, x] of Object.entries(v)) n += k.length + 4 + jsonChars(x);
  return n;
}

/**
 * The batch's output. While it runs, `waiting` hears every PROGRESS_MS what it waits on, and is
 * asked once per approval it waits on; a cancelled request (notifications/cancelled) cancels the batch.
 */
async function waitFor(
  handle: BatchHandle,
  sluice: SluiceClient,
  signal: AbortSignal,
  waiting: Waiting,
): Promise<BatchOutput> {
  const onAbort = () => void handle.cancel().catch(() => undefined);
  signal.addEventListener('abort', onAbort, { once: true });
  // Ends every elicitation still open on the client when the batch stops waiting (another channel
  // decided first, the deny timeout, the call was cancelled): the first answer wins, once.
  const asking = new AbortController();
  const asked = new Set<string>();
  let n = 0;
  const look = async () => {
    let message = `running as Sluice batch ${handle.workflowId}`;
    try {
      const { pending } = await sluice.readApprovals(handle.workflowId);
      const p = pending.find((x) => x.kind !== 'reconcile');
      if (p) {
        message = `waiting for a person to approve (approval ${p.approvalId}, denied at ${p.expiresAt} if nobody decides): approve it in the Sluice inbox or with \`sluice approve ${p.approvalId}\``;
        if (waiting.ask && !asked.has(p.approvalId)) {
          asked.add(p.approvalId);
          void waiting.ask(p, asking.signal).catch(() => undefined);
        }
      }
    } catch {
      // The progress line is a courtesy: a failed read leaves the plain one.
    }
    return message;
  };
  const timer = setInterval(async () => {
    n++;
    await waiting.progress(await look(), n);
  }, PROGRESS_MS);
  // A client that can be asked is asked at once, not at the first progress tick.
  if (waiting.ask) setTimeout(() => void look(), 500).unref();
  try {
    return await handle.result();
  } finally {
    clearInterval(timer);
    asking.abort();
    signal.removeEventListener('abort', onAbort);
    await waiting.done?.().catch(() => undefined);
  }
}

type HandlerExtra = Parameters<Parameters<Server['setRequestHandler']>[1]>[1];

/**
 * The ask, put to the person at the client through MCP elicitation, when the client declares it:
 * URL mode (a one-time approval link to the inbox card of this approval, when the gateway has the
 * inbox's address and link key), else, where the operator let it decide (--elicitation-decides),
 * form mode (approve / deny, with a reason). The form's answer is a decision bound to the digest
 * of the arguments it showed, recorded as the client's and unverified; the inbox, the CLI,
 * notifiers and verified approvers keep working, and whichever answers first wins (the batch takes
 * one decision per approval and refuses the rest).
 */
function elicitingAsker(
  server: Server,
  sdk: McpServerSdk,
  opts: GatewayOptions,
  extra: HandlerExtra,
): Pick<Waiting, 'ask' | 'done'> | undefined {
  const caps = server.getClientCapabilities()?.elicitation as { form?: object; url?: object } | undefined;
  if (!caps) return undefined;
  // A client that declares `elicitation: {}` (the 2025-06-18 form) supports forms only. The form's
  // answer comes from whatever answers the client, perhaps the agent: only where the operator let
  // it decide, and never where a quorum or a verified approver is needed (formMayDecide).
  const form = opts.elicitationDecides === true && (caps.form !== undefined || caps.url === undefined);
  const asking: Asking = { sdk, opts, extra, client: server.getClientVersion()?.name ?? 'MCP client' };
  const urlIds: string[] = [];
  return {
    async ask(p, signal) {
      const link =
        caps.url !== undefined && opts.links
          ? approvalLink(opts.links, {
              approvalId: p.approvalId,
              workflowId: p.workflowId,
              argsDigest: p.argsDigest,
              expiresAt: p.expiresAt,
            })
          : undefined;
      if (link) {
        const elicitationId = randomUUID();
        urlIds.push(elicitationId);
        return askByLink(asking, p, link, elicitationId, signal);
      }
      if (form && formMayDecide(p)) await askInForm(asking, p, signal);
    },
    async done() {
      for (const elicitationId of urlIds)
        await extra.sendNotification({ method: 'notifications/elicitation/complete', params: { elicitationId } });
    },
  };
}

/** An ask an unverified answer may decide: neither a quorum nor a verified approver is required. */
function formMayDecide(p: PendingApproval): boolean {
  return !p.quorum && !p.identityRequired;
}

/** What an elicitation needs: the request it is sent within, and the client's name for the record. */
interface Asking {
  sdk: McpServerSdk;
  opts: GatewayOptions;
  extra: HandlerExtra;
  client: string;
}

/** How an elicitation names the call, and how long it may stay open (until the deny timeout). */
function askedAbout(p: PendingApproval): { what: string; left: number } {
  return {
    what: `${p.toolName} ${JSON.stringify(p.arguments).slice(0, 500)}`,
    left: Math.max(1_000, Date.parse(p.expiresAt) - Date.now()),
  };
}

/** URL mode: the person decides on the inbox's page; the answer here only says whether they opened it. */
async function askByLink(a: Asking, p: PendingApproval, link: string, elicitationId: string, signal: AbortSignal) {
  const { what, left } = askedAbout(p);
  await a.extra.sendRequest(
    {
      method: 'elicitation/create',
      params: {
        mode: 'url',
        elicitationId,
        url: link,
        message: `Sluice asks a person to approve ${what} (approval ${p.approvalId}, denied at ${p.expiresAt} if nobody decides). Open the link to approve or deny it.`,
      },
    },
    a.sdk.ElicitResultSchema,
    { signal, timeout: left },
  );
}

/** Form mode: approve / deny with a reason, taken as a decision bound to the digest the form showed. */
async function askInForm(a: Asking, p: PendingApproval, signal: AbortSignal) {
  const { what, left } = askedAbout(p);
  const r = await a.extra.sendRequest(
    {
      method: 'elicitation/create',
      params: {
        mode: 'form',
        message: `Sluice asks you to approve ${what} (approval ${p.approvalId}, arguments digest ${p.argsDigest}; denied at ${p.expiresAt} if nobody decides).`,
        requestedSchema: {
          type: 'object',
          properties: {
            decision: { type: 'string', title: 'Decision', enum: ['approve', 'deny'] },
            reason: { type: 'string', title: 'Reason (optional)' },
          },
          required: ['decision'],
        },
      },
    },
    a.sdk.ElicitResultSchema,
    { signal, timeout: left },
  );
  // Declined or dismissed: the ask stays open for the inbox, the CLI and the notifiers.
  const decision = r.action === 'accept' ? r.content?.decision : undefined;
  if (decision !== 'approve' && decision !== 'deny') return;
  const reason = typeof r.content?.reason === 'string' && r.content.reason ? r.content.reason : undefined;
  try {
    await a.opts.sluice.decide({
      approvalId: p.approvalId,
      workflowId: p.workflowId,
      argsDigest: p.argsDigest,
      decision,
      // Recorded as the client's answer, unverified: never a name that reads like a person's.
      by: elicitedBy(a.client),
      mcpClient: a.client,
      ...(reason ? { reason } : {}),
    });
  } catch (err) {
    // Another channel decided first, or this approval needs a verified approver: the batch
    // refused the form's answer and recorded why; the call goes on waiting for its outcome.
    a.opts.log?.(
      `sluice gateway: the answer from ${a.client} to approval ${p.approvalId} was not taken: ${(err as Error).message}\n`,
    );
  }
}

/** The finalized Sluice result as the MCP answer: its content, isError as Sluice decided, the value as structuredContent. */
function toMcpResult(out: BatchOutput, workflowId: string): CallToolResult {
  const r = out.results[0];
  if (!r)
    return {
      content: [{ type: 'text', text: `Sluice recorded no result for this call (batch ${workflowId})` }],
      isError: true,
    };
  const content: CallToolResult['content'] = r.result.content.map((b) =>
    b.type === 'text' ? { type: 'text', text: b.text } : { type: 'image', data: b.data, mimeType: b.mimeType },
  );
  if (r.result.isError && !content.some((b) => b.type === 'text' && b.text))
    content.push({ type: 'text', text: r.result.error?.message ?? 'the call failed' });
  // Context the pipeline queued for the model (additionalContexts) travels with the answer: an
  // MCP client has no other channel for it.
  for (const m of out.messages) if (m.role === 'user') content.push({ type: 'text', text: m.content });
  const value = r.result.value;
  return {
    content,
    ...(r.result.isError ? { isError: true } : {}),
    ...(value !== null && typeof value === 'object' && !Array.isArray(value)
      ? { structuredContent: value as Record<string, unknown> }
      : {}),
    _meta: {
      'sluice/batch': workflowId,
      ...(r.result.error?.code ? { 'sluice/errorCode': r.result.error.code } : {}),
    },
  };
}

/**
 * Serves `gw` to one MCP client on this process's stdio as Sluice session `session`; resolves when
 * the client goes away.
 */
export async function serveGatewayStdio(gw: GatewayOptions, session: string): Promise<void> {
  const server = gatewayServer(gw, () => session);
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    // The SDK's stdio transport does not close when its client goes away. A client that started
    // the gateway through npx stops npx, not the gateway, and the gateway's stdin just ends:
    // without these it (and the upstream servers it started) outlived every session.
    process.stdin.once('end', () => resolve());
    process.stdin.once('close', () => resolve());
  });
  await server.connect(new (mcpSdk().StdioServerTransport)());
  return closed;
}

interface GatewayHttpOptions {
  host: string;
  /** 0 for any free port. */
  port: number;
  /** The bearer token every request must carry. */
  token?: string;
  /** Serve without a token (loopback only): any local process may then call every tool. */
  insecureNoToken?: true;
}

/**
 * Streamable HTTP at /mcp: one MCP session per client, each its own Sluice session
 * (`gateway-<Mcp-Session-Id>`). Resolves once it listens, to its URL and a close().
 *
 * A session outlives the process. What a session needs after a restart is in Temporal (its
 * batches, found by the Sluice session) and in its id, which the client sends with every request:
 * the id says whether the client declared elicitation at initialize (sessionIdFor). So a request
 * whose Mcp-Session-Id this process does not hold, but that has the shape of the ids the gateway
 * gives out, re-opens the session here as the client initialized it, once, whether or not it ran
 * a call before the restart; what this process holds (open sessions, finished batches' outputs)
 * only saves round trips.
 */
export async function startGatewayHttp(
  gw: GatewayOptions,
  o: GatewayHttpOptions,
): Promise<{ url: string; close(): Promise<void> }> {
  if (!isLoopback(o.host) && !o.token)
    throw new Error(
      `--host ${o.host} is not a loopback address: whatever reaches the gateway can call every tool it lists, so serving it there needs a bearer token (--token-env or --token-file), never --no-token`,
    );
  if (!o.token && !o.insecureNoToken)
    throw new Error(
      'the HTTP gateway needs a bearer token (GatewayHttpOptions.token): without one every local process can call every tool; pass insecureNoToken: true only on a machine where every process is trusted',
    );
  const sessions = new HttpSessions(gw, mcpSdk());
  const server = http.createServer((req, res) => void serveRequest(req, res, sessions, o.token));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : o.port;
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  sessions.allowedHosts = isLoopback(o.host)
    ? [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]
    : [`${host}:${port}`];
  return {
    url: `http://${host}:${port}/mcp`,
    async close() {
      await sessions.closeAll();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A JSON-RPC error answer, before any transport took the request. */
function refuse(res: http.ServerResponse, status: number, message: string, code = -32000) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** One HTTP request: checked (path, Origin, token, size, JSON), handed to its session's transport. */
async function serveRequest(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  sessions: HttpSessions,
  token: string | undefined,
) {
  try {
    if ((req.url ?? '').split('?')[0] !== '/mcp') return refuse(res, 404, 'the MCP endpoint is /mcp');
    // MCP clients are programs, not web pages: a request a browser sends for a page (it carries
    // an Origin) is refused, so no site the person visits can call tools through the gateway.
    if (req.headers.origin !== undefined)
      return refuse(res, 403, `requests from web pages (Origin ${req.headers.origin}) are refused`);
    if (token && !bearerMatches(req.headers.authorization, token))
      return refuse(res, 401, 'this gateway needs Authorization: Bearer <token>');
    let body: unknown;
    if (req.method === 'POST') {
      const read = await readJsonBody(req);
      if ('refused' in read) return refuse(res, ...read.refused);
      body = read.body;
    }
    const transport = await sessions.transportFor(req, body, res);
    if (transport) await relay(req, res, transport, body);
  } catch (err) {
    if (!res.headersSent) refuse(res, 500, `the gateway failed: ${(err as Error).message}`, -32603);
    else res.end();
  }
}

/** The request's JSON body, or why it is refused (over MAX_REQUEST_BYTES, not JSON). */
async function readJsonBody(
  req: http.IncomingMessage,
): Promise<{ body: unknown } | { refused: [status: number, message: string, code: number] }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_REQUEST_BYTES)
      return { refused: [413, `the request is over ${MAX_REQUEST_BYTES / 1024 / 1024} MiB`, -32600] };
    chunks.push(chunk as Buffer);
  }
  try {
    return { body: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
  } catch {
    return { refused: [400, 'the request body is not JSON (send a JSON-RPC message)', -32700] };
  }
}

/** The MCP sessions one HTTP gateway process serves: those it opened and those it re-opened. */
class HttpSessions {
  /** Host headers served (set once listening): a page in a browser may post to 127.0.0.1 (DNS rebinding). */
  allowedHosts: string[] = [];
  private readonly open = new Map<string, WebTransport>();
  // Sessions being re-opened: requests that arrive together after a restart share one re-opening.
  private readonly reopening = new Map<string, Promise<WebTransport | undefined>>();
  // Sessions their clients ended (DELETE): not re-opened by this process. A restarted one does not
  // know them, and re-opens one whose client comes back, as it would any id of its shape (a client
  // could as well initialize a new session).
  private readonly ended = new Set<string>();

  constructor(
    private readonly gw: GatewayOptions,
    private readonly sdk: McpServerSdk,
  ) {}

  /**
   * The transport of the request's session: open here, re-opened, or new for an initialize.
   * Undefined when the request was refused (answered on `res`).
   */
  async transportFor(req: http.IncomingMessage, body: unknown, res: http.ServerResponse) {
    const sid = req.headers['mcp-session-id'];
    let transport = typeof sid === 'string' ? this.open.get(sid) : undefined;
    if (!transport && typeof sid === 'string' && this.allowedHosts.includes(req.headers.host ?? '')) {
      let p = this.reopening.get(sid);
      if (!p) {
        const version = req.headers['mcp-protocol-version'];
        p = this.reopen(sid, typeof version === 'string' ? version : undefined).finally(() =>
          this.reopening.delete(sid),
        );
        this.reopening.set(sid, p);
      }
      try {
        transport = await p;
      } catch (err) {
        // Not "unknown session": a client told that starts a new session, and its repeated call
        // would run the tool again. It may retry this request.
        refuse(
          res,
          503,
          `the gateway could not re-open MCP session ${sid} (${(err as Error).message}); retry the request`,
        );
        return undefined;
      }
    }
    if (transport) return transport;
    const initialize = body as { method?: unknown; params?: { capabilities?: unknown } } | undefined;
    if (sid || req.method !== 'POST' || initialize?.method !== 'initialize') {
      const message = sid ? 'Session not found: initialize a new session' : 'Bad request: initialize a session first';
      refuse(res, 404, message, -32001);
      return undefined;
    }
    return this.start(sessionIdFor(initialize.params?.capabilities));
  }

  async closeAll() {
    await Promise.all([...this.open.values()].map((t) => t.close().catch(() => undefined)));
  }

  /** A transport for session `id` (not yet initialized), whose calls run in Sluice session gateway-<id>. */
  private async start(id: string): Promise<WebTransport> {
    const t = new this.sdk.WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      onsessioninitialized: (sid) => void this.open.set(sid, t),
      onsessionclosed: (sid) => {
        this.ended.add(sid);
        if (this.ended.size > MAX_ENDED) this.ended.delete(this.ended.values().next().value!);
      },
      // Event ids a client resumes a broken response stream with (GET + Last-Event-ID), after a
      // restart too: each says which call's batch it belongs to (callEvents).
      eventStore: callEvents(this.gw, id),
      // A page in a browser may post to 127.0.0.1 (DNS rebinding): only our own Host is served.
      enableDnsRebindingProtection: true,
      allowedHosts: this.allowedHosts,
    });
    t.onclose = () => {
      if (t.sessionId && this.open.get(t.sessionId) === t) this.open.delete(t.sessionId);
    };
    await gatewayServer(this.gw, () => `gateway-${id}`).connect(t);
    return t;
  }

  /**
   * Re-opens a session another process of this gateway initialized: the client's initialize is
   * replayed to a new transport from what the session id says it declared, so the server can ask
   * it (elicitation) as before. Undefined for an id not of the gateway's shape or one that ended.
   */
  private async reopen(sid: string, protocolVersion: string | undefined): Promise<WebTransport | undefined> {
    const capabilities = declaredIn(sid);
    if (!capabilities || this.ended.has(sid)) return undefined;
    const t = await this.start(sid);
    const post = async (message: object, headers: Record<string, string> = {}) => {
      const res = await t.handleRequest(
        new Request('http://localhost/mcp', {
          method: 'POST',
          headers: {
            host: this.allowedHosts[0]!,
            accept: 'application/json, text/event-stream',
            'content-type': 'application/json',
            ...headers,
          },
          body: JSON.stringify(message),
        }),
      );
      const text = await res.text();
      if (!res.ok) throw new Error(`re-opening MCP session ${sid} failed: ${res.status} ${text}`);
    };
    const version =
      protocolVersion && this.sdk.SUPPORTED_PROTOCOL_VERSIONS.includes(protocolVersion)
        ? protocolVersion
        : this.sdk.LATEST_PROTOCOL_VERSION;
    await post({
      jsonrpc: '2.0',
      id: 'sluice-reopen',
      method: 'initialize',
      params: {
        protocolVersion: version,
        capabilities,
        clientInfo: { name: 'MCP client, session resumed', version: '0' },
      },
    });
    await post(
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { 'mcp-session-id': sid, 'mcp-protocol-version': version },
    );
    return t;
  }
}

/**
 * The HTTP request a transport is handling, as the event store sees it (the transport calls the
 * store within the request's async context): the JSON-RPC request a POST carries, the stream its
 * events went to, and, for a resumed stream, the id of its last event (the call's answer), after
 * which the response ends.
 */
interface InFlight {
  request?: { id: string | number; method: string; params?: { name?: unknown; arguments?: unknown } };
  stream?: string;
  lastEventId?: string;
  /** What every event id of this request's stream names (the call and its batch step), worked out once. */
  mark?: Omit<EventMark, 'n'>;
}
const inFlight = new AsyncLocalStorage<InFlight>();

/** The JSON-RPC request a POST body carries, when it carries exactly one. */
function requestIn(body: unknown): InFlight['request'] {
  const m = body as { id?: unknown; method?: unknown; params?: unknown } | undefined;
  if (!m || typeof m !== 'object' || Array.isArray(m) || typeof m.method !== 'string') return undefined;
  if (typeof m.id !== 'string' && typeof m.id !== 'number') return undefined;
  return { id: m.id, method: m.method, params: (m.params ?? {}) as { name?: unknown; arguments?: unknown } };
}

// What an event id of the gateway says (EVENT_ID): `s` the MCP session, `r` the JSON-RPC request
// id and `m` its method, `k` the batch step of a tools/call, `n` a nonce (ids are unique in a session).
interface EventMark {
  s: string;
  r?: string | number;
  m?: string;
  k?: number;
  n: string;
}
const EVENT_ID = 'sluice1.';

/**
 * The event store of one HTTP session, with nothing in memory: each event id says which call it
 * belongs to, so any process of the gateway can answer a client that resumes a broken response
 * stream (GET with Last-Event-ID): it attaches to the call's batch, which Temporal holds, and sends
 * its answer, once the batch has one (a call still waiting for a person waits on). What the stream
 * carried before (progress) is not replayed: the answer is what the client waits for.
 *
 * Not a credential: an id is honoured only in the session it names, which the transport has
 * already checked against the request's Mcp-Session-Id, and the batch is looked up in that
 * session's Sluice session, so an id can reach no other session's results, whatever it says. Within
 * its session it only finds a batch the session's own call started (it never starts one), which the
 * client could as well attach to by sending the call again.
 */
function callEvents(gw: GatewayOptions, sessionId: string): EventStore {
  const sdk = mcpSdk();
  const idOf = (mark: Omit<EventMark, 'n'>) =>
    EVENT_ID + Buffer.from(JSON.stringify({ ...mark, n: randomBytes(6).toString('base64url') })).toString('base64url');
  return {
    async storeEvent(streamId: string, _message: JSONRPCMessage) {
      const f = inFlight.getStore();
      // The first stream a POST's events go to is its response stream (the priming event opens it);
      // an event the request's work sends elsewhere (the standalone stream) belongs to no call.
      if (f && f.stream === undefined) f.stream = streamId;
      const call = f?.request && f.stream === streamId ? f.request : undefined;
      if (!f || !call) return idOf({ s: sessionId });
      // The call's step digests its arguments: once per request, not once per progress event.
      f.mark ??= (() => {
        const step =
          call.method === 'tools/call' && typeof call.params?.name === 'string'
            ? gatewayStep(call.id, call.params.name, call.params.arguments)
            : undefined;
        return { s: sessionId, r: call.id, m: call.method, ...(step !== undefined ? { k: step } : {}) };
      })();
      return idOf(f.mark);
    },
    async replayEventsAfter(lastEventId, { send }) {
      const mark = eventMark(lastEventId);
      if (!mark || mark.s !== sessionId)
        throw new Error(
          `Last-Event-ID ${lastEventId.slice(0, 80)} is not an event of MCP session ${sessionId}: resume with an event id this session sent`,
        );
      // An event of no request (the standalone stream): the client listens there again.
      if (mark.r === undefined) return STANDALONE_STREAM;
      const id = mark.r;
      const f = inFlight.getStore();
      const answer = async (): Promise<JSONRPCMessage> => {
        const lost = (why: string): JSONRPCMessage => ({
          jsonrpc: '2.0',
          id,
          error: { code: sdk.ErrorCode.InternalError, message: why },
        });
        if (mark.k === undefined)
          return lost(
            `the gateway stopped before it answered ${mark.m ?? 'the request'} (request ${JSON.stringify(id)}); send the request again`,
          );
        const workflowId = batchWorkflowId(`gateway-${sessionId}`, 0, mark.k);
        const finished = finishedBatches(gw);
        const known = finished.get(workflowId);
        if (known) return { jsonrpc: '2.0', id, result: known };
        try {
          const out = expandBatchOutput(await gw.sluice.temporal.workflow.getHandle(workflowId).result());
          const result = toMcpResult(out, workflowId);
          finished.set(workflowId, result);
          return { jsonrpc: '2.0', id, result };
        } catch (err) {
          if (err instanceof WorkflowNotFoundError)
            return lost(
              `the gateway stopped before it started the batch of tools/call ${JSON.stringify(id)}, so nothing ran; send the call again`,
            );
          return lost(
            `the batch of tools/call ${JSON.stringify(id)} (${workflowId}) ended without an answer: ${(err as Error).message}; send the call again`,
          );
        }
      };
      // Answered in the background: the resumed stream is handed to the client at once (its
      // keep-alives flow), and the answer follows when the batch has one.
      void answer()
        .then(async (message) => {
          // The answer's id names the call too: a client that loses this stream as well resumes again.
          const { n: _, ...call } = mark;
          const eventId = idOf(call);
          if (f) f.lastEventId = eventId;
          await send(eventId, message);
        })
        .catch(() => undefined);
      return `resumed-${JSON.stringify(id)}`;
    },
  };
}

/** The SDK transport's id of a session's standalone (GET) stream. */
const STANDALONE_STREAM = '_GET_stream';

function eventMark(eventId: string): EventMark | undefined {
  if (!eventId.startsWith(EVENT_ID)) return undefined;
  try {
    const m = JSON.parse(Buffer.from(eventId.slice(EVENT_ID.length), 'base64url').toString('utf8')) as EventMark;
    if (typeof m?.s !== 'string') return undefined;
    if (m.r !== undefined && typeof m.r !== 'string' && typeof m.r !== 'number') return undefined;
    if (m.k !== undefined && !Number.isSafeInteger(m.k)) return undefined;
    return m;
  } catch {
    return undefined;
  }
}

/** Hands a node request to a web-standard MCP transport and streams its answer back (JSON or SSE). */
async function relay(req: http.IncomingMessage, res: http.ServerResponse, t: WebTransport, body: unknown) {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers))
    if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  const request = requestIn(body);
  const flight: InFlight = request ? { request } : {};
  const response = await inFlight.run(flight, () =>
    t.handleRequest(
      new Request(new URL(req.url ?? '/mcp', 'http://localhost'), { method: req.method ?? 'GET', headers }),
      body === undefined ? undefined : { parsedBody: body },
    ),
  );
  const out: Record<string, string> = {};
  response.headers.forEach((v, k) => {
    out[k] = v;
  });
  res.writeHead(response.status, out);
  if (!response.body) return void res.end();
  res.flushHeaders();
  const reader = response.body.getReader();
  // The client went away: the transport's stream is cancelled, as it would be by the SDK's own adapter.
  res.on('close', () => void reader.cancel().catch(() => undefined));
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read().catch(() => ({ done: true as const, value: undefined }));
    if (done || res.destroyed) break;
    res.write(value);
    // A resumed stream ends with the call's answer (the transport writes one event a chunk): the
    // client has what it waited for, and the transport's stream is let go.
    if (flight.lastEventId && decoder.decode(value).includes(`id: ${flight.lastEventId}\n`)) {
      void reader.cancel().catch(() => undefined);
      break;
    }
  }
  res.end();
}

// The Mcp-Session-Id the gateway gives out: a random uuid, and, when the client declared MCP
// elicitation at initialize, which modes (`.e` for `elicitation: {}`, `.ef` form, `.eu` url,
// `.efu` both). The client sends it with every request, so a restarted gateway knows how it may
// ask that client without having seen its initialize. (A client could send other flags: they are
// its own declaration, which it could as well have made at initialize.)
const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?:\.e(f?)(u?))?$/;

function sessionIdFor(capabilities: unknown): string {
  const e = (capabilities as { elicitation?: unknown } | undefined)?.elicitation;
  if (!e || typeof e !== 'object') return randomUUID();
  const modes = e as { form?: unknown; url?: unknown };
  return `${randomUUID()}.e${modes.form !== undefined ? 'f' : ''}${modes.url !== undefined ? 'u' : ''}`;
}

/** The client capabilities a session id of the gateway's shape says were declared; undefined for another id. */
function declaredIn(sid: string): { elicitation?: { form?: object; url?: object } } | undefined {
  const m = SESSION_ID.exec(sid);
  if (!m) return undefined;
  if (!sid.includes('.e')) return {};
  return { elicitation: { ...(m[1] ? { form: {} } : {}), ...(m[2] ? { url: {} } : {}) } };
}

function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer (.+)$/.exec(header ?? '');
  if (!m) return false;
  const a = Buffer.from(m[1]);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}
