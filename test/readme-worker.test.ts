// The README's own-worker example (issue 23 item 3), taken from README.md by its heading and run as
// written in a fresh CommonJS app and a fresh ESM app from the packed tarball: compiled with the
// app's tsc, started with plain node against the test server, until the worker polls its queue.
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { eventually } from './eventually';
import { freshApp, installedVersion, packSluice, REPO } from './fresh-app';

function readmeWorkerBlock(): string {
  const readme = fs.readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Use Sluice in your project'));
  const block = section.match(/```ts\n(\/\/ worker\.ts[\s\S]*?)```/);
  if (!block) throw new Error('no ```ts block starting `// worker.ts` under "Use Sluice in your project"');
  return block[1];
}

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGTERM');
});

describe("the README's worker.ts runs as written", () => {
  for (const type of ['commonjs', 'module'] as const)
    it(`in a ${type === 'module' ? 'ESM' : 'CommonJS'} app`, async () => {
      const tarball = await packSluice(inject('runDir'));
      const app = await freshApp({
        tarball,
        name: `readme-worker-${type}`,
        type,
        with: [
          `@temporalio/worker@${installedVersion('@temporalio/worker')}`,
          `typescript@${installedVersion('typescript')}`,
          `@types/node@${installedVersion('@types/node')}`,
          `tsx@${installedVersion('tsx')}`,
        ],
        files: {
          'worker.ts': readmeWorkerBlock(),
          'workflows.ts': "export async function agent(): Promise<string> {\n  return 'ok';\n}\n",
          'sluice.config.ts': "import { defineConfig } from 'sluice';\nexport default defineConfig({ tools: [] });\n",
          'tsconfig.json': JSON.stringify({
            compilerOptions: {
              target: 'ES2022',
              module: 'node16',
              strict: true,
              skipLibCheck: true,
              outDir: 'build',
              types: ['node'],
            },
            files: ['worker.ts'],
          }),
        },
      });
      await app.sh('node', [path.join('node_modules', 'typescript', 'bin', 'tsc'), '-p', '.']);
      const output: string[] = [];
      const child = spawn(process.execPath, [path.join('build', 'worker.js')], {
        cwd: app.dir,
        env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress') },
      });
      children.push(child);
      let exited: number | null | undefined;
      child.on('exit', (code) => {
        exited = code;
      });
      for (const s of [child.stdout, child.stderr]) s.on('data', (d) => output.push(String(d)));
      await eventually(
        'the worker polls its task queue',
        () => {
          if (exited !== undefined) throw new Error(`worker.js exited (${exited}):\n${output.join('')}`);
          return /Worker state changed.*state: 'RUNNING'/.test(output.join(''));
        },
        { timeoutMs: 240_000, intervalMs: 500 },
      );
      child.kill('SIGTERM');
    }, 600_000);
});
