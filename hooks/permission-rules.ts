// Claude Code's permission rules — one rule and how it matches one call. Pure: reading the
// settings files and turning matches into decisions is permissions.ts's business.
//
//   Bash                    every Bash call          Bash(npm run build)   that exact command
//   Bash(npm test:*)        `npm test` + anything    Bash(git * main)      `*` is any text
// Bash commands are read with a real shell parser (shell.ts): a rule applies to the simple
// commands in the line, wherever they are nested.
//   Read(./.env), Edit(src/**), Read(~/x), Read(//abs)   gitignore patterns (see resolvePathRule)
//   WebFetch(domain:example.com)                     mcp__server, mcp__server__*, mcp__server__tool
import * as os from 'node:os';
import * as path from 'node:path';
import ignore from 'ignore';
import type { JsonObject } from '../pipeline/types';
import { commandText, literal, type Piece, readShell, type ShellCommand, type ShellReading } from './shell';
import { type Wildcard, wildcardOf } from './wildcard';

export type RuleKind = 'allow' | 'ask' | 'deny';

export interface PermissionRule {
  kind: RuleKind;
  /** As written in the file. */
  text: string;
  /** The settings file label it came from. */
  file: string;
  tool: string;
  specifier?: string;
  /** A Bash rule with a specifier: its patterns (the whole command judgment is in permissions.ts). */
  bash?: Pattern[];
  matches(call: RuleCall): boolean;
}

