// What the files of the Bash judgment's differential test share (test/shell-differential*.test.ts,
// split so the parts run on workers of their own): the budget, the seed, the judge and the sandbox
// copies set up around each file, and the generated cases cut into parts.
//
// The Bash judgment against what bash really runs (the security issue's section 3): every case
// is judged by the four policy formats under one rule set (allow echo, ls, cat, printf, true; deny
// touch, mkdir; ask rm) and, unless all four deny it, run in a throwaway bwrap sandbox under
// `strace -f -e trace=execve`. A case fails when a format allowed it and it executed a program no
// allow rule covers, when a denied program ran and a format did not deny, when an asked program
// ran and a format neither asked nor denied, or when the formats disagree about allowing it
// (test/shell-differential.ts). First every case found before (test/fixtures/shell-fuzz/found.json,
// appended by the long mode, scripts/shell-fuzz.ts), then a fixed number of seeded cases:
// SHELL_FUZZ_SEED=<n> reruns another seed, SHELL_FUZZ_CASES=<n> another count (in
// GENERATED_PARTS files, test/shell-differential-generated-<part>.test.ts).
// The second oracle runs cases any format lets run through the bash tool itself, in its real
// sandbox with the deny masks of the same rules (tools/exec-deny.ts): there no denied program may
// execute its real file, whatever the judgment said. It is slower per case, so `npm test` runs
// the corpus and a seeded sample (SHELL_FUZZ_MASK_CASES=<n>), and the long mode runs every case.
// Its cases also start denied programs by the path of a same-bytes copy elsewhere in the system
// folders: copies the host has, and copies the test places under /opt first (SYSTEM_COPIES).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CaseResult,
  caseAt,
  checkCase,
  DEFAULT_SEED,
  describeCase,
  type Judge,
  makeJudge,
  missingTools,
  placeSystemCopies,
  pool,
} from './shell-differential';

export const SEED = Number(process.env.SHELL_FUZZ_SEED ?? DEFAULT_SEED);
/**
 * About three minutes on this project's 2-core test machine at load 16-20, all parts together:
 * 20,000 took 115 s there (about one case in six runs in the sandbox, the rest all four formats
 * deny).
 */
const CASES = Number(process.env.SHELL_FUZZ_CASES ?? 30_000);
/** The files the generated cases are cut into: a third each of CASES, in chunks of CHUNK. */
export const GENERATED_PARTS = 3;
const CHUNK = 2500;
/** Cases run at once: strace and bwrap are mostly waiting on the kernel. */
export const WIDTH = 3;
// The sandbox's own time limit per case; a case that outlives it counts by what it executed.
export const CASE_LIMIT_MS = 3000;
/**
 * Generated cases the second oracle runs in `npm test`, and twice as many made to reach the masks
 * (opaqueCaseAt), besides the corpus: 300 took about 13 s on the 2-core test machine at load 27.
 */
export const MASK_CASES = Number(process.env.SHELL_FUZZ_MASK_CASES ?? 100);
// No timing is asserted; a chunk on a machine at load 16 can take many times its idle time.
export const CHUNK_TIMEOUT_MS = 30 * 60_000;

/**
 * The judge of the four formats, made before the file's first test, with the system copies in
 * place; the copies are left after its last.
 */
export function useJudge(): () => Judge {
  let judge: Judge | undefined;
  let removeCopies: (() => void) | undefined;
  beforeAll(async () => {
    const missing = missingTools();
    if (missing.length)
      throw new Error(
        `the differential test of the Bash judgment runs each command under strace in a bwrap sandbox; missing: ${missing.join(', ')}. Install with: apt-get install -y ${missing.join(' ')}`,
      );
    judge = await makeJudge();
    // Before any case runs: the bash tool indexes the system folders once per process.
    removeCopies = placeSystemCopies();
  });
  afterAll(() => removeCopies?.());
  return () => {
    if (!judge) throw new Error('the judge is made in beforeAll: call it from a test');
    return judge;
  };
}

/** Each command checked in the sandbox; the failing ones described, with where each came from. */
export async function failing(
  judge: Judge,
  what: string,
  commands: readonly string[],
  origin: (i: number) => string,
): Promise<string[]> {
  const results: CaseResult[] = await pool(commands, WIDTH, (c) => checkCase(judge, c, CASE_LIMIT_MS));
  const run = results.filter((r) => r.run);
  // For the record (how much of the budget the sandbox took), not asserted.
  console.log(
    `${what}: ${results.length} judged, ${run.length} run in the sandbox (the rest denied by all four), ${run.filter((r) => r.run?.timedOut).length} stopped at the time limit`,
  );
  return results.flatMap((r, i) => (r.failures.length ? [describeCase(r, origin(i))] : []));
}

/**
 * The tests of one part (0 to GENERATED_PARTS - 1) of the generated cases: its share of
 * [0, CASES), a test per chunk of CHUNK cases.
 */
export function generatedCases(part: number): void {
  const judge = useJudge();
  const start = Math.round((part * CASES) / GENERATED_PARTS);
  const end = Math.round(((part + 1) * CASES) / GENERATED_PARTS);
  describe('the Bash judgment of every policy format against the programs bash executes', () => {
    for (let from = start; from < end; from += CHUNK) {
      const to = Math.min(end, from + CHUNK);
      it(
        `holds for generated cases ${from}–${to - 1} of seed ${SEED}`,
        async () => {
          const commands = Array.from({ length: to - from }, (_, k) => caseAt(SEED, from + k));
          const failures = await failing(
            judge(),
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
}
