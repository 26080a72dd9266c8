// The deny rules of every policy format, as bash's sandbox holds them at exec time
// (tools/exec-deny.ts): a program and the argument lists denied. A rule that names no program
// (a pattern starting with `*`, a Gemini regex, a relative path) stays with the judgment of the
// command text; so does a deny another rule of its own file can override (a Gemini allow of
// higher priority, a later OpenCode pattern), since holding it where the command runs would deny
// what the policy allows.
import { ANY_TEXT, type ExecDenyRule, execPattern, ONE_CHAR } from '../tools/exec-deny';
import type { CodexRule } from './codex-rules';
import type { GeminiRule } from './gemini-policy';
import type { OpenCodeRule } from './opencode-permissions';
import { covers, type PermissionRule } from './permission-rules';
import type { PolicySource } from './policy-types';

type ClaudePattern = NonNullable<PermissionRule['bash']>[number];

/** Claude Code `deny` Bash rules with a command: `Bash(touch:*)`, `Bash(git push:*)`. */
export function claudeExecDenies(rules: readonly PermissionRule[]): ExecDenyRule[] {
  const out: ExecDenyRule[] = [];
  for (const r of rules) {
    if (r.kind !== 'deny' || (r.tool !== 'Bash' && r.tool !== 'bash') || !r.bash) continue;
    const byProgram = new Map<string, ClaudePattern[]>();
    for (const p of r.bash) {
      const word = programOf(p.map((c) => (typeof c === 'string' ? c : '*')).join(''));
      if (word) byProgram.set(word, [...(byProgram.get(word) ?? []), p]);
    }
    for (const [program, patterns] of byProgram) {
      const whole =
        patterns.some((p) => covers(p, [program])) && patterns.some((p) => covers(p, [`${program} `, null]));
      const glob = (p: ClaudePattern) => execPattern(runs(p.map((c) => (typeof c === 'string' ? c : ANY_TEXT))));
      out.push({ program, patterns: patterns.map(glob), whole, rule: r.text, file: r.file });
    }
  }
  return out;
}

/** The deny rules of Codex, Gemini CLI and OpenCode sources (Claude Code's register themselves). */
export function policyExecDenies(source: PolicySource): ExecDenyRule[] {
  if (source.format === 'codex') return codexDenies(source.rules as CodexRule[]);
  if (source.format === 'gemini') return geminiDenies(source.rules as GeminiRule[]);
  if (source.format === 'opencode') return openCodeDenies(source.rules as OpenCodeRule[]);
  return [];
}

/** How many argument lists a Codex rule's alternatives may spell out; beyond, the judgment holds it. */
const MAX_SPELLINGS = 64;

/** `prefix_rule(pattern = ["git", "push"], decision = "forbidden")`: the words as an argument prefix. */
function codexDenies(rules: readonly CodexRule[]): ExecDenyRule[] {
  const out: ExecDenyRule[] = [];
  for (const r of rules) {
    if (r.codexDecision !== 'forbidden' || !Array.isArray(r.pattern) || !r.pattern.length) continue;
    let rests: string[][] = [[]];
    for (const alts of r.pattern.slice(1)) {
      rests = rests.flatMap((rest) => alts.map((a) => [...rest, a]));
      if (rests.length > MAX_SPELLINGS) break;
    }
    if (rests.length > MAX_SPELLINGS) continue;
    for (const program of r.pattern[0]) {
      if (!program || /\s/.test(program)) continue;
      const patterns = rests.flatMap((rest) => {
        const text = [program, ...rest].join(' ');
        return [execPattern([text]), execPattern([`${text} `, ANY_TEXT])];
      });
      out.push({ program, patterns, whole: r.pattern.length === 1, rule: r.text, file: r.file });
    }
  }
  return out;
}

const GEMINI_SHELL = 'run_shell_command';

/** Gemini `deny` rules for the shell tool with `commandPrefix`, unless a higher-priority rule could allow. */
function geminiDenies(rules: readonly GeminiRule[]): ExecDenyRule[] {
  const forShell = (r: GeminiRule) =>
    !r.inactive &&
    r.mcpName === undefined &&
    (!r.toolNames || r.toolNames.some((re) => re.test(GEMINI_SHELL))) &&
    !r.modes?.length &&
    r.interactive === undefined;
  const out: ExecDenyRule[] = [];
  for (const r of rules) {
    if (r.decision !== 'deny' || !forShell(r) || !r.commandPrefixes || r.argsPattern || r.commandRegex) continue;
    if (rules.some((o) => o.decision !== 'deny' && forShell(o) && o.priority > r.priority)) continue;
    for (const prefix of r.commandPrefixes) {
      const text = prefix.trim().split(/\s+/).join(' ');
      const program = text.split(' ')[0];
      if (!program) continue;
      const patterns = [execPattern([text]), execPattern([`${text} `, ANY_TEXT])];
      out.push({ program, patterns, whole: text === program, rule: r.text, file: r.file });
    }
  }
  return out;
}

/** OpenCode `"bash": { "rm *": "deny" }`, unless a later bash pattern (the last match wins) could allow. */
function openCodeDenies(rules: readonly OpenCodeRule[]): ExecDenyRule[] {
  const bash = rules.filter((r) => r.permission.test('bash'));
  const out: ExecDenyRule[] = [];
  bash.forEach((r, i) => {
    if (r.decision !== 'deny') return;
    const program = programOf(r.wildcard, '*?');
    if (!program) return;
    const later = bash.slice(i + 1).filter((o) => o.decision !== 'deny');
    if (later.some((o) => programOf(o.wildcard, '*?') === program || !programOf(o.wildcard, '*?'))) return;
    const pieces = (w: string) => runs([...w].map((c) => (c === '*' ? ANY_TEXT : c === '?' ? ONE_CHAR : c)));
    const patterns = [execPattern(pieces(r.wildcard))];
    if (r.wildcard.endsWith(' *')) patterns.push(execPattern(pieces(r.wildcard.slice(0, -2))));
    const rest = r.wildcard.slice(program.length);
    out.push({ program, patterns, whole: rest === '*' || rest === ' *', rule: r.text, file: r.file });
  });
  return out;
}

/**
 * The program a pattern names: its literal text up to the first space, when a space or the end
 * follows (`touch:*`, `git push`) or a wildcard does (`touch*` still only runs as touch); empty
 * when the pattern starts with a wildcard.
 */
function programOf(pattern: string, wildcards = '*'): string {
  let i = 0;
  while (i < pattern.length && pattern[i] !== ' ' && !wildcards.includes(pattern[i])) i++;
  return pattern.slice(0, i);
}

/** Characters joined into runs of text between the wildcards. */
function runs<T>(chars: readonly (string | T)[]): (string | T)[] {
  const out: (string | T)[] = [];
  for (const c of chars) {
    const last = out[out.length - 1];
    if (typeof c === 'string' && typeof last === 'string') out[out.length - 1] = last + c;
    else out.push(c);
  }
  return out;
}
