// The long mode of the differential check of the Bash judgment (test/shell-differential.ts): the
// same generator and sandbox as `npm test`, for hours, from a seed of its own. Each failing case
// is shrunk (tokens dropped while it still fails) and, when its shape is new, appended to
// test/fixtures/shell-fuzz/found.json, which `npm test` replays first, always. Run one at a time:
// each appends to found.json from what it last read. Every case a format lets run also goes
// through the bash tool's sandbox with the deny masks (the second oracle), and one case in three
// is made to reach the masks (opaqueCaseAt); --no-masks leaves the second oracle out. The copies
// of the denied programs those cases start from a system folder are placed first (SYSTEM_COPIES)
// and removed at the end.
//
//   npx tsx scripts/shell-fuzz.ts --hours 2 [--seed N] [--jobs 3] [--cases N] [--no-minimise] [--no-masks]
//   npx tsx scripts/shell-fuzz.ts --seed N --case I     one case of a run (as npm test names it), judged and run
import { parseArgs } from 'node:util';
import {
  appendFound,
  type CaseResult,
  caseAt,
  checkCase,
  describeCase,
  foundCase,
  kindOf,
  makeJudge,
  minimise,
  missingTools,
  opaqueCaseAt,
  placeSystemCopies,
  readFound,
  SEED_CORPUS,
  familyOf,
} from '../test/shell-differential';

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      hours: { type: 'string', default: '2' },
      seed: { type: 'string' },
      jobs: { type: 'string', default: '3' },
      cases: { type: 'string' },
      'no-minimise': { type: 'boolean' },
      'no-masks': { type: 'boolean' },
      case: { type: 'string' },
    },
  });
  const missing = missingTools();
  if (missing.length) {
    console.error(`shell-fuzz needs strace and bwrap; install with: apt-get install -y ${missing.join(' ')}`);
    return 2;
  }
  const seed = values.seed ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
  const until = Date.now() + Number(values.hours) * 3_600_000;
  const limit = values.cases ? Number(values.cases) : Number.POSITIVE_INFINITY;
  const judge = await makeJudge();
  // Before the first case: the bash tool indexes the system folders once per process.
  process.once('exit', placeSystemCopies());
  const masks = { masks: !values['no-masks'] };
  if (values.case !== undefined) {
    // The seed corpus only, as npm test generates: the same case whatever found.json holds.
    const r = await checkCase(judge, caseAt(seed, Number(values.case)), undefined, masks);
    console.log(describeCase(r, `seed ${seed} case ${values.case}`));
    return r.failures.length ? 1 : 0;
  }
  // Found cases join the corpus the mutations start from: what broke once is worth bending again.
  const corpus = [...SEED_CORPUS, ...readFound().map((c) => c.command)];
  const families = new Set(readFound().flatMap((c) => c.found.failures.map((f) => familyOf(c.command, kindOf(f)))));
  console.log(`shell-fuzz: seed ${seed}, ${values.jobs} at once, until ${new Date(until).toISOString()}`);
  let next = 0;
  let ran = 0;
  let failed = 0;
  const lane = async () => {
    while (Date.now() < until && next < limit) {
      const index = next++;
      // One case in three made for the masks, judged by them alone (the judgment asks for it by design).
      const opaque = masks.masks && index % 3 === 2;
      const command = opaque ? opaqueCaseAt(seed, index) : caseAt(seed, index, corpus);
      const how = { ...masks, masksOnly: opaque };
      const r = await checkCase(judge, command, undefined, how);
      ran++;
      if (ran % 500 === 0) console.log(`shell-fuzz: ${ran} cases, ${failed} failing, ${families.size} families kept`);
      if (!r.failures.length) continue;
      failed++;
      await keep(r, `seed ${seed} case ${index}`, { judge, families, shrink: !values['no-minimise'], masks: how });
    }
  };
  await Promise.all(Array.from({ length: Number(values.jobs) }, lane));
  console.log(`shell-fuzz: done, ${ran} cases, ${failed} failing; reproduce one with SHELL_FUZZ_SEED=${seed}`);
  return failed ? 1 : 0;
}

/** Shrinks a failing case and appends it to found.json when no case of its family is there yet. */
async function keep(
  r: CaseResult,
  origin: string,
  o: {
    judge: Awaited<ReturnType<typeof makeJudge>>;
    families: Set<string>;
    shrink: boolean;
    masks: { masks: boolean; masksOnly: boolean };
  },
): Promise<void> {
  const { judge, families, shrink, masks } = o;
  const kind = kindOf(r.failures[0]);
  if (families.has(familyOf(r.command, kind))) return;
  const small = shrink
    ? await minimise(r.command, async (c) =>
        (await checkCase(judge, c, undefined, masks)).failures.some((f) => kindOf(f) === kind),
      )
    : r.command;
  const family = familyOf(small, kind);
  if (families.has(family)) return;
  families.add(family);
  const final = small === r.command ? r : await checkCase(judge, small, undefined, masks);
  if (!final.failures.length) return;
  appendFound([foundCase(final, small === r.command ? origin : `${origin}, shrunk`)]);
  console.log(`${describeCase(final, origin)}\n`);
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
