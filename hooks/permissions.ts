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
import type { ApprovalPolicy, JsonObject, PreDecision } from '../pipeline/types';
import type { Named, PreExecuteHandler } from '../worker/config';
import { hideFromSearch } from '../tools/fs/protect';
import { parseRule, type PermissionRule, type RuleCall, type RuleKind } from './permission-rules';
import { digestOf } from './pin';
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
}

export interface PermissionRules {
  preExecute: Named<PreExecuteHandler>[];
  rules: readonly PermissionRule[];
  sources: readonly { label: string; digest: string }[];
  warnings: readonly string[];
  /** Claude Code's decision for a call: the first match in deny, ask, allow order. */
  evaluate(call: { toolName: string; aliases?: readonly string[]; args: Readonly<JsonObject> }): PermissionVerdict;
  /**
   * An approval policy for a tool that asks by default (like `bash`): `auto` when an allow rule
   * matches the call and no ask or deny rule does, `ask` otherwise. Sluice's pre-execute waterfall
   * never lowers a tool's own `ask`, so this is how an allow rule removes the prompt.
   */
  approval(claudeName: string, otherwise?: ApprovalPolicy): (args: any) => ApprovalPolicy;
}

const DEFAULT_SOURCES = ['.claude/settings.json', '.claude/settings.local.json'];
const KINDS: RuleKind[] = ['deny', 'ask', 'allow'];

export function permissionRules(opts: PermissionRulesOptions): PermissionRules {
  const workspace = path.resolve(opts.workspace);
  const cwd = path.resolve(opts.cwd ?? workspace);
  const explicit = opts.sources !== undefined;
  const rules: PermissionRule[] = [];
  const sources: { label: string; digest: string }[] = [];
  const warnings: string[] = [];
  for (const rel of opts.sources ?? DEFAULT_SOURCES) {
    const file = path.resolve(workspace, rel);
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(file);
    } catch (err) {
      if (!explicit && (err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new Error(`cannot read permission settings ${file}: ${(err as Error).message}`);
    }
    const label = path.relative(workspace, file).split(path.sep).join('/') || file;
    sources.push({ label, digest: digestOf(bytes) });
    let doc: unknown;
    try {
      doc = JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      throw new Error(
        `permission settings ${label} are not valid JSON (${(err as Error).message}); fix the file, since its deny rules would otherwise not apply`,
      );
    }
    const perms = (doc as { permissions?: unknown })?.permissions;
    if (perms === undefined) continue;
    if (typeof perms !== 'object' || perms === null || Array.isArray(perms))
      throw new Error(`${label}: "permissions" must be an object with allow / ask / deny arrays`);
    for (const [key, value] of Object.entries(perms)) {
      if (!KINDS.includes(key as RuleKind)) {
        warnings.push(`${label}: permissions.${key} is not supported by Sluice and was ignored`);
        continue;
      }
      if (!Array.isArray(value) || value.some((r) => typeof r !== 'string'))
        throw new Error(`${label}: permissions.${key} must be an array of rule strings`);
      for (const text of value as string[])
        rules.push(parseRule(text, key as RuleKind, label, { projectRoot: workspace, cwd, home: opts.home }));
    }
  }
  const digestOfFile = new Map(sources.map((s) => [s.label, s.digest]));

  function callOf(toolName: string, aliases: readonly string[], args: Readonly<JsonObject>): RuleCall {
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
    return { claudeName, sluiceName: toolName, args, paths };
  }

  function evaluate(call: {
    toolName: string;
    aliases?: readonly string[];
    args: Readonly<JsonObject>;
  }): PermissionVerdict {
    const c = callOf(call.toolName, call.aliases ?? [], call.args);
    for (const kind of KINDS) {
      const rule = rules.find((r) => r.kind === kind && r.matches(c));
      if (rule) return { kind, rule };
    }
    return { kind: 'none' };
  }

  const handler: PreExecuteHandler = (ctx) => {
    if (!ctx.tool) return undefined;
    const v = evaluate({ toolName: ctx.tool.name, aliases: ctx.tool.aliases, args: ctx.call.args });
    if (v.kind === 'none' || !v.rule) return undefined;
    ctx.emit('permission/matched', {
      turn: ctx.turn,
      callId: ctx.call.id,
      decision: v.kind,
      rule: v.rule.text,
      settings: v.rule.file,
      settingsDigest: digestOfFile.get(v.rule.file) ?? null,
    });
    const where = `the permission rule ${JSON.stringify(v.rule.text)} in ${v.rule.file}`;
    const decision: PreDecision =
      v.kind === 'deny'
        ? { kind: 'deny', reason: `${where} denies this call` }
        : v.kind === 'ask'
          ? { kind: 'ask', reason: `${where} asks for approval` }
          : { kind: 'allow' };
    return decision;
  };

  // A Read deny or ask rule names files; glob and grep over a folder name none, so the rule's
  // pre-execute check cannot see the files they would print. They ask these rules per file and
  // skip (saying so) every file reading would be denied or need a person's yes for.
  const readRules = rules.filter((r) => r.tool === 'Read' && r.kind !== 'allow');
  if (readRules.length)
    hideFromSearch((paths) => {
      const c: RuleCall = { claudeName: 'Read', sluiceName: 'read', args: {}, paths };
      const rule = readRules.find((r) => r.matches(c));
      return rule && `${JSON.stringify(rule.text)} in ${rule.file}`;
    });

  return {
    preExecute: rules.length ? [{ name: 'Claude Code permission rules', handler }] : [],
    rules,
    sources,
    warnings,
    evaluate,
    approval(claudeName, otherwise = 'ask') {
      return (args) =>
        evaluate({ toolName: claudeName, args: (args ?? {}) as JsonObject }).kind === 'allow' ? 'auto' : otherwise;
    },
  };
}
