// Gemini CLI's policy engine files (`.gemini/policies/*.toml`, `~/.gemini/policies/*.toml`, the
// admin folder), read as Gemini's documentation defines them:
//
//   [[rule]]
//   toolName = "run_shell_command"        # or a list; `*`, `mcp_server_*`, `mcp_*_tool`, `mcp_*`
//   mcpName = "my-server"                 # optional: the MCP server ("*" for any)
//   argsPattern = '"command":"(git|npm)'  # optional: a regex on the arguments as stable JSON
//   commandPrefix = "git"                 # optional, shell only: the command starts with it (or a list)
//   commandRegex = "git (commit|push)"    # optional, shell only: a regex from the command's start
//   decision = "ask_user"                 # allow | deny | ask_user
//   priority = 100                        # 0..999 inside the file's tier
//   denyMessage = "…"                     # optional: what the model reads on a deny
//   modes = ["default"]                   # optional: the approval modes the rule is active in
//
// The highest priority wins: tier base (default 1, extension 2, workspace 3, user 4, admin 5) plus
// priority / 1000. Regexes run on RE2 (re2js), linear in the arguments' length whatever the
// pattern; a pattern RE2 refuses stops the worker with the file and line.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { RE2JS } from 're2js';
import { parse as parseToml, TomlError } from 'smol-toml';
import type { Json, JsonObject } from '../pipeline/types';
import { labelOf, readPolicyFile } from './codex-rules';
import {
  type PolicyCall,
  type PolicyDecision,
  type PolicyFile,
  PolicyFileError,
  type PolicyRuleRef,
  type PolicySource,
  type SourceVerdict,
  STRICTNESS,
  lineAt,
} from './policy-types';
import { commandText, literal, type Piece, readShell, type ShellReading } from './shell';
import { hookFacingCall } from './tool-names';
import { type Wildcard, wildcard } from './wildcard';

type GeminiTier = 'default' | 'extension' | 'workspace' | 'user' | 'admin';
const TIER_BASE: Record<GeminiTier, number> = { default: 1, extension: 2, workspace: 3, user: 4, admin: 5 };

const DECISIONS: Record<string, PolicyDecision> = { allow: 'allow', deny: 'deny', ask_user: 'ask' };
const SHELL = 'run_shell_command';
const FIELDS = new Set([
  'toolName',
  'mcpName',
  'argsPattern',
  'commandPrefix',
  'commandRegex',
  'decision',
  'priority',
  'denyMessage',
  'deny_message',
  'modes',
  'interactive',
  'allowRedirection',
  'subagent',
  'toolAnnotations',
]);

export interface GeminiRule extends PolicyRuleRef {
  tier: GeminiTier;
  /** tier base + priority / 1000. */
  priority: number;
  toolNames?: Wildcard[];
  mcpName?: string;
  argsPattern?: RE2JS;
  commandPrefixes?: string[];
  commandRegex?: RE2JS;
  modes?: string[];
  interactive?: boolean;
  allowRedirection: boolean;
  /** Set when the rule can never apply in Sluice (a subagent rule); kept for `sluice policy check`. */
  inactive?: string;
}

export interface GeminiPolicyOptions {
  workspace: string;
  /**
   * Policy files or folders of `*.toml` files with their tier. Default: the workspace tier's
   * `.gemini/policies` (skipped when missing). User and admin folders are read only when listed:
   * a worker should not depend on whose home directory it runs in.
   */
  sources?: { path: string; tier: GeminiTier }[];
  /** The approval mode rules are judged in (`modes`); default `default`. */
  mode?: string;
  /** Whether Sluice counts as interactive for rules with `interactive`; default true (a person can be asked). */
  interactive?: boolean;
}

function compileRe2(pattern: string, file: string, line: number, field: string): RE2JS {
  try {
    return RE2JS.compile(pattern);
  } catch (err) {
    throw new PolicyFileError(
      file,
      line,
      `${field} ${JSON.stringify(pattern)} is not a regular expression RE2 accepts (${(err as Error).message}); Sluice runs policy regexes on RE2 so that no pattern can take unbounded time — rewrite it without backreferences or lookaround`,
    );
  }
}

