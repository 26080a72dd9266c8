// OpenCode's `permission` block (`opencode.json` in the project), as its documentation defines it:
//
//   "permission": "ask"                                   every permission
//   "permission": { "*": "ask", "bash": "allow", "edit": "deny" }
//   "permission": { "bash": { "*": "ask", "git *": "allow", "rm *": "deny" },
//                   "edit": { "*": "deny", "docs/*.mdx": "allow" },
//                   "external_directory": { "~/projects/personal/**": "allow" } }
//
// Rules are tried in file order and the last one that matches wins. `*` is any run of characters,
// `?` one character; a trailing ` *` also matches nothing (`git *` matches `git`). Tools map to
// OpenCode's permissions: bash → `bash` (each command of a compound one, and the command inside
// a wrapper such as `sudo` or `timeout`), write/edit → `edit`, read → `read`, glob/grep → their
// pattern, MCP tools → `<server>_<tool>`; a call naming a path outside the workspace is also
// judged under `external_directory`. The strictest answer over all of these wins.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { JsonObject } from '../pipeline/types';
import { readPolicyFile } from './codex-rules';
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
import { commandText, literal, readShell, type ShellReading } from './shell';
import { refuseNearMisses } from './settings-keys';
import { claudeToolName } from './tool-names';
import { anyOf, type Wildcard, wildcard } from './wildcard';

const ACTIONS: Record<string, PolicyDecision> = { allow: 'allow', ask: 'ask', deny: 'deny' };

export interface OpenCodeRule extends PolicyRuleRef {
  permission: Wildcard;
  pattern: Wildcard;
  /** The pattern as written (a wildcard), for judging commands only partly known before they run. */
  wildcard: string;
}

export interface OpenCodeOptions {
  workspace: string;
  /** Config files, relative to the workspace. Default `opencode.json` (skipped when missing). */
  sources?: string[];
  /** Where `~` and `$HOME` in patterns point; default the worker's home folder. */
  home?: string;
}

/** OpenCode's wildcard: `*` any text, `?` one character, a trailing ` *` optional; matched in linear time (wildcard.ts). */
export function openCodeWildcard(pattern: string): Wildcard {
  return pattern.endsWith(' *') ? anyOf([wildcard(pattern), wildcard(pattern.slice(0, -2))]) : wildcard(pattern);
}

function parseOpenCode(text: string, file: Pick<PolicyFile, 'label' | 'digest'>, home: string): OpenCodeRule[] {
  const doc = readJsonObject(text, file.label);
  // `"permissions"` (Claude Code's spelling) is a key OpenCode reads past: its rules would not apply.
  refuseNearMisses(file.label, 'the top level', doc, ['permission']);
  const perm = doc.permission;
  if (perm === undefined) return [];
  const lines = new KeyLines(text);
  if (typeof perm === 'string') {
    const line = lines.of('permission');
    return [
      openCodeRule(file, home, {
        permission: '*',
        pattern: '*',
        action: perm,
        line,
        text: `"permission": ${JSON.stringify(perm)}`,
      }),
    ];
  }
  if (typeof perm !== 'object' || perm === null || Array.isArray(perm))
    throw new PolicyFileError(
      file.label,
      lines.of('permission'),
      '"permission" must be an action or an object keyed by permission',
    );
  const rules: OpenCodeRule[] = [];
  for (const [name, value] of Object.entries(perm)) rules.push(...entryRules(file, home, lines, name, value));
  return rules;
}

