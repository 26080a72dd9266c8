// The Bash judgment's differential test, its fixed part: the sandbox and the trace it relies on,
// every case found before and the seed corpus, and the second oracle (the bash tool's own sandbox
// with its deny masks). test/shell-differential-suite.ts says what a case checks; the seeded
// generated cases run in test/shell-differential-generated-*.test.ts, beside this file.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  caseAt,
  deniedRuns,
  FORMATS,
  failuresOf,
  hostCopies,
  kindOf,
  MASK_CORPUS,
  maskFailures,
  opaqueCaseAt,
  pool,
  readFound,
  runMasked,
  runTraced,
  SEED_CORPUS,
} from './shell-differential';
import {
  CASE_LIMIT_MS,
  CHUNK_TIMEOUT_MS,
  failing,
  MASK_CASES,
  SEED,
  useJudge,
  WIDTH,
} from './shell-differential-suite';

const judge = useJudge();

describe('the sandbox and the trace the check relies on', () => {
  it('sees every program a command executes, in substitutions and in the background, and none of its own', async () => {
    const run = await runTraced(
      'ls; echo $(touch D); coproc mkdir E; (read -t 0.2 <> <(:); uname) & /bin/cat /dev/null',
    );
    expect([...run.programs].sort()).toEqual(['cat', 'ls', 'mkdir', 'touch', 'uname']);
    expect(run.timedOut).toBe(false);
  });

  it('keeps the host as it was: a read-only root, a working folder of its own, no network', async () => {
    const run = await runTraced(
      // /proc/net/dev: two lines of heading, then one per network device; only loopback is there.
      'echo x > /usr/sluice-fuzz-probe || uname; [ -e victim.txt ] && [ "$PWD" = /tmp ] && ls; mapfile -t l < /proc/net/dev; [ ${#l[@]} -eq 3 ] && id',
    );
    expect(run.programs).toEqual(['uname', 'ls', 'id']);
  });

  it('fails a case by what ran, whatever the judgment claimed', () => {
    const all = (d: 'allow' | 'ask' | 'deny' | 'none') => ({ claude: d, codex: d, gemini: d, opencode: d });
    const ran = (...programs: string[]) => ({ programs, timedOut: false });
    expect(failuresOf(all('allow'), ran('ls', 'cat'))).toEqual([]);
    expect(failuresOf(all('allow'), ran('id'))).toHaveLength(1);
    expect(failuresOf(all('ask'), ran('touch'))).toHaveLength(1);
    expect(failuresOf(all('ask'), ran('rm'))).toEqual([]);
    expect(failuresOf(all('none'), ran('rm'))).toHaveLength(1);
    expect(failuresOf({ ...all('deny'), codex: 'none' }, ran('mkdir'))).toHaveLength(1);
    expect(failuresOf({ ...all('allow'), opencode: 'ask' }, ran())).toHaveLength(1);
    expect(failuresOf({ ...all('allow'), codex: 'none', gemini: 'none' }, ran())).toEqual([]);
  });
});

describe('the Bash judgment of every policy format against the programs bash executes', () => {
  it(
    'holds for every case found before (test/fixtures/shell-fuzz/found.json) and every form of the seed corpus',
    async () => {
      const found = readFound();
      const commands = [...found.map((c) => c.command), ...SEED_CORPUS];
      const failures = await failing(judge(), 'found and corpus', commands, (i) =>
        i < found.length ? `found.json case ${i}, ${found[i].origin}` : `seed corpus entry ${i - found.length}`,
      );
      expect(failures, `${failures.length} of ${commands.length} cases are bypasses`).toEqual([]);
    },
    CHUNK_TIMEOUT_MS,
  );
});

