// Codex's `.rules` files (`.codex/rules/*.rules`), read without running them. Codex evaluates them
// as Starlark; Sluice parses the subset its documentation describes and nothing else:
//
//   prefix_rule(pattern = ["git", ["push", "fetch"]], decision = "prompt",
//               justification = "…", match = ["git push origin"], not_match = [["git", "status"]])
//   host_executable(name = "git", paths = ["/usr/bin/git"])
//   NAME = <literal>            (a string or a list, reused by name later; `+` joins lists/strings)
//
// Anything else (another call, `load`, a loop, a def) stops the worker with the file, the line and
// what was not understood. A pattern is a token prefix: each element a word or a list of
// alternatives. When several rules match, the strictest decision wins (forbidden > prompt > allow).
// Each rule's `match` / `not_match` examples are unit tests; `codexRules()` runs them and refuses
// to start when one fails, as Codex refuses to load the file.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import { digestOf } from './pin';
import {
  type ExampleFailure,
  type PolicyCall,
  type PolicyDecision,
  type PolicyFile,
  PolicyFileError,
  type PolicyRuleRef,
  type PolicySource,
  type SourceVerdict,
  STRICTNESS,
} from './policy-types';
import { literal, readShell, type ShellCommand } from './shell';
import { claudeToolName } from './tool-names';

// ---- the Starlark subset: tokens, values, calls ----

type Tok =
  | { t: 'name'; v: string; at: number }
  | { t: 'str'; v: string; at: number }
  | { t: 'num'; v: string; at: number }
  | { t: 'punct'; v: string; at: number }
  | { t: 'eof'; at: number };

type Value = { kind: 'str'; v: string; at: number } | { kind: 'list'; items: Value[]; at: number };

interface Call {
  fn: string;
  at: number;
  end: number;
  kwargs: Map<string, Value>;
}

class Reader {
  constructor(
    readonly file: string,
    readonly text: string,
  ) {}
  fail(at: number, what: string): never {
    throw new PolicyFileError(this.file, lineOf(this.text, at), what);
  }
}