export interface RuleCall {
  /** The Claude Code name of the tool (see tool-names.ts) and the tool's own Sluice name. */
  claudeName: string;
  sluiceName: string;
  args: Readonly<JsonObject>;
  /** Paths in the call, resolved (absolute): the given one and, when it exists, its real path. */
  paths: string[];
  /** A Bash call's command as the shell parser read it (read once per call). */
  shell?: ShellReading;
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
    // Claude Code's newer `Tool(param:value)` form (`Bash(run_in_background:true)`) is not a command.
    if (/^[A-Za-z_][A-Za-z0-9_]*:(?!\*$)/.test(spec))
      throw new Error(
        `${file}: Sluice does not support Claude Code's Tool(param:value) specifiers like ${JSON.stringify(text)}; a Bash rule names a command (Bash(npm test), Bash(npm test:*), Bash(git * main))`,
      );
    const patterns = bashPatterns(spec);
    return {
      ...base,
      bash: patterns,
      matches: (c) => {
        if (c.claudeName !== 'Bash') return false;
        const command = String(c.args.command ?? '');
        const reading = c.shell ?? readShell(command);
        if (kind !== 'allow') return bashHit(patterns, command, reading) !== undefined;
        const all = mustCover(reading);
        return !!all?.length && all.every((cmd) => bashCovers(patterns, cmd));
      },
    };
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

/** A `*` in a Bash rule: any text, spaces included. */
const STAR = 0;
type Pattern = (string | typeof STAR)[];

/**
 * A Bash specifier as patterns of characters and `*`: `prefix:*` (legacy; the prefix alone or
 * followed by a space and anything), a pattern with `*` (any text; a lone trailing ` *` may also
 * match nothing, so `ls *` is `ls` too), or an exact command.
 */
function bashPatterns(spec: string): Pattern[] {
  const legacy = /^(.*):\*$/s.exec(spec);
  if (legacy) return [[...legacy[1]], [...legacy[1], ' ', STAR]];
  const parts = spec.split('*');
  const one: Pattern = parts.flatMap((p, i) => (i ? [STAR, ...p] : [...p]));
  if (parts.length === 2 && spec.endsWith(' *')) return [one, [...parts[0].slice(0, -1)]];
  return [one];
}

/** How big a text × pattern search may get before it gives the safe answer instead. */
const MAX_STATES = 4_000_000;

/**
 * Whether some value of the unknown pieces makes `text` match the pattern: for deny and ask, which
 * must catch whatever the command could turn out to be. Unknown text matches anything.
 */
function couldMatch(pattern: Pattern, text: Piece[]): boolean {
  const plain = literal(text);
  if (plain !== undefined) return literalMatch(pattern, plain);
  // The pattern positions the text so far can reach, one character (or unknown piece) at a time:
  // time the text's length times the pattern's, with no table of both.
  const m = pattern.length;
  let cur = new Uint8Array(m + 1);
  let next = new Uint8Array(m + 1);
  cur[0] = 1;
  const close = (set: Uint8Array) => {
    for (let j = 0; j < m; j++) if (set[j] && pattern[j] === STAR) set[j + 1] = 1;
  };
  close(cur);
  for (const piece of text) {
    if (piece === null) {
      // Unknown text can be whatever the pattern holds from any position reached on.
      const from = cur.indexOf(1);
      if (from < 0) return false;
      cur.fill(1, from);
      continue;
    }
    for (const c of piece) {
      next.fill(0);
      let alive = false;
      for (let j = 0; j < m; j++) {
        if (!cur[j]) continue;
        if (pattern[j] === STAR) next[j] = 1;
        else if (pattern[j] === c) next[j + 1] = 1;
        else continue;
        alive = true;
      }
      if (!alive) return false;
      close(next);
      [cur, next] = [next, cur];
    }
  }
  return cur[m] === 1;
}

/**
 * Whether every value of the unknown pieces makes `text` match the pattern: for allow, which must
 * hold whatever the command turns out to be. Unknown text is covered only by a `*`.
 */
export function covers(pattern: Pattern, text: Piece[]): boolean {
  const plain = literal(text);
  if (plain !== undefined) return literalMatch(pattern, plain);
  const t = flatten(text);
  if (t.length * (pattern.length + 1) > MAX_STATES) return false;
  const close = (set: Set<number>) => {
    for (const j of [...set]) for (let k = j; k < pattern.length && pattern[k] === STAR; k++) set.add(k + 1);
    return set;
  };
  let states = close(new Set([0]));
  for (const c of t) {
    const next = new Set<number>();
    for (const j of states) {
      if (pattern[j] === STAR) next.add(j);
      else if (c !== null && j < pattern.length && pattern[j] === c) next.add(j + 1);
    }
    states = close(next);
    if (!states.size) return false;
  }
  return states.has(pattern.length);
}

const compiled = new WeakMap<Pattern, Wildcard>();

/** Plain text against the pattern, in time linear in the text (wildcard.ts): no state table for the common case. */
function literalMatch(pattern: Pattern, text: string): boolean {
  let w = compiled.get(pattern);
  if (!w) {
    const parts = [''];
    for (const c of pattern) {
      if (c === STAR) parts.push('');
      else parts[parts.length - 1] += c;
    }
    w = wildcardOf(parts, false);
    compiled.set(pattern, w);
  }
  return w.test(text);
}

/** Characters one by one, each unknown piece one `null`. */
function flatten(text: Piece[]): Piece[] {
  return text.flatMap((p) => (p === null ? [null] : [...p]));
}

/**
 * The command a deny or ask rule matches, if any: any simple command anywhere in it (as bash
 * reads its words, as written, or found inside another), the whole line as written, or a command
 * Sluice cannot read, which every rule could match.
 */
export function bashHit(
  patterns: Pattern[],
  command: string,
  reading: ShellReading,
): ShellCommand | 'whole' | undefined {
  const literalOf = (s: string): Piece[] => [s];
  if (patterns.some((p) => couldMatch(p, literalOf(command.trim())))) return 'whole';
  return reading.commands.find((c) =>
    patterns.some(
      (p) =>
        couldMatch(p, commandText(c)) ||
        (c.source !== '' && c.words.every((w) => literal(w) !== undefined) && couldMatch(p, literalOf(c.source))),
    ),
  );
}

/** Whether one command, as written, is covered by the patterns: by its words, or its literal text. */
export function bashCovers(patterns: Pattern[], c: ShellCommand): boolean {
  if (c.assigns) return false;
  const text = commandText(c);
  if (patterns.some((p) => covers(p, text))) return true;
  const plain = c.words.every((w) => literal(w) !== undefined);
  return plain && c.source !== '' && patterns.some((p) => covers(p, [c.source]));
}

/** The commands an allow rule has to cover: those written in the line, when the parser read it all. */
export function mustCover(reading: ShellReading): ShellCommand[] | undefined {
  if (reading.unprovable.length || reading.unknown.length) return undefined;
  return reading.commands.filter((c) => !c.derived);
}

/**
 * A Read/Edit specifier, gitignore-style as in Claude Code: `//abs/path` from the file-system
 * root, `~/path` from the home folder, `/path` from the project root, `path` or `./path` from the
 * working directory (a pattern without a slash then matches at any depth, as in .gitignore).
 */
function pathMatcher(
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
    // Outside the root is `..` or `../…`; a folder named `..foo` inside it is not.
    if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return false;
    return ig.ignores(rel.split(path.sep).join('/'));
  };
}