/** The file parsed as JSON; it must be an object. Errors name the line JSON.parse stopped at. */
function readJsonObject(text: string, label: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    const m = /position (\d+)/.exec((err as Error).message);
    throw new PolicyFileError(label, m ? lineAt(text, Number(m[1])) : 1, `not valid JSON (${(err as Error).message})`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new PolicyFileError(label, 1, 'must be a JSON object like {"permission": {...}}');
  return doc as Record<string, unknown>;
}

/**
 * Finds the line of each key in the text. JSON.parse keeps no positions, so each key is looked
 * for after the one before it (starting at "permission"), and repeated patterns get their own line.
 */
class KeyLines {
  private cursor: number;
  constructor(private readonly text: string) {
    this.cursor = Math.max(0, text.indexOf('"permission"'));
  }
  of(key: string): number {
    const at = this.text.indexOf(JSON.stringify(key), this.cursor);
    if (at < 0) return lineAt(this.text, this.cursor);
    this.cursor = at + 1;
    return lineAt(this.text, at);
  }
}

/** One entry of the permission object: `"bash": "ask"` or `"bash": { "<pattern>": "<action>", ... }`. */
function entryRules(
  file: Pick<PolicyFile, 'label' | 'digest'>,
  home: string,
  lines: KeyLines,
  name: string,
  value: unknown,
): OpenCodeRule[] {
  const line = lines.of(name);
  if (typeof value === 'string')
    return [
      openCodeRule(file, home, {
        permission: name,
        pattern: '*',
        action: value,
        line,
        text: `"${name}": ${JSON.stringify(value)}`,
      }),
    ];
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new PolicyFileError(
      file.label,
      line,
      `"permission.${name}" must be an action or an object of pattern → action`,
    );
  const rules: OpenCodeRule[] = [];
  for (const [pattern, action] of Object.entries(value)) {
    const at = lines.of(pattern);
    const shown = `"${name}": {${JSON.stringify(pattern)}: ${JSON.stringify(action)}}`;
    rules.push(openCodeRule(file, home, { permission: name, pattern, action, line: at, text: shown }));
  }
  return rules;
}

/** One rule; `text` is how it is shown (in errors and verdicts). */
function openCodeRule(
  file: Pick<PolicyFile, 'label' | 'digest'>,
  home: string,
  r: { permission: string; pattern: string; action: unknown; line: number; text: string },
): OpenCodeRule {
  const decision = ACTIONS[r.action as string];
  if (!decision)
    throw new PolicyFileError(
      file.label,
      r.line,
      `${r.text}: the action must be "allow", "ask" or "deny", not ${JSON.stringify(r.action)}`,
    );
  // Only external_directory patterns are paths, where `~` and `$HOME` mean the home folder.
  const pattern = r.permission === 'external_directory' ? expandHome(r.pattern, home) : r.pattern;
  return {
    id: `${file.label}:${r.line}`,
    format: 'opencode',
    file: file.label,
    digest: file.digest,
    line: r.line,
    text: r.text,
    decision,
    permission: openCodeWildcard(r.permission),
    pattern: openCodeWildcard(pattern),
    wildcard: r.pattern,
  };
}

function expandHome(p: string, home: string): string {
  return p === '~' ? home : p.startsWith('~/') ? home + p.slice(1) : p.startsWith('$HOME') ? home + p.slice(5) : p;
}

/** The literal start of a wildcard: the text before its first `*` or `?`. */
function wildcardStart(pattern: string): string {
  const cut = pattern.search(/[*?]/);
  return cut < 0 ? pattern : pattern.slice(0, cut);
}

export function openCodePermissions(opts: OpenCodeOptions): PolicySource {
  const workspace = path.resolve(opts.workspace);
  const home = opts.home ?? os.homedir();
  const files: PolicyFile[] = [];
  const rules: OpenCodeRule[] = [];
  for (const rel of opts.sources ?? ['opencode.json']) {
    const abs = path.resolve(workspace, rel);
    if (opts.sources === undefined && !fs.existsSync(abs)) continue;
    const { file, text } = readPolicyFile(workspace, abs, 'opencode');
    files.push(file);
    rules.push(...parseOpenCode(text, file, home));
  }
  return openCodeSource(files, rules, workspace);
}

function openCodeSource(files: PolicyFile[], rules: OpenCodeRule[], workspace: string): PolicySource {
  return {
    format: 'opencode',
    files,
    rules,
    warnings: [],
    evaluate: (call) => evaluateOpenCode(rules, workspace, call),
    examples: () => ({ ran: 0, failures: [], matched: new Set<string>() }),
  };
}

/** The last rule the test selects (the one OpenCode applies), and every rule it selects. */
function lastWhere(
  rules: readonly OpenCodeRule[],
  test: (r: OpenCodeRule) => boolean,
): { found?: OpenCodeRule; all: OpenCodeRule[] } {
  let found: OpenCodeRule | undefined;
  const all: OpenCodeRule[] = [];
  for (const r of rules)
    if (test(r)) {
      found = r;
      all.push(r);
    }
  return { found, all };
}

/** The last rule of the permission whose pattern matches the value. */
function lastOf(rules: readonly OpenCodeRule[], permission: string, value: string) {
  return lastWhere(rules, (r) => r.permission.test(permission) && r.pattern.test(value));
}

/** The last bash rule that names a command (not a bare `*`) and matches the value. */
function lastNamed(rules: readonly OpenCodeRule[], value: string) {
  return lastWhere(rules, (r) => r.wildcard !== '*' && r.permission.test('bash') && r.pattern.test(value));
}

/** The permissions OpenCode would ask for the call, each with the values its patterns match. */
function asks(call: PolicyCall, workspace: string): { permission: string; values: string[] }[] {
  const claude = claudeToolName({ name: call.toolName, aliases: call.aliases ?? [] });
  const a = call.args as JsonObject;
  const str = (k: string) => (typeof a[k] === 'string' ? (a[k] as string) : undefined);
  const rel = (p: string) => {
    const abs = path.resolve(workspace, p);
    const r = path.relative(workspace, abs);
    return r.startsWith('..') || path.isAbsolute(r) ? abs : r.split(path.sep).join('/');
  };
  const out: { permission: string; values: string[] }[] = [];
  const filePath = str('file_path') ?? str('path');
  if (filePath !== undefined) {
    const abs = path.resolve(workspace, filePath);
    const r = path.relative(workspace, abs);
    if (r.startsWith('..') || path.isAbsolute(r))
      out.push({ permission: 'external_directory', values: [abs, `${path.dirname(abs)}/*`] });
  }
  const mcp = /^mcp__(.+?)__(.+)$/.exec(call.toolName);
  if (mcp) out.push({ permission: `${mcp[1]}_${mcp[2]}`, values: ['*'] });
  else if (claude === 'Bash')
    out.push({ permission: 'bash', values: [] }); // judged in bashVerdict
  else if (['Write', 'Edit', 'MultiEdit', 'NotebookEdit'].includes(claude))
    out.push({ permission: 'edit', values: [rel(filePath ?? '')] });
  else if (claude === 'Read') out.push({ permission: 'read', values: [rel(filePath ?? '')] });
  else if (claude === 'Glob' || claude === 'Grep')
    out.push({ permission: claude.toLowerCase(), values: [str('pattern') ?? '*'] });
  else if (claude === 'LS') out.push({ permission: 'list', values: [rel(filePath ?? '.')] });
  else if (claude === 'TodoWrite') out.push({ permission: 'todowrite', values: ['*'] });
  else if (claude === 'WebFetch') out.push({ permission: 'webfetch', values: [str('url') ?? '*'] });
  else out.push({ permission: call.toolName, values: ['*'] });
  return out;
}

/**
 * A Bash command as bash reads it (shell.ts): every simple command found anywhere, nested in
 * `( … )`, `$( … )` or `bash -c`, behind a wrapper (`env`, `timeout`, `sudo`, `xargs`,
 * `find -exec`, ...) or by its program's name when written as a path. A deny or ask on any of
 * them decides; an allow stands only when every command written in the line is allowed and the
 * parser read all of it. Text only known when it runs could be whatever a deny or ask names.
 */
function bashVerdict(
  rules: readonly OpenCodeRule[],
  reading: ShellReading,
  matched: Set<OpenCodeRule>,
): { worst?: OpenCodeRule; undecided: boolean } {
  const bashRules = rules.filter((r) => r.permission.test('bash'));
  let worst: OpenCodeRule | undefined;
  let undecided = reading.unprovable.length > 0;
  const take = (r: OpenCodeRule) => {
    matched.add(r);
    if (!worst || STRICTNESS[r.decision] > STRICTNESS[worst.decision]) worst = r;
  };
  for (const cmd of reading.commands) {
    const text = commandText(cmd);
    const plain = literal(text);
    if (plain !== undefined) {
      // A bare `*` names no command: for the tails Sluice derives from a wrapper's arguments
      // (`5 git status` of `timeout 5 git status`) it would only repeat the wrapper's verdict.
      const { found, all } = cmd.derived ? lastNamed(rules, plain) : lastOf(rules, 'bash', plain);
      for (const r of all) matched.add(r);
      if (!found || cmd.assigns) {
        if (!cmd.derived) undecided = true;
        if (!found) continue;
      }
      // A wrapped or nested command's allow says nothing of the line; its deny or ask does.
      if (!cmd.derived || found.decision !== 'allow') take(found);
      continue;
    }
    // The last rule that surely matches whatever the unknown text is (`git *` for `git $X`)
    // hides the rules before it; of those from there on, any that could match may be the one.
    const cut = text.indexOf(null);
    const known = (cut < 0 ? text : text.slice(0, cut)).join('');
    const could = (r: OpenCodeRule) => {
      const start = wildcardStart(r.wildcard);
      return start.startsWith(known) || known.startsWith(start);
    };
    const sure = (r: OpenCodeRule) => /^[^*?]*\*$/.test(r.wildcard) && known.startsWith(r.wildcard.slice(0, -1));
    let from = -1;
    if (!reading.unknown.length) bashRules.forEach((r, k) => sure(r) && (from = k));
    // With no rule sure to match, the command may match none: the line is not all allowed.
    if (from < 0 && !cmd.derived) undecided = true;
    for (const r of bashRules.slice(Math.max(from, 0))) if (could(r)) take(r);
  }
  if (reading.unknown.length && worst?.decision === 'allow') return { worst, undecided: true };
  return { worst, undecided };
}

/** The strictest of the rules that decide the call's asks; an allow only when it vouches for the whole call. */
function evaluateOpenCode(rules: readonly OpenCodeRule[], workspace: string, call: PolicyCall): SourceVerdict {
  const matched = new Set<OpenCodeRule>();
  let worst: OpenCodeRule | undefined;
  let undecided = false;
  let unreadable: string | undefined;
  for (const { permission, values } of asks(call, workspace)) {
    if (permission === 'bash') {
      const reading = readShell(typeof call.args.command === 'string' ? call.args.command : '');
      const v = bashVerdict(rules, reading, matched);
      if (reading.unknown.length) unreadable = reading.unknown[0];
      undecided ||= v.undecided;
      if (v.worst && (!worst || STRICTNESS[v.worst.decision] > STRICTNESS[worst.decision])) worst = v.worst;
      continue;
    }
    for (const v of values) {
      const { found, all } = lastOf(rules, permission, v);
      for (const r of all) matched.add(r);
      if (!found) continue;
      if (!worst || STRICTNESS[found.decision] > STRICTNESS[worst.decision]) worst = found;
    }
  }
  if (!worst) return { decision: 'none', matched: [...matched] };
  if (worst.decision === 'allow' && unreadable)
    return {
      decision: 'ask',
      rule: worst,
      matched: [...matched],
      note: `Sluice cannot read the whole command (${unreadable}), so the allow does not vouch for it`,
    };
  if (worst.decision === 'allow' && undecided)
    return { decision: 'none', matched: [...matched], note: 'not every command is allowed' };
  return { decision: worst.decision, rule: worst, matched: [...matched] };
}
