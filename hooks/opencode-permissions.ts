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
import { shellWords, splitCompound } from './shell-words';
import { claudeToolName } from './tool-names';

const ACTIONS: Record<string, PolicyDecision> = { allow: 'allow', ask: 'ask', deny: 'deny' };

export interface OpenCodeRule extends PolicyRuleRef {
  permission: RegExp;
  pattern: RegExp;
}

export interface OpenCodeOptions {
  workspace: string;
  /** Config files, relative to the workspace. Default `opencode.json` (skipped when missing). */
  sources?: string[];
  /** Where `~` and `$HOME` in patterns point; default the worker's home folder. */
  home?: string;
}

/** OpenCode's wildcard: `*` any text, `?` one character, a trailing ` *` optional. */
export function openCodeWildcard(pattern: string): RegExp {
  let source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  if (source.endsWith(' .*')) source = `${source.slice(0, -3)}(?: .*)?`;
  return new RegExp(`^${source}$`, 's');
}

export function parseOpenCode(text: string, file: Pick<PolicyFile, 'label' | 'digest'>, home: string): OpenCodeRule[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    const m = /position (\d+)/.exec((err as Error).message);
    throw new PolicyFileError(
      file.label,
      m ? lineAt(text, Number(m[1])) : 1,
      `not valid JSON (${(err as Error).message})`,
    );
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new PolicyFileError(file.label, 1, 'must be a JSON object like {"permission": {...}}');
  const perm = (doc as Record<string, unknown>).permission;
  if (perm === undefined) return [];
  const rules: OpenCodeRule[] = [];
  // Lines: each key is looked for after the one before it, so repeated patterns get their own line.
  let cursor = Math.max(0, text.indexOf('"permission"'));
  const lineOf = (key: string) => {
    const at = text.indexOf(JSON.stringify(key), cursor);
    if (at < 0) return lineAt(text, cursor);
    cursor = at + 1;
    return lineAt(text, at);
  };
  const expandHome = (p: string) =>
    p === '~' ? home : p.startsWith('~/') ? home + p.slice(1) : p.startsWith('$HOME') ? home + p.slice(5) : p;
  const add = (permission: string, pattern: string, action: unknown, line: number, text: string) => {
    const decision = ACTIONS[action as string];
    if (!decision)
      throw new PolicyFileError(
        file.label,
        line,
        `${text}: the action must be "allow", "ask" or "deny", not ${JSON.stringify(action)}`,
      );
    rules.push({
      id: `${file.label}:${line}`,
      format: 'opencode',
      file: file.label,
      digest: file.digest,
      line,
      text,
      decision,
      permission: openCodeWildcard(permission),
      pattern: openCodeWildcard(permission === 'external_directory' ? expandHome(pattern) : pattern),
    });
  };
  if (typeof perm === 'string') {
    add('*', '*', perm, lineOf('permission'), `"permission": ${JSON.stringify(perm)}`);
    return rules;
  }
  if (typeof perm !== 'object' || perm === null || Array.isArray(perm))
    throw new PolicyFileError(
      file.label,
      lineOf('permission'),
      '"permission" must be an action or an object keyed by permission',
    );
  for (const [name, value] of Object.entries(perm)) {
    const line = lineOf(name);
    if (typeof value === 'string') {
      add(name, '*', value, line, `"${name}": ${JSON.stringify(value)}`);
    } else if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      for (const [pattern, action] of Object.entries(value))
        add(
          name,
          pattern,
          action,
          lineOf(pattern),
          `"${name}": {${JSON.stringify(pattern)}: ${JSON.stringify(action)}}`,
        );
    } else {
      throw new PolicyFileError(
        file.label,
        line,
        `"permission.${name}" must be an action or an object of pattern → action`,
      );
    }
  }
  return rules;
}

/** Wrappers whose inner command OpenCode also judges. */
const WRAPPERS = new Set(['timeout', 'time', 'nice', 'nohup', 'ionice', 'stdbuf', 'watch', 'sudo', 'env', 'xargs']);

/** The commands a shell command is judged as: each simple command, and each wrapped inner command. */
export function openCodeCommands(command: string): string[] {
  const out: string[] = [];
  for (const part of splitCompound(command)) {
    let words = shellWords(part);
    out.push(words.join(' '));
    // Peel wrappers: `timeout 5 sudo gh api` → `sudo gh api` → `gh api`.
    for (let guard = 0; guard < 8 && words.length > 1 && WRAPPERS.has(path.basename(words[0])); guard++) {
      const wrapper = path.basename(words[0]);
      let i = 1;
      while (
        i < words.length &&
        (words[i].startsWith('-') || (wrapper === 'env' && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i])))
      )
        i++;
      if (wrapper === 'timeout' && i < words.length && /^[0-9.]+[smhd]?$/.test(words[i])) i++;
      words = words.slice(i);
      if (words.length) out.push(words.join(' '));
    }
    const exec = words.indexOf('-exec');
    if (words[0] === 'find' && exec > 0 && exec + 1 < words.length) {
      const end = words.findIndex((w, j) => j > exec && (w === ';' || w === '+'));
      out.push(words.slice(exec + 1, end < 0 ? undefined : end).join(' '));
    }
  }
  return [...new Set(out.filter(Boolean))];
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

export function openCodeSource(files: PolicyFile[], rules: OpenCodeRule[], workspace: string): PolicySource {
  /** The last rule of the permission whose pattern matches the value. */
  const last = (permission: string, value: string) => {
    let found: OpenCodeRule | undefined;
    const all: OpenCodeRule[] = [];
    for (const r of rules)
      if (r.permission.test(permission) && r.pattern.test(value)) {
        found = r;
        all.push(r);
      }
    return { found, all };
  };

  function asks(call: PolicyCall): { permission: string; values: string[] }[] {
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
    else if (claude === 'Bash') out.push({ permission: 'bash', values: openCodeCommands(str('command') ?? '') });
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

  function evaluate(call: PolicyCall): SourceVerdict {
    const matched = new Set<OpenCodeRule>();
    let worst: OpenCodeRule | undefined;
    let undecided = false;
    for (const { permission, values } of asks(call)) {
      for (const v of values) {
        const { found, all } = last(permission, v);
        for (const r of all) matched.add(r);
        if (!found) {
          // Every command of a compound one must be allowed for the allow to stand.
          if (permission === 'bash') undecided = true;
          continue;
        }
        if (!worst || STRICTNESS[found.decision] > STRICTNESS[worst.decision]) worst = found;
      }
    }
    if (!worst) return { decision: 'none', matched: [...matched] };
    if (worst.decision === 'allow' && undecided)
      return { decision: 'none', matched: [...matched], note: 'not every command is allowed' };
    return { decision: worst.decision, rule: worst, matched: [...matched] };
  }

  return {
    format: 'opencode',
    files,
    rules,
    warnings: [],
    evaluate,
    examples: () => ({ ran: 0, failures: [], matched: new Set<string>() }),
  };
}