describe('deny rules held where the bash tool runs a command, whatever the judgment said', () => {
  it('sees a denied program started under other names, and tells its mask from its real file', async () => {
    const run = await runMasked(
      'touch D; ln -s /usr/bin/touch x; ./x E; (exec -a ls mkdir F); cp /usr/bin/touch t; ./t G; ls',
    );
    // touch, the link to it, mkdir under another argv[0]; `./t` is a copy of the mask bound over
    // touch (the real file cannot be read there), a script of its own that denies as the mask does.
    expect(run.started).toEqual(['touch', 'touch', 'mkdir']);
    expect(run.output).toContain('sluice: touch is denied');
    expect(run.realDenied).toEqual([]);
  });

  it('fails a case whose denied program ran its real file: the real program never reads its own file', () => {
    const log = (readsItself: boolean) =>
      [
        '10 execve("/usr/bin/bash", ["bash", "-c", "x"], 0x1 /* 3 vars */) = 0',
        '11 execve("./x", ["./x", "E"], 0x1 /* 5 vars */ <unfinished ...>',
        '10 openat(AT_FDCWD, "./x", O_RDONLY) = 3',
        '11 <... execve resumed>) = 0',
        // Split by another process's line, as strace writes it on a busy machine.
        ...(readsItself
          ? [
              '11 openat(AT_FDCWD, "./x", O_RDONLY <unfinished ...>',
              '10 exit_group(0) = ?',
              '11 <... openat resumed>) = 3',
            ]
          : []),
        '11 exit_group(126) = ?',
        '12 execve("/usr/bin/mkdir", ["mkdir", "/usr/bin/mkdir"], 0x1 /* 5 vars */) = 0',
        '13 execve("c", ["c"], 0x1 /* 5 vars */) = 0',
        '12 openat(AT_FDCWD, "/usr/bin/mkdir", O_RDONLY|O_CLOEXEC) = 3',
        '12 exit_group(1) = ?',
        '13 exit_group(0) = ?',
        // Ended by the sandbox before its first call: neither the mask nor the real program showed.
        '14 execve("/usr/bin/touch", ["touch", "E"], 0x1 /* 5 vars */) = 0',
      ].join('\n');
    // `x` is no denied name; only its link (made in the workspace below) makes it touch.
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-mask-log-'));
    fs.symlinkSync('/usr/bin/touch', path.join(ws, 'x'));
    // A copy of the real file, as a command outside the masks could make: the same bytes.
    fs.copyFileSync('/usr/bin/mkdir', path.join(ws, 'c'));
    try {
      expect(deniedRuns(log(true), ws)).toEqual({
        realDenied: ['mkdir', 'mkdir'],
        started: ['touch', 'mkdir', 'mkdir', 'touch'],
      });
      expect(deniedRuns(log(false), ws).realDenied).toEqual(['touch', 'mkdir', 'mkdir']);
      expect(maskFailures({ ...deniedRuns(log(false), ws), output: '' })).toHaveLength(2);
    } finally {
      fs.rmSync(ws, { recursive: true, force: true });
    }
  });

  it(
    `no denied program runs its real file, for the corpus, the cases found before and ${3 * MASK_CASES} generated cases of seed ${SEED}`,
    async () => {
      const lets = (c: string) => FORMATS.some((f) => judge().judge(c)[f] !== 'deny');
      const sample: string[] = [];
      for (let i = 0; sample.length < MASK_CASES && i < 50 * MASK_CASES; i++) {
        const c = caseAt(SEED, i);
        if (lets(c)) sample.push(c);
      }
      // Twice as many made to reach the masks: denied programs in code the judgment cannot read.
      for (let i = 0; sample.length < 3 * MASK_CASES && i < 50 * MASK_CASES; i++) {
        const c = opaqueCaseAt(SEED, i);
        if (lets(c)) sample.push(c);
      }
      // The found cases the second oracle found (the first oracle replays all of them, above).
      const found = readFound().filter((c) => c.found.failures.some((f) => kindOf(f).startsWith('mask ')));
      const host = hostCopies().map((p) => `${p} D`);
      const corpus = [...SEED_CORPUS, ...MASK_CORPUS, ...host, ...found.map((c) => c.command)];
      const commands = [...new Set(corpus.filter(lets)), ...sample];
      const results = await pool(commands, WIDTH, async (c) => ({ c, run: await runMasked(c, CASE_LIMIT_MS) }));
      const failures = results.flatMap(({ c, run }) =>
        maskFailures(run).map((f) => `${JSON.stringify(c)}: ${f}\n  ${run.output.slice(0, 400)}`),
      );
      // For the record (how many denied programs the sample reached), not asserted.
      const started = results.reduce((n, { run }) => n + run.started.length, 0);
      console.log(`the bash tool's sandbox: ${commands.length} cases run, ${started} starts of a denied program seen`);
      expect(failures, `${failures.length} of ${commands.length} cases ran a denied program`).toEqual([]);
    },
    CHUNK_TIMEOUT_MS,
  );
});
