// The test suite in two projects that share one queue of test files: the fast files first, so a
// failure there shows in minutes, then the slow end-to-end files (the packed tarball in fresh
// apps, real harness CLIs, sessions of hundreds of steps, killed workers and servers), each
// starting as soon as a worker frees up, with no wait for the last fast file. All share one
// Temporal dev server, one workflow bundle and one packed tarball (test/global-setup.ts).
import * as path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { configDefaults, defineConfig } from 'vitest/config';

// `import … from 'sluice'` (and its subpaths) inside the checkout means the source, as the
// tsconfig paths say for tsc and tsx; the exports map points installed copies at dist/.
const entries: Record<string, string> = {
  sluice: 'index.ts',
  'sluice/client': 'client/index.ts',
  'sluice/worker': 'worker/index.ts',
  'sluice/workflow': 'workflows/public.ts',
  'sluice/agent': 'agent/index.ts',
  'sluice/tools': 'tools/index.ts',
  'sluice/hooks': 'hooks/index.ts',
  'sluice/code-mode': 'tools/code-mode/index.ts',
};

/**
 * The slow end-to-end files, slowest first as a clean clone's CI measured them: they start in
 * this order, so the longest never starts last and leaves the other workers idle at the end. A
 * file that grows past half a minute belongs here; one that grows past a few minutes is split
 * (the README blocks run a file per install cell), since the run is never shorter than its
 * longest file.
 */
const SLOW = [
  'test/harness-cli.test.ts',
  'test/shell-differential.test.ts',
  'test/session.test.ts',
  'test/install-matrix.test.ts',
  'test/hook.test.ts',
  'test/readme-blocks-ai-sdk-temporal-1.24.test.ts',
  'test/readme-blocks-ai-sdk-temporal-1.23.test.ts',
  'test/readme-blocks-temporal-1.24.test.ts',
  'test/readme-blocks-temporal-1.23.test.ts',
  'test/package.test.ts',
  'test/readme-blocks.test.ts',
  'test/session-restart.test.ts',
  'test/gateway.test.ts',
  'test/faults/outcome-unknown.test.ts',
  'test/heartbeat-late-start.test.ts',
  'test/gateway-package.test.ts',
  'test/chat.test.ts',
  'test/bench-smoke.test.ts',
  'test/faults/kill-worker.test.ts',
  'test/first-hour.test.ts',
  'test/package-contents.test.ts',
  'test/dual-copy.test.ts',
];

/**
 * The fast files first, as vitest orders them (its timings, else size), then the slow ones in
 * SLOW's order. The workers take files from this one queue as they free up.
 */
class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = SLOW.indexOf(path.relative(f.project.config.root, f.moduleId));
      return i < 0 ? -1 : i;
    };
    // Stable: ties (the fast files) keep the order vitest chose.
    return sorted
      .map((f, i) => ({ f, i }))
      .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
      .map(({ f }) => f);
  }
}

/**
 * Files at once, on 2 cores. Four were tried: with the machine at load 30-45 beside them, the
 * slowest files (sessions of hundreds of steps, real harness CLIs) ran past their tests' time
 * limits, so three it stays. Both projects share one pool, which vitest allows only when their
 * maxWorkers agree.
 */
const WORKERS = 3;

/** What both groups share; the global set-up is the root's, run once for the whole run. */
const shared = {
  resolve: {
    alias: Object.entries(entries).map(([name, file]) => ({
      find: new RegExp(`^${name}$`),
      replacement: path.resolve(file), // vitest runs from the checkout's root
    })),
  },
  test: {
    // Each file runs its own worker on its own task queue against the one dev server.
    fileParallelism: true,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks' as const,
    sequence: { sequencer: SlowestFirst },
  },
};

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    sequence: { sequencer: SlowestFirst },
    projects: [
      {
        ...shared,
        test: {
          ...shared.test,
          name: 'fast',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...SLOW],
          maxWorkers: WORKERS,
        },
      },
      {
        ...shared,
        test: {
          ...shared.test,
          name: 'slow',
          include: SLOW,
          maxWorkers: WORKERS,
        },
      },
    ],
  },
});
