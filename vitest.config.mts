import * as path from 'node:path';
import { defineConfig } from 'vitest/config';

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

export default defineConfig({
  resolve: {
    alias: Object.entries(entries).map(([name, file]) => ({
      find: new RegExp(`^${name}$`),
      replacement: path.resolve(file), // vitest runs from the checkout's root
    })),
  },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Each file runs its own worker on its own task queue against the one dev server.
    fileParallelism: true,
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
  },
});