/** Parses one policy TOML file of a tier. */
export function parseGeminiPolicy(
  text: string,
  file: Pick<PolicyFile, 'label' | 'digest'>,
  tier: GeminiTier,
): GeminiRule[] {
  const list = ruleTables(text, file.label);
  const starts = ruleStarts(text);
  return list.map((raw, i) => {
    const line = starts.length === list.length ? starts[i] : 1;
    const fail = (what: string): never => {
      throw new PolicyFileError(file.label, line, `rule ${i + 1}: ${what}`);
    };
    return ruleOf(checkedFields(raw, fail), file, line, tier);
  });
}

/** The file's [[rule]] tables, unchecked; a file that is not TOML or holds other keys is refused. */
function ruleTables(text: string, label: string): unknown[] {
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(text) as Record<string, unknown>;
  } catch (err) {
    const line = err instanceof TomlError ? err.line : 1;
    throw new PolicyFileError(label, line, `not valid TOML (${(err as Error).message.split('\n')[0]})`);
  }
  for (const key of Object.keys(doc))
    if (key !== 'rule')
      throw new PolicyFileError(
        label,
        lineOfKey(text, key),
        `the key ${JSON.stringify(key)} is not understood; a policy file holds [[rule]] tables`,
      );
  const list = doc.rule ?? [];
  if (!Array.isArray(list)) throw new PolicyFileError(label, 1, '"rule" must be an array of tables, written [[rule]]');
  return list;
}

/** Where each [[rule]] starts, for errors and for the record. */
function ruleStarts(text: string): number[] {
  const starts: number[] = [];
  for (const m of text.matchAll(/^[ \t]*\[\[[ \t]*rule[ \t]*\]\]/gm)) starts.push(lineAt(text, m.index ?? 0));
  return starts;
}

/** A rule's fields, each checked for its type, in the order the errors are reported. */
interface RuleFields {
  r: Record<string, unknown>;
  decision: PolicyDecision;
  priority: number;
  toolNames?: string[];
  mcp?: string;
  prefixes?: string[];
  cre?: string;
  ap?: string;
  deny?: string;
  modes?: string[];
}

/** Checks one [[rule]] table field by field; `fail` throws with the rule's place. */
function checkedFields(raw: unknown, fail: (what: string) => never): RuleFields {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fail('must be a table');
  const r = raw as Record<string, unknown>;
  for (const k of Object.keys(r)) if (!FIELDS.has(k)) fail(`the field ${JSON.stringify(k)} is not understood`);
  const strings = (k: string): string[] | undefined => {
    const v = r[k];
    if (v === undefined) return undefined;
    const arr = Array.isArray(v) ? v : [v];
    if (arr.length === 0 || arr.some((s) => typeof s !== 'string' || s === ''))
      fail(`${k} must be a non-empty string or a list of them`);
    return arr as string[];
  };
  const decision = DECISIONS[r.decision as string];
  if (!decision) fail(`decision must be "allow", "deny" or "ask_user", not ${JSON.stringify(r.decision)}`);
  const p = r.priority ?? 0;
  if (typeof p !== 'number' || !Number.isInteger(p) || p < 0 || p > 999)
    fail(`priority must be a whole number from 0 to 999, not ${JSON.stringify(p)}`);
  const toolNames = strings('toolName');
  const mcp = r.mcpName;
  if (mcp !== undefined && (typeof mcp !== 'string' || !mcp)) fail('mcpName must be a non-empty string');
  const prefixes = strings('commandPrefix');
  const cre = r.commandRegex;
  if (cre !== undefined && typeof cre !== 'string') fail('commandRegex must be a string');
  if (prefixes && cre !== undefined) fail('commandPrefix and commandRegex cannot both be given');
  if ((prefixes || cre !== undefined) && toolNames && !toolNames.every((t) => t === SHELL))
    fail(`commandPrefix and commandRegex apply to ${SHELL} only`);
  const ap = r.argsPattern;
  if (ap !== undefined && typeof ap !== 'string') fail('argsPattern must be a string');
  const deny = r.denyMessage ?? r.deny_message;
  if (deny !== undefined && typeof deny !== 'string') fail('denyMessage must be a string');
  const modes = strings('modes');
  if (r.interactive !== undefined && typeof r.interactive !== 'boolean') fail('interactive must be true or false');
  if (r.allowRedirection !== undefined && typeof r.allowRedirection !== 'boolean')
    fail('allowRedirection must be true or false');
  if (r.subagent !== undefined && typeof r.subagent !== 'string') fail('subagent must be a string');
  if (r.toolAnnotations !== undefined)
    fail('toolAnnotations is not supported: Sluice calls carry no MCP annotations to match on; name the tools instead');
  return {
    r,
    decision,
    priority: p as number,
    toolNames,
    mcp: mcp as string | undefined,
    prefixes,
    cre: cre as string | undefined,
    ap: ap as string | undefined,
    deny: deny as string | undefined,
    modes,
  };
}

