// Deny rules held where a command runs, not only where its text is judged. A shell line can start
// a program in ways no reading of the text shows (`echo 'touch D' | bash -`, `hash -p`, `env -S`,
// `xargs sh -c`, an interpreter's execv), and a person may approve a line that hides one. Inside
// bash's bubblewrap sandbox every file a denied program is (found on the sandbox's PATH and in the
// system folders, followed to the real file, hard links too, and every other file in the system
// trees with the same bytes: `/usr/lib/git-core/git` is `/usr/bin/git`) has a small script bound
// over it: it says which rule denies the program, on stderr, and exits 126, so nothing reached by
// that file runs however it was started. A rule that denies only some arguments
// (`Bash(git push:*)`, Codex `["git","push"]`) gets a script that checks its arguments and
// otherwise runs the real program from a read-only folder the sandbox keeps off PATH (a command
// that names that folder reaches it: docs/tools.md says what this covers and what it cannot).
//
// The policy readers register their deny rules here (`denyAtExec`), as Read rules are registered
// with glob and grep (fs/protect.ts); every bash tool of the process holds them.
import { createHash } from 'node:crypto';
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

/**
 * The trees searched for copies of a denied program by their bytes: the system folders the sandbox
 * shows read-only from the host, where distributions keep second copies (libexec and lib folders,
 * versioned names, snaps). Not the rest of the host (home folders, /var, /srv, other checkouts):
 * docs/tools.md says so.
 */
const SYSTEM_TREES: readonly string[] = [
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/opt',
  '/etc',
  '/snap',
];

/**
 * A rule's name that links to a file of another name, which this many names or more in the search
 * folders reach, is one name of a multi-call program (busybox's applets, `unxz` for xz, `vi` for
 * vim): the program picks what it does by the name it was started as, which the script cannot
 * pass on faithfully, so a rule on some of its arguments is held as a deny of the whole file.
 */
const MULTI_CALL_NAMES = 3;

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
  const masked = await maskedFiles(rules, dirs);
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

/** One masked file: the rules that deny it, and the name the program it is goes by. */
interface Mask {
  rules: ExecDenyRule[];
  /** argv[0] for the real program a rule on some arguments passes on to: its file's name where the rule found it. */
  name: string;
  /** Set when the file is a multi-call program: every rule on it denies every run (MULTI_CALL_NAMES). */
  multiCall?: { file: string; names: number };
}

/**
 * Every real file a rule's program is, with the rules that deny it: the program in every folder
 * (its symlinks followed), the other names (hard links) of those files in the same folders, and
 * every file of the system trees with the same bytes (sameBytes).
 */
async function maskedFiles(rules: readonly ExecDenyRule[], dirs: readonly string[]): Promise<Map<string, Mask>> {
  const out = new Map<string, Mask>();
  const names = binNames(dirs);
  for (const r of rules) {
    for (const real of programFiles(r, dirs)) {
      // Only a name that links to a file of another name can be one of a multi-call program's.
      const called = path.basename(real) === r.program ? 1 : names.of(real);
      const multiCall = called >= MULTI_CALL_NAMES ? { file: real, names: called } : undefined;
      for (const file of [real, ...names.linked(real), ...(await sameBytes(real))]) {
        const mask = out.get(file) ?? { rules: [], name: path.basename(real) };
        if (!mask.rules.includes(r)) mask.rules.push(r);
        mask.multiCall ??= multiCall;
        out.set(file, mask);
      }
    }
  }
  return out;
}

/** The real files a rule's program resolves to: its absolute path, or its name in every search folder. */
function programFiles(r: ExecDenyRule, dirs: readonly string[]): string[] {
  const spellings = path.isAbsolute(r.program)
    ? [r.program]
    : r.program.includes('/')
      ? []
      : dirs.map((d) => path.join(d, r.program));
  return [...new Set(spellings.map(realFile).filter((f): f is string => f !== undefined))];
}

