// Deny rules held where a command runs, not only where its text is judged. A shell line can start
// a program in ways no reading of the text shows (`echo 'touch D' | bash -`, `hash -p`, `env -S`,
// `xargs sh -c`, an interpreter's execv), and a person may approve a line that hides one. Inside
// bash's bubblewrap sandbox every file a denied program is (found on the sandbox's PATH and in the
// system folders, followed to the real file, hard links too) has a small script bound over it:
// it says which rule denies the program, on stderr, and exits 126, so nothing reached by that file
// runs however it was started. A rule that denies only some arguments (`Bash(git push:*)`, Codex
// `["git","push"]`) gets a script that checks its arguments and otherwise runs the real program
// from a read-only folder the sandbox keeps off PATH (a command that names that folder reaches
// it: docs/tools.md says what this covers and what it cannot).
//
// The policy readers register their deny rules here (`denyAtExec`), as Read rules are registered
// with glob and grep (fs/protect.ts); every bash tool of the process holds them.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** One deny rule as the sandbox holds it: a program, and which of its argument lists the rule denies. */
export interface ExecDenyRule {
  /** The program as the rule names it: a bare name (found on PATH and in the system folders) or an absolute path. */
  program: string;
  /**
   * Bash patterns (`[[ $text == pattern ]]`) over the program's name as the rule writes it and its
   * arguments, joined by spaces; any match denies. Build them with `execPattern`.
   */
  patterns: string[];
  /** Denies every run of the program whatever its arguments: then no copy of it is left in the sandbox. */
  whole: boolean;
  /** The rule as written and its file, for the message. */
  rule: string;
  file: string;
}

/** Any text in an `execPattern`. */
export const ANY_TEXT = Symbol('any text');
/** One character in an `execPattern`. */
export const ONE_CHAR = Symbol('one character');

/** A bash pattern from literal text and wildcards: literal runs quoted, so nothing in them is special. */
export function execPattern(pieces: readonly (string | typeof ANY_TEXT | typeof ONE_CHAR)[]): string {
  return pieces.map((p) => (p === ANY_TEXT ? '*' : p === ONE_CHAR ? '?' : p === '' ? '' : shellQuote(p))).join('');
}

/** The folders a program is looked for in besides the sandbox's PATH. */
const SYSTEM_BIN_DIRS: readonly string[] = [
  '/bin',
  '/usr/bin',
  '/sbin',
  '/usr/sbin',
  '/usr/local/bin',
  '/usr/local/sbin',
];

/** Inside the sandbox: the read-only folder holding the wrappers' interpreter and the programs they pass on to. */
const EXEC_DENY_DIR = '/tmp/.sluice-exec';

const registered = new Map<string, ExecDenyRule>();

/** Called by the policy readers: every bash sandbox of this process holds these deny rules. */
export function denyAtExec(rules: readonly ExecDenyRule[]): void {
  for (const r of rules) registered.set(JSON.stringify([r.program, r.patterns, r.whole, r.rule, r.file]), r);
}

/** The deny rules registered in this process. */
export function execDenyRules(): ExecDenyRule[] {
  return [...registered.values()];
}

/** What bwrap needs to hold the rules: its arguments (after the sandbox's own) and the shell to start. */
interface ExecDenyMounts {
  args: string[];
  /** The command's shell: its hidden copy when the shell itself is one of the masked files. */
  shell: string;
}

/**
 * Builds the masks for one command, runs it, and removes the wrapper files after. `pathEnv` is the
 * command's PATH; `shell` the program bwrap starts (`bash`).
 */
export async function withExecDeny<T>(
  rules: readonly ExecDenyRule[],
  o: { pathEnv: string | undefined; shell: string },
  run: (mounts: ExecDenyMounts) => Promise<T>,
): Promise<T> {
  if (!rules.length) return run({ args: [], shell: o.shell });
  const dirs = searchDirs(o.pathEnv);
  const masked = maskedFiles(rules, dirs);
  if (!masked.size) return run({ args: [], shell: o.shell });
  const bash = firstReal('bash', dirs);
  if (!bash)
    throw new Error(
      'deny rules are held in the sandbox by small bash scripts, and no bash was found on PATH or in the system folders; install bash on the worker',
    );
  const tmp = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'sluice-exec-'));
  try {
    return await run(await mounts(masked, { bash, shell: o.shell, dirs, tmp }));
  } finally {
    await fs.promises.rm(tmp, { recursive: true, force: true });
  }
}

/** The sandbox's PATH folders (absolute ones) and the system folders, once each. */
function searchDirs(pathEnv: string | undefined): string[] {
  const fromPath = (pathEnv ?? '').split(':').filter((d) => path.isAbsolute(d));
  return [...new Set([...fromPath, ...SYSTEM_BIN_DIRS])];
}

/** The real file a name resolves to in the first folder that has it. */
function firstReal(name: string, dirs: readonly string[]): string | undefined {
  for (const d of dirs) {
    const real = realFile(path.join(d, name));
    if (real) return real;
  }
  return undefined;
}

