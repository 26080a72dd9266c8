// grep: searches file contents with a regular expression, over the files glob would see
// (.gitignore respected, binary files skipped), with ripgrep-like options and output.
// Patterns come from the model, so they run on RE2 (re2js): linear in the text, whatever the
// pattern. A backtracking engine would let `^(a+)+$` over a few dozen characters hold the
// worker's event loop for minutes, stalling every other batch on it (and again on each retry).
import * as path from 'node:path';
import picomatch from 'picomatch';
import { RE2JS } from 're2js';
import { z } from 'zod';
import { defineTool, toolOutput, type ToolDefinition } from '../../define/config';
import { answering, ToolErrorCodes, ToolFailure } from '../errors';
import { looksBinary } from './files';
import { openForReading } from './pinned';
import type { SearchLimits } from './glob';
import { refusedByReadRule, searchStart, walk, type WalkEntry } from './walk';
import { resolveInWorkspace, type Workspace } from './workspace';

/** Files larger than this are skipped (and counted in a note). */
const MAX_FILE_BYTES = 5 * 1024 * 1024;
const MAX_LINE_CHARS = 500;

/** ripgrep's names for common file types, so `type: "ts"` works as the model expects. */
const FILE_TYPES: Record<string, string> = {
  js: '*.{js,jsx,mjs,cjs}',
  ts: '*.{ts,tsx,mts,cts}',
  py: '*.{py,pyi}',
  go: '*.go',
  rust: '*.rs',
  java: '*.java',
  c: '*.{c,h}',
  cpp: '*.{cpp,cc,cxx,hpp,hh,hxx,h}',
  md: '*.{md,markdown}',
  json: '*.json',
  yaml: '*.{yaml,yml}',
  html: '*.{html,htm}',
  css: '*.{css,scss,less}',
  sh: '*.{sh,bash,zsh}',
};

const count = z.number().int().min(0);
const input = z.strictObject({
  pattern: z
    .string()
    .min(1)
    .describe('A regular expression to search for (RE2 syntax, as ripgrep: no lookaround or backreferences)'),
  path: z.string().min(1).optional().describe('A file or folder to search in (default: the workspace root)'),
  glob: z
    .string()
    .min(1)
    .optional()
    .describe('Only search files matching this glob, e.g. "*.ts" or "src/**/*.{ts,tsx}"'),
  type: z
    .enum(Object.keys(FILE_TYPES) as [string, ...string[]])
    .optional()
    .describe('Only search files of this type'),
  output_mode: z
    .enum(['content', 'files_with_matches', 'count'])
    .optional()
    .describe('"files_with_matches" (default): paths; "content": matching lines; "count": matches per file'),
  '-i': z.boolean().optional().describe('Ignore case'),
  '-n': z.boolean().optional().describe('Show line numbers (content mode; default true)'),
  '-A': count.optional().describe('Lines of context after each match (content mode)'),
  '-B': count.optional().describe('Lines of context before each match (content mode)'),
  '-C': count.optional().describe('Lines of context before and after each match (content mode)'),
  multiline: z.boolean().optional().describe('Let the pattern span lines (`.` then matches newlines too)'),
  head_limit: z.number().int().min(1).optional().describe('Show at most this many output lines or paths'),
});
type GrepArgs = z.infer<typeof input>;

export function grepTool(workspace: () => Promise<Workspace>, limits: SearchLimits): ToolDefinition<GrepArgs> {
  return defineTool({
    name: 'grep',
    aliases: ['Grep'],
    description:
      'Searches the contents of workspace files with a regular expression (RE2 syntax, as ripgrep: no lookaround or backreferences). ' +
      'Files ignored by .gitignore, binary files and the .git folder are skipped. ' +
      'output_mode "files_with_matches" (default) lists paths, "content" shows matching lines as path:line:text (with -A/-B/-C context), "count" counts per file. ' +
      `Narrow with path, glob or type; at most ${limits.maxResults} results unless head_limit says otherwise.`,
    input,
    isConcurrencySafe: () => true,
    presentCall: (a) => ({
      title: `Grep ${a.pattern}`,
      ...(a.path || a.glob
        ? { summary: [a.path && `in ${a.path}`, a.glob && `files ${a.glob}`].filter(Boolean).join(', ') }
        : {}),
    }),
    execute: (args, _ctx) => answering(() => grep(args, workspace, limits)),
  });
}

