// The Bash judgment against what bash really runs (the security issue's section 3): every case
// is judged by the four policy formats under one rule set (allow echo, ls, cat, printf, true; deny
// touch, mkdir; ask rm) and, unless all four deny it, run in a throwaway bwrap sandbox under
// `strace -f -e trace=execve`. A case fails when a format allowed it and it executed a program no
// allow rule covers, when a denied program ran and a format did not deny, when an asked program
// ran and a format neither asked nor denied, or when the formats disagree about allowing it
// (test/shell-differential.ts). First every case found before (test/fixtures/shell-fuzz/found.json,
// appended by the long mode, scripts/shell-fuzz.ts), then a fixed number of seeded cases:
// SHELL_FUZZ_SEED=<n> reruns another seed, SHELL_FUZZ_CASES=<n> another count.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type CaseResult,
  caseAt,
  checkCase,
  DEFAULT_SEED,
  describeCase,
  type Judge,
  makeJudge,
  failuresOf,
  missingTools,
  pool,
  readFound,
  runTraced,
  SEED_CORPUS,
} from './shell-differential';

const SEED = Number(process.env.SHELL_FUZZ_SEED ?? DEFAULT_SEED);
/**
 * About three minutes on this project's 2-core test machine at load 16-20: 20,000 took 115 s there
 * (about one case in six runs in the sandbox, the rest all four formats deny).
 */
const CASES = Number(process.env.SHELL_FUZZ_CASES ?? 30_000);
const CHUNK = 2500;
/** Cases run at once: strace and bwrap are mostly waiting on the kernel. */
const WIDTH = 3;
// The sandbox's own time limit per case; a case that outlives it counts by what it executed.
const CASE_LIMIT_MS = 3000;
// No timing is asserted; a chunk on a machine at load 16 can take many times its idle time.
const CHUNK_TIMEOUT_MS = 30 * 60_000;

let judge: Judge;
beforeAll(async () => {
  const missing = missingTools();
  if (missing.length)
    throw new Error(
      `the differential test of the Bash judgment runs each command under strace in a bwrap sandbox; missing: ${missing.join(', ')}. Install with: apt-get install -y ${missing.join(' ')}`,
    );
  judge = await makeJudge();
});

async function failing(what: string, commands: readonly string[], origin: (i: number) => string): Promise<string[]> {
  const results: CaseResult[] = await pool(commands, WIDTH, (c) => checkCase(judge, c, CASE_LIMIT_MS));
  const run = results.filter((r) => r.run);
  // For the record (how much of the budget the sandbox took), not asserted.
  console.log(
    `${what}: ${results.length} judged, ${run.length} run in the sandbox (the rest denied by all four), ${run.filter((r) => r.run?.timedOut).length} stopped at the time limit`,
  );
  return results.flatMap((r, i) => (r.failures.length ? [describeCase(r, origin(i))] : []));
}

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
      const failures = await failing('found and corpus', commands, (i) =>
        i < found.length ? `found.json case ${i}, ${found[i].origin}` : `seed corpus entry ${i - found.length}`,
      );
      expect(failures, `${failures.length} of ${commands.length} cases are bypasses`).toEqual([]);
    },
    CHUNK_TIMEOUT_MS,
  );

  for (let from = 0; from < CASES; from += CHUNK) {
    const to = Math.min(CASES, from + CHUNK);
    it(
      `holds for generated cases ${from}–${to - 1} of seed ${SEED}`,
      async () => {
        const commands = Array.from({ length: to - from }, (_, k) => caseAt(SEED, from + k));
        const failures = await failing(
          `cases ${from}–${to - 1}`,
          commands,
          (k) => `SHELL_FUZZ_SEED=${SEED}, case ${from + k}`,
        );
        expect(failures, `${failures.length} of ${commands.length} cases are bypasses`).toEqual([]);
      },
      CHUNK_TIMEOUT_MS,
    );
  }
});
