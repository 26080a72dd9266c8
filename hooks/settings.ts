// Reading command hooks from Claude Code settings files and Codex hooks.json files. Both use the
// same three levels, event → matcher group → handlers:
//   {"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "...", "timeout": 30}]}]}}
// Hooks are read once, when the worker's config is built: like Claude Code's startup snapshot, an
// edit to a settings file while the worker runs does not change what gates the calls.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { compileMatcher, type Matcher } from './matcher';
import { digestOf } from './pin';
import { refuseNearMiss, refuseNearMisses } from './settings-keys';

export type Dialect = 'claude' | 'codex' | 'gemini';
/** The hook events Sluice maps onto its extension points. */
export type HookEvent = 'PreToolUse' | 'PostToolUse' | 'PostToolUseFailure' | 'BeforeTool' | 'AfterTool';

/** The events that run before a call (the others run after it). */
export const BEFORE_EVENTS: readonly HookEvent[] = ['PreToolUse', 'BeforeTool'];

export interface HookSource {
  /** A settings file; relative paths are resolved against the workspace. */
  path: string;
  /** Guessed from the path when left out: `hooks.json` or a `.codex/` folder is Codex, anything else Claude Code. */
  dialect?: Dialect;
}

export interface CommandHook {
  /** Where the hook was declared: `<file>:<event>:<group>:<handler>`, stable while the file is. */
  id: string;
  dialect: Dialect;
  event: HookEvent;
  /** The matcher as written; absent means every tool. */
  matcher?: string;
  compiled: Matcher;
  command: string;
  timeoutSec: number;
  /** The settings file that declared it, as read at start. */
  source: LoadedSource;
}

export interface LoadedSource {
  /** Relative to the workspace when inside it. */
  label: string;
  /** Absolute. */
  path: string;
  dialect: Dialect;
  /** sha256 of the bytes read at start. */
  digest: string;
}

export interface LoadedHooks {
  hooks: CommandHook[];
  /** Every settings file that was read, with the digest of what was read. */
  sources: LoadedSource[];
  /** Things in the files Sluice reads past (events without a Sluice point, ignored fields). */
  warnings: string[];
}

const DEFAULT_TIMEOUT_SEC = 60;
/**
 * Hooks run inside the pre-execute and settle activities, whose start-to-close timeout is two
 * minutes (workflows/look-ahead.ts). A longer hook would time the whole stage out and be re-run
 * by the activity's retries, so a hook's own timeout is capped below it.
 */
export const MAX_TIMEOUT_SEC = 100;

/** The files read when no sources are given; missing ones are skipped. */
const DEFAULT_SOURCES: readonly HookSource[] = [
  { path: '.claude/settings.json', dialect: 'claude' },
  { path: '.claude/settings.local.json', dialect: 'claude' },
  { path: '.codex/hooks.json', dialect: 'codex' },
  { path: '.gemini/settings.json', dialect: 'gemini' },
];

const EVENTS: Record<Dialect, readonly HookEvent[]> = {
  claude: ['PreToolUse', 'PostToolUse', 'PostToolUseFailure'],
  // Codex has no failure event: its PostToolUse follows every call that ran.
  codex: ['PreToolUse', 'PostToolUse'],
  // Gemini CLI's AfterTool also follows every call that ran, failed ones included.
  gemini: ['BeforeTool', 'AfterTool'],
};

export function dialectOf(source: HookSource): Dialect {
  if (source.dialect) return source.dialect;
  const p = source.path.split(path.sep).join('/');
  if (p.includes('.gemini/')) return 'gemini';
  return path.basename(p) === 'hooks.json' || p.includes('.codex/') ? 'codex' : 'claude';
}

/**
 * Loads the hooks of every source. A file given explicitly must exist; a default one may be
 * missing. Anything that would silently weaken a gate (unreadable JSON, a bad matcher, a handler
 * type Sluice cannot run on a tool event) throws, so the worker does not start without it.
 */