async function grep(args: GrepArgs, workspace: () => Promise<Workspace>, limits: SearchLimits) {
  const ws = await workspace();
  const base = await resolveInWorkspace(ws, args.path ?? '.');
  const regex = compile(args);
  const mode = args.output_mode ?? 'files_with_matches';
  const cap = args.head_limit ?? limits.maxResults;
  const found = await search({ ws, base, regex, mode, cap, args, limits });
  const notes = notesOn(found, { mode, cap, args, limits });
  const text = found.out.length
    ? [...found.out, ...notes].join('\n')
    : [`No matches for ${JSON.stringify(args.pattern)} under ${base.rel}.`, ...notes].join('\n');
  return toolOutput({
    content: [{ type: 'text', text }],
    meta: {
      results: found.out.length,
      truncated: found.more || found.stoppedEarly,
      ...(found.skippedByRule.size
        ? { skippedByRule: [...found.skippedByRule.values()].reduce((a, b) => a + b, 0) }
        : {}),
    },
  });
}

type OutputMode = NonNullable<GrepArgs['output_mode']>;

interface SearchPlan {
  ws: Workspace;
  base: { abs: string; rel: string };
  regex: RE2JS;
  mode: OutputMode;
  /** Output lines (or paths) to show at most. */
  cap: number;
  args: GrepArgs;
  limits: SearchLimits;
}

/** What the search produced, and what it left out (each becomes a note for the model). */
interface Found {
  out: string[];
  /** There was more output than the cap. */
  more: boolean;
  /** The walk stopped at limits.maxEntries. */
  stoppedEarly: boolean;
  skippedLarge: number;
  skippedRefused: number;
  /** Files a read permission rule covers, per rule; neither their names nor contents are shown. */
  skippedByRule: Map<string, number>;
}

/** Walks the files under the base, filtered by glob and type, until the output reaches the cap. */
async function search(plan: SearchPlan): Promise<Found> {
  const { ws, base, args } = plan;
  const wanted = [args.glob, args.type && FILE_TYPES[args.type]]
    .filter((g): g is string => !!g)
    .map((g) => picomatch(g, { dot: true, basename: true }));
  const found: Found = {
    out: [],
    more: false,
    stoppedEarly: false,
    skippedLarge: 0,
    skippedRefused: 0,
    skippedByRule: new Map(),
  };
  for await (const file of filesUnder(ws, base, plan.limits, () => (found.stoppedEarly = true))) {
    const under = base.rel === '.' || file.rel === base.rel ? file.rel : file.rel.slice(base.rel.length + 1);
    if (!wanted.every((m) => m(under))) continue;
    const rule = refusedByReadRule(ws, file);
    if (rule) {
      found.skippedByRule.set(rule, (found.skippedByRule.get(rule) ?? 0) + 1);
      continue;
    }
    const text = await readText(ws, file.abs);
    if (text === 'too-large') {
      found.skippedLarge++;
      continue;
    }
    if (text === 'refused') {
      found.skippedRefused++;
      continue;
    }
    if (text === undefined) continue;
    for (const line of fileOutput(file.rel, text, plan)) {
      if (found.out.length >= plan.cap) {
        found.more = true;
        break;
      }
      found.out.push(line);
    }
    if (found.more) break;
  }
  return found;
}

/** One file's output in the chosen mode; nothing when the pattern does not match in it. */
function fileOutput(rel: string, text: string, { regex, mode, args }: SearchPlan): string[] {
  const lines = matchingLines(text, regex, args.multiline === true);
  if (lines.matched.size === 0) return [];
  if (mode === 'files_with_matches') return [rel];
  if (mode === 'count') return [`${rel}:${lines.matches}`];
  return render(rel, lines, args);
}

/** The notes after the output: what was cut off or not searched, and what to do about it. */
function notesOn(
  found: Found,
  { mode, cap, args, limits }: Pick<SearchPlan, 'mode' | 'cap' | 'args' | 'limits'>,
): string[] {
  const notes: string[] = [];
  if (found.more)
    notes.push(
      `[Output stopped at ${cap} ${mode === 'content' ? 'lines' : 'results'}; there are more. Narrow the pattern, path or glob${args.head_limit ? '' : ', or raise head_limit'}.]`,
    );
  if (found.stoppedEarly)
    notes.push(`[The search stopped after ${limits.maxEntries} entries, so matches may be missing; narrow the path.]`);
  if (found.skippedLarge)
    notes.push(
      `[${found.skippedLarge} file(s) over ${MAX_FILE_BYTES} bytes were not searched; use bash to search them.]`,
    );
  if (found.skippedRefused)
    notes.push(
      `[${found.skippedRefused} file(s) with several hard links, or that changed while being opened, were not searched.]`,
    );
  for (const [rule, n] of found.skippedByRule)
    notes.push(
      `[${n} file(s) were not searched: the permission rule ${rule} covers reading them. Their names and contents are not shown.]`,
    );
  return notes;
}