/** The rule as matched: its place, its tier's priority, tool names as patterns, regexes compiled on RE2. */
function ruleOf(f: RuleFields, file: Pick<PolicyFile, 'label' | 'digest'>, line: number, tier: GeminiTier): GeminiRule {
  const { r, toolNames, prefixes, cre, ap, deny, mcp, modes } = f;
  const names = toolNames ?? (prefixes || cre !== undefined ? [SHELL] : undefined);
  return {
    id: `${file.label}:${line}`,
    format: 'gemini',
    file: file.label,
    digest: file.digest,
    line,
    text: ruleText(r),
    decision: f.decision,
    ...(typeof deny === 'string' && deny.trim() ? { message: deny } : {}),
    tier,
    priority: TIER_BASE[tier] + f.priority / 1000,
    ...(names ? { toolNames: names.map((n) => wildcard(n)) } : {}),
    ...(typeof mcp === 'string' ? { mcpName: mcp } : {}),
    ...(typeof ap === 'string' ? { argsPattern: compileRe2(ap, file.label, line, 'argsPattern') } : {}),
    ...(prefixes ? { commandPrefixes: prefixes } : {}),
    ...(typeof cre === 'string'
      ? { commandRegex: compileRe2(`"command":"${cre}`, file.label, line, 'commandRegex') }
      : {}),
    ...(modes ? { modes } : {}),
    ...(typeof r.interactive === 'boolean' ? { interactive: r.interactive } : {}),
    allowRedirection: r.allowRedirection === true,
    ...(typeof r.subagent === 'string'
      ? { inactive: `subagent ${JSON.stringify(r.subagent)}: Sluice has no subagents` }
      : {}),
  };
}

function lineOfKey(text: string, key: string): number {
  const m = new RegExp(`^[ \\t]*\\[*[ \\t]*${key.replace(/[^A-Za-z0-9_-]/g, '.')}\\b`, 'm').exec(text);
  return m ? lineAt(text, m.index) : 1;
}

function ruleText(r: Record<string, unknown>): string {
  const keys = ['toolName', 'mcpName', 'commandPrefix', 'commandRegex', 'argsPattern', 'decision', 'priority', 'modes'];
  return keys
    .filter((k) => r[k] !== undefined)
    .map((k) => `${k} = ${JSON.stringify(r[k])}`)
    .join(', ');
}

