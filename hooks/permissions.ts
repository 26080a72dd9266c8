// Claude Code's `permissions.allow` / `ask` / `deny` rules from .claude/settings.json and
// .claude/settings.local.json, unchanged, as a Sluice pre-execute extension with Claude Code's
// precedence: deny over ask over allow, whatever the order or the files. Read once at start, with
// each file's digest recorded on every `permission/matched` event.
//
//   const rules = permissionRules({ workspace });
//   defineConfig({
//     tools: [...fsTools({ root }), bashTool({ root, approval: rules.approval('Bash') })],
//     preExecute: [...hooks.preExecute, ...rules.preExecute],
//   });
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ToolApproval, JsonObject, PreDecision } from '../pipeline/types';
import type { Named, PreExecuteHandler } from '../define/config';
import { denyAtExec } from '../tools/exec-deny';
import { hideFromSearch } from '../tools/fs/protect';
import { claudeExecDenies } from './exec-deny-rules';
import {
  bashCovers,
  bashHit,
  mustCover,
  parseRule,
  type PermissionRule,
  type RuleCall,
  type RuleKind,
} from './permission-rules';
import { digestOf } from './pin';
import { CLAUDE_PERMISSION_KEYS, refuseNearMisses, refuseUnknownKey } from './settings-keys';
import { readShell, type ShellCommand, type ShellReading, shellParserReady } from './shell';
import { claudeToolName } from './tool-names';

export interface PermissionRulesOptions {
  /** The project: `/path` rules start here, `path` rules too unless `cwd` is given. */
  workspace: string;
  /** Where `path` and `./path` rules start; default the workspace. */
  cwd?: string;
  /** Settings files, relative to the workspace. Default `.claude/settings.json` and `.claude/settings.local.json`, each skipped when missing. */
  sources?: string[];
  /** Where `~/` rules start; default the worker's home folder. */
  home?: string;
}

export interface PermissionVerdict {
  kind: RuleKind | 'none';
  rule?: PermissionRule;
  /** An allow of a compound Bash command: the rules that together cover its commands. */
  rules?: PermissionRule[];
  /** For Bash: which command the rule matched, or why Sluice could not tell what runs. */
  detail?: string;
}

export interface PermissionRules {
  preExecute: Named<PreExecuteHandler>[];
  rules: readonly PermissionRule[];
  sources: readonly { label: string; digest: string }[];
  warnings: readonly string[];
  /**
   * Claude Code's decision for a call: the first match in deny, ask, allow order. Bash commands
   * are read by the shell parser, which loads once per process (`ready`); before it has, every
   * Bash command is one Sluice cannot read (denied where a deny rule exists, else not allowed).
   */
  evaluate(call: { toolName: string; aliases?: readonly string[]; args: Readonly<JsonObject> }): PermissionVerdict;
  /** Resolves when the shell parser has loaded; the pre-execute handler and `approval` wait for it. */
  ready: Promise<void>;
  /**
   * An approval policy for a tool that asks by default (like `bash`): `auto` when an allow rule
   * matches the call and no ask or deny rule does, `ask` otherwise. Sluice's pre-execute waterfall
   * never lowers a tool's own `ask`, so this is how an allow rule removes the prompt.
   */
  approval(claudeName: string, otherwise?: ToolApproval): (args: any) => Promise<ToolApproval>;
}

const DEFAULT_SOURCES = ['.claude/settings.json', '.claude/settings.local.json'];
const KINDS: RuleKind[] = ['deny', 'ask', 'allow'];

export function permissionRules(opts: PermissionRulesOptions): PermissionRules {
  const workspace = path.resolve(opts.workspace);
  const cwd = path.resolve(opts.cwd ?? workspace);
  const { rules, sources, warnings } = readSettings(opts, workspace, cwd);
  const bashRules = rules.some((r) => r.tool === 'Bash' || r.tool === 'bash');
  const ready = bashRules ? shellParserReady() : Promise.resolve();
  const evaluate = (call: { toolName: string; aliases?: readonly string[]; args: Readonly<JsonObject> }) =>
    verdictOf(rules, callOf(call.toolName, call.aliases ?? [], call.args, cwd, bashRules));
  const handler = matchedRuleHandler(evaluate, ready, new Map(sources.map((s) => [s.label, s.digest])));
  hideReadRulesFromSearch(rules);
  denyAtExec(claudeExecDenies(rules));
  return {
    preExecute: rules.length ? [{ name: 'Claude Code permission rules', handler }] : [],
    rules,
    sources,
    warnings,
    evaluate,
    ready,
    approval(claudeName, otherwise = 'ask') {
      return async (args) => {
        await ready;
        return evaluate({ toolName: claudeName, args: (args ?? {}) as JsonObject }).kind === 'allow'
          ? 'auto'
          : otherwise;
      };
    },
  };
}