export function loadHooks(workspace: string, sources?: readonly (string | HookSource)[]): LoadedHooks {
  const explicit = sources !== undefined;
  const list = (sources ?? DEFAULT_SOURCES).map((s) => (typeof s === 'string' ? { path: s } : s));
  const out: LoadedHooks = { hooks: [], sources: [], warnings: [] };
  for (const source of list) {
    const file = path.resolve(workspace, source.path);
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(file);
    } catch (err) {
      if (!explicit && (err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new Error(
        `cannot read hook settings ${file}: ${(err as Error).message}. Fix the path in commandHooks({ sources }) or create the file.`,
      );
    }
    const loaded: LoadedSource = {
      label: labelOf(workspace, file),
      path: file,
      dialect: dialectOf(source),
      digest: digestOf(bytes),
    };
    out.sources.push(loaded);
    parseHookFile(bytes.toString('utf8'), loaded, out);
  }
  return out;
}

/** Parses one settings file's text into `out`; `label` names the file in ids and errors. */
export function parseHookFile(text: string, file: LoadedSource, out: Omit<LoadedHooks, 'sources'>): void {
  const where = `${file.label}`;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new Error(
      `hook settings ${where} are not valid JSON (${(err as Error).message}); fix the file, since the hooks in it would otherwise not run`,
    );
  }
  if (!isObject(doc))
    throw new Error(`hook settings ${where} must be a JSON object like {"hooks": {"PreToolUse": [...]}}`);
  refuseNearMisses(where, 'the top level', doc, ['hooks']);
  if (doc.disableAllHooks === true)
    out.warnings.push(`${where}: disableAllHooks is not honoured; remove the hooks you do not want instead`);
  if (doc.hooks === undefined) return;
  if (!isObject(doc.hooks))
    throw new Error(`${where}: "hooks" must be an object keyed by event name, e.g. {"PreToolUse": [...]}`);

  for (const [event, groups] of Object.entries(doc.hooks)) {
    // Another harness's event, or a switch, is read past; a misspelt gated event would drop its hooks.
    refuseNearMiss(where, 'hooks', event, EVENTS[file.dialect]);
    if (file.dialect === 'gemini' && !Array.isArray(groups)) {
      // Gemini CLI keeps switches such as "enabled" and "disabled" beside the events.
      out.warnings.push(`${where}: hooks.${event} is not an event and was ignored`);
      continue;
    }
    if (!(EVENTS[file.dialect] as readonly string[]).includes(event)) {
      out.warnings.push(
        `${where}: ${event} hooks are ignored; Sluice runs ${EVENTS[file.dialect].join(', ')} hooks only`,
      );
      continue;
    }
    if (!Array.isArray(groups))
      throw new Error(`${where}: hooks.${event} must be an array of {"matcher", "hooks": [...]} groups`);
    groups.forEach((group, gi) => {
      const at = `${where} hooks.${event}[${gi}]`;
      if (!isObject(group)) throw new Error(`${at} must be an object {"matcher": "...", "hooks": [...]}`);
      const matcher = group.matcher;
      if (matcher !== undefined && matcher !== null && typeof matcher !== 'string')
        throw new Error(`${at}.matcher must be a string`);
      let compiled: Matcher;
      try {
        compiled = compileMatcher(matcher as string | undefined);
      } catch (err) {
        throw new Error(`${at}: ${(err as Error).message}`);
      }
      if (group.sequential === true)
        out.warnings.push(
          `${at}: "sequential" is not honoured; the group's hooks run in parallel, like every other group`,
        );
      if (!Array.isArray(group.hooks))
        throw new Error(`${at}.hooks must be an array of {"type": "command", "command": "..."} handlers`);
      group.hooks.forEach((handler, hi) => {
        const hat = `${at}.hooks[${hi}]`;
        const hook = parseHandler(handler, hat, out.warnings, file.dialect);
        if (!hook) return;
        out.hooks.push({
          id: `${file.label}:${event}:${gi}:${hi}`,
          dialect: file.dialect,
          event: event as HookEvent,
          ...(typeof matcher === 'string' && matcher !== '' ? { matcher } : {}),
          compiled,
          ...hook,
          source: file,
        });
      });
    });
  }
}

function parseHandler(
  handler: unknown,
  at: string,
  warnings: string[],
  dialect: Dialect,
): { command: string; timeoutSec: number } | undefined {
  if (!isObject(handler)) throw new Error(`${at} must be an object {"type": "command", "command": "..."}`);
  if (handler.type !== 'command') {
    throw new Error(
      `${at} has type ${JSON.stringify(handler.type)}; Sluice runs only "command" hooks. Remove it or turn it into a command, since a tool gate that never runs would let calls through`,
    );
  }
  if (typeof handler.command !== 'string' || !handler.command.trim())
    throw new Error(`${at} needs a non-empty "command" string`);
  if (SLUICE_HOOK.test(handler.command)) {
    // The harness's own line that asks Sluice (docs/gateway.md): run inside Sluice, it would ask
    // Sluice about the very call it is deciding, and wait on itself.
    warnings.push(`${at}: \`sluice hook\` is the harness asking Sluice; Sluice does not run it on its own calls`);
    return undefined;
  }
  if (handler.async === true) {
    warnings.push(`${at}: async hooks cannot gate a call and are skipped`);
    return undefined;
  }
  for (const field of ['if', 'once']) {
    if (handler[field] !== undefined)
      warnings.push(`${at}: "${field}" is not supported; the hook runs for every call its matcher selects`);
  }
  const raw = handler.timeout ?? handler.timeoutSec ?? handler.timeout_sec;
  // Gemini CLI gives timeouts in milliseconds; Claude Code and Codex in seconds.
  const unit = dialect === 'gemini' ? 'milliseconds' : 'seconds';
  let timeoutSec = DEFAULT_TIMEOUT_SEC;
  if (raw !== undefined) {
    if (typeof raw !== 'number' || !Number.isFinite(raw) || raw <= 0)
      throw new Error(`${at}.timeout must be a positive number of ${unit}, not ${JSON.stringify(raw)}`);
    timeoutSec = dialect === 'gemini' ? raw / 1000 : raw;
  }
  if (timeoutSec > MAX_TIMEOUT_SEC) {
    warnings.push(
      `${at}: timeout ${timeoutSec}s is capped at ${MAX_TIMEOUT_SEC}s, the most a hook can take inside a pipeline stage`,
    );
    timeoutSec = MAX_TIMEOUT_SEC;
  }
  return { command: handler.command, timeoutSec };
}

/** A command that runs `sluice hook ...` (npx sluice, bin/sluice.js, a path to the bin). */
const SLUICE_HOOK = /(^|[\s/"'])sluice(\.js)?["']?\s+hook(\s|$)/;

function labelOf(workspace: string, file: string): string {
  const rel = path.relative(workspace, file);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel.split(path.sep).join('/') : file;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