/** JSON with keys sorted at every level, as Gemini CLI tests `argsPattern` against. */
export function stableJson(v: Json | undefined): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v ?? null);
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  const keys = Object.keys(v).sort();
  return `{${keys
    .filter((k) => v[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${stableJson(v[k])}`)
    .join(',')}}`;
}

interface GeminiCall {
  /** The name Gemini CLI would use: `run_shell_command`, `write_file`, `mcp_<server>_<tool>`, ... */
  names: string[];
  mcp?: { server: string; tool: string };
  args: JsonObject;
}

function geminiCall(call: PolicyCall): GeminiCall {
  const tool = { name: call.toolName, aliases: call.aliases ?? [] };
  const facing = hookFacingCall('gemini', call.toolName, tool, call.args);
  const m = /^mcp__([^_](?:[^_]|_(?!_))*)__(.+)$/.exec(call.toolName);
  if (m)
    return {
      names: [`mcp_${m[1]}_${m[2]}`, call.toolName],
      mcp: { server: m[1], tool: m[2] },
      args: call.args as JsonObject,
    };
  return { names: facing.matchNames, args: facing.toolInput };
}

function ruleMatches(rule: GeminiRule, c: GeminiCall): boolean {
  if (rule.mcpName !== undefined) {
    if (!c.mcp) return false;
    if (rule.mcpName !== '*' && rule.mcpName !== c.mcp.server) return false;
    // With mcpName, toolName is the tool's own name on that server.
    if (rule.toolNames && !rule.toolNames.some((re) => re.test(c.mcp!.tool))) return false;
  } else if (rule.toolNames && !rule.toolNames.some((re) => c.names.some((n) => re.test(n)))) {
    return false;
  }
  const json = stableJson(c.args);
  if (rule.argsPattern && !rule.argsPattern.matcher(json).find()) return false;
  if (rule.commandRegex && !rule.commandRegex.matcher(json).find()) return false;
  if (rule.commandPrefixes) {
    const command = typeof c.args.command === 'string' ? c.args.command.trim() : undefined;
    if (command === undefined) return false;
    // A prefix ends at a word boundary: `git` matches `git status`, not `gitk`.
    if (
      !rule.commandPrefixes.some((p) => command === p || (command.startsWith(p) && /^\s/.test(command.slice(p.length))))
    )
      return false;
  }
  return true;
}

export function geminiPolicy(opts: GeminiPolicyOptions): PolicySource {
  const workspace = path.resolve(opts.workspace);
  const explicit = opts.sources !== undefined;
  const files: PolicyFile[] = [];
  const rules: GeminiRule[] = [];
  for (const src of opts.sources ?? [{ path: '.gemini/policies', tier: 'workspace' as const }]) {
    if (!(src.tier in TIER_BASE))
      throw new Error(`gemini policy source ${src.path}: tier must be one of ${Object.keys(TIER_BASE).join(', ')}`);
    const abs = path.resolve(workspace, src.path);
    let list: string[];
    try {
      list = fs.statSync(abs).isDirectory()
        ? fs
            .readdirSync(abs)
            .filter((f) => f.endsWith('.toml'))
            .sort()
            .map((f) => path.join(abs, f))
        : [abs];
    } catch (err) {
      if (!explicit && (err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new PolicyFileError(labelOf(workspace, abs), 1, `cannot be read (${(err as Error).message})`);
    }
    for (const f of list) {
      const { file, text } = readPolicyFile(workspace, f, 'gemini');
      files.push(file);
      rules.push(...parseGeminiPolicy(text, file, src.tier));
    }
  }
  return geminiSource(files, rules, { mode: opts.mode ?? 'default', interactive: opts.interactive ?? true });
}

/** What shell.ts says of a line that redirects: Gemini CLI's allowRedirection lets these through. */
const REDIRECTIONS = new Set(['it redirects to or from a file', 'it has a here-document', 'it has a here-string']);

function geminiSource(
  files: PolicyFile[],
  rules: GeminiRule[],
  env: { mode: string; interactive: boolean },
): PolicySource {
  const warnings = rules.filter((r) => r.inactive).map((r) => `${r.file}:${r.line}: never applies (${r.inactive})`);
  const active = activeRules(rules, env);
  return {
    format: 'gemini',
    files,
    rules,
    warnings,
    evaluate: (call) => evaluateGemini(active, call),
    examples: () => ({ ran: 0, failures: [], matched: new Set<string>() }),
  };
}

/** The rules that apply in this mode, in the order Gemini CLI tries them. */
function activeRules(rules: GeminiRule[], env: { mode: string; interactive: boolean }): GeminiRule[] {
  return (
    rules
      .filter(
        (r) =>
          !r.inactive &&
          (!r.modes || r.modes.length === 0 || r.modes.includes(env.mode)) &&
          (r.interactive === undefined || r.interactive === env.interactive),
      )
      // Highest priority first; at equal priority the stricter decision first, so a tie fails closed.
      .sort((a, b) => b.priority - a.priority || STRICTNESS[b.decision] - STRICTNESS[a.decision])
  );
}

function decide(active: readonly GeminiRule[], c: GeminiCall): { rule?: GeminiRule; matched: GeminiRule[] } {
  const matched = active.filter((r) => ruleMatches(r, c));
  return { rule: matched[0], matched };
}

function evaluateGemini(active: readonly GeminiRule[], call: PolicyCall): SourceVerdict {
  const c = geminiCall(call);
  const whole = decide(active, c);
  const command = c.names[0] === SHELL && typeof c.args.command === 'string' ? c.args.command.trim() : undefined;
  if (command === undefined) {
    return whole.rule
      ? { decision: whole.rule.decision, rule: whole.rule, matched: whole.matched }
      : { decision: 'none', matched: [] };
  }
  return shellVerdict(active, c, command, whole);
}

/**
 * The command as bash reads it (shell.ts), judged command by command as Gemini CLI judges the
 * parts of a compound one, but with every command found anywhere: nested in `( … )`, `$( … )`
 * or `bash -c`, behind `env` / `timeout` / `xargs`, an absolute path's program name.
 */
function shellVerdict(
  active: readonly GeminiRule[],
  c: GeminiCall,
  command: string,
  whole: { rule?: GeminiRule; matched: GeminiRule[] },
): SourceVerdict {
  const reading = readShell(command);
  const verdicts = [whole];
  const strict: GeminiRule[] = [];
  for (const cmd of reading.commands) {
    const text = commandText(cmd);
    const plain = literal(text);
    if (plain !== undefined) verdicts.push(decide(active, { ...c, args: { ...c.args, command: plain } }));
    // Text only known when it runs could be whatever a deny or ask_user rule names.
    else strict.push(...active.filter((r) => r.decision !== 'allow' && couldMatch(r, c, text)));
  }
  const matched = [...new Set([...verdicts.flatMap((v) => v.matched), ...strict])];
  let worst: GeminiRule | undefined;
  for (const r of [...verdicts.map((v) => v.rule), ...strict])
    if (r && (!worst || STRICTNESS[r.decision] > STRICTNESS[worst.decision])) worst = r;
  if (worst && worst.decision !== 'allow') return { decision: worst.decision, rule: worst, matched };
  if (reading.unknown.length) {
    // Nothing denies or asks only because every rule that could apply allows: Sluice cannot
    // tell what runs, so the strictest thing an allow can become is an ask.
    const rule = active.find((r) => couldMatch(r, c, [null]));
    return rule
      ? { decision: 'ask', rule, matched, note: `Sluice cannot read the whole command (${reading.unknown[0]})` }
      : { decision: 'none', matched };
  }
  if (!worst) return { decision: 'none', matched };
  return allowVerdict(active, c, reading, worst, matched);
}

/**
 * An allow holds when every command written in the line is plain text and allowed, and the line
 * is nothing but those commands (and redirections, when every allowing rule permits them).
 */
function allowVerdict(
  active: readonly GeminiRule[],
  c: GeminiCall,
  reading: ShellReading,
  worst: GeminiRule,
  matched: GeminiRule[],
): SourceVerdict {
  const written = reading.commands.filter((cmd) => !cmd.derived);
  const perCommand = written.map((cmd) => {
    const plain = literal(commandText(cmd));
    return plain === undefined || cmd.assigns
      ? undefined
      : decide(active, { ...c, args: { ...c.args, command: plain } }).rule;
  });
  const redirects = reading.unprovable.filter((why) => REDIRECTIONS.has(why));
  if (
    written.length === 0 ||
    perCommand.some((r) => r?.decision !== 'allow') ||
    reading.unprovable.length > redirects.length
  )
    return { decision: 'none', matched, note: 'not every part of the command is allowed' };
  if (redirects.length && !perCommand.every((r) => r?.allowRedirection))
    return {
      decision: 'ask',
      rule: worst,
      matched,
      note: 'the command redirects input or output and the rule does not set allowRedirection',
    };
  return { decision: 'allow', rule: worst, matched };
}

/** Whether a rule could match a command some of whose text (`null`) is only known when it runs. */
function couldMatch(rule: GeminiRule, c: GeminiCall, text: Piece[]): boolean {
  if (!ruleMatches({ ...rule, commandPrefixes: undefined, commandRegex: undefined }, c)) return false;
  if (rule.commandRegex) return true; // a regex over unknown text: assume the worst
  if (!rule.commandPrefixes) return true;
  const cut = text.indexOf(null);
  const known = (cut < 0 ? text : text.slice(0, cut)).join('').trimStart();
  return rule.commandPrefixes.some(
    (p) =>
      p.startsWith(known) || (known.startsWith(p) && (known.length === p.length || /^\s/.test(known.slice(p.length)))),
  );
}