/**
 * What the search folders call each real file: how many names lead to it, and the other real
 * files that are the same inode (hard links). Read on first use, once per command.
 */
function binNames(dirs: readonly string[]): { of(real: string): number; linked(real: string): string[] } {
  let read: { names: Map<string, Set<string>>; byInode: Map<string, Set<string>> } | undefined;
  const get = () => {
    read ??= namesIn(dirs);
    return read;
  };
  return {
    of: (real) => get().names.get(real)?.size ?? 0,
    linked: (real) => {
      const st = fs.statSync(real);
      if (st.nlink < 2) return [];
      return [...(get().byInode.get(`${st.dev}:${st.ino}`) ?? [])].filter((p) => p !== real);
    },
  };
}

function namesIn(dirs: readonly string[]): { names: Map<string, Set<string>>; byInode: Map<string, Set<string>> } {
  const names = new Map<string, Set<string>>();
  const byInode = new Map<string, Set<string>>();
  for (const d of dirs) {
    let entries: string[];
    try {
      entries = fs.readdirSync(d);
    } catch {
      continue;
    }
    for (const n of entries) {
      const real = realFile(path.join(d, n));
      if (!real) continue;
      names.set(real, (names.get(real) ?? new Set()).add(n));
      const st = fs.statSync(real);
      if (st.nlink < 2) continue;
      const key = `${st.dev}:${st.ino}`;
      byInode.set(key, (byInode.get(key) ?? new Set()).add(real));
    }
  }
  return { names, byInode };
}

// ---- copies by content ----

/** Every regular file of the system trees by its size, as found when the index was built. */
interface ContentIndex {
  /** When the walk began: a program changed after it may have copies the index missed. */
  since: number;
  bySize: Map<number, string[]>;
}

let contentIndex: Promise<ContentIndex> | undefined;
const hashes = new Map<string, { stamp: string; hash: string }>();

/**
 * The other files in the system trees whose bytes are the real file's. The index is built once
 * per process (the first command with deny rules waits for it) and again when the program's file
 * changed after the walk began (a package upgrade rewrites it and its copies alike). Candidates
 * are the files of the same size, hashed once each; every regular file counts, executable or not,
 * since a readable copy can be copied and marked executable, or given to the dynamic loader.
 */
async function sameBytes(real: string): Promise<string[]> {
  const st = await fs.promises.stat(real);
  // An empty file runs nothing, and every empty file of the trees would be the same bytes.
  if (!st.size) return [];
  const walked = (contentIndex ??= buildIndex());
  let index = await walked;
  if (index.since <= st.ctimeMs && st.ctimeMs <= Date.now()) {
    // One walk again for all the commands that find the change at once.
    if (contentIndex === walked) contentIndex = buildIndex();
    index = await contentIndex;
  }
  const candidates = (index.bySize.get(st.size) ?? []).filter((p) => p !== real);
  if (!candidates.length) return [];
  // A program the worker cannot read (mode 711) is matched by its paths alone.
  const want = await hashOf(real, st).catch(() => undefined);
  if (!want) return [];
  const out: string[] = [];
  for (const p of candidates) {
    // Looked at again: a file removed or rewritten since the walk is skipped, never mounted over.
    const now = await fs.promises.stat(p).catch(() => undefined);
    // One the worker cannot read, the command (the same user, no capabilities) cannot read either.
    const hash = now?.isFile() && now.size === st.size ? await hashOf(p, now).catch(() => undefined) : undefined;
    if (hash === want) out.push(p);
  }
  return out;
}

async function hashOf(file: string, st: fs.Stats): Promise<string> {
  const stamp = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  const known = hashes.get(file);
  if (known?.stamp === stamp) return known.hash;
  const hash = createHash('sha256')
    .update(await fs.promises.readFile(file))
    .digest('hex');
  hashes.set(file, { stamp, hash });
  return hash;
}

/** Files stat'ed at once while walking: enough to keep the thread pool busy, few enough to leave it room. */
const WALK_WIDTH = 16;

