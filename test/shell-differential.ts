// The differential check of the Bash judgment (the security issue's section 3): a command is judged
// by the four policy formats Sluice reads (Claude Code, Codex, Gemini CLI, OpenCode, under one rule
// set), then run in a throwaway sandbox with every execve traced. It fails when a command some
// format allows ran a program no allow rule covers, when a denied program ran and a format did not
// deny, when an asked program ran and a format neither asked nor denied, or when the formats
// disagree about allowing it. Shared by the budgeted run in `npm test`
// (test/shell-differential*.test.ts) and the long mode (scripts/shell-fuzz.ts), with the seeded
// generator that feeds both (a grammar of bash constructs and mutations of a corpus, below).
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type PolicyRules, policyRules } from '../hooks/policy';
import { readShell, shellParserReady } from '../hooks/shell';

/** The fixed rule set, in Claude Code's form; every other format is written from it. */
export const DIFF_RULES = {
  allow: ['Bash(echo:*)', 'Bash(ls:*)', 'Bash(cat:*)', 'Bash(printf:*)', 'Bash(true:*)'],
  deny: ['Bash(touch:*)', 'Bash(mkdir:*)'],
  ask: ['Bash(rm:*)'],
} as const;

type Kind = keyof typeof DIFF_RULES;
const programOf = (rule: string) => /^Bash\((\S+?)(?::\*)?\)$/.exec(rule)![1];
const programsOf = (kind: Kind) => new Set<string>(DIFF_RULES[kind].map(programOf));
export const ALLOWED = programsOf('allow');
export const DENIED = programsOf('deny');
export const ASKED = programsOf('ask');

/** A format's answer; `error` when its judgment threw (a failure of its own: every command needs an answer). */
export type Decision = 'allow' | 'ask' | 'deny' | 'none' | 'error';
export const FORMATS = ['claude', 'codex', 'gemini', 'opencode'] as const;
export type Format = (typeof FORMATS)[number];
export type Judgment = Record<Format, Decision>;

/** The four policy files of one workspace, each saying what DIFF_RULES says. */
export function policyFiles(): Record<string, string> {
  const each = <T>(f: (program: string, kind: Kind) => T): T[] =>
    (['allow', 'deny', 'ask'] as const).flatMap((kind) => DIFF_RULES[kind].map((r) => f(programOf(r), kind)));
  const codex = { allow: 'allow', deny: 'forbidden', ask: 'prompt' };
  const gemini = { allow: 'allow', deny: 'deny', ask: 'ask_user' };
  return {
    '.claude/settings.json': JSON.stringify({ permissions: DIFF_RULES }, null, 2),
    '.codex/rules/fuzz.rules': each(
      (p, k) => `prefix_rule(pattern = [${JSON.stringify(p)}], decision = "${codex[k]}")`,
    ).join('\n'),
    '.gemini/policies/fuzz.toml': each(
      (p, k) =>
        `[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = ${JSON.stringify(p)}\ndecision = "${gemini[k]}"\npriority = 100\n`,
    ).join('\n'),
    'opencode.json': JSON.stringify({
      permission: { bash: Object.fromEntries(each((p, k) => [`${p} *`, k] as const)) },
    }),
  };
}

export interface Judge {
  judge(command: string): Judgment;
  /** What a format's judgment threw, for the last command judged. */
  errors: Partial<Record<Format, string>>;
}

/** The judgment every surface uses (`policyRules()`, as `sluice policy explain` calls it), over the four files. */
export async function makeJudge(): Promise<Judge> {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-shell-diff-'));
  process.once('exit', () => fs.rmSync(ws, { recursive: true, force: true }));
  for (const [rel, text] of Object.entries(policyFiles())) {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    fs.writeFileSync(path.join(ws, rel), text);
  }
  await shellParserReady();
  const policy: PolicyRules = policyRules({ workspace: ws });
  // Each source on its own, as explain() asks them, so one that throws does not hide the others.
  const judge: Judge = {
    errors: {},
    judge(command) {
      const call = { toolName: 'bash', aliases: ['Bash'], args: { command } };
      const out = {} as Judgment;
      judge.errors = {};
      for (const f of FORMATS) {
        try {
          out[f] = policy.sources.find((s) => s.format === f)?.evaluate(call).decision ?? 'none';
        } catch (err) {
          out[f] = 'error';
          judge.errors[f] = (err as Error).message;
        }
      }
      return out;
    },
  };
  return judge;
}

// ---- the sandbox ----

/** Tools the runner needs, by the Debian package that has them; the test fails naming the missing ones. */
export function missingTools(): string[] {
  const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
  return [
    ...(has('strace') ? [] : ['strace']),
    ...(has('bwrap') ? [] : ['bubblewrap']),
    ...(fs.existsSync('/usr/bin/bash') ? [] : ['bash']),
  ];
}

/** argv[0] of the bash that runs the case: the one execve of the harness after the sandbox's init. */
const CASE_MARK = 'sluice-fuzz-case';
// pid 1 of the sandbox: makes the victim file, runs the case under bash -c (as the bash tool does),
// then waits, with builtins only, until every process the case left behind (`&`, coproc) has ended,
// so a background command runs before the sandbox goes.
const INIT = `: > victim.txt; (exec -a ${CASE_MARK} /usr/bin/bash -c "$1"); exec 3<> <(:)
while :; do wait 2>/dev/null; p=(/proc/[0-9]*); [ \${#p[@]} -le 1 ] && break; read -t 0.05 -u 3; done`;

/**
 * A program the workspace holds, as a checked-out repository's scripts do: `tool/ls`, which runs
 * `uname`. Bound read-only into the working folder, so a command that reaches it by PATH or by
 * path shows as `ls` then `uname` in the trace.
 */
let workspaceTools: string | undefined;
function toolsFolder(): string {
  if (workspaceTools) return workspaceTools;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-shell-tools-'));
  fs.writeFileSync(path.join(dir, 'ls'), '#!/bin/sh\nexec /usr/bin/uname "$@"\n', { mode: 0o755 });
  process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  workspaceTools = dir;
  return dir;
}

export interface Run {
  /** The basenames of the programs the command executed (execve returned 0), in order. */
  programs: string[];
  timedOut: boolean;
}

/**
 * Runs a command in a throwaway sandbox and reads what it executed. strace runs outside bwrap and
 * follows it, so the trace file is out of the command's reach (it cannot remove or forge it) and
 * strace needs no rights inside; bwrap gives a read-only root, a fresh tmpfs as the working folder
 * and home (with `victim.txt` and `tool/ls` in it), no network (--unshare-all), and dies with
 * strace, which is killed after `timeoutMs`.
 */
