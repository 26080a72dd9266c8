// Claude Code's permission rules — one rule and how it matches one call. Pure: reading the
// settings files and turning matches into decisions is permissions.ts's business.
//
//   Bash                    every Bash call          Bash(npm run build)   that exact command
//   Bash(npm test:*)        `npm test` + anything    Bash(git * main)      `*` is any text
//   Read(./.env), Edit(src/**), Read(~/x), Read(//abs)   gitignore patterns (see resolvePathRule)
//   WebFetch(domain:example.com)                     mcp__server, mcp__server__*, mcp__server__tool
import * as os from 'node:os';
import * as path from 'node:path';
import ignore from 'ignore';
import type { JsonObject } from '../pipeline/types';

export type RuleKind = 'allow' | 'ask' | 'deny';

export interface PermissionRule {
  kind: RuleKind;
  /** As written in the file. */
  text: string;
  /** The settings file label it came from. */
  file: string;
  tool: string;
  specifier?: string;
  matches(call: RuleCall): boolean;
}

export interface RuleCall {
  /** The Claude Code name of the tool (see tool-names.ts) and the tool's own Sluice name. */
  claudeName: string;
  sluiceName: string;
  args: Readonly<JsonObject>;
  /** Paths in the call, resolved (absolute): the given one and, when it exists, its real path. */
  paths: string[];
}

/** Rules that name these tools apply to every file-editing built-in, as in Claude Code. */
const EDIT_TOOLS = new Set(['Edit', 'Write', 'MultiEdit', 'NotebookEdit']);
/** Read rules also apply, best effort, to the built-ins that read files. */
const READ_TOOLS = new Set(['Read', 'Glob', 'Grep', 'LS']);

/**
 * Parses one rule; throws with the reason when it cannot be read. `projectRoot` is where
 * `/path` rules start (the folder holding `.claude/`), `cwd` where `path` rules start.
 */
export function parseRule(
  text: string,
  kind: RuleKind,
  file: string,
  where: { projectRoot: string; cwd: string; home?: string },
): PermissionRule {
  const m = /^([A-Za-z0-9_*.-]+)(?:\((.*)\))?$/s.exec(text.trim());
  if (!m)
    throw new Error(`permission rule ${JSON.stringify(text)} in ${file} is not of the form Tool or Tool(specifier)`);
  const tool = m[1];
  const spec = m[2] === undefined || m[2] === '' || m[2] === '*' ? undefined : m[2];
  const base = { kind, text, file, tool, ...(spec !== undefined ? { specifier: spec } : {}) };

  if (tool.startsWith('mcp__')) {
    if (spec !== undefined) throw new Error(`${file}: MCP rules take no specifier: ${JSON.stringify(text)}`);
    return { ...base, matches: (c) => mcpMatches(tool, c.claudeName) };
  }
  const named = (c: RuleCall) =>
    c.claudeName === tool ||
    c.sluiceName === tool ||
    (tool === 'Edit' && EDIT_TOOLS.has(c.claudeName)) ||
    (tool === 'Read' && READ_TOOLS.has(c.claudeName));
  if (spec === undefined) return { ...base, matches: named };

  if (tool === 'Bash') {
    const match = bashMatcher(spec);
    return { ...base, matches: (c) => c.claudeName === 'Bash' && match(String(c.args.command ?? ''), kind) };
  }
  if (tool === 'Read' || tool === 'Edit' || tool === 'Write' || tool === 'MultiEdit' || tool === 'NotebookEdit') {
    const test = pathMatcher(spec, where);
    const applies = (c: RuleCall) =>
      tool === 'Read'
        ? READ_TOOLS.has(c.claudeName)
        : tool === 'Edit'
          ? EDIT_TOOLS.has(c.claudeName)
          : c.claudeName === tool;
    // deny and ask: any spelling of the path matches; allow: every spelling must.
    return {
      ...base,
      matches: (c) => applies(c) && c.paths.length > 0 && (kind === 'allow' ? c.paths.every(test) : c.paths.some(test)),
    };
  }
  if (tool === 'WebFetch') {
    const d = /^domain:(.+)$/.exec(spec);
    if (!d) throw new Error(`${file}: WebFetch rules take domain:<host>, not ${JSON.stringify(text)}`);
    const domain = d[1].toLowerCase();
    return {
      ...base,
      matches: (c) => c.claudeName === 'WebFetch' && hostMatches(domain, String(c.args.url ?? '')),
    };
  }
  throw new Error(
    `${file}: Sluice does not know how to match the specifier of ${JSON.stringify(text)}; use the bare tool name, or a Bash, Read, Edit, Write, WebFetch or mcp__ rule`,
  );
}