/**
 * Walks the system trees (each once, whatever links lead to it; symlinks are not followed: the
 * file they lead to is found where it is) and notes every regular file by size. Asynchronous, so a
 * worker keeps answering while it runs; a folder it cannot read is passed over.
 */
async function buildIndex(): Promise<ContentIndex> {
  const since = Date.now();
  const bySize = new Map<number, string[]>();
  const trees = [...new Set(SYSTEM_TREES.map((t) => realDir(t)).filter((t): t is string => t !== undefined))];
  const roots = trees.filter((t) => !trees.some((o) => o !== t && t.startsWith(`${o}/`)));
  const dirs = [...roots];
  while (dirs.length) {
    const dir = dirs.pop()!;
    const entries = await fs.promises.readdir(dir, { withFileTypes: true }).catch(() => []);
    const files: string[] = [];
    for (const e of entries) {
      if (e.isDirectory()) dirs.push(path.join(dir, e.name));
      else if (e.isFile()) files.push(path.join(dir, e.name));
    }
    for (let i = 0; i < files.length; i += WALK_WIDTH) {
      const batch = files.slice(i, i + WALK_WIDTH);
      const stats = await Promise.all(batch.map((f) => fs.promises.stat(f).catch(() => undefined)));
      stats.forEach((st, k) => {
        if (!st?.isFile()) return;
        const same = bySize.get(st.size);
        if (same) same.push(batch[k]);
        else bySize.set(st.size, [batch[k]]);
      });
    }
  }
  return { since, bySize };
}

function realDir(p: string): string | undefined {
  try {
    const real = fs.realpathSync(p);
    return fs.statSync(real).isDirectory() ? real : undefined;
  } catch {
    return undefined;
  }
}

/**
 * bwrap's arguments: a read-only folder off PATH with the wrappers' bash and the programs that
 * only some arguments of are denied, then a wrapper bound over every masked file.
 */
async function mounts(
  masked: Map<string, Mask>,
  o: { bash: string; shell: string; dirs: string[]; tmp: string },
): Promise<ExecDenyMounts> {
  const interpreter = `${EXEC_DENY_DIR}/bash`;
  const hidden = ['--tmpfs', EXEC_DENY_DIR, '--ro-bind', o.bash, interpreter];
  const masks: string[] = [];
  let i = 0;
  for (const [real, { rules, name, multiCall }] of masked) {
    const passOn = multiCall || rules.some((r) => r.whole) ? undefined : `${EXEC_DENY_DIR}/${i}`;
    if (passOn) hidden.push('--ro-bind', real, passOn);
    const file = path.join(o.tmp, String(i++));
    const script = wrapperScript(interpreter, rules, passOn ? { passOn, name } : undefined, multiCall);
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
 * own name for the program and the arguments; a rule that denies every run denies at once, and so
 * does every rule on a multi-call program (the message says why).
 */
export function wrapperScript(
  interpreter: string,
  rules: readonly ExecDenyRule[],
  passOn: { passOn: string; name: string } | undefined,
  multiCall?: { file: string; names: number },
): string {
  const lines = [`#!${interpreter} -p`, `# Sluice: deny rules held in the sandbox (docs/tools.md).`, `IFS=' '`];
  for (const r of rules) {
    const deny = `printf '%s\\n' ${shellQuote(denialMessage(r, multiCall))} >&2; exit 126`;
    if (r.whole || !r.patterns.length || multiCall) {
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

function denialMessage(r: ExecDenyRule, multiCall?: { file: string; names: number }): string {
  if (multiCall)
    return `sluice: ${multiCall.file} is denied by ${JSON.stringify(r.rule)} (${r.file}): ${r.program} is one of the ${multiCall.names} names of this multi-call program, and in the sandbox a rule on one of its names holds for all of them, so it did not run`;
  return `sluice: ${r.whole ? r.program : `this run of ${r.program}`} is denied by ${JSON.stringify(r.rule)} (${r.file}), so it did not run`;
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