function realFile(p: string): string | undefined {
  try {
    const real = fs.realpathSync(p);
    return fs.statSync(real).isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Every real file a rule's program is, with the rules that deny it: the program in every folder
 * (its symlinks followed), and the other names (hard links) of those files in the same folders.
 */
function maskedFiles(rules: readonly ExecDenyRule[], dirs: readonly string[]): Map<string, ExecDenyRule[]> {
  const out = new Map<string, ExecDenyRule[]>();
  const add = (real: string, r: ExecDenyRule) => {
    const list = out.get(real) ?? [];
    if (!list.includes(r)) list.push(r);
    out.set(real, list);
  };
  const linked = hardLinks(dirs);
  for (const r of rules) {
    const spellings = path.isAbsolute(r.program)
      ? [r.program]
      : r.program.includes('/')
        ? []
        : dirs.map((d) => path.join(d, r.program));
    for (const p of spellings) {
      const real = realFile(p);
      if (!real) continue;
      add(real, r);
      for (const other of linked(real)) add(other, r);
    }
  }
  return out;
}

/** The other real files in the folders that are the same inode as a file with several links. */
function hardLinks(dirs: readonly string[]): (real: string) => string[] {
  let byInode: Map<string, Set<string>> | undefined;
  return (real) => {
    const st = fs.statSync(real);
    if (st.nlink < 2) return [];
    byInode ??= inodes(dirs);
    return [...(byInode.get(`${st.dev}:${st.ino}`) ?? [])].filter((p) => p !== real);
  };
}

function inodes(dirs: readonly string[]): Map<string, Set<string>> {
  const map = new Map<string, Set<string>>();
  for (const d of dirs) {
    let names: string[];
    try {
      names = fs.readdirSync(d);
    } catch {
      continue;
    }
    for (const n of names) {
      const real = realFile(path.join(d, n));
      if (!real) continue;
      const st = fs.statSync(real);
      if (st.nlink < 2) continue;
      const key = `${st.dev}:${st.ino}`;
      map.set(key, (map.get(key) ?? new Set()).add(real));
    }
  }
  return map;
}

/**
 * bwrap's arguments: a read-only folder off PATH with the wrappers' bash and the programs that
 * only some arguments of are denied, then a wrapper bound over every masked file.
 */
async function mounts(
  masked: Map<string, ExecDenyRule[]>,
  o: { bash: string; shell: string; dirs: string[]; tmp: string },
): Promise<ExecDenyMounts> {
  const interpreter = `${EXEC_DENY_DIR}/bash`;
  const hidden = ['--tmpfs', EXEC_DENY_DIR, '--ro-bind', o.bash, interpreter];
  const masks: string[] = [];
  let i = 0;
  for (const [real, rules] of masked) {
    const passOn = rules.some((r) => r.whole) ? undefined : `${EXEC_DENY_DIR}/${i}`;
    if (passOn) hidden.push('--ro-bind', real, passOn);
    const file = path.join(o.tmp, String(i++));
    const script = wrapperScript(interpreter, rules, passOn ? { passOn, name: path.basename(real) } : undefined);
    await fs.promises.writeFile(file, script, { mode: 0o755 });
    masks.push('--ro-bind', file, real);
  }
  // The command's own shell starts from its copy when a rule masks it (`Bash(bash:*)` denies
  // bash run by the command, not the tool).
  const shellReal = path.isAbsolute(o.shell) ? realFile(o.shell) : firstReal(o.shell, o.dirs);
  let shell = o.shell;
  if (shellReal && masked.has(shellReal)) {
    shell = `${EXEC_DENY_DIR}/shell`;
    hidden.push('--ro-bind', shellReal, shell);
  }
  return { args: [...hidden, '--remount-ro', EXEC_DENY_DIR, ...masks], shell };
}

/**
 * The script bound over one masked file. Run with `bash -p`, so no BASH_ENV or exported function
 * from the command's environment runs first. Each rule's patterns are tried against the rule's
 * own name for the program and the arguments; a rule that denies every run denies at once.
 */
export function wrapperScript(
  interpreter: string,
  rules: readonly ExecDenyRule[],
  passOn: { passOn: string; name: string } | undefined,
): string {
  const lines = [`#!${interpreter} -p`, `# Sluice: deny rules held in the sandbox (docs/tools.md).`, `IFS=' '`];
  for (const r of rules) {
    const deny = `printf '%s\\n' ${shellQuote(denialMessage(r))} >&2; exit 126`;
    if (r.whole || !r.patterns.length) {
      lines.push(deny);
      break;
    }
    lines.push(`t=${shellQuote(r.program)}; [ $# -gt 0 ] && t+=" $*"`);
    lines.push(`if ${r.patterns.map((p) => `[[ $t == ${p} ]]`).join(' || ')}; then ${deny}; fi`);
  }
  if (passOn) lines.push(`exec -a ${shellQuote(passOn.name)} ${passOn.passOn} "$@"`);
  else lines.push(`exit 126`);
  return `${lines.join('\n')}\n`;
}

function denialMessage(r: ExecDenyRule): string {
  return `sluice: ${r.whole ? r.program : `this run of ${r.program}`} is denied by ${JSON.stringify(r.rule)} (${r.file}), so it did not run`;
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
