// MCP servers as tool sources: `await mcpTools({ server, command | url })` lists a server's tools
// and turns each into a Sluice tool named `mcp__<server>__<tool>`, with the server's JSON Schema
// as its input, defaults from the tool's annotations, and calls over one connection per worker.
//
//   export default async () => defineConfig({
//     tools: [...fsTools({ root }), ...(await mcpTools({ server: 'fs', command: 'npx', args: [...] }))],
//   });
//
// Protected paths. Every tool's arguments that name paths are held to the protected paths the
// built-in file tools keep (tools/fs/protect.ts: hook settings and scripts, Sluice's state
// folder): an upstream filesystem server's `write_file {path: ".claude/settings.local.json"}` is
// refused before it reaches the server, whatever its annotations say and whatever approval a
// person gave (protected-args.ts says how a path-naming argument is recognised). `protect: false`
// keeps only the state folder protected.
import type { Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { ToolApproval, JsonObject, RetryPolicyInput } from '../../pipeline/types';
import { defineTool, type ToolDefinition } from '../../define/config';
import { McpConnection, type HttpServer, type ServerSpec, type StdioServer } from './connection';
import { toolError, ToolErrorCodes } from '../errors';
import type { ProtectOptions } from '../fs/protect';
import { pathArgsCheck } from '../protected-args';
import { toSluiceResult } from './results';

export { MCP_TOOL_ERROR } from './results';
export type { HttpServer, StdioServer } from './connection';

/** Per-tool settings that win over what the server's annotations suggest. */
export interface McpToolOverride {
  approval?: ToolApproval;
  concurrencySafe?: boolean;
  retry?: RetryPolicyInput;
  /**
   * The call must not run twice (docs/reliability.md: a lost attempt ends OUTCOME_UNKNOWN and an
   * operator reconciles it). Default: true for tools the server does not mark read-only or
   * idempotent, unless `retry` is overridden.
   */
  atMostOnce?: boolean;
  timeoutMs?: number;
  description?: string;
  /** false leaves the tool out. */
  enabled?: boolean;
  /**
   * Arguments that name files or folders, beside those recognised by name and schema `format`:
   * held to the protected paths like them.
   */
  pathArgs?: string[];
}

/** The protected paths this server's tools are held to (the built-in tools' by default). */
type McpProtectOptions = ProtectOptions & {
  /**
   * Where the server resolves relative paths: the protected folders of this root (its hook
   * settings' scripts) are refused. Default: the stdio server's `cwd`, else the worker's.
   */
  root?: string;
};

export type McpSourceOptions = (StdioServer | HttpServer) & {
  /** Names the server in tool names (`mcp__<server>__<tool>`) and messages: letters, digits, `_`, `-`. */
  server: string;
  /**
   * Overrides by the server's own tool name, or by the name it becomes in Sluice (the part after
   * `mcp__<server>__`, or the whole name): a look-alike the server lists (`delete file` for
   * `delete_file`) gets the override of the name it takes. When two listed tools take the same
   * Sluice name and an override names it, the source refuses to start.
   */
  tools?: Record<string, McpToolOverride>;
  /** Body timeout per call unless a tool overrides it. Default 2 minutes. */
  timeoutMs?: number;
  /**
   * The protected paths arguments naming paths are held to. Default: the built-in tools'
   * (`.claude`, `.codex`, `.gemini`, `.opencode`, `opencode.json`, `.sluice` anywhere in a path, the
   * scripts the root's hook settings run, the worker's state folder). `false` keeps only the
   * worker's state folder.
   */
  protect?: McpProtectOptions | false;
};

export interface McpSource {
  readonly server: string;
  readonly connection: McpConnection;
  /** The server's tools as Sluice tools (lists them on first use). */
  tools(): Promise<ToolDefinition[]>;
  /** Why a listed tool was left out (e.g. an input schema Sluice cannot use). */
  readonly warnings: readonly string[];
  close(): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 120_000;
/** One connection per server per worker process, whoever asks for it. */
const connections = new Map<string, McpConnection>();

export function mcpSource(opts: McpSourceOptions): McpSource {
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(opts.server ?? '') || opts.server.includes('__'))
    throw new Error(
      `mcpTools: server ${JSON.stringify(opts.server)} must be 1-32 letters, digits, _ or - (no "__"): it becomes part of every tool name`,
    );
  const spec = specOf(opts);
  const key = `${opts.server}\0${JSON.stringify(spec)}`;
  const connection = connections.get(key) ?? new McpConnection(opts.server, spec);
  connections.set(key, connection);
  const warnings: string[] = [];
  let listed: Promise<ToolDefinition[]> | undefined;
  return {
    server: opts.server,
    connection,
    warnings,
    tools() {
      listed ??= connection.listTools().then((tools) => build(opts, connection, tools, warnings));
      return listed;
    },
    async close() {
      connections.delete(key);
      await connection.close();
    },
  };
}

/** Connects (once per worker), lists the server's tools and returns them as Sluice tools. */
export async function mcpTools(opts: McpSourceOptions): Promise<ToolDefinition[]> {
  const source = mcpSource(opts);
  const tools = await source.tools();
  for (const w of source.warnings) console.warn(`mcpTools(${opts.server}): ${w}`);
  return tools;
}

function specOf(opts: McpSourceOptions): ServerSpec {
  if ('url' in opts && typeof opts.url === 'string') {
    try {
      new URL(opts.url);
    } catch {
      throw new Error(`mcpTools(${opts.server}): url ${JSON.stringify(opts.url)} is not a URL`);
    }
    return { url: opts.url, ...(opts.headers ? { headers: opts.headers } : {}) };
  }
  if ('command' in opts && typeof opts.command === 'string' && opts.command)
    return {
      command: opts.command,
      args: opts.args ?? [],
      ...(opts.env ? { env: opts.env } : {}),
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
    };
  throw new Error(
    `mcpTools(${opts.server}): give either command (+ args) for a stdio server or url for Streamable HTTP`,
  );
}

function build(opts: McpSourceOptions, connection: McpConnection, tools: Tool[], warnings: string[]): ToolDefinition[] {
  const out: ToolDefinition[] = [];
  const names = new Map<string, string>();
  // Overrides keyed by the Sluice name they reach: keyed only by the server's own name, an
  // override could be dodged by a server that lists a look-alike mapping to the same name first.
  const overrides = new Map<string, { key: string; o: McpToolOverride }[]>();
  for (const [key, o] of Object.entries(opts.tools ?? {})) {
    const reaches = key.startsWith('mcp__') ? key : sluiceName(opts.server, key);
    overrides.set(reaches, [...(overrides.get(reaches) ?? []), { key, o }]);
  }
  const listedAs = new Map<string, string[]>();
  for (const t of tools) {
    const n = sluiceName(opts.server, t.name);
    listedAs.set(n, [...(listedAs.get(n) ?? []), t.name]);
  }
  for (const [n, raw] of listedAs)
    if (raw.length > 1 && overrides.has(n))
      throw new Error(
        `mcpTools(${opts.server}): the server lists ${raw.map((r) => JSON.stringify(r)).join(' and ')}, which all become ${n}, and the override ${JSON.stringify(overrides.get(n)![0].key)} is for that name: which tool it should hold is ambiguous, so the source is not started. Have the server list one tool under that name, or leave the server out.`,
      );
  for (const t of tools) {
    const keyed = overrides.get(sluiceName(opts.server, t.name)) ?? [];
    const o = keyed.find((x) => x.key === t.name)?.o ?? keyed[0]?.o ?? {};
    if (o.enabled === false) continue;
    const name = sluiceName(opts.server, t.name);
    if (names.has(name)) {
      warnings.push(`${t.name} was left out: its name becomes ${name}, like ${names.get(name)}`);
      continue;
    }
    names.set(name, t.name);
    const d = defaultsOf(t.annotations);
    const timeoutMs = o.timeoutMs ?? opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const concurrent = o.concurrencySafe ?? d.concurrencySafe;
    try {
      // Inside the guard: the schema is the server's to write, and what it breaks leaves this tool out, not the worker.
      const protectedPath = pathArgsCheck(
        {
          root:
            (opts.protect ? opts.protect.root : undefined) ?? ('cwd' in opts && opts.cwd ? opts.cwd : process.cwd()),
          protect: opts.protect,
        },
        { name, jsonSchema: t.inputSchema, ...(o.pathArgs ? { pathArgs: o.pathArgs } : {}) },
      );
      out.push(
        defineTool<Record<string, unknown>>({
          name,
          description: o.description ?? descriptionOf(opts.server, t),
          input: (t.inputSchema ?? { type: 'object' }) as JsonObject,
          approval: o.approval ?? d.approval,
          retry: o.retry ?? d.retry,
          atMostOnce: o.atMostOnce ?? (o.retry === undefined && !d.idempotent),
          timeoutMs,
          isConcurrencySafe: () => concurrent,
          ...(o.pathArgs ? { pathArgs: o.pathArgs } : {}),
          async execute(args, ctx) {
            // Checked here, in the body, so no override, hook or approval lets it past: the last
            // step before the call leaves for the server.
            const refused = protectedPath(args);
            if (refused) return toolError(refused, ToolErrorCodes.FS_PROTECTED_PATH);
            const result = await connection.callTool(t.name, args, {
              signal: ctx.signal,
              timeoutMs,
              onProgress: () => ctx.heartbeat(),
            });
            return toSluiceResult(opts.server, t.name, result);
          },
        }),
      );
    } catch (err) {
      names.delete(name);
      warnings.push(`${t.name} was left out: ${(err as Error).message}`);
    }
  }
  return out;
}

/**
 * What the annotations suggest. They are hints from the server, and the MCP spec's defaults are
 * the cautious ones: a tool that does not say it is read-only may write, and one that does not
 * say it is non-destructive may destroy.
 */
function defaultsOf(a: ToolAnnotations | undefined): {
  approval: ToolApproval;
  concurrencySafe: boolean;
  retry: RetryPolicyInput;
  idempotent: boolean;
} {
  const readOnly = a?.readOnlyHint === true;
  const destructive = !readOnly && a?.destructiveHint !== false;
  const idempotent = readOnly || a?.idempotentHint === true;
  return {
    approval: destructive ? 'ask' : 'auto',
    concurrencySafe: readOnly,
    retry: idempotent ? { maximumAttempts: 3 } : { maximumAttempts: 1 },
    idempotent,
  };
}

/** `mcp__<server>__<tool>`, with characters tool names cannot hold turned into `_`, at most 64. */
function sluiceName(server: string, tool: string): string {
  return `mcp__${server}__${tool.replace(/[^A-Za-z0-9_.-]/g, '_')}`.slice(0, 64);
}

function descriptionOf(server: string, t: Tool): string {
  const text = t.description?.trim() || t.annotations?.title || t.title || t.name;
  return `${text} (MCP server ${server}, tool ${t.name})`;
}