function compile(args: GrepArgs): RE2JS {
  const flags = (args['-i'] ? RE2JS.CASE_INSENSITIVE : 0) | (args.multiline ? RE2JS.DOTALL : 0);
  try {
    return RE2JS.compile(RE2JS.translateRegExp(args.pattern), flags);
  } catch (err) {
    throw new ToolFailure(
      `the pattern is not a valid regular expression: ${(err as Error).message}. grep uses RE2 syntax (as ripgrep does): lookahead, lookbehind and backreferences are not supported; escape special characters like ( [ { . * + ? with a backslash to match them literally.`,
      ToolErrorCodes.INVALID_ARGS,
    );
  }
}

async function* filesUnder(
  ws: Workspace,
  base: { abs: string; rel: string },
  limits: SearchLimits,
  onStoppedEarly: () => void,
): AsyncGenerator<WalkEntry> {
  if ((await searchStart(base)) === 'file') {
    yield { ...base, isDir: false };
    return;
  }
  const w = walk(ws, base, limits.maxEntries);
  for await (const e of w.entries) if (!e.isDir) yield e;
  if (w.stoppedEarly) onStoppedEarly();
}

async function readText(ws: Workspace, abs: string): Promise<string | 'too-large' | 'refused' | undefined> {
  let handle;
  try {
    handle = await openForReading(ws, path.relative(ws.realRoot, abs).split(path.sep).join('/'));
  } catch (err) {
    // A hard-linked file, or a link swapped in since the walk: not searched, and said so.
    if (err instanceof ToolFailure) return 'refused';
    return undefined; // vanished or unreadable since the walk saw it
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return undefined;
    if (stat.size > MAX_FILE_BYTES) return 'too-large';
    const bytes = await handle.readFile();
    return looksBinary(bytes) ? undefined : bytes.toString('utf8');
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

interface Matches {
  lines: string[];
  /** 0-based indexes of lines with (part of) a match. */
  matched: Set<number>;
  /** Matching lines, or matches when multiline. */
  matches: number;
}

function matchingLines(text: string, regex: RE2JS, multiline: boolean): Matches {
  const lines = text.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  const matched = new Set<number>();
  if (!multiline) {
    lines.forEach((line, i) => {
      if (regex.test(line)) matched.add(i);
    });
    return { lines, matched, matches: matched.size };
  }
  const starts: number[] = [];
  for (let i = 0, at = 0; i < lines.length; i++) {
    starts.push(at);
    at = text.indexOf('\n', at) + 1 || text.length;
  }
  const lineAt = (offset: number) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  let n = 0;
  // find() steps past empty matches itself.
  const m = regex.matcher(text);
  while (m.find()) {
    n++;
    const end = m.start() + Math.max(m.end() - m.start() - 1, 0);
    for (let i = lineAt(m.start()); i <= lineAt(end); i++) matched.add(i);
  }
  return { lines, matched, matches: n };
}

/** ripgrep's layout: `path:12:text` for a match, `path-11-text` for context, `--` between groups. */
function render(rel: string, m: Matches, args: GrepArgs): string[] {
  const before = args['-B'] ?? args['-C'] ?? 0;
  const after = args['-A'] ?? args['-C'] ?? 0;
  const numbered = args['-n'] !== false;
  const shown = new Set<number>();
  for (const i of m.matched)
    for (let k = Math.max(0, i - before); k <= Math.min(m.lines.length - 1, i + after); k++) shown.add(k);
  const out: string[] = [];
  let last = -2;
  for (const i of [...shown].sort((a, b) => a - b)) {
    if ((before || after) && last >= 0 && i > last + 1) out.push('--');
    const sep = m.matched.has(i) ? ':' : '-';
    const line = m.lines[i].length > MAX_LINE_CHARS ? `${m.lines[i].slice(0, MAX_LINE_CHARS)}… [line cut]` : m.lines[i];
    out.push(numbered ? `${rel}${sep}${i + 1}${sep}${line}` : `${rel}${sep}${line}`);
    last = i;
  }
  return out;
}