/** Every settings file's rules, in file order, with each file's digest and what was ignored. */
function readSettings(
  opts: PermissionRulesOptions,
  workspace: string,
  cwd: string,
): { rules: PermissionRule[]; sources: { label: string; digest: string }[]; warnings: string[] } {
  const explicit = opts.sources !== undefined;
  const rules: PermissionRule[] = [];
  const sources: { label: string; digest: string }[] = [];
  const warnings: string[] = [];
  for (const rel of opts.sources ?? DEFAULT_SOURCES) {
    const file = path.resolve(workspace, rel);
    const bytes = readSettingsFile(file, explicit);
    if (!bytes) continue;
    const label = path.relative(workspace, file).split(path.sep).join('/') || file;
    sources.push({ label, digest: digestOf(bytes) });
    const perms = permissionsOf(bytes, label);
    if (perms === undefined) continue;
    for (const [key, value] of Object.entries(perms)) {
      if (!KINDS.includes(key as RuleKind)) {
        refuseUnknownKey(label, 'permissions', key, CLAUDE_PERMISSION_KEYS);
        warnings.push(`${label}: permissions.${key} is not supported by Sluice and was ignored`);
        continue;
      }
      if (!Array.isArray(value) || value.some((r) => typeof r !== 'string'))
        throw new Error(`${label}: permissions.${key} must be an array of rule strings`);
      for (const text of value as string[])
        rules.push(parseRule(text, key as RuleKind, label, { projectRoot: workspace, cwd, home: opts.home }));
    }
  }
  return { rules, sources, warnings };
}

