// Protected paths for every tool, not only the built-in file tools. An MCP filesystem server's
// `write_file {path}` or your own tool's `{file_path}` could otherwise rewrite
// `.claude/settings.local.json` or a hook script — code that runs with the worker's rights at the
// next hook run — or read other sessions' logs in Sluice's state folder. This guard finds the
// arguments that name paths and refuses the call when one names a protected path, by the same
// rule the built-in tools apply (tools/fs/protect.ts), by given name and by real location.
//
//   guards: [protectedPathArgs({ root, tools })]
//
// An argument names a path when its schema says so (`format`: path, file-path, directory-path,
// uri with a file: URL), when its name does (`path`, `file_path`, `filePath`, `paths`, `file`,
// `filename`, `dir`, `directory`, `source`, `destination`, ...), or when the tool declares it
// (`pathArgs` on the tool, or the guard's `pathArgs` option).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JsonObject } from '../pipeline/types';
import type { Guard, Named, ToolDefinition } from '../worker/config';
import { compileToolSchema } from '../worker/tool-schema';
import { type ProtectOptions, protection } from './fs/protect';

export interface ProtectedPathArgsOptions {
  /** The workspace the built-in tools are rooted at: relative paths start here. */
  root: string;
  /** The worker's tools, for their schemas and declarations. */
  tools: readonly ToolDefinition[];
  /** The same protection the built-in tools were given (`fsTools({ protect })`). */
  protect?: ProtectOptions | false;
  /** More argument names that hold paths, by tool name. */
  pathArgs?: Record<string, string[]>;
  /** Tools not to check; default the built-in file tools, which check their paths themselves. */
  skip?: string[];
}

const PATH_NAME =
  /^(path|paths|file|files|filename|filenames|file_?path|file_?paths|dir|dirs|dir_?path|directory|directories|folder|source|destination|src|dest|target_?path|old_?path|new_?path)$/i;
const PATH_FORMATS = new Set(['path', 'file-path', 'filepath', 'directory', 'directory-path', 'dir-path']);
const BUILT_IN = ['read', 'write', 'edit', 'glob', 'grep'];

/** Property names anywhere in a JSON schema whose schema says they hold a path. */
function formatPathNames(schema: unknown, out = new Set<string>()): Set<string> {
  if (!schema || typeof schema !== 'object') return out;
  const s = schema as Record<string, unknown>;
  const props = s.properties;
  if (props && typeof props === 'object') {
    for (const [name, sub] of Object.entries(props as Record<string, unknown>)) {
      const f = (sub as { format?: unknown; items?: { format?: unknown } } | undefined)?.format;
      const itemF = (sub as { items?: { format?: unknown } } | undefined)?.items?.format;
      if (
        (typeof f === 'string' && (PATH_FORMATS.has(f) || f === 'uri')) ||
        (typeof itemF === 'string' && PATH_FORMATS.has(itemF))
      )
        out.add(name);
    }
  }
  for (const v of Object.values(s)) if (v && typeof v === 'object') formatPathNames(v, out);
  return out;
}

/** The real location a path would have: the deepest existing ancestor resolved, the rest joined. */
function realish(abs: string): string {
  const missing: string[] = [];
  let cur = abs;
  for (;;) {
    try {
      return path.join(fs.realpathSync(cur), ...missing);
    } catch {
      const parent = path.dirname(cur);
      if (parent === cur) return abs;
      missing.unshift(path.basename(cur));
      cur = parent;
    }
  }
}

export function protectedPathArgs(opts: ProtectedPathArgsOptions): Named<Guard> {
  const realRoot = realish(path.resolve(opts.root));
  const skip = new Set(opts.skip ?? BUILT_IN);
  const named = new Map<string, Set<string>>();
  for (const t of opts.tools) {
    if (skip.has(t.name)) continue;
    let fromSchema = new Set<string>();
    try {
      fromSchema = formatPathNames(compileToolSchema(t.name, t.input, t.inputSchema).jsonSchema());
    } catch {
      // a schema the worker cannot compile fails at start on its own; names still apply
    }
    named.set(t.name, new Set([...fromSchema, ...(t.pathArgs ?? []), ...(opts.pathArgs?.[t.name] ?? [])]));
  }

  /** Every string the call's arguments give as a path, with the argument it came from. */
  function pathsIn(args: unknown, declared: Set<string>, key = '', out: { arg: string; value: string }[] = []) {
    if (Array.isArray(args)) {
      for (const v of args) pathsIn(v, declared, key, out);
    } else if (args && typeof args === 'object') {
      for (const [k, v] of Object.entries(args as JsonObject)) pathsIn(v, declared, k, out);
    } else if (typeof args === 'string' && key && (PATH_NAME.test(key) || declared.has(key)) && args.trim()) {
      out.push({ arg: key, value: args });
    }
    return out;
  }

  const guard: Guard = (ctx) => {
    if (!ctx.tool || skip.has(ctx.tool.name)) return undefined;
    const prot = protection(realRoot, opts.protect);
    for (const { arg, value } of pathsIn(ctx.call.args, named.get(ctx.tool.name) ?? new Set())) {
      let p = value;
      if (p.startsWith('file:')) {
        try {
          p = fileURLToPath(p);
        } catch {
          continue; // not a file URL: not a path
        }
      } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(p)) continue; // another URL
      if (p === '~' || p.startsWith('~/')) p = path.join(os.homedir(), p.slice(1));
      const abs = path.resolve(realRoot, p);
      // By given name (a protected name anywhere in it) and by where it really is (a link).
      const why = prot.why(abs) ?? prot.why(realish(abs));
      if (why)
        return `${ctx.tool.name}: the argument ${arg} names ${value}, which ${why}. Protected paths hold for every tool, MCP and your own included; change the path, or configure protection (protectedPathArgs({ protect }))`;
    }
    return undefined;
  };
  return { name: 'protected paths in tool arguments', handler: guard };
}
