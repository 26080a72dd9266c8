// The test run's folder in the system temp folder (the dev server's database, the workflow
// bundle, the packed tarball, the fresh apps) is removed after a run that passed and kept after
// one that failed, with a line saying where. Each case is a real `vitest run` with this suite's
// global setup, on a test file of its own, with TMPDIR pointing at a scratch folder.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from './fresh-app';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-run-dir-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

/** `vitest run` of one test file whose body is `body`, its temp folder under scratch/<name>/tmp. */
function nestedRun(name: string, body: string): Promise<{ code: number | null; output: string; tmp: string }> {
  const dir = path.join(scratch, name);
  const tmp = path.join(dir, 'tmp');
  fs.mkdirSync(tmp, { recursive: true });
  fs.writeFileSync(
    path.join(dir, `${name}.test.mjs`),
    `import { it } from 'vitest';\nit('${name}', () => { ${body} });\n`,
  );
  fs.writeFileSync(
    path.join(dir, 'vitest.config.mjs'),
    `export default { test: { root: ${JSON.stringify(dir)}, include: ['*.test.mjs'], globalSetup: [${JSON.stringify(path.join(REPO, 'test', 'global-setup.ts'))}], hookTimeout: 180000 } };\n`,
  );
  const vitest = path.join(REPO, 'node_modules', 'vitest', 'vitest.mjs');
  // From the checkout, as npm test runs (the setup finds the Temporal CLI under .sluice/).
  const child = spawn(process.execPath, [vitest, 'run', '--config', path.join(dir, 'vitest.config.mjs')], {
    cwd: REPO,
    env: { ...process.env, TMPDIR: tmp, SLUICE_KEEP_TEST_DIR: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr.on('data', (b: Buffer) => (output += b.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output, tmp })));
}

const runDirs = (tmp: string) => fs.readdirSync(tmp).filter((f) => f.startsWith('sluice-test-'));

describe('the test run folder', () => {
  it('is removed after a run that passed', async () => {
    const r = await nestedRun('passes', 'if (1 + 1 !== 2) throw new Error("arithmetic");');
    expect(r.code, r.output).toBe(0);
    expect(r.output).toContain('test setup: Temporal dev server');
    expect(runDirs(r.tmp)).toEqual([]);
  }, 300_000);

  it('is kept after a run that failed, with a line saying where', async () => {
    const r = await nestedRun('fails', 'throw new Error("this test fails on purpose");');
    expect(r.code, r.output).not.toBe(0);
    const kept = runDirs(r.tmp);
    expect(kept).toHaveLength(1);
    expect(fs.existsSync(path.join(r.tmp, kept[0], 'temporal.db'))).toBe(true);
    expect(r.output).toContain(`test run: kept ${path.join(r.tmp, kept[0])} (a test failed`);
  }, 300_000);
});