function mcpMatches(rule: string, name: string): boolean {
  if (!name.startsWith('mcp__')) return false;
  if (rule.endsWith('__*')) return name.startsWith(rule.slice(0, -1));
  if (rule.split('__').length === 2) return name.startsWith(`${rule}__`);
  return name === rule;
}

function hostMatches(domain: string, url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return false;
  }
  if (domain.startsWith('*.')) return host.endsWith(domain.slice(1));
  return host === domain;
}

/**
 * A Bash specifier: `prefix:*` (legacy; the prefix alone or followed by a space and anything),
 * a pattern with `*` (any text, spaces included; a lone trailing ` *` may also match nothing), or
 * an exact command. A compound command (`a && b`, `a; b`, `a | b`, ...) is split: an allow rule
 * must match every part, and a command with `$(...)`, backquotes or `<(...)` is never allowed by
 * a rule; a deny or ask rule matches when it matches the whole command or any part.
 */
export function bashMatcher(spec: string): (command: string, kind: RuleKind) => boolean {
  let one: (cmd: string) => boolean;
  const legacy = /^(.*):\*$/s.exec(spec);
  if (legacy) {
    const prefix = legacy[1];
    one = (cmd) => cmd === prefix || cmd.startsWith(`${prefix} `);
  } else if (spec.includes('*')) {
    const stars = spec.split('*').length - 1;
    const parts = spec.split('*').map(escapeRegex);
    let source = parts.join('.*');
    if (stars === 1 && spec.endsWith(' *')) source = `${parts[0].slice(0, -1)}(?: .*)?`;
    const re = new RegExp(`^${source}$`, 's');
    one = (cmd) => re.test(cmd);
  } else {
    one = (cmd) => cmd === spec;
  }
  return (command, kind) => {
    const whole = command.trim();
    const parts = splitCompound(whole);
    if (kind === 'allow') return !/\$\(|`|<\(|>\(/.test(whole) && parts.length > 0 && parts.every(one);
    return one(whole) || parts.some(one);
  };
}

/** Splits on the shell's command separators outside quotes: `&&`, `||`, `;`, `|`, `&`, newlines. */
export function splitCompound(command: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quote: string | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote) {
      cur += c;
      if (c === '\\' && quote === '"' && i + 1 < command.length) cur += command[++i];
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") {
      quote = c;
      cur += c;
    } else if (c === '\\' && i + 1 < command.length) {
      cur += c + command[++i];
    } else if (c === ';' || c === '\n' || c === '|' || c === '&') {
      if (command[i + 1] === c && (c === '|' || c === '&')) i++;
      out.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  out.push(cur);
  return out.map((s) => s.trim()).filter(Boolean);
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A Read/Edit specifier, gitignore-style as in Claude Code: `//abs/path` from the file-system
 * root, `~/path` from the home folder, `/path` from the project root, `path` or `./path` from the
 * working directory (a pattern without a slash then matches at any depth, as in .gitignore).
 */
export function pathMatcher(
  spec: string,
  where: { projectRoot: string; cwd: string; home?: string },
): (absolute: string) => boolean {
  let root: string;
  let pattern: string;
  if (spec.startsWith('//')) {
    root = '/';
    pattern = spec.slice(1);
  } else if (spec === '~' || spec.startsWith('~/')) {
    root = where.home ?? os.homedir();
    pattern = spec === '~' ? '/**' : spec.slice(1);
  } else if (spec.startsWith('/')) {
    root = where.projectRoot;
    pattern = spec;
  } else {
    root = where.cwd;
    // `./.env` names the file in the working directory; a bare `.env` or `*.env`, any depth.
    pattern = spec.startsWith('./') ? `/${spec.slice(2)}` : spec;
  }
  const ig = ignore({ allowRelativePaths: true }).add(pattern);
  return (absolute) => {
    const rel = path.relative(root, absolute);
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return false;
    return ig.ignores(rel.split(path.sep).join('/'));
  };
}