function lineOf(text: string, at: number): number {
  let line = 1;
  for (let i = 0; i < at && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

function tokenize(r: Reader): Tok[] {
  const s = r.text;
  const out: Tok[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === '#') {
      while (i < s.length && s[i] !== '\n') i++;
    } else if (/\s/.test(c)) {
      i++;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(s.slice(i))![0];
      // r"…" and r'…' are raw strings.
      if ((m === 'r' || m === 'R') && (s[i + 1] === '"' || s[i + 1] === "'")) {
        const str = readString(r, i + 1, true);
        out.push({ t: 'str', v: str.v, at: i });
        i = str.end;
      } else {
        out.push({ t: 'name', v: m, at: i });
        i += m.length;
      }
    } else if (/[0-9]/.test(c)) {
      const m = /^[0-9]+/.exec(s.slice(i))![0];
      out.push({ t: 'num', v: m, at: i });
      i += m.length;
    } else if (c === '"' || c === "'") {
      const str = readString(r, i, false);
      out.push({ t: 'str', v: str.v, at: i });
      i = str.end;
    } else if ('()[],=+'.includes(c)) {
      out.push({ t: 'punct', v: c, at: i });
      i++;
    } else {
      r.fail(
        i,
        `the character ${JSON.stringify(c)} is not understood here; Sluice reads prefix_rule(...) and host_executable(...) calls with string and list literals only`,
      );
    }
  }
  out.push({ t: 'eof', at: s.length });
  return out;
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', '"': '"', "'": "'", '\n': '' };

function readString(r: Reader, start: number, raw: boolean): { v: string; end: number } {
  const s = r.text;
  const q = s[start];
  const triple = s.startsWith(q.repeat(3), start);
  const close = triple ? q.repeat(3) : q;
  let i = start + close.length;
  let v = '';
  while (i < s.length) {
    if (s.startsWith(close, i)) return { v, end: i + close.length };
    const c = s[i];
    if (c === '\n' && !triple) r.fail(start, 'a string is not closed before the end of its line');
    if (c === '\\' && !raw) {
      const n = s[i + 1];
      if (n === undefined) break;
      if (!(n in ESCAPES))
        r.fail(i, `the escape \\${n} is not understood; write the character itself, or use a raw string r"..."`);
      v += ESCAPES[n];
      i += 2;
      continue;
    }
    v += c;
    i++;
  }
  return r.fail(start, 'a string is not closed');
}

interface Parsed {
  calls: Call[];
}

function parseStarlark(r: Reader): Parsed {
  return { calls: new StarlarkParser(r, tokenize(r)).calls() };
}

/**
 * Reads the token list top to bottom: each statement is either `NAME = value` (remembered for
 * later values) or a `prefix_rule(...)` / `host_executable(...)` call with keyword arguments.
 */
class StarlarkParser {
  private p = 0;
  private readonly vars = new Map<string, Value>();

  constructor(
    private readonly r: Reader,
    private readonly toks: Tok[],
  ) {}

  calls(): Call[] {
    const calls: Call[] = [];
    while (this.peek().t !== 'eof') {
      const call = this.statement();
      if (call) calls.push(call);
    }
    return calls;
  }

  /** One top-level statement: a binding (nothing to return) or a call. */
  private statement(): Call | undefined {
    const t = this.next();
    if (t.t !== 'name')
      this.r.fail(t.at, `expected prefix_rule(...), host_executable(...) or NAME = value, found ${describe(t)}`);
    if (this.atPunct('=')) {
      this.next();
      this.vars.set(t.v, this.value());
      return undefined;
    }
    if (!this.atPunct('('))
      this.r.fail(
        t.at,
        `${describe(t)} is not understood; Sluice reads prefix_rule(...), host_executable(...) and NAME = value statements only`,
      );
    if (t.v !== 'prefix_rule' && t.v !== 'host_executable')
      this.r.fail(
        t.at,
        `${t.v}(...) is not understood; Sluice reads prefix_rule(...) and host_executable(...) only, and never runs a rules file as code`,
      );
    this.next();
    return this.callArguments(t.v, t.at);
  }

  /** The `name = value, ...)` after a call's opening parenthesis, through the closing one. */
  private callArguments(fn: string, at: number): Call {
    const kwargs = new Map<string, Value>();
    while (!this.atPunct(')')) {
      const k = this.next();
      if (k.t !== 'name') this.r.fail(k.at, `${fn}() takes keyword arguments (name = value), found ${describe(k)}`);
      this.expect('=', `after ${k.v}`);
      if (kwargs.has(k.v)) this.r.fail(k.at, `${k.v} is given twice`);
      kwargs.set(k.v, this.value());
      const sep = this.peek();
      if (sep.t === 'punct' && sep.v === ',') this.next();
      else if (!(sep.t === 'punct' && sep.v === ')'))
        this.r.fail(sep.at, `expected "," or ")" in ${fn}(...), found ${describe(sep)}`);
    }
    const close = this.next();
    return { fn, at, end: close.at + 1, kwargs };
  }

  /** A value: primaries joined by `+` (string to string, list to list). */
  private value(): Value {
    let left = this.primary();
    while (this.atPunct('+')) {
      const plus = this.next();
      const right = this.primary();
      if (left.kind === 'str' && right.kind === 'str') left = { kind: 'str', v: left.v + right.v, at: left.at };
      else if (left.kind === 'list' && right.kind === 'list')
        left = { kind: 'list', items: [...left.items, ...right.items], at: left.at };
      else this.r.fail(plus.at, '`+` joins two strings or two lists only');
    }
    return left;
  }

  /** A string literal, a list literal, or a name bound earlier. */
  private primary(): Value {
    const t = this.next();
    if (t.t === 'str') return { kind: 'str', v: t.v, at: t.at };
    if (t.t === 'punct' && t.v === '[') return this.listItems(t.at);
    if (t.t === 'name') return this.boundName(t.v, t.at);
    return this.r.fail(t.at, `expected a string or a list, found ${describe(t)}`);
  }

  /** The items after a list's `[`, through its `]`. */
  private listItems(at: number): Value {
    const items: Value[] = [];
    while (!this.atPunct(']')) {
      items.push(this.value());
      const sep = this.peek();
      if (sep.t === 'punct' && sep.v === ',') this.next();
      else if (!(sep.t === 'punct' && sep.v === ']'))
        this.r.fail(sep.at, `expected "," or "]" in a list, found ${describe(sep)}`);
    }
    this.next();
    return { kind: 'list', items, at };
  }

  private boundName(name: string, at: number): Value {
    const bound = this.vars.get(name);
    if (bound) return bound;
    if (this.atPunct('('))
      this.r.fail(
        at,
        `the call ${name}(...) is not understood inside a value; Sluice does not run Starlark, it reads literals`,
      );
    return this.r.fail(
      at,
      `the name ${name} is not defined before this line (define it as NAME = [...] or "..." above)`,
    );
  }

  private peek(): Tok {
    return this.toks[this.p];
  }
  private next(): Tok {
    return this.toks[this.p++];
  }
  private atPunct(v: string): boolean {
    const t = this.peek();
    return t.t === 'punct' && t.v === v;
  }
  private expect(v: string, what: string): Tok {
    const t = this.next();
    if (t.t !== 'punct' || t.v !== v) this.r.fail(t.at, `expected ${JSON.stringify(v)} ${what}, found ${describe(t)}`);
    return t;
  }
}

function describe(t: Tok): string {
  if (t.t === 'eof') return 'the end of the file';
  if (t.t === 'str') return `the string ${JSON.stringify(t.v)}`;
  return `\`${t.v}\``;
}

// ---- rules ----

type CodexDecision = 'allow' | 'prompt' | 'forbidden';
const TO_SLUICE: Record<CodexDecision, PolicyDecision> = { allow: 'allow', prompt: 'ask', forbidden: 'deny' };

export interface CodexRule extends PolicyRuleRef {
  /** Each position: the words that match there. */
  pattern: string[][];
  codexDecision: CodexDecision;
  examples: { match: string[][]; notMatch: string[][]; raw: { match: string[]; notMatch: string[] } };
}

interface ParsedRulesFile {
  rules: CodexRule[];
  /** host_executable: a bare program name → the absolute paths that count as it. */
  hosts: Map<string, string[]>;
}

const PREFIX_RULE_ARGS = new Set(['pattern', 'decision', 'justification', 'match', 'not_match']);

/** Parses one `.rules` file; throws PolicyFileError naming the line of anything not understood. */
export function parseRulesFile(text: string, file: Pick<PolicyFile, 'label' | 'digest'>): ParsedRulesFile {
  const r: Reader = new Reader(file.label, text);
  const { calls } = parseStarlark(r);
  const rules: CodexRule[] = [];
  const hosts = new Map<string, string[]>();
  // Several rules on one line get ids `file:line`, `file:line#2`, ...
  const perLine = new Map<number, number>();
  for (const call of calls) {
    if (call.fn === 'host_executable') {
      const host = readHostExecutable(r, call);
      hosts.set(host.name, [...(hosts.get(host.name) ?? []), ...host.paths]);
      continue;
    }
    const rule = readPrefixRule(r, call);
    const line = lineOf(text, call.at);
    const nth = perLine.get(line) ?? 0;
    perLine.set(line, nth + 1);
    rules.push({
      id: `${file.label}:${line}${nth ? `#${nth + 1}` : ''}`,
      format: 'codex',
      file: file.label,
      digest: file.digest,
      line,
      text: ruleText(rule.pattern, rule.codexDecision),
      decision: TO_SLUICE[rule.codexDecision],
      ...(rule.message ? { message: rule.message } : {}),
      pattern: rule.pattern,
      codexDecision: rule.codexDecision,
      examples: rule.examples,
    });
  }
  return { rules, hosts };
}

/**
 * `host_executable(name = "git", paths = ["/usr/bin/git"])`: the paths must be absolute, or start
 * at the home folder (`~/.openai/bin/az`, as Codex's own examples write them; Codex expands them).
 */
function readHostExecutable(r: Reader, call: Call): { name: string; paths: string[] } {
  const name = call.kwargs.get('name');
  const paths = call.kwargs.get('paths');
  if (name?.kind !== 'str') r.fail(call.at, 'host_executable needs name = "<program>"');
  if (paths?.kind !== 'list' || paths.items.some((i) => i.kind !== 'str'))
    r.fail(call.at, 'host_executable needs paths = ["/absolute/path", ...]');
  for (const k of call.kwargs.keys())
    if (k !== 'name' && k !== 'paths') r.fail(call.at, `host_executable has no argument ${k}`);
  const list = (paths.items as { v: string }[]).map((i) =>
    i.v.startsWith('~/') ? path.join(os.homedir(), i.v.slice(2)) : i.v,
  );
  for (const p of list)
    if (!path.isAbsolute(p))
      r.fail(paths.at, `host_executable paths must be absolute or start with ~/, not ${JSON.stringify(p)}`);
  return { name: name.v, paths: list };
}

/** The arguments of one `prefix_rule(...)`, checked in the order they are reported. */
function readPrefixRule(
  r: Reader,
  call: Call,
): Pick<CodexRule, 'pattern' | 'codexDecision' | 'examples'> & { message?: string } {
  for (const k of call.kwargs.keys())
    if (!PREFIX_RULE_ARGS.has(k))
      r.fail(call.at, `prefix_rule has no argument ${k} (it takes pattern, decision, justification, match, not_match)`);
  const pattern = readPattern(r, call);
  const codexDecision = readDecision(r, call);
  const just = call.kwargs.get('justification');
  if (just && just.kind !== 'str') r.fail(just.at, 'justification must be a string');
  const m = readExamples(r, call, 'match');
  const n = readExamples(r, call, 'not_match');
  return {
    pattern,
    codexDecision,
    examples: { match: m.tokens, notMatch: n.tokens, raw: { match: m.raw, notMatch: n.raw } },
    // A blank justification adds no message.
    ...(just?.kind === 'str' && just.v.trim() ? { message: just.v } : {}),
  };
}

/** `pattern = [...]`: each element a word, or a list of the alternative words for that position. */
function readPattern(r: Reader, call: Call): string[][] {
  const pat = call.kwargs.get('pattern');
  if (!pat) r.fail(call.at, 'prefix_rule needs pattern = [...]');
  if (pat.kind !== 'list' || pat.items.length === 0) r.fail(pat.at, 'pattern must be a non-empty list of words');
  return pat.items.map((el) => {
    if (el.kind === 'str') return [el.v];
    if (el.items.length === 0 || el.items.some((a) => a.kind !== 'str'))
      r.fail(el.at, 'a list inside pattern holds the alternative words for one position, as strings');
    return el.items.map((a) => (a as { v: string }).v);
  });
}

/** `decision = "allow" | "prompt" | "forbidden"`; Codex's default is allow. */
function readDecision(r: Reader, call: Call): CodexDecision {
  const dec = call.kwargs.get('decision');
  if (!dec) return 'allow';
  if (dec.kind !== 'str' || !(dec.v in TO_SLUICE))
    r.fail(
      dec.at,
      `decision must be "allow", "prompt" or "forbidden", not ${dec.kind === 'str' ? JSON.stringify(dec.v) : 'a list'}`,
    );
  return dec.v as CodexDecision;
}

/** `match` / `not_match`: examples as strings (split into words) or as lists of words. */
function readExamples(r: Reader, call: Call, key: 'match' | 'not_match'): { tokens: string[][]; raw: string[] } {
  const v = call.kwargs.get(key);
  if (!v) return { tokens: [], raw: [] };
  if (v.kind !== 'list') r.fail(v.at, `${key} must be a list of examples (strings or lists of words)`);
  const tokens: string[][] = [];
  const raw: string[] = [];
  for (const ex of v.items) {
    if (ex.kind === 'str') {
      tokens.push(exampleWords(ex.v));
      raw.push(ex.v);
    } else {
      if (ex.items.some((w) => w.kind !== 'str'))
        r.fail(ex.at, `a ${key} example given as a list holds words (strings)`);
      const words = ex.items.map((w) => (w as { v: string }).v);
      tokens.push(words);
      raw.push(JSON.stringify(words));
    }
  }
  return { tokens, raw };
}

function ruleText(pattern: string[][], decision: CodexDecision): string {
  const words = pattern.map((alts) =>
    alts.length === 1 ? JSON.stringify(alts[0]) : `[${alts.map((a) => JSON.stringify(a)).join(', ')}]`,
  );
  return `prefix_rule(pattern = [${words.join(', ')}], decision = "${decision}")`;
}

/**
 * True when the rule's pattern is a prefix of the words. The program may be written as a path:
 * `/usr/bin/git` counts as `git` when host_executable lists it, and — for forbidden and prompt
 * rules only, which must not be dodged by spelling the program's path — whatever its folder.
 */
/**
 * Whether a forbidden or prompt rule could match a command some of whose words are only known
 * when it runs (`null`): from the first unknown word on, the command could be anything (an
 * unquoted expansion may even become several words).
 */
function couldMatchPrefix(
  rule: CodexRule,
  words: readonly (string | null)[],
  hosts: ReadonlyMap<string, string[]>,
): boolean {
  const known = words.indexOf(null);
  if (known < 0) return matchesPrefix(rule, words as string[], hosts);
  if (known < rule.pattern.length)
    return matchesPrefix({ ...rule, pattern: rule.pattern.slice(0, known) }, words.slice(0, known) as string[], hosts);
  return matchesPrefix(rule, words.slice(0, known) as string[], hosts);
}

function matchesPrefix(rule: CodexRule, words: readonly string[], hosts: ReadonlyMap<string, string[]>): boolean {
  if (words.length < rule.pattern.length) return false;
  return rule.pattern.every((alts, i) => {
    const w = words[i];
    if (alts.includes(w)) return true;
    if (i !== 0 || !path.isAbsolute(w)) return false;
    const base = path.basename(w);
    if (!alts.includes(base)) return false;
    return rule.codexDecision !== 'allow' || (hosts.get(base) ?? []).includes(w);
  });
}

/**
 * The words of a `match` / `not_match` example written as one string, split the way Codex splits
 * it (shlex: quotes removed, backslash escapes applied). Examples are test data in the rule file,
 * not commands Sluice judges; those are read with the shell parser.
 */
function exampleWords(command: string): string[] {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else cur += c;
    } else if (quote === '"') {
      if (c === '"') quote = undefined;
      else if (c === '\\' && i + 1 < command.length && '"\\$`\n'.includes(command[i + 1])) cur += command[++i];
      else cur += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < command.length) {
      cur += command[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (inWord) words.push(cur);
  return words;
}

// ---- config.toml: approval_policy and sandbox_mode ----

interface CodexConfig {
  file?: PolicyFile;
  approvalPolicy?: string;
  sandboxMode?: string;
  /** What the settings mean for Sluice, in words; logged at start and shown by `sluice policy explain`. */
  notes: string[];
}

/** What a `config.toml` setting's value means for Sluice: the note logged at start and shown by `sluice policy explain`. */
interface SettingMeaning {
  note: string;
}

/**
 * Codex's `approval_policy`, one row per value Codex accepts. Only `never` changes what Sluice
 * decides (nobody is there to ask); the values about the model requesting escalation have no
 * meaning here, and say so.
 */
const APPROVAL_POLICY: Readonly<Record<string, SettingMeaning & { promptDenies: boolean }>> = {
  untrusted: {
    promptDenies: false,
    note: 'approval_policy "untrusted": commands no allow rule covers ask first (Sluice\'s default for bash)',
  },
  // Codex runs the command in its sandbox and asks only when the model requests escalation:
  // Sluice's model never requests it (every call is judged the same way), so nothing changes.
  'on-request': {
    promptDenies: false,
    note: 'approval_policy "on-request" has no meaning in Sluice (the model does not request escalation here); Sluice\'s defaults apply',
  },
  // Codex asks after a sandboxed command failed, to run it again outside the sandbox: Sluice never
  // runs a command outside its sandbox on a person's word, so there is nothing to ask about.
  'on-failure': {
    promptDenies: false,
    note: 'approval_policy "on-failure" has no meaning in Sluice (the model does not request escalation here); Sluice\'s defaults apply',
  },
  never: {
    promptDenies: true,
    note: 'approval_policy "never": nobody is asked, so a prompt rule denies the command (as Codex rejects it), and commands no rule decides run without asking',
  },
};

/**
 * Codex's `sandbox_mode`, one row per value Codex accepts. A policy file can only narrow what
 * Sluice allows: `read-only` denies the file-editing tools; `danger-full-access` would widen it and
 * is not honoured.
 */
const SANDBOX_MODE: Readonly<Record<string, SettingMeaning & { denyEditTools: boolean }>> = {
  'read-only': {
    denyEditTools: true,
    note: 'sandbox_mode "read-only": the file-editing tools (write, edit) are denied',
  },
  'workspace-write': {
    denyEditTools: false,
    note: 'sandbox_mode "workspace-write": Sluice\'s default (file tools confined to the workspace, bash\'s sandbox writes the workspace only)',
  },
  'danger-full-access': {
    denyEditTools: false,
    note: 'sandbox_mode "danger-full-access" is not honoured: a policy file does not lift Sluice\'s sandbox or protected paths',
  },
};

export function parseCodexConfig(text: string, file: PolicyFile): CodexConfig {
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(text) as Record<string, unknown>;
  } catch (err) {
    const line = err instanceof TomlError ? err.line : 1;
    throw new PolicyFileError(file.label, line, `not valid TOML (${(err as Error).message.split('\n')[0]})`);
  }
  const out: CodexConfig = { file, notes: [] };
  /** A setting's value, checked against its table: a value Codex does not accept stops the worker. */
  const setting = (key: string, table: Readonly<Record<string, SettingMeaning>>): string | undefined => {
    const value = doc[key];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || !Object.hasOwn(table, value)) {
      const m = new RegExp(`^[ \\t]*${key}[ \\t]*=`, 'm').exec(text);
      throw new PolicyFileError(
        file.label,
        m ? lineOf(text, m.index) : 1,
        `${key} must be one of ${Object.keys(table).join(', ')}`,
      );
    }
    out.notes.push(table[value].note);
    return value;
  };
  const approvalPolicy = setting('approval_policy', APPROVAL_POLICY);
  if (approvalPolicy) out.approvalPolicy = approvalPolicy;
  const sandboxMode = setting('sandbox_mode', SANDBOX_MODE);
  if (sandboxMode) out.sandboxMode = sandboxMode;
  return out;
}

// ---- the source ----

export interface CodexRulesOptions {
  workspace: string;
  /** `.rules` files or folders of them, relative to the workspace. Default `.codex/rules`. */
  rules?: string[];
  /** A Codex config.toml; default `.codex/config.toml` when it exists. `false` reads none. */
  config?: string | false;
  /** Run the files' match / not_match examples now and throw when one fails (default true). */
  verifyExamples?: boolean;
}

/** The files a list of paths names: a folder stands for its `*.rules` files, sorted. */
function expand(workspace: string, entries: string[], explicit: boolean, ext: string): string[] {
  const out: string[] = [];
  for (const e of entries) {
    const abs = path.resolve(workspace, e);
    let st: fs.Stats | undefined;
    try {
      st = fs.statSync(abs);
    } catch (err) {
      if (!explicit && (err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new PolicyFileError(abs, 1, `cannot be read (${(err as Error).message})`);
    }
    if (st.isDirectory())
      out.push(
        ...fs
          .readdirSync(abs)
          .filter((f) => f.endsWith(ext))
          .sort()
          .map((f) => path.join(abs, f)),
      );
    else out.push(abs);
  }
  return out;
}

export function labelOf(workspace: string, file: string): string {
  const rel = path.relative(workspace, file);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel.split(path.sep).join('/') : file;
}

export function readPolicyFile(
  workspace: string,
  abs: string,
  format: PolicyFile['format'],
): { file: PolicyFile; text: string } {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(abs);
  } catch (err) {
    throw new PolicyFileError(labelOf(workspace, abs), 1, `cannot be read (${(err as Error).message})`);
  }
  return {
    file: { format, label: labelOf(workspace, abs), path: abs, digest: digestOf(bytes) },
    text: bytes.toString('utf8'),
  };
}

interface CodexSource extends PolicySource {
  config: CodexConfig;
}

export function codexRules(opts: CodexRulesOptions): CodexSource {
  const workspace = path.resolve(opts.workspace);
  const files: PolicyFile[] = [];
  const rules: CodexRule[] = [];
  const hosts = new Map<string, string[]>();
  for (const abs of expand(workspace, opts.rules ?? ['.codex/rules'], opts.rules !== undefined, '.rules')) {
    const { file, text } = readPolicyFile(workspace, abs, 'codex');
    files.push(file);
    const parsed = parseRulesFile(text, file);
    rules.push(...parsed.rules);
    for (const [k, v] of parsed.hosts) hosts.set(k, [...(hosts.get(k) ?? []), ...v]);
  }
  let config: CodexConfig = { notes: [] };
  if (opts.config !== false) {
    const abs = path.resolve(workspace, opts.config ?? '.codex/config.toml');
    if (opts.config !== undefined || fs.existsSync(abs)) {
      const { file, text } = readPolicyFile(workspace, abs, 'codex');
      files.push(file);
      config = parseCodexConfig(text, file);
    }
  }
  const source = codexSource(files, rules, hosts, config);
  // Codex validates match / not_match when it loads a file; so does Sluice, at worker start.
  if (opts.verifyExamples !== false) {
    const { failures } = source.examples();
    if (failures.length) throw new Error(describeFailures(failures));
  }
  return source;
}

export function describeFailures(failures: ExampleFailure[]): string {
  const lines = failures.map(
    (f) => `  ${f.rule.file}:${f.rule.line} ${f.rule.text}: example ${f.example} should ${f.expected} but ${f.got}`,
  );
  return `policy examples failed, so the worker does not start (fix the rule or the example):\n${lines.join('\n')}`;
}

const EDIT_TOOLS = new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit']);

function codexSource(
  files: PolicyFile[],
  rules: CodexRule[],
  hosts: ReadonlyMap<string, string[]>,
  config: CodexConfig,
): CodexSource {
  const judge: CodexJudge = {
    rules,
    hosts,
    config,
    never: config.approvalPolicy ? APPROVAL_POLICY[config.approvalPolicy].promptDenies : false,
    editsDenied: config.sandboxMode ? SANDBOX_MODE[config.sandboxMode].denyEditTools : false,
  };
  const warnings = [...config.notes];
  return {
    format: 'codex',
    files,
    rules,
    warnings,
    evaluate: (call) => evaluateCodex(judge, call),
    examples: () => codexExamples(rules, hosts),
    config,
  };
}

/** What a call is judged by: the rules, the hosts they name, and what config.toml settles. */
interface CodexJudge {
  rules: CodexRule[];
  hosts: ReadonlyMap<string, string[]>;
  config: CodexConfig;
  /** approval_policy = "never": a prompt rule denies. */
  never: boolean;
  /** The sandbox mode refuses edit tools. */
  editsDenied: boolean;
}

function evaluateCodex(j: CodexJudge, call: PolicyCall): SourceVerdict {
  const claude = claudeToolName({ name: call.toolName, aliases: call.aliases ?? [] });
  if (j.editsDenied && EDIT_TOOLS.has(claude)) {
    const rule = configRef(j.config, 'deny', `sandbox_mode = "${j.config.sandboxMode}"`);
    return { decision: 'deny', rule, matched: [rule] };
  }
  if (claude !== 'Bash' || typeof call.args.command !== 'string') return { decision: 'none', matched: [] };
  const verdict = shellCommandVerdict(j.rules, j.hosts, call.args.command);
  if (j.never && verdict.decision === 'ask')
    return {
      ...verdict,
      decision: 'deny',
      note: 'approval_policy = "never": nobody can be asked, so the prompt rule denies',
    };
  return verdict;
}

/** The command as bash reads it (shell.ts): every simple command, nested and wrapped ones too. */
function shellCommandVerdict(rules: CodexRule[], hosts: ReadonlyMap<string, string[]>, command: string): SourceVerdict {
  const reading = readShell(command);
  const words = (c: ShellCommand) => c.words.map((w) => literal(w) ?? null);
  // forbidden or prompt on any command found anywhere decides, whatever else the line holds;
  // a word Sluice cannot know could be whatever such a rule names.
  const strict = reading.commands.flatMap((c) =>
    rules.filter((r) => r.codexDecision !== 'allow' && couldMatchPrefix(r, words(c), hosts)),
  );
  // An allow rule vouches only for a line of plain commands, every one of them written out in
  // full (no substitution, variable, glob or brace, no assignment in front) and each allowed:
  // Codex judges anything else as one opaque script.
  const written = reading.unprovable.length || reading.unknown.length ? [] : reading.commands.filter((c) => !c.derived);
  const plain = written.every((c) => !c.assigns && c.words.every((w) => literal(w) !== undefined));
  const perCommand = written.map((c) =>
    rules.filter((r) => r.codexDecision === 'allow' && matchesPrefix(r, words(c) as string[], hosts)),
  );
  const matched = [...new Set([...strict, ...perCommand.flat()])];
  const worst = strictest(strict);
  if (worst) return { decision: worst.decision, rule: worst, matched };
  if (written.length > 0 && plain && perCommand.every((ms) => ms.length > 0))
    return { decision: 'allow', rule: strictest(perCommand.flat()), matched };
  if (reading.unknown.length && rules.length) {
    // Sluice cannot tell what runs: no prompt or forbidden rule matched only because every
    // rule here allows; asking is the strictest answer an allow rule can turn into.
    const rule = rules.find((r) => couldMatchPrefix(r, [null], hosts))!;
    return {
      decision: 'ask',
      rule,
      matched,
      note: `Sluice cannot read the whole command (${reading.unknown[0]}), so no allow rule vouches for it`,
    };
  }
  return { decision: 'none', matched };
}

function strictest(rs: readonly PolicyRuleRef[]): PolicyRuleRef | undefined {
  return rs.reduce<PolicyRuleRef | undefined>(
    (best, r) => (!best || STRICTNESS[r.decision] > STRICTNESS[best.decision] ? r : best),
    undefined,
  );
}

/** A decision config.toml makes, as a rule in it. */
function configRef(config: CodexConfig, decision: PolicyDecision, text: string): PolicyRuleRef {
  return {
    id: `${config.file!.label}:sandbox_mode`,
    format: 'codex',
    file: config.file!.label,
    digest: config.file!.digest,
    line: 1,
    text,
    decision,
  };
}

/** Every rule's match and not_match examples, as Codex checks them when it loads a file. */
function codexExamples(rules: CodexRule[], hosts: ReadonlyMap<string, string[]>) {
  const failures: ExampleFailure[] = [];
  const matched = new Set<string>();
  let ran = 0;
  for (const rule of rules) {
    rule.examples.match.forEach((words, i) => {
      ran++;
      if (matchesPrefix(rule, words, hosts)) matched.add(rule.id);
      else failures.push({ rule, example: rule.examples.raw.match[i], expected: 'match', got: 'it does not' });
    });
    rule.examples.notMatch.forEach((words, i) => {
      ran++;
      if (matchesPrefix(rule, words, hosts))
        failures.push({ rule, example: rule.examples.raw.notMatch[i], expected: 'not match', got: 'it does' });
    });
  }
  return { ran, failures, matched };
}
