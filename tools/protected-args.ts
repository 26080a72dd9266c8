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
import type { Guard, Named, ToolDefinition } from '../define/config';
import { compileToolSchema } from '../define/tool-schema';
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
  /^(path|paths|file|files|filename|filenames|file_?path|file_?paths|dir|dirs|dir_?path|directory|directories|folder|source|destination|src|dest|target_?path|old_?path|new_?path|cwd|workdir|working_?dir)$/i;
// `profile` and `dirty` are not paths: a suffix counts after `_`, `-` or a lower-case letter
// followed by its capital (`sourcePath`, `outputDir`).
const PATH_SUFFIX = /[_-](path|paths|file|files|filename|dir|directory|folder)$/i;
const CAMEL_PATH_SUFFIX = /[a-z0-9](Path|Paths|File|Files|Filename|FileName|Dir|Directory|Folder)$/;
const PATH_FORMATS = new Set(['path', 'file-path', 'filepath', 'directory', 'directory-path', 'dir-path']);
const BUILT_IN = ['read', 'write', 'edit', 'glob', 'grep'];

/**
 * Property names anywhere in a JSON schema whose schema says they hold a path. The walk keeps its
 * own stack: a schema is the tool's (an MCP server's) to write, and one nested thousands of levels
 * deep must not overflow the worker's.
 */
function formatPathNames(schema: unknown): Set<string> {
  const out = new Set<string>();
  const todo: unknown[] = [schema];
  for (let node = todo.pop(); todo.length > 0 || node !== undefined; node = todo.pop()) {
    if (!node || typeof node !== 'object') continue;
    const s = node as Record<string, unknown>;
    const props = s.properties;
    if (props && typeof props === 'object')
      for (const [name, sub] of Object.entries(props as Record<string, unknown>)) if (namesPath(sub)) out.add(name);
    for (const v of Object.values(s)) if (v && typeof v === 'object') todo.push(v);
  }
  return out;
}

/** Whether a property's schema says it holds a path: its format, or its items' format. */
function namesPath(sub: unknown): boolean {
  const f = (sub as { format?: unknown } | undefined)?.format;
  const itemF = (sub as { items?: { format?: unknown } } | undefined)?.items?.format;
  return (
    (typeof f === 'string' && (PATH_FORMATS.has(f) || f === 'uri')) ||
    (typeof itemF === 'string' && PATH_FORMATS.has(itemF))
  );
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

/** What a tool tells the check about its arguments: its name, its JSON Schema, its declared path arguments. */
interface PathArgsTool {
  name: string;
  /** The input's JSON Schema, searched for `format`s that name paths. */
  jsonSchema?: unknown;
  pathArgs?: readonly string[];
}

interface PathArgsCheckOptions {
  /** Where relative paths start. */
  root: string;
  protect?: ProtectOptions | false;
}

/**
 * The protected-path check of one tool's calls: why these arguments name a protected path, or
 * undefined. It fails closed: an argument that names a path and cannot be read as one (a `file:`
 * URL that is not a file URL) is refused, and a check that throws refuses the call.
 */
export function pathArgsCheck(opts: PathArgsCheckOptions, tool: PathArgsTool): (args: unknown) => string | undefined {
  const realRoot = realish(path.resolve(opts.root));
  const declared = new Set([...formatPathNames(tool.jsonSchema), ...(tool.pathArgs ?? [])]);
  return (args) => {
    try {
      const prot = protection(realRoot, opts.protect);
      for (const { arg, value } of pathsIn(args, declared)) {
        let p = value;
        if (p.startsWith('file:')) {
          try {
            p = fileURLToPath(p);
          } catch {
            return `${tool.name}: the argument ${arg} is ${JSON.stringify(value)}, a file: URL Sluice cannot read as a path, so it cannot tell whether it names a protected path; give a plain path`;
          }
        } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(p)) continue; // another URL: not a file here
        if (p === '~' || p.startsWith('~/')) p = path.join(os.homedir(), p.slice(1));
        const abs = path.resolve(realRoot, p);
        // By given name (a protected name anywhere in it) and by where it really is (a link).
        const why = prot.why(abs) ?? prot.why(realish(abs));
        if (why)
          return `${tool.name}: the argument ${arg} names ${value}, which ${why}. Protected paths hold for every tool, MCP and your own included; change the path, or configure protection (protectedPathArgs({ protect }), mcpTools({ protect }))`;
      }
      return undefined;
    } catch (err) {
      return `${tool.name}: Sluice could not check its arguments against the protected paths (${(err as Error).message}), so the call is refused`;
    }
  };
}

/** Whether an argument's name says it holds a path: `path`, `file_path`, `sourcePath`, `output_dir`, ... */
function isPathName(name: string): boolean {
  return PATH_NAME.test(name) || PATH_SUFFIX.test(name) || CAMEL_PATH_SUFFIX.test(name);
}

/** Every string the call's arguments give as a path, with the argument it came from. */
function pathsIn(args: unknown, declared: Set<string>, key = '', out: { arg: string; value: string }[] = []) {
  if (Array.isArray(args)) {
    for (const v of args) pathsIn(v, declared, key, out);
  } else if (args && typeof args === 'object') {
    for (const [k, v] of Object.entries(args as JsonObject)) pathsIn(v, declared, k, out);
  } else if (typeof args === 'string' && key && (isPathName(key) || declared.has(key)) && args.trim()) {
    out.push({ arg: key, value: args });
  }
  return out;
}

export function protectedPathArgs(opts: ProtectedPathArgsOptions): Named<Guard> {
  const skip = new Set(opts.skip ?? BUILT_IN);
  const checks = new Map<string, (args: unknown) => string | undefined>();
  for (const t of opts.tools) {
    if (skip.has(t.name)) continue;
    let jsonSchema: unknown;
    try {
      jsonSchema = compileToolSchema(t.name, t.input, t.inputSchema).jsonSchema();
    } catch {
      // a schema the worker cannot compile fails at start on its own; names still apply
    }
    checks.set(
      t.name,
      pathArgsCheck(opts, {
        name: t.name,
        jsonSchema,
        pathArgs: [...(t.pathArgs ?? []), ...(opts.pathArgs?.[t.name] ?? [])],
      }),
    );
  }
  const guard: Guard = (ctx) => {
    if (!ctx.tool || skip.has(ctx.tool.name)) return undefined;
    // A tool the guard was not given (added later): names alone still apply.
    const check = checks.get(ctx.tool.name) ?? pathArgsCheck(opts, { name: ctx.tool.name });
    return check(ctx.call.args);
  };
  return { name: 'protected paths in tool arguments', handler: guard };
}