export function runTraced(command: string, timeoutMs = 3000): Promise<Run> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-shell-run-'));
  const trace = path.join(dir, 'trace');
  const args = [
    ...['-f', '-qq', '--seccomp-bpf', '-e', 'trace=execve', '-e', 'signal=none', '-s', '64', '-o', trace],
    ...['bwrap', '--ro-bind', '/', '/', '--tmpfs', '/tmp', '--dev', '/dev', '--proc', '/proc', '--chdir', '/tmp'],
    ...['--ro-bind', toolsFolder(), '/tmp/tool'],
    ...['--unshare-all', '--die-with-parent', '--new-session', '--as-pid-1', '--clearenv'],
    ...['--setenv', 'PATH', '/usr/local/bin:/usr/bin:/bin', '--setenv', 'HOME', '/tmp', '--setenv', 'LANG', 'C.UTF-8'],
    ...['/usr/bin/bash', '-c', INIT, 'sluice-fuzz-init', command],
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('strace', args, { stdio: 'ignore' });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', () => {
      clearTimeout(timer);
      try {
        resolve({ programs: programsRun(fs.readFileSync(trace, 'utf8')), timedOut });
      } catch (err) {
        reject(err);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

/**
 * The programs of the case in an `strace -f -e trace=execve` log: every execve that returned 0
 * (not the ENOENT tries along PATH), less the harness's own (bwrap, the sandbox's init and the
 * one bash marked as the case's). A call split by another process's line is joined by pid.
 */
export function programsRun(log: string): string[] {
  const pending = new Map<string, string>();
  const done: { pid: string; call: string }[] = [];
  for (const line of log.split('\n')) {
    const m = /^(\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const [, pid, rest] = m;
    if (rest.startsWith('execve(') && rest.endsWith('<unfinished ...>')) pending.set(pid, rest);
    else if (rest.startsWith('<... execve resumed>')) {
      done.push({ pid, call: (pending.get(pid) ?? '') + rest });
      pending.delete(pid);
    } else if (rest.startsWith('execve(')) done.push({ pid, call: rest });
  }
  const ok = done.filter((d) => /\)\s*=\s*0$/.test(d.call));
  const harness = new Set<number>([0]); // bwrap itself
  const init = ok[1]?.pid;
  ok.forEach((d, i) => {
    if (d.pid === init) harness.add(i);
  });
  const mark = ok.findIndex((d) => d.pid !== init && argv0(d.call) === CASE_MARK);
  if (mark >= 0) harness.add(mark);
  return ok
    .filter((_, i) => !harness.has(i))
    .map((d) => path.basename(straceString(/^execve\("((?:[^"\\]|\\.)*)"/.exec(d.call)?.[1] ?? '?')));
}

const argv0 = (call: string) => /^execve\("(?:[^"\\]|\\.)*", \["((?:[^"\\]|\\.)*)"/.exec(call)?.[1];
const straceString = (s: string) =>
  s.replace(/\\(x[0-9a-f]{2}|[0-7]{1,3}|.)/g, (_, e: string) => {
    if (e[0] === 'x') return String.fromCharCode(Number.parseInt(e.slice(1), 16));
    if (/^[0-7]/.test(e)) return String.fromCharCode(Number.parseInt(e, 8));
    return ({ n: '\n', t: '\t', r: '\r' } as Record<string, string>)[e] ?? e;
  });

// ---- the second oracle: the bash tool's own sandbox, with the deny rules held at exec ----

/**
 * A case run as Sluice runs it: through `bashTool` in bubblewrap's sandbox with the exec-deny masks
 * the four formats' files registered (makeJudge registers them, as `policyRules()` does for a
 * worker). To see what ran, the tool finds a `bwrap` of this harness first on the PATH it spawns
 * with (Node looks the program up on the child's PATH): that one starts the real bwrap under
 * strace, which writes its log outside the sandbox's reach. The sandbox's /tmp is its own, so the
 * harness's folder on that PATH is not there for the command.
 */
export interface MaskRun {
  /** The denied programs whose real file executed (not the mask bound over it), in order. */
  realDenied: string[];
  /** The denied programs started at all, masked or not: what the oracle saw. */
  started: string[];
  /** The tool's answer, for the failure message. */
  output: string;
}

/** The real files the masks must cover: every denied program found in the system folders. */
function deniedFiles(): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of DENIED)
    for (const d of ['/bin', '/usr/bin', '/sbin', '/usr/sbin', '/usr/local/bin']) {
      try {
        out.set(fs.realpathSync(path.join(d, p)), p);
      } catch {}
    }
  return out;
}

/** Runs a command through the bash tool's sandbox under strace; call makeJudge first (it registers the rules). */
export async function runMasked(command: string, timeoutMs = 3000): Promise<MaskRun> {
  const { bashTool } = await import('../tools');
  const { execDenyRules } = await import('../tools/exec-deny');
  if (!execDenyRules().length) throw new Error('runMasked: no deny rules are registered; call makeJudge() first');
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-shell-mask-')));
  const shim = path.join(base, 'bin');
  const root = path.join(base, 'ws');
  const trace = path.join(base, 'trace');
  fs.mkdirSync(shim);
  fs.mkdirSync(root);
  fs.writeFileSync(path.join(root, 'victim.txt'), '');
  const strace = [
    '-f',
    '-qq',
    '--seccomp-bpf',
    '-e',
    'trace=execve,openat,exit_group',
    '-e',
    'signal=none',
    '-s',
    '256',
  ];
  fs.writeFileSync(
    path.join(shim, 'bwrap'),
    `#!/bin/sh\nexec strace ${strace.join(' ')} -o '${trace}' /usr/bin/bwrap "$@"\n`,
    { mode: 0o755 },
  );
  const tool = bashTool({
    root,
    sandbox: 'bubblewrap',
    approval: 'auto',
    defaultTimeoutMs: timeoutMs,
    env: { PATH: `${shim}:/usr/local/bin:/usr/bin:/bin`, HOME: root, LANG: 'C.UTF-8' },
  });
  try {
    const out = await tool.execute({ command }, maskContext());
    const text = JSON.stringify((out as { fields?: unknown }).fields ?? out);
    return { ...deniedRuns(fs.readFileSync(trace, 'utf8'), root), output: text };
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
}

/** The little of a tool context the bash tool reads: the cancel signal. */
function maskContext() {
  return { signal: new AbortController().signal } as unknown as Parameters<
    ReturnType<typeof import('../tools').bashTool>['execute']
  >[1];
}

/**
 * Which denied programs ran their real file, in an `strace -f -e trace=execve,openat,exit_group` log. An
 * execve that succeeded started a denied program when its path names one (by basename, or, in the
 * workspace or an absolute path on the host, a link to one: the sandbox sees the host's files
 * read-only, so the link resolves the same). It was the mask when the same process then opened
 * that path to read it: that is bash reading the script bound over the file; the real program
 * never reads its own file. A process that never reached exit_group was ended before either could
 * show (a background job when the sandbox went): it counts as started, not as run.
 */
export function deniedRuns(log: string, root: string): { realDenied: string[]; started: string[] } {
  const files = deniedFiles();
  const calls = joinedCalls(log);
  const out: string[] = [];
  const started: string[] = [];
  const current = new Map<string, { file: string; program?: string; read: boolean; exited: boolean }>();
  const finish = (pid: string) => {
    const c = current.get(pid);
    if (c?.program) started.push(c.program);
    if (c?.program && !c.read && c.exited) out.push(c.program);
    current.delete(pid);
  };
  for (const { pid, call } of calls) {
    const exec = /^execve\("((?:[^"\\]|\\.)*)".*\)\s*=\s*0$/.exec(call);
    if (exec) {
      finish(pid);
      const file = straceString(exec[1]);
      current.set(pid, { file, program: deniedProgram(file, root, files), read: false, exited: false });
      continue;
    }
    if (call.startsWith('exit_group(')) {
      const c = current.get(pid);
      if (c) c.exited = true;
      continue;
    }
    const open = /^openat\(AT_FDCWD, "((?:[^"\\]|\\.)*)", O_RDONLY\)\s*=\s*\d+/.exec(call);
    const c = current.get(pid);
    if (open && c && straceString(open[1]) === c.file) c.read = true;
  }
  for (const pid of [...current.keys()]) finish(pid);
  return { realDenied: out, started };
}

