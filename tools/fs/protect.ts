// Protected paths: what no built-in tool may read or change although it lies in the workspace.
// Hook scripts and hook settings run code with the worker's rights at the next hook run or worker
// start, so a model that could write them could run anything without approval; Sluice's state
// folder holds every session's log and stored results, so a model that could read it could see
// other sessions' data. Both are refused by default, by name wherever they sit, and the scripts
// a settings file points at are refused wherever they sit in the workspace.
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface ProtectOptions {
  /**
   * Folder or file names refused wherever they appear in a path. Default `DEFAULT_PROTECTED_NAMES`:
   * the hook and settings folders of Claude Code, Codex and Gemini CLI, and Sluice's state folder.
   */
  names?: string[];
  /** Further paths (relative to the root, or absolute) refused with everything under them. */
  paths?: string[];
  /** Refuse the scripts the hook settings in the workspace run (default true). */
  hookScripts?: boolean;
}

/** Sluice's default state folder name: hidden from bash's sandbox rather than read-only. */
export const STATE_NAME = '.sluice';

// opencode.json and .opencode/ hold OpenCode's permissions, which policyRules() reads.
export const DEFAULT_PROTECTED_NAMES: readonly string[] = [
  '.claude',
  '.codex',
  '.gemini',
  '.opencode',
  'opencode.json',
  STATE_NAME,
];

/** The hook settings files whose commands name scripts to protect, relative to the root. */
const HOOK_SETTINGS = [
  '.claude/settings.json',
  '.claude/settings.local.json',
  '.codex/hooks.json',
  '.gemini/settings.json',
];

/** The project-folder variables hook commands use; all stand for the workspace. */
const PROJECT_VARS = /\$\{?(CLAUDE_PROJECT_DIR|GEMINI_PROJECT_DIR|CODEX_PROJECT_DIR|PWD)\}?/g;

const stateDirs = new Set<string>();

/**
 * Called by the worker for its state folder: the tools refuse it wherever it is and whatever it
 * is called, even inside a workspace and with protection otherwise configured away.
 */
export function protectStateDir(dir: string): void {
  stateDirs.add(path.resolve(dir));
  try {
    stateDirs.add(fs.realpathSync(dir));
  } catch {
    // not created yet: its resolved name is what a tool would reach
  }
}

function protectedStateDirs(): string[] {
  return [...stateDirs];
}

/**
 * Why reading a file is refused by a rule outside the file tools (Claude Code `Read(...)` deny and
 * ask rules), given its absolute spellings, or undefined. The read tool is refused by the rule's
 * pre-execute handler when it names the file; glob and grep walk folders and name no file, so
 * they consult these checks for every file they would show or search, and skip what one refuses.
 */
type ReadRuleCheck = (absolutePaths: string[]) => string | undefined;

const readRuleChecks = new Set<ReadRuleCheck>();

/** Called by `permissionRules()`: its Read rules hide files from glob and grep in this process. */
export function hideFromSearch(check: ReadRuleCheck): void {
  readRuleChecks.add(check);
}

/** The first registered rule that refuses reading one of these spellings of a file. */
export function readRefusedByRule(absolutePaths: string[]): string | undefined {
  for (const check of readRuleChecks) {
    const why = check(absolutePaths);
    if (why) return why;
  }
  return undefined;
}

export interface Protection {
  /** Why a real absolute path is protected, or undefined when it is not. */
  why(realAbs: string): string | undefined;
  /** Protected absolute paths that exist in the workspace, for bash's sandbox to mount read-only. */
  readonly readOnly: string[];
  /** State folders (registered, and `.sluice` in the root), for bash's sandbox to hide. */
  readonly hidden: string[];
  /** Names refused wherever they appear (bash's sandbox keeps the missing ones from being made). */
  readonly names: readonly string[];
}

/** The protection of one workspace, as its files say now (hook settings are re-read each call). */
export function protection(realRoot: string, opts: ProtectOptions | false | undefined): Protection {
  const hidden = protectedStateDirs();
  if (opts === false)
    return { why: (p) => underAny(p, hidden, 'Sluice state folder'), readOnly: [], hidden, names: [] };
  const names = opts?.names ?? DEFAULT_PROTECTED_NAMES;
  const listed = (opts?.paths ?? []).map((p) => realish(path.resolve(realRoot, p)));
  const scripts = opts?.hookScripts === false ? [] : hookScripts(realRoot);
  // Where the protected folders of the root really are: `.claude` may be a link to elsewhere in
  // the workspace, and its target must not be writable under its other name.
  const present = names.filter((n) => fs.existsSync(path.join(realRoot, n)));
  const folders = present.filter((n) => n !== STATE_NAME).map((n) => path.join(realRoot, n));
  const readOnly = [...new Set([...folders, ...folders.map(realish), ...listed, ...scripts])];
  if (present.includes(STATE_NAME)) hidden.push(path.join(realRoot, STATE_NAME));
  return {
    names,
    readOnly,
    hidden,
    why(p) {
      const rel = path.relative(realRoot, p);
      const segments = rel.split(path.sep);
      const name = segments.find((s) => names.includes(s));
      if (name !== undefined && !rel.startsWith('..'))
        return `is under ${name}, which holds ${name === STATE_NAME ? "Sluice's state" : 'hook settings or scripts'}`;
      return (
        underAny(p, hidden, 'Sluice state folder') ??
        underAny(p, scripts, 'hook script named in the workspace’s hook settings') ??
        underAny(p, readOnly, 'protected path')
      );
    },
  };
}

function underAny(p: string, roots: string[], what: string): string | undefined {
  const hit = roots.find((r) => p === r || p.startsWith(r.endsWith(path.sep) ? r : `${r}${path.sep}`));
  return hit === undefined ? undefined : `is a ${what} (${hit})`;
}

function realish(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}

/** The files inside the root that the hook commands of its settings files name. */
function hookScripts(realRoot: string): string[] {
  const found = new Set<string>();
  for (const rel of HOOK_SETTINGS) {
    let json: unknown;
    try {
      json = JSON.parse(fs.readFileSync(path.join(realRoot, rel), 'utf8'));
    } catch {
      continue; // missing or not JSON: the hooks layer reports it; nothing to name here
    }
    for (const command of commandsIn(json)) {
      for (const token of command.replace(PROJECT_VARS, realRoot).split(/[\s"'`;&|()<>]+/)) {
        if (!token || token.startsWith('-')) continue;
        const abs = path.resolve(realRoot, token.replace(/^~(?=\/)/, '/nonexistent-home'));
        const rel2 = path.relative(realRoot, abs);
        if (rel2 === '' || rel2.startsWith('..') || path.isAbsolute(rel2)) continue;
        try {
          if (fs.statSync(abs).isFile()) found.add(fs.realpathSync(abs));
        } catch {
          // not a file: an argument, not a script
        }
      }
    }
  }
  return [...found];
}

function commandsIn(v: unknown, out: string[] = []): string[] {
  if (Array.isArray(v)) for (const x of v) commandsIn(x, out);
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) {
      if (k === 'command' && typeof x === 'string') out.push(x);
      else commandsIn(x, out);
    }
  return out;
}
