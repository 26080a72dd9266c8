// One connection to one MCP server per worker process: opened on first use (or at start, to list
// the tools), reused by every call, and opened again when it has dropped — a stdio server that
// died is started again, an HTTP server that lost our session gets a new one.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { requireOptional } from '../../support/optional';

// The MCP SDK is an optional peer dependency: loaded when the first connection opens.
type McpSdk = typeof import('@modelcontextprotocol/sdk/client/index.js') &
  typeof import('@modelcontextprotocol/sdk/client/stdio.js') &
  typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js') &
  typeof import('@modelcontextprotocol/sdk/types.js');
let loaded: McpSdk | undefined;
function mcpSdk(): McpSdk {
  if (loaded) return loaded;
  loaded = requireOptional<McpSdk>('@modelcontextprotocol/sdk', 'MCP tools (mcpTools)', () => ({
    ...require('@modelcontextprotocol/sdk/client/index.js'),
    ...require('@modelcontextprotocol/sdk/client/stdio.js'),
    ...require('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    ...require('@modelcontextprotocol/sdk/types.js'),
  }));
  return loaded;
}

export interface StdioServer {
  /** The program to start, e.g. `node` or `npx`. */
  command: string;
  args?: string[];
  /**
   * Variables for the server, on top of the MCP SDK's minimal default (HOME, LOGNAME, PATH, SHELL,
   * TERM, USER). The worker's own environment (codec keys, API keys) is never passed.
   */
  env?: Record<string, string>;
  cwd?: string;
}

export interface HttpServer {
  /** A Streamable HTTP endpoint, e.g. `http://127.0.0.1:3001/mcp`. */
  url: string;
  /** Sent with every request (e.g. an Authorization header). */
  headers?: Record<string, string>;
}

export type ServerSpec = StdioServer | HttpServer;

interface CallOptions {
  signal?: AbortSignal;
  timeoutMs: number;
  onProgress?: () => void;
}

const CLIENT_INFO = { name: 'sluice', version: '1' };
const STREAM_BROKEN =
  /SSE stream disconnected|Failed to reconnect SSE stream|terminated|ECONNRESET|socket hang up|other side closed/i;

export class McpConnection {
  private client?: Client;
  private transport?: Transport;
  private opening?: Promise<Client>;
  /** How many times a connection was opened; 1 after the first. */
  connects = 0;

  constructor(
    readonly server: string,
    private readonly spec: ServerSpec,
  ) {}

  /** The stdio server's process id while connected (tests kill it to prove reconnection). */
  get pid(): number | null {
    return loaded && this.transport instanceof loaded.StdioClientTransport ? this.transport.pid : null;
  }

  /** @internal (its type is the MCP SDK's, an optional peer that declarations must not name) */
  async listTools(): Promise<Tool[]> {
    const client = await this.open();
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  /**
   * Calls a tool. When the request provably never reached the server (no connection, a refused
   * connection, or a server that no longer knows our session), it reconnects and sends it once
   * more: nothing ran yet. A connection lost while the call was in flight is thrown: the call may
   * or may not have run, and only the tool's retry policy may decide to run it again.
   *
   * @internal (its type is the MCP SDK's, an optional peer that declarations must not name)
   */
  async callTool(name: string, args: Record<string, unknown>, opts: CallOptions): Promise<CallToolResult> {
    for (let attempt = 0; ; attempt++) {
      const client = await this.open();
      try {
        return (await client.callTool({ name, arguments: args }, undefined, {
          signal: opts.signal,
          timeout: opts.timeoutMs,
          resetTimeoutOnProgress: true,
          ...(opts.onProgress ? { onprogress: () => opts.onProgress?.() } : {}),
        })) as CallToolResult;
      } catch (err) {
        if (opts.signal?.aborted) throw err;
        if (isProtocolAnswer(err)) throw err;
        await this.drop(client);
        if (attempt === 0 && neverDelivered(err)) continue;
        throw new Error(
          `the connection to MCP server ${this.server} was lost during the call (${messageOf(err)}); the tool may or may not have run`,
        );
      }
    }
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.transport = undefined;
    await client?.close().catch(() => undefined);
  }

  private open(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    this.opening ??= this.connect().finally(() => {
      this.opening = undefined;
    });
    return this.opening;
  }

  private async connect(): Promise<Client> {
    const { Client, StdioClientTransport, StreamableHTTPClientTransport } = mcpSdk();
    const client = new Client(CLIENT_INFO);
    const transport =
      'url' in this.spec
        ? new StreamableHTTPClientTransport(new URL(this.spec.url), {
            requestInit: this.spec.headers ? { headers: this.spec.headers } : undefined,
          })
        : new StdioClientTransport({
            command: this.spec.command,
            args: this.spec.args ?? [],
            ...(this.spec.env ? { env: { ...defaultEnv(), ...this.spec.env } } : {}),
            ...(this.spec.cwd ? { cwd: this.spec.cwd } : {}),
            stderr: 'ignore',
          });
    // A Streamable HTTP response stream that breaks (the server died mid-call) is only reported
    // as an error, and the request would wait for its timeout: close the client instead, which
    // fails every request in flight at once as a lost connection.
    client.onerror = (err) => {
      if (this.client === client && STREAM_BROKEN.test(messageOf(err))) void this.drop(client);
    };
    client.onclose = () => {
      if (this.client === client) {
        this.client = undefined;
        this.transport = undefined;
      }
    };
    try {
      await client.connect(transport);
    } catch (err) {
      await client.close().catch(() => undefined);
      throw new Error(`cannot connect to MCP server ${this.server} (${describe(this.spec)}): ${messageOf(err)}`);
    }
    this.client = client;
    this.transport = transport;
    this.connects++;
    return client;
  }

  private async drop(client: Client): Promise<void> {
    if (this.client !== client) return;
    this.client = undefined;
    this.transport = undefined;
    await client.close().catch(() => undefined);
  }
}

/** The server answered the request (a JSON-RPC error such as an unknown tool or bad arguments). */
function isProtocolAnswer(err: unknown): boolean {
  const { McpError, ErrorCode } = mcpSdk();
  return err instanceof McpError && err.code !== ErrorCode.ConnectionClosed && err.code !== ErrorCode.RequestTimeout;
}

/** The request cannot have reached a live session: refused, or the session is unknown there. */
function neverDelivered(err: unknown): boolean {
  if (err instanceof mcpSdk().StreamableHTTPError) return err.code === 404;
  const text = `${messageOf(err)} ${messageOf((err as { cause?: unknown })?.cause)}`;
  return /ECONNREFUSED|Not connected|Session not found/i.test(text);
}

function defaultEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER']) if (process.env[k]) env[k] = process.env[k]!;
  return env;
}

function describe(spec: ServerSpec): string {
  return 'url' in spec ? spec.url : [spec.command, ...(spec.args ?? [])].join(' ');
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : err === undefined ? '' : String(err);
}