/**
 * The denied program a started file is: by its name, by the real file a link leads to, or by its
 * bytes (a copy of the real file, made where it could be read: a new file no mask covers).
 */
function deniedProgram(file: string, root: string, files: Map<string, string>): string | undefined {
  if (DENIED.has(path.basename(file))) return path.basename(file);
  try {
    const real = fs.realpathSync(path.resolve(root, file));
    const named = files.get(real);
    if (named) return named;
    const size = fs.statSync(real).size;
    for (const [denied, program] of files)
      if (fs.statSync(denied).size === size && fs.readFileSync(denied).equals(fs.readFileSync(real))) return program;
  } catch {}
  return undefined;
}

/** Every call of an strace log with its pid, an `<unfinished ...>` call joined to its resumption. */
function joinedCalls(log: string): { pid: string; call: string }[] {
  const pending = new Map<string, string>();
  const done: { pid: string; call: string }[] = [];
  for (const line of log.split('\n')) {
    const m = /^(\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const [, pid, rest] = m;
    // strace leaves a space before `<unfinished ...>`: dropped, so the joined call reads as one line would.
    if (rest.endsWith('<unfinished ...>')) pending.set(pid, rest.slice(0, -'<unfinished ...>'.length).trimEnd());
    else if (rest.startsWith('<... ')) {
      done.push({ pid, call: (pending.get(pid) ?? '') + rest.replace(/^<\.\.\. \w+ resumed>/, '') });
      pending.delete(pid);
    } else done.push({ pid, call: rest });
  }
  return done;
}

// ---- same-bytes copies of the denied programs elsewhere in the system folders ----

/**
 * Where the check keeps copies of the denied programs in a system folder, as a distribution has
 * them (`/usr/lib/git-core/git` holds `/usr/bin/git`'s bytes): under a libexec folder, a versioned
 * name, a link to one of those, and one not marked executable (a copy of it made executable runs
 * it). Nothing names them to the masks: they must be found by their bytes. Placed by
 * placeSystemCopies before the first case runs (the bash tool indexes the system folders once per
 * process); the sandbox sees them read-only, as it sees the whole host.
 */
export const SYSTEM_COPY_ROOT = '/opt/sluice-fuzz-copies';
export const SYSTEM_COPIES: Readonly<Record<string, readonly string[]>> = {
  touch: [`${SYSTEM_COPY_ROOT}/libexec/touch`, `${SYSTEM_COPY_ROOT}/lib/coreutils/touch-9`],
  mkdir: [`${SYSTEM_COPY_ROOT}/bin/mkdir`],
};
/** The copy without its executable bits. */
export const SYSTEM_COPY_DATA = `${SYSTEM_COPY_ROOT}/share/touch.bin`;
/** A link to the versioned copy, as an alternatives link is. */
export const SYSTEM_COPY_LINK = `${SYSTEM_COPY_ROOT}/bin/t`;

/** This process's calls of placeSystemCopies, each a user of the copies of its own. */
let placements = 0;

/**
 * Makes (or brings up to date) the copies under SYSTEM_COPY_ROOT; the function it returns removes
 * them again once the last run of the check using them is done, when a run of the check made the
 * folder. Several runs use them at once (`npm test` runs the check's files in parallel): each
 * names itself in a users folder beside the copies, and placing, leaving and removing happen under
 * a lock, so no run removes the copies another still uses.
 */
export function placeSystemCopies(): () => void {
  const users = `${SYSTEM_COPY_ROOT}.users`;
  const me = path.join(users, `${process.pid}.${++placements}`);
  withCopiesLock(() => {
    fs.mkdirSync(users, { recursive: true });
    // The folder made by a run of the check (not found on the host): removed after the last one.
    if (!fs.existsSync(SYSTEM_COPY_ROOT)) fs.writeFileSync(path.join(users, 'made'), '');
    fs.writeFileSync(me, '');
    const place = (from: string, to: string, mode: number) => {
      if (fs.existsSync(to) && fs.readFileSync(to).equals(fs.readFileSync(from))) return;
      fs.mkdirSync(path.dirname(to), { recursive: true });
      // Written aside and renamed, so a run of the check beside this one never sees half a file.
      const aside = `${to}.${process.pid}`;
      fs.copyFileSync(from, aside);
      fs.chmodSync(aside, mode);
      fs.renameSync(aside, to);
    };
    for (const [program, copies] of Object.entries(SYSTEM_COPIES))
      for (const to of copies) place(fs.realpathSync(`/usr/bin/${program}`), to, 0o755);
    place(fs.realpathSync('/usr/bin/touch'), SYSTEM_COPY_DATA, 0o644);
    if (!fs.existsSync(SYSTEM_COPY_LINK)) fs.symlinkSync('../lib/coreutils/touch-9', SYSTEM_COPY_LINK);
  });
  let left = false;
  return () => {
    if (left) return;
    left = true;
    withCopiesLock(() => {
      fs.rmSync(me, { force: true });
      // A run that died without leaving still names itself; it uses nothing.
      const others = fs.readdirSync(users).filter((f) => /^\d+\.\d+$/.test(f) && alive(Number.parseInt(f, 10)));
      if (others.length > 0) return;
      // Copies the host had before any run of the check stay.
      if (fs.existsSync(path.join(users, 'made'))) fs.rmSync(SYSTEM_COPY_ROOT, { recursive: true, force: true });
      fs.rmSync(users, { recursive: true, force: true });
    });
  };
}

/** Runs `work` holding the copies' lock folder (taken over from a holder that is gone). */
function withCopiesLock(work: () => void): void {
  const lock = `${SYSTEM_COPY_ROOT}.lock`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number(fs.readFileSync(path.join(lock, 'pid'), { encoding: 'utf8', flag: 'a+' }));
    if (holder && !alive(holder)) fs.rmSync(lock, { recursive: true, force: true });
    else if (Date.now() > deadline) throw new Error(`${lock} held for a minute by process ${holder || 'unknown'}`);
    // Placing takes milliseconds: wait a little, synchronously (the callers are synchronous).
    else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
  try {
    fs.writeFileSync(path.join(lock, 'pid'), String(process.pid));
    work();
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process is there, another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The copies of the denied programs the host itself has in its system folders (none on many
 * systems), found by size with find(1) and then by bytes: the check's own search, not the masks'.
 */
export function hostCopies(): string[] {
  const roots = ['/usr', '/opt', '/etc', '/snap'].filter((d) => fs.existsSync(d));
  const out: string[] = [];
  for (const real of deniedFiles().keys()) {
    const bytes = fs.readFileSync(real);
    const found = spawnSync('find', [...roots, '-xdev', '-type', 'f', '-size', `${bytes.length}c`], {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    for (const p of found.stdout.split('\n'))
      if (p && p !== real && !p.startsWith(`${SYSTEM_COPY_ROOT}/`) && fs.readFileSync(p).equals(bytes)) out.push(p);
  }
  return out;
}

// ---- the verdict ----

export interface CaseResult {
  command: string;
  judgment: Judgment;
  /** Undefined when every format denied: nothing could run unasked, so it was not run. */
  run?: Run;
  /** The run through the bash tool's sandbox with the deny masks, when it was asked for. */
  masked?: MaskRun;
  /** Why this case is a bypass; empty when it holds. */
  failures: string[];
}

/** Whether a judgment and what ran agree with the rules; see the file's opening comment. */
export function failuresOf(j: Judgment, run: Run | undefined): string[] {
  const out: string[] = [];
  const allowing = FORMATS.filter((f) => j[f] === 'allow');
  const ran = run?.programs ?? [];
  const uncovered = [...new Set(ran.filter((p) => !ALLOWED.has(p)))];
  if (allowing.length && uncovered.length)
    out.push(`${allowing.join(', ')} allowed it, and it ran ${uncovered.join(', ')}, which no allow rule covers`);
  for (const p of new Set(ran.filter((p) => DENIED.has(p)))) {
    const not = FORMATS.filter((f) => j[f] !== 'deny');
    if (not.length)
      out.push(`it ran ${p}, which a deny rule names, but ${not.map((f) => `${f} said ${j[f]}`).join(', ')}`);
  }
  for (const p of new Set(ran.filter((p) => ASKED.has(p)))) {
    const not = FORMATS.filter((f) => j[f] === 'allow' || j[f] === 'none');
    if (not.length)
      out.push(`it ran ${p}, which an ask rule names, but ${not.map((f) => `${f} said ${j[f]}`).join(', ')}`);
  }
  const disagreement = disagreementOf(j);
  if (disagreement) out.push(disagreement);
  return out;
}

/**
 * Claude Code and OpenCode rules vouch for the same commands; Codex and Gemini CLI vouch only for
 * plain words (no substitution, no brace expansion: test/unit/policy-codex.test.ts), so they may
 * refuse what the first two allow, never allow what they refuse, and must agree with each other.
 */
export function disagreementOf(j: Judgment): string | undefined {
  const a = (f: Format) => j[f] === 'allow';
  const say = () => FORMATS.map((f) => `${f} ${j[f]}`).join(', ');
  if (a('claude') !== a('opencode')) return `Claude Code and OpenCode rules disagree about allowing it (${say()})`;
  if (a('codex') !== a('gemini')) return `Codex and Gemini CLI rules disagree about allowing it (${say()})`;
  if (a('codex') && !a('claude')) return `Codex and Gemini CLI allow what Claude Code's rules do not (${say()})`;
  return undefined;
}

/**
 * Judges a command, runs it unless every format denied it, and says what went wrong. With
 * `masks`, a command some format lets run (allowed, or asked and answered yes: a person may
 * approve it) also runs through the bash tool's sandbox (runMasked), where a denied program must
 * not execute its real file whatever the judgment said. `masksOnly`: that run alone, for cases
 * made to hide their program from the judgment (opaqueCaseAt), which asks for them by design.
 */
export async function checkCase(
  judge: Judge,
  command: string,
  timeoutMs?: number,
  o: { masks?: boolean; masksOnly?: boolean } = {},
): Promise<CaseResult> {
  const judgment = judge.judge(command);
  const threw = Object.entries(judge.errors).map(([f, e]) => `${f}'s judgment threw: ${e}`);
  if (FORMATS.every((f) => judgment[f] === 'deny')) return { command, judgment, failures: [] };
  if (o.masksOnly) {
    const masked = await runMasked(command, timeoutMs);
    return { command, judgment, masked, failures: [...threw, ...maskFailures(masked)] };
  }
  const run = await runTraced(command, timeoutMs);
  const masked = o.masks ? await runMasked(command, timeoutMs) : undefined;
  return {
    command,
    judgment,
    run,
    ...(masked ? { masked } : {}),
    failures: [...threw, ...failuresOf(judgment, run), ...maskFailures(masked)],
  };
}

/** The second oracle's verdict: every real file of a denied program that ran in the bash tool's sandbox. */
export function maskFailures(masked: MaskRun | undefined): string[] {
  return [...new Set(masked?.realDenied ?? [])].map(
    (p) => `the bash tool's sandbox ran the real ${p}, which a deny rule names: its mask did not hold`,
  );
}

/**
 * What kind of failure a message reports, without the judgments in it: the same kind in a shorter
 * command is the same finding (minimise keeps to it rather than drift to another).
 */
export function kindOf(failure: string): string {
  const ran = /^it ran (\S+), which an? (deny|ask) rule names/.exec(failure);
  if (ran) return `${ran[2]} ${ran[1]}`;
  const mask = /^the bash tool's sandbox ran the real (\S+),/.exec(failure);
  if (mask) return `mask ${mask[1]}`;
  if (/ allowed it, and it ran /.test(failure)) return 'allowed, ran more';
  const threw = /^(\w+)'s judgment threw/.exec(failure);
  if (threw) return `${threw[1]} threw`;
  return 'formats disagree';
}

/** A failure as a person reads it: the command, how each format judged it, what ran, why it fails. */
export function describeCase(r: CaseResult, seed?: string): string {
  const reading = readShell(r.command);
  return [
    `command: ${JSON.stringify(r.command)}${seed ? `  (${seed})` : ''}`,
    `  judged: ${FORMATS.map((f) => `${f} ${r.judgment[f]}`).join(', ')}`,
    `  reading: ${reading.commands.length} command(s); unknown: ${JSON.stringify(reading.unknown)}; unprovable: ${JSON.stringify(reading.unprovable)}`,
    `  ran: ${r.run ? clipList(r.run.programs).join(' ') || '(nothing)' : '(not run: all denied)'}${r.run?.timedOut ? ' (timed out)' : ''}`,
    ...(r.masked?.realDenied.length ? [`  in the bash tool's sandbox: ${r.masked.output.slice(0, 400)}`] : []),
    ...r.failures.map((f) => `  FAIL: ${f}`),
  ].join('\n');
}

/** Runs `work` over `items` with at most `width` at once, results in input order. */
export async function pool<T, R>(
  items: readonly T[],
  width: number,
  work: (t: T, i: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return out;
}

// ---- what was found ----

export interface FoundCase {
  command: string;
  /** How it was found: the seed and case number, or the corpus entry. */
  origin: string;
  /** What the judgment and the run said when it was found (for the record; the replay judges again). */
  found: { judgment: Judgment; ran: string[]; failures: string[]; date: string };
}

export const FOUND_FILE = path.join(__dirname, 'fixtures', 'shell-fuzz', 'found.json');

export function readFound(file = FOUND_FILE): FoundCase[] {
  if (!fs.existsSync(file)) return [];
  const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as { cases?: FoundCase[] };
  if (!Array.isArray(doc.cases)) throw new Error(`${file}: expected {"cases": [...]}`);
  return doc.cases;
}

/** Adds the cases not there yet (by command text); returns how many were new. */
export function appendFound(cases: FoundCase[], file = FOUND_FILE): number {
  const have = readFound(file);
  const known = new Set(have.map((c) => c.command));
  const fresh = cases.filter((c) => !known.has(c.command) && known.add(c.command));
  if (!fresh.length) return 0;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const doc = {
    about:
      'Commands the differential check of the Bash judgment found (test/shell-differential.test.ts replays each, always).',
    cases: [...have, ...fresh],
  };
  fs.writeFileSync(`${file}.${process.pid}.tmp`, `${JSON.stringify(doc, null, 2)}\n`);
  fs.renameSync(`${file}.${process.pid}.tmp`, file);
  return fresh.length;
}

export function foundCase(r: CaseResult, origin: string): FoundCase {
  return {
    command: r.command,
    origin,
    found: {
      judgment: r.judgment,
      ran: clipList(r.run?.programs ?? []),
      failures: r.failures.map((f) => (f.length > 400 ? `${f.slice(0, 399)}…` : f)),
      date: new Date().toISOString(),
    },
  };
}

const clipList = (l: string[]) => (l.length > 20 ? [...l.slice(0, 20), `… ${l.length - 20} more`] : l);

/**
 * A shorter command that still fails: drops runs of tokens (test/shell-differential.ts `tokens`),
 * half the command first, then smaller runs down to one token, keeping each drop that still
 * fails; blanks stay, so the words left are the words bash read.
 */
export async function minimise(
  command: string,
  stillFails: (c: string) => Promise<boolean>,
  budget = 200,
): Promise<string> {
  let parts = tokens(command);
  let tries = 0;
  for (let size = Math.max(1, parts.length >> 1); size >= 1 && tries < budget; size >>= 1) {
    for (let i = 0; i < parts.length && tries < budget; ) {
      const kept = [...parts.slice(0, i), ...parts.slice(i + size)];
      const dropped = parts.slice(i, i + size);
      if (dropped.every((t) => !t.trim())) {
        i += size;
        continue;
      }
      tries++;
      const candidate = kept.join('');
      if (candidate.trim() && (await stillFails(candidate))) parts = kept;
      else i += size;
    }
  }
  return parts.join('');
}

// ---- the generator ----

/** A seeded random source (mulberry32): the same seed gives the same cases on every machine. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(list: readonly T[]): T {
    return list[this.int(list.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** The seed of case `index` of run `seed`: each case stands alone, so the first N are always the same. */
export function caseSeed(seed: number, index: number): number {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  h = Math.imul(h ^ index, 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

// Quoting, every kind bash has: what each returns reads back as the text it was given.
const sq = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
const dq = (s: string) => `"${s.replace(/["\\$`]/g, (c) => `\\${c}`)}"`;
const ansi = (s: string) =>
  `$'${[...s].map((c) => (/[a-z0-9 ]/i.test(c) ? c : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)).join('')}'`;
const backslashed = (s: string) => s.replace(/[^a-z0-9]/gi, (c) => (c === '\n' ? "$'\\n'" : `\\${c}`));
export const QUOTES: readonly ((s: string) => string)[] = [sq, dq, ansi, backslashed];

/**
 * Commands the case hides, by what the rules say of their program: denied (touch, mkdir), asked
 * (rm), or covered by no rule (id, uname); each leaves a trace in the execve log when it runs.
 */
export const PAYLOADS = ['touch D', 'mkdir D', 'rm -f victim.txt', 'id', 'uname', 'touch victim.txt'];
/** Commands every rule set allows, to stand beside a payload. */
export const ALLOWED_COMMANDS = ['echo ok', 'ls', 'cat /dev/null', 'printf x', 'true', 'echo "$HOME"', 'ls -a .'];

type Hide = (code: string, r: Rng) => string;
const q = (r: Rng, s: string) => r.pick(QUOTES)(s);
/** A builtin's name as bash still runs it: quoted, escaped, behind `builtin` or `command`. */
const spell = (r: Rng, name: string) =>
  r.pick([
    name,
    name,
    `\\${name}`,
    `'${name}'`,
    `"${name}"`,
    `builtin ${name}`,
    `command ${name}`,
    `${name[0]}''${name.slice(1)}`,
  ]);

/** Where a command can hide: substitutions, data turned into code, shells reading input, wrappers. */
export const HIDES: Record<string, Hide> = {
  // Substitutions and expansions bash runs while expanding an allowed command's words.
  dollarParen: (c) => `echo "$(${c})"`,
  bareSubst: (c) => `echo $(${c})`,
  backquote: (c) => `echo \`${c}\``,
  procSubst: (c, r) => `${r.pick(['echo', 'cat', 'ls'])} <(${c})`,
  defaultValue: (c, r) => `echo \${x${r.pick([':-', '-', ':=', '=', ':+', '+', ':?'])}$(${c})}`,
  patternSubst: (c) => `echo \${HOME/x/$(${c})}`,
  arithmetic: (c) => `echo $(( 1 + $(${c}) 0 ))`,
  oldArithmetic: (c) => `echo $[ 1 + $(${c}) 0 ]`,
  doubleBracket: (c) => `[[ -n $(${c}) ]]`,
  // Data that bash turns into code later: the issue's `$_` family and its relatives.
  promptLast: (c, r) => `${r.pick(['echo', 'printf %s'])} ${sq(`$(${c})`)}; echo \${_@P}`,
  promptVar: (c, r) => `${r.pick(['printf -v x %s', 'read x <<<', 'x='])} ${sq(`$(${c})`)}; echo \${x@P}`,
  promptArg: (c) => `set -- ${sq(`$(${c})`)}; echo \${1@P}`,
  substringLast: (c) => `echo ${sq(`a[$(${c})]`)}; echo \${HOME:_}`,
  substringLen: (c) => `echo ${sq(`a[$(${c})]`)}; echo \${HOME:0:$_}`,
  indirectLast: (c) => `echo ${sq(`a[$(${c})]`)}; echo \${!_}`,
  arithLast: (c) => `echo ${sq(`a[$(${c})]`)}; echo $(( $_ ))`,
  printfV: (c, r) => `${spell(r, 'printf')} ${r.pick(['-v', "$'-v'", '-v ', '"-v"'])} ${sq(`a[$(${c})]`)} x`,
  readSubscript: (c, r) => `${spell(r, 'read')} ${sq(`a[$(${c})]`)} <<< x`,
  testV: (c, r) => `${r.pick(['test -v', '[ -v', '[[ -v'])} ${sq(`a[$(${c})]`)}${r.pick(['', ' ]', ' ]]'])}`,
  testEq: (c, r) => `[[ ${sq(`a[$(${c})]`)} ${r.pick(['-eq', '-lt', '-ne'])} 0 ]]`,
  letSubscript: (c, r) => `${spell(r, 'let')} ${sq(`a[$(${c})]`)}`,
  nameref: (c, r) => `${spell(r, r.pick(['declare', 'typeset', 'local']))} -n r=${sq(`a[$(${c})]`)}; echo $r`,
  // A redirection between a wrapper (or any command) and the words after it.
  redirectInside: (c, r) => {
    const words = c.split(' ');
    words.splice(1 + r.int(words.length), 0, r.pick(['>/dev/null', '2>&1', '</dev/null', '2>/dev/null', '>&2']));
    return words.join(' ');
  },
  indirectVar: (c) => `x=${sq(`a[$(${c})]`)}; echo \${!x}`,
  ps4: (c) => `PS4=${sq(`$(${c})`)}; set -x; echo`,
  shellopts: (c) => `SHELLOPTS=xtrace PS4=${sq(`$(${c})`)} bash -c true`,
  bashEnv: (c) => `BASH_ENV=/dev/stdin bash -c true <<< ${sq(c)}`,
  // A shell reading commands from its input.
  pipeBash: (c, r) =>
    `echo ${sq(c)} | ${r.pick(['bash', 'bash -', 'sh', 'sh -s', 'sh /dev/stdin', 'bash /dev/stdin'])}`,
  hereString: (c, r) => `${r.pick(['bash', 'sh', 'source /dev/stdin', '. /dev/stdin'])} <<< ${sq(c)}`,
  hereDoc: (c, r) =>
    `${r.pick(['bash', 'sh', 'cat'])} <<${r.pick(['EOF', "'EOF'", '-EOF'])}\n${r.pick([c, `$(${c})`])}\nEOF`,
  sourceSubst: (c) => `. <(echo ${sq(c)})`,
  bashProcSubst: (c) => `bash <(echo ${sq(c)})`,
  // Commands inside commands and after wrappers.
  shellC: (c, r) =>
    `${r.pick(['bash -c', 'sh -c', 'bash -lc', 'bash -ec', 'bash --norc -c', 'bash -O extglob -c'])} ${q(r, c)}`,
  evalIt: (c, r) => `eval ${q(r, c)}`,
  envSplit: (c, r) => `env ${r.pick(['-S', '--split-string=', '--split-string '])}${sq(c)}`.replace('= ', '='),
  wrapper: (c, r) =>
    `${r.pick(['env', 'env -i', 'env --', 'env A=1', 'timeout 5', 'timeout -s KILL 5', 'nice', 'nice -n 5', 'nohup', 'stdbuf -o0', 'setsid -w', 'command', 'command -p', 'exec', 'time', 'time -p', 'taskset -c 0', 'ionice -c 3', 'chroot /', 'flock /tmp', 'runuser -u root --'])} ${c}`,
  xargsPipe: (c, r) => `echo ${sq(c)} | ${r.pick(['xargs -I{} sh -c {}', 'xargs -0 sh -c', 'xargs sh -c'])}`,
  xargsArgs: (c) => `echo ${c.split(' ').slice(1).join(' ') || 'x'} | xargs ${c.split(' ')[0]}`,
  findExec: (c, r) => `find /tmp -maxdepth 0 ${r.pick(['-exec', '-execdir'])} ${c} \\;`,
  dashC: (c, r) =>
    `${r.pick(['sg "$(id -gn)" -c', 'sg root -c', 'su -c', 'script -qc', 'flock /tmp -c'])} ${sq(c)}${r.pick(['', ' /dev/null'])}`,
  // Names that point elsewhere: hash, aliases, functions, traps, coproc.
  hashP: (c) => `hash -p /usr/bin/${c.split(' ')[0]} ls; ls ${c.split(' ').slice(1).join(' ')}`,
  bashCmds: (c) => `BASH_CMDS[ls]=/usr/bin/${c.split(' ')[0]}; ls ${c.split(' ').slice(1).join(' ')}`,
  alias: (c) => `shopt -s expand_aliases\nalias ls=${sq(c)}\nls`,
  functionName: (c, r) =>
    `${r.pick(['echo() {', 'function echo {', 'ls() {', 'f() {'])} ${c}; }; ${r.pick(['echo', 'ls', 'f'])}`,
  notFound: (c) => `command_not_found_handle() { ${c}; }; nosuchprogram`,
  trap: (c, r) => `trap ${sq(c)} ${r.pick(['EXIT', 'DEBUG', 'ERR'])}; ${r.pick(['true', 'false', 'echo'])}`,
  coproc: (c, r) => `coproc ${r.pick(['', 'NAME '])}${r.pick([c, `{ ${c}; }`])}`,
  // Control flow and lists.
  compound: (c, r) =>
    r.pick([
      `(${c})`,
      `{ ${c}; }`,
      `if true; then ${c}; fi`,
      `for i in 1; do ${c}; done`,
      `while true; do ${c}; break; done`,
      `until false; do ${c}; break; done`,
      `case x in x) ${c};; esac`,
      `! ${c}`,
      `${c} &`,
      `time { ${c}; }`,
    ]),
  // How the program's name is written.
  nameSpelling: (c, r) => {
    const [name, ...rest] = c.split(' ');
    const spelled = r.pick([
      `\\${name}`,
      sq(name),
      `"${name.slice(0, 2)}"${name.slice(2)}`,
      `${name[0]}\\${name.slice(1)}`,
      ansi(name),
      `${name.slice(0, 2)}''${name.slice(2)}`,
      `/usr/bin/${name}`,
      `/bin/${name}`,
      `/usr/bin/${name.slice(0, -1)}?`,
      `/usr/bin/${name[0]}[${name[1]}]${name.slice(2)}`,
      `/usr/*/${name}`,
      `X=1 ${name}`,
      `${name.slice(0, 2)}\\\n${name.slice(2)}`,
      `\${x:-${name}}`,
    ]);
    return [spelled, ...rest].join(r.pick([' ', ' ', '${IFS}', '\t']));
  },
  braceName: (c) => `{${c.split(' ').join(',')}}`,
  // What a quote-tracking splitter reads differently from bash.
  smuggle: (c, r) =>
    r.pick([
      `echo ok #'\n${c}`,
      `echo ok $'\\'';${c};#'`,
      `echo a # \\\n${c}`,
      `echo "a\\"; ${c}; echo "`,
      `echo 'a\\'; ${c}; echo '`,
    ]),
  hereDocEnd: (c, r) =>
    r.pick([
      `cat <<EOF\nEOF \n${c}\nEOF`,
      `cat <<EOF; ${c}\nx\nEOF`,
      `cat <<-EOF\n\tx\n\tEOF\n${c}`,
      `cat <<E\\OF\nx\nEOF\n${c}`,
      `cat <<"EOF"\n$(${c})\nEOF`,
    ]),
  // Another name for the program (SECURITY.md's assignments before a command): PATH set for it or
  // before it, `exec -a`. Links and copies made at run time are MASK_HIDES.
  pathAssign: (c, r) => {
    const v = r.pick(['/tmp/x', '.', '', 'tool', '/usr/bin', '/tmp/x:$PATH', '/nonexistent']);
    return r.pick([`PATH=${v} ${c}`, `env PATH=${v} ${c}`, `env -i PATH=${v} ${c}`, `PATH=${v}; ${c}`]);
  },
  execA: (c, r) => {
    const exec = `exec ${r.pick(['-a', '-ca', '-la', '-c -a'])} ${r.pick(['ls', 'echo', 'x', '""'])} ${c}`;
    return r.pick([`(${exec})`, exec, `bash -c ${sq(exec)}`]);
  },
  longChain: (c, r) => `${Array.from({ length: 55 + r.int(10) }, () => 'true').join(' && ')} && ${c}`,
};
const HIDE_NAMES = Object.keys(HIDES);

/**
 * Hides only the masks can hold (opaqueCaseAt, the second oracle): the judgment cannot read the
 * program they start, so it asks (a person may say yes), and the first oracle's rule that a
 * format must deny every command that runs a denied program does not apply. A name made at run
 * time (a link, or a copy of a shell or wrapper that then runs the payload) and code written to a
 * file or encoded first.
 */
const MASK_HIDES: Record<string, Hide> = {
  // The masks bind over the real files, so a link reaches the mask, and a copy made in the bash
  // tool's sandbox copies the mask; a copy of the real file made where no mask is (runTraced's
  // sandbox) is a new program no deny rule names, and the judgment must not have allowed the
  // step that made it (it asks: `./x` is a program no rule covers).
  madeName: (c, r) => {
    const [name, ...rest] = c.split(' ');
    const made = r.pick([
      `ln -s /usr/bin/${name} x`,
      `ln -sf "$(command -v ${name})" x`,
      `ln /usr/bin/${name} x`,
      `cp -l /usr/bin/${name} x`,
      `cp /usr/bin/${name} x`,
      `cat /usr/bin/${name} > x && chmod +x x`,
      `install /usr/bin/${name} x`,
    ]);
    const run = r.pick(['./x', 'PATH=.:$PATH x', '"$PWD/x"', 'exec ./x', 'bash -c ./x', 'env ./x']);
    return `${made}${r.pick(['; ', ' && ', '\n'])}${[run, ...rest].join(' ')}`;
  },
  // A same-bytes copy of the program elsewhere in the system folders (SYSTEM_COPIES), by its path,
  // through env's PATH, under exec -a, or through a link; at the start of a command also the copy
  // without executable bits, copied and marked.
  systemCopy: (c, r) =>
    c.replace(/(^|[^\w/.-])(touch|mkdir)(?![\w/.-])/, (_, before: string, name: string) => {
      const p = r.pick(SYSTEM_COPIES[name]);
      const forms = [p, p, `env PATH=${path.dirname(p)} ${path.basename(p)}`, `exec -a ${name} ${p}`];
      if (name === 'touch') forms.push(SYSTEM_COPY_LINK);
      if (name === 'touch' && before === '') forms.push(`cp ${SYSTEM_COPY_DATA} y && chmod +x y && ./y`);
      return before + r.pick(forms);
    }),
  // Code the judgment cannot read: a script written first, encoded text, a here-document.
  scriptFile: (c, r) =>
    `${r.pick(['echo', 'printf "%s\\n"'])} ${sq(c)} > s.sh; ${r.pick(['bash s.sh', 'sh s.sh', '. ./s.sh', 'source s.sh', 'chmod +x s.sh && ./s.sh', 'bash < s.sh'])}`,
  encoded: (c, r) =>
    `echo ${Buffer.from(c).toString('base64')} | base64 -d | ${r.pick(['bash', 'sh', 'xargs -0 bash -c', 'bash /dev/stdin'])}`,
};
const MASK_HIDE_NAMES = Object.keys(MASK_HIDES);

/** The issue's forms, SECURITY.md threat 54's and those of public reports against other harnesses' judgments. */
export const SEED_CORPUS: readonly string[] = [
  // The security issue, section 3.
  "echo '$(touch F)'; echo ${_@P}",
  "echo 'a[$(rm -f victim.txt)]'; echo ${HOME:_}",
  "echo 'a[$(touch D)]'; echo ${!_}",
  'coproc touch D',
  "echo 'touch D' | bash -",
  "echo 'touch D' | sh /dev/stdin",
  "env --split-string='touch D'",
  "echo 'touch D' | xargs -I{} sh -c {}",
  'hash -p /usr/bin/touch ls; ls D',
  'sg "$(id -gn)" -c "touch D"',
  // SECURITY.md threat 54.
  "echo ok #'\ntouch F",
  "echo ok $'\\'';echo X > F;#'",
  'cat <<EOF\n$(touch F)\nEOF',
  '(touch F)',
  'echo $(touch F)',
  'echo `touch F`',
  "bash -c 'touch F'",
  'env touch F',
  'timeout 5 touch F',
  'echo F | xargs touch',
  'sudo -n touch F',
  '/usr/bin/touch F',
  '\\touch F',
  'X=1 touch F',
  // Public reports against Claude Code's and Codex's judgments: commands chained after an allowed
  // prefix; a wrapper outside a fixed unwrap list; a deny past the 50th subcommand; substitutions
  // in arguments; unquoted backslash escapes read raw; IFS in a word; a variable as the name.
  'echo test && ls && touch D',
  'ls; mkdir D',
  'nohup touch D',
  'stdbuf -o0 touch D',
  `${Array.from({ length: 60 }, () => 'true').join(' && ')} && touch D`,
  'echo "$(touch D)"',
  't\\ouch D',
  'touch${IFS}D',
  'x=touch; $x D',
  'find . -maxdepth 0 -exec touch D \\;',
  // Assignments before a command; exec -a.
  'PATH=/tmp/x touch f',
  'env PATH=/nonexistent touch f',
  'env -i PATH=/bin touch f',
  'exec -a ls touch f',
];

/** The masks' own corpus (the second oracle): denied programs under names made at run time, and in code written first. */
export const MASK_CORPUS: readonly string[] = [
  'cp /usr/bin/touch t; ./t f',
  'ln -s /usr/bin/touch l; ./l f',
  'ln /usr/bin/touch h; ./h f',
  'cat /usr/bin/touch > t; chmod +x t; ./t f',
  'cp /usr/bin/bash x; ./x -c "touch f"',
  "echo 'touch D' > s.sh; bash s.sh",
  "echo 'mkdir D' > s.sh; chmod +x s.sh && ./s.sh",
  // Copies of the same bytes elsewhere in the system folders (SYSTEM_COPIES).
  `${SYSTEM_COPIES.touch[0]} f`,
  `${SYSTEM_COPIES.touch[1]} f`,
  `${SYSTEM_COPIES.mkdir[0]} D`,
  `${SYSTEM_COPY_LINK} f`,
  `PATH=${path.dirname(SYSTEM_COPIES.touch[0])}:$PATH; touch f`,
  `env PATH=${path.dirname(SYSTEM_COPIES.touch[1])} touch-9 f`,
  `ln -s ${SYSTEM_COPIES.touch[1]} x; ./x f`,
  `cp ${SYSTEM_COPY_DATA} x && chmod +x x && ./x f`,
];

/**
 * Ways to reach the workspace's own `tool/ls` (which runs uname) while the line reads as `ls`:
 * PATH changed by an allowed builtin or an assignment, the program named by its path.
 */
const WORKSPACE_FORMS = [
  'printf -v PATH %s /tmp/tool; ls',
  'printf -v PATH %s tool; ls',
  "printf -v 'PATH' tool; ls -a",
  'PATH=tool ls',
  'PATH=tool:$PATH ls',
  'export PATH=tool; ls',
  './tool/ls',
  'tool/ls',
  'cd tool && ./ls',
  'cd tool; PATH=. ls',
  'hash -p tool/ls cat; cat',
];

/** A new command from the grammar: a payload, hidden once or twice, maybe beside allowed commands. */
export function generate(r: Rng): string {
  let code = r.chance(0.08) ? r.pick(WORKSPACE_FORMS) : r.pick(PAYLOADS);
  const depth = 1 + (r.chance(0.35) ? 1 : 0) + (r.chance(0.1) ? 1 : 0);
  for (let i = 0; i < depth; i++) code = HIDES[r.pick(HIDE_NAMES)](code, r);
  if (r.chance(0.3)) code = `${r.pick(ALLOWED_COMMANDS)}${r.pick(JOINERS)}${code}`;
  if (r.chance(0.2)) code = `${code}${r.pick(JOINERS)}${r.pick(ALLOWED_COMMANDS)}`;
  return code;
}

const JOINERS = ['; ', ' && ', ' || ', '\n', ' | ', ' & ', ';', ' |& '];
/** Fragments a mutation inserts: bash's metacharacters, expansions and quotes, alone and half-open. */
const FRAGMENTS = [
  ';',
  '&',
  '|',
  '\n',
  '#',
  "'",
  '"',
  '\\',
  '`',
  '$',
  '$(',
  ')',
  '${',
  '}',
  '$_',
  '${_@P}',
  '${!_}',
  '${HOME:_}',
  '$((',
  '))',
  '((',
  '[[',
  ']]',
  '<(',
  '<<<',
  '<<EOF\n',
  '\nEOF\n',
  '{',
  '}',
  '*',
  '?',
  "$'",
  '\\\n',
  ' # ',
  'a[$(touch D)]',
  '$(touch D)',
  '`touch D`',
  'touch D',
  'rm -f victim.txt',
  'eval',
  'bash -c',
  'coproc',
  'exec',
  'env -S',
  'X=1',
  '2>&1',
  '>/dev/null',
  '<',
  '>',
  '!',
  '{a,b}',
];

/** Bash-ish tokens of a command: quoted strings whole, blanks and metacharacters apart. */
export function tokens(command: string): string[] {
  return command.match(/'[^']*'|"(?:[^"\\]|\\.)*"|\$\([^()]*\)|\s+|[;&|<>()]+|[^\s;&|<>()'"]+|./gs) ?? [];
}

/** A corpus entry changed once or twice: a token inserted, replaced, quoted or dropped, or two entries spliced. */
export function mutate(r: Rng, corpus: readonly string[]): string {
  let toks = tokens(r.pick(corpus));
  const times = 1 + r.int(3);
  for (let n = 0; n < times; n++) {
    const at = r.int(toks.length + 1);
    switch (r.int(6)) {
      case 0:
        toks.splice(at, 0, r.pick(FRAGMENTS));
        break;
      case 1:
        toks.splice(at, 1, r.pick(FRAGMENTS));
        break;
      case 2:
        if (toks[at]?.trim()) toks[at] = q(r, toks[at]);
        break;
      case 3:
        toks.splice(at, 1);
        break;
      case 4: {
        const other = tokens(r.pick(corpus));
        toks = [...toks.slice(0, at), ...other.slice(r.int(other.length + 1))];
        break;
      }
      default:
        toks.splice(at, 0, HIDES[r.pick(HIDE_NAMES)](r.pick(PAYLOADS), r));
    }
  }
  return toks.join('');
}

/** Case `index` of run `seed`: a mutant of a corpus entry, or a new command from the grammar. */
export function caseAt(seed: number, index: number, corpus: readonly string[] = SEED_CORPUS): string {
  const r = new Rng(caseSeed(seed, index));
  return r.chance(0.35) ? mutate(r, corpus) : generate(r);
}

/** Hides that change how a program is named or started, for opaqueCaseAt. */
const NAMINGS = [
  'pathAssign',
  'execA',
  'madeName',
  'nameSpelling',
  'wrapper',
  'hashP',
  'bashCmds',
  'xargsArgs',
  'findExec',
  'coproc',
  'compound',
  'systemCopy',
];
const OPAQUE = ['scriptFile', 'encoded', 'madeName', 'pipeBash', 'hereString', 'envSplit', 'evalIt', 'shellC'];
const ALL_HIDES: Record<string, Hide> = { ...HIDES, ...MASK_HIDES };

/**
 * Case `index` for the masks (the second oracle): a denied program under another name or way of
 * starting, inside code the judgment of the text cannot read (a script written first, base64), so
 * a format asks, a person may say yes, and only the masks stand between the command and the
 * program. The outer form is picked from OPAQUE most of the time; the rest, any hide.
 */
export function opaqueCaseAt(seed: number, index: number): string {
  const r = new Rng(caseSeed(seed ^ 0x5eed, index));
  let code = r.pick(['touch D', 'mkdir D', 'touch victim.txt', 'mkdir -p D/E']);
  // A copy in the system folders in one case of four, besides its share of the namings below.
  if (r.chance(0.25)) code = MASK_HIDES.systemCopy(code, r);
  for (let i = 0, n = 1 + r.int(2); i < n; i++) code = ALL_HIDES[r.pick(NAMINGS)](code, r);
  code = ALL_HIDES[r.chance(0.8) ? r.pick(OPAQUE) : r.pick([...HIDE_NAMES, ...MASK_HIDE_NAMES])](code, r);
  return r.chance(0.3) ? `${r.pick(ALLOWED_COMMANDS)}${r.pick(JOINERS)}${code}` : code;
}

/** The seed `npm test` runs with unless SHELL_FUZZ_SEED says otherwise. */
export const DEFAULT_SEED = 20260522;

/** The constructs a family of findings is told apart by (see familyOf). */
const CONSTRUCTS: [string, RegExp][] = [
  ['PS4', /\bPS4\b/],
  ['BASH_ENV', /\bBASH_ENV\b/],
  ['SHELLOPTS', /\bSHELLOPTS\b/],
  ['PATH', /\bPATH\b/],
  ['BASH_CMDS', /\bBASH_CMDS\b/],
  ['nameref', /\bdeclare\s+-n\b/],
  ['printf -v', /\bprintf\s+-v/],
  ['read', /\bread\b/],
  ['let', /\blet\b/],
  ['test -v', /-v\s/],
  ['@P', /@P\}/],
  ['${!', /\$\{!/],
  ['${…:_}', /:\$?_\}|:0:\$_/],
  ['$_', /\$_\b/],
  ['subscript', /a\[\$\(/],
  ['coproc', /\bcoproc\b/],
  ['hash -p', /\bhash\b/],
  ['alias', /\balias\b/],
  ['function', /\(\)\s*\{|\bfunction\b/],
  ['trap', /\btrap\b/],
  ['env -S', /\benv\s+(-S|--split-string)/],
  ['stdin shell', /\|\s*(ba)?sh\b|<<<|\/dev\/stdin|\.\s+<\(|\bsource\b/],
  ['-c', /\b(sg|su|script|flock|sh|bash)\b[^;|&]*\s-\w*c/],
  ['xargs', /\bxargs\b/],
  ['find', /\bfind\b/],
  ['glob', /\/[\w/]*(\[|\?|\*)/],
  ['IFS', /\bIFS\b/],
  ['brace', /\{[^}\s]*,[^}]*\}/],
  ['tool', /\btool\b/],
  ['exec -a', /\bexec\s+-\w*(\s+-)?\w*a\b/],
  ['made name', /\b(ln|cp|install|cat)\b[^;&|\n]*\/usr\/bin\//],
];

/**
 * Which finding a failing case is: its kind of failure and the constructs it uses. The long mode
 * keeps one case of each family, so a construct found once is not found again in every wrapping.
 */
export function familyOf(command: string, kind: string): string {
  const used = CONSTRUCTS.filter(([, re]) => re.test(command)).map(([name]) => name);
  return `${kind}: ${used.join(' ') || command.replace(/\s+/g, ' ').trim()}`;
}