/** A settings file's bytes; undefined for a default file that is not there (a named one must be). */
function readSettingsFile(file: string, explicit: boolean): Buffer | undefined {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    if (!explicit && (err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read permission settings ${file}: ${(err as Error).message}`);
  }
}

/** The file's "permissions" object, or undefined when it has none. */
function permissionsOf(bytes: Buffer, label: string): object | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new Error(
      `permission settings ${label} are not valid JSON (${(err as Error).message}); fix the file, since its deny rules would otherwise not apply`,
    );
  }
  if (typeof doc === 'object' && doc !== null) refuseNearMisses(label, 'the top level', doc, ['permissions']);
  const perms = (doc as { permissions?: unknown })?.permissions;
  if (perms === undefined) return undefined;
  if (typeof perms !== 'object' || perms === null || Array.isArray(perms))
    throw new Error(`${label}: "permissions" must be an object with allow / ask / deny arrays`);
  return perms;
}

/** A call as the rules see it: Claude Code's tool name, the paths it names (and their real paths), its shell reading. */
function callOf(
  toolName: string,
  aliases: readonly string[],
  args: Readonly<JsonObject>,
  cwd: string,
  bashRules: boolean,
): RuleCall {
  const claudeName = claudeToolName({ name: toolName, aliases });
  const raw =
    typeof args.file_path === 'string' ? args.file_path : typeof args.path === 'string' ? args.path : undefined;
  const paths: string[] = [];
  const given = raw ?? (claudeName === 'Glob' || claudeName === 'Grep' ? '.' : undefined);
  if (given !== undefined) {
    const abs = path.resolve(cwd, given);
    paths.push(abs);
    try {
      const real = fs.realpathSync(abs);
      if (real !== abs) paths.push(real);
    } catch {
      // not there yet: the given path is all there is
    }
  }
  const shell = claudeName === 'Bash' && bashRules ? readShell(String(args.command ?? '')) : undefined;
  return { claudeName, sluiceName: toolName, args, paths, ...(shell ? { shell } : {}) };
}

/** The first rule that matches, in deny, ask, allow order. */
function verdictOf(rules: readonly PermissionRule[], c: RuleCall): PermissionVerdict {
  for (const kind of KINDS) {
    if (c.shell) {
      const v = judgeBash(rules, kind, String(c.args.command ?? ''), c.shell, c);
      if (v) return v;
      continue;
    }
    const rule = rules.find((r) => r.kind === kind && r.matches(c));
    if (rule) return { kind, rule };
  }
  return { kind: 'none' };
}

/**
 * One kind of rule against a Bash command the parser read. Deny and ask: the first rule that
 * matches any command in it (or could match one Sluice cannot read). Allow: a rule for every
 * command written in it, when the parser proved it is nothing but those commands.
 */
function judgeBash(
  rules: readonly PermissionRule[],
  kind: RuleKind,
  command: string,
  reading: ShellReading,
  c: RuleCall,
): PermissionVerdict | undefined {
  const ofKind = rules.filter((r) => r.kind === kind);
  const whole = ofKind.find((r) => !r.bash && r.matches(c));
  if (kind !== 'allow') {
    if (whole) return { kind, rule: whole };
    for (const rule of ofKind) {
      const hit = rule.bash && bashHit(rule.bash, command, reading);
      if (hit) return { kind, rule, detail: describe(hit, reading) };
    }
    return undefined;
  }
  if (whole) return { kind, rule: whole };
  const all = mustCover(reading);
  if (!all?.length) return undefined;
  const used: PermissionRule[] = [];
  for (const cmd of all) {
    const rule = ofKind.find((r) => r.bash && bashCovers(r.bash, cmd));
    if (!rule) return undefined;
    if (!used.includes(rule)) used.push(rule);
  }
  return { kind, rule: used[0], ...(used.length > 1 ? { rules: used } : {}) };
}

function describe(hit: ShellCommand | 'whole', reading: ShellReading): string | undefined {
  if (hit === 'whole') return undefined;
  if (hit.words.length === 1 && hit.words[0].length === 1 && hit.words[0][0] === null)
    return `Sluice cannot tell every command this runs (${reading.unknown.join('; ')}), and the rule could match one`;
  const text = hit.words.map((w) => w.map((p) => (p === null ? '…' : p)).join('')).join(' ');
  return `it matches \`${clip(text)}\`${hit.derived ? ' (found inside the command)' : ''}`;
}

/** The pre-execute handler: records the rule that matched (and its file's digest), then denies, asks or allows. */
function matchedRuleHandler(
  evaluate: PermissionRules['evaluate'],
  ready: Promise<void>,
  digestOfFile: Map<string, string>,
): PreExecuteHandler {
  return async (ctx) => {
    if (!ctx.tool) return undefined;
    await ready;
    const v = evaluate({ toolName: ctx.tool.name, aliases: ctx.tool.aliases, args: ctx.call.args });
    if (v.kind === 'none' || !v.rule) return undefined;
    ctx.emit('permission/matched', {
      turn: ctx.turn,
      callId: ctx.call.id,
      decision: v.kind,
      rule: v.rule.text,
      settings: v.rule.file,
      settingsDigest: digestOfFile.get(v.rule.file) ?? null,
      ...(v.rules ? { rules: v.rules.map((r) => ({ rule: r.text, settings: r.file })) } : {}),
      ...(v.detail ? { detail: v.detail } : {}),
    });
    const where = `the permission rule ${JSON.stringify(v.rule.text)} in ${v.rule.file}`;
    const why = v.detail ? `: ${v.detail}` : '';
    const decision: PreDecision =
      v.kind === 'deny'
        ? { kind: 'deny', reason: `${where} denies this call${why}` }
        : v.kind === 'ask'
          ? { kind: 'ask', reason: `${where} asks for approval${why}` }
          : { kind: 'allow' };
    return decision;
  };
}

// A Read deny or ask rule names files; glob and grep over a folder name none, so the rule's
// pre-execute check cannot see the files they would print. They ask these rules per file and
// skip (saying so) every file reading would be denied or need a person's yes for.
function hideReadRulesFromSearch(rules: readonly PermissionRule[]): void {
  const readRules = rules.filter((r) => r.tool === 'Read' && r.kind !== 'allow');
  if (readRules.length)
    hideFromSearch((paths) => {
      const c: RuleCall = { claudeName: 'Read', sluiceName: 'read', args: {}, paths };
      const rule = readRules.find((r) => r.matches(c));
      return rule && `${JSON.stringify(rule.text)} in ${rule.file}`;
    });
}

function clip(text: string): string {
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}
