// One real Temporal dev server per test run, and one workflow bundle every test worker shares.
// When the run has a file that installs Sluice as a user gets it, the tarball is built and packed
// here too, in the background while the fast files run, so the files that need it find it ready.
// Their run folder (the server's database, the bundle, the packed tarball, the fresh apps: some
// 200 MB) is removed after a run that passed, and kept, with a line saying where, after one that
// failed, or with SLUICE_KEEP_TEST_DIR=1.
import { bundleWorkflowCode } from '@temporalio/worker';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestProject } from 'vitest/node';
import { freePort, startDevServer, THROWAWAY_DB, type DevServer } from '../temporal/dev-server';
import { preloadSluiceWorkflows, WORKFLOWS_PATH } from '../worker/worker';
import { packSluice } from './fresh-app';
import { provisionDogwood, provisionSystemPackages } from './system-packages';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    workflowBundlePath: string;
    temporalCli: string;
    runDir: string;
  }
}

let server: DevServer | undefined;
let run: { dir: string; project: TestProject } | undefined;
let packing: Promise<unknown> | undefined;

export async function setup(project: TestProject) {
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-test-'));
  run = { dir: runDir, project };
  const started = Date.now();
  // Not awaited: the files that install the tarball wait for it (packSluice's lock), the rest
  // never do. A failed pack is recorded beside the lock, and each of those files fails with it.
  if (project.vitest.state.getPaths().some(installsTarball))
    packing = packSluice(runDir).then(
      (tarball) => console.log(`test setup: the packed tarball ready (${tarball}) in ${Date.now() - started} ms`),
      () => undefined,
    );
  // A fresh machine needs nothing run before `npm test`: what is missing is installed or named.
  provisionSystemPackages((l) => console.log(l));
  provisionDogwood((l) => console.log(l));
  server = await startDevServer({
    stateDir: path.resolve('.sluice'),
    port: await freePort(),
    headless: true,
    dbFile: path.join(runDir, 'temporal.db'),
    sqlitePragmas: THROWAWAY_DB,
    log: (l) => console.log(l),
  });
  // Built as a worker with SluicePlugin builds its own: Sluice's workflow modules preloaded.
  const bundle = await bundleWorkflowCode(
    preloadSluiceWorkflows({ workflowsPath: WORKFLOWS_PATH, logger: quietLogger }),
  );
  const bundlePath = path.join(runDir, 'workflow-bundle.js');
  fs.writeFileSync(bundlePath, bundle.code);
  console.log(
    `test setup: Temporal dev server at ${server.address} (${server.cli}), workflows bundled, in ${Date.now() - started} ms`,
  );
  project.provide('temporalAddress', server.address);
  project.provide('workflowBundlePath', bundlePath);
  project.provide('temporalCli', server.cli);
  project.provide('runDir', runDir);
}

export async function teardown() {
  await packing;
  await server?.stop();
  if (!run) return;
  const state = run.project.vitest.state;
  const failed = state.getCountOfFailedTests() + state.getFailedFilepaths().length + state.getUnhandledErrors().length;
  if (failed > 0 || process.env.SLUICE_KEEP_TEST_DIR) {
    console.log(
      `test run: kept ${run.dir} (${failed > 0 ? 'a test failed' : 'SLUICE_KEEP_TEST_DIR'}: the Temporal database, the workflow bundle, the fresh apps); remove it when done`,
    );
    return;
  }
  await fs.promises.rm(run.dir, { recursive: true, force: true });
}

/** A test file that installs the packed tarball (test/fresh-app.ts), itself or as a README cell. */
function installsTarball(file: string): boolean {
  const text = fs.readFileSync(file, 'utf8');
  return text.includes('packSluice(') || text.includes('readmeCell(');
}

const quietLogger = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn(message: string) {
    console.warn(message);
  },
  error(message: string) {
    console.error(message);
  },
};
