// The install matrix's client-only app: the packed tarball installed with plain `npm install` (no
// flag) into a fresh app outside the checkout, with no Temporal package of its own: one copy of
// every @temporalio package the client brings, no worker runtime and no optional part, a consumer
// typechecked with skipLibCheck false under CommonJS node16 resolution, and the CLI's client
// commands. The matrix's worker apps (Temporal 1.24, 1.23, and 1.23 beside @temporalio/ai-sdk)
// are the README cells' apps (readme-blocks.ts): each cell's app is installed once per run, and
// the same checks (one copy of each @temporalio package, the consumer and a worker app's consumer
// typechecked with skipLibCheck false under CommonJS node16, a batch through a worker) run there. The registry is needed for what the npm cache lacks.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CONSUMER, STRICT_COMMONJS, temporalPackages } from './consumer';
import { type FreshApp, freshApp, installedVersion, packSluice } from './fresh-app';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-matrix-'));
const TYPES = [
  `typescript@${installedVersion('typescript')}`,
  `@types/node@${installedVersion('@types/node')}`,
  '@types/ms@2',
];

let app: FreshApp;
let started = 0;

beforeAll(async () => {
  started = Date.now();
  const tarball = await packSluice(inject('runDir'));
  app = await freshApp({
    tarball,
    name: 'client-only',
    parent: work,
    with: TYPES,
    files: {
      'consumer.ts': CONSUMER,
      'tsconfig.json': JSON.stringify({
        compilerOptions: { ...STRICT_COMMONJS, noEmit: true },
        files: ['consumer.ts'],
      }),
    },
  }).catch((err: Error) => {
    throw new Error(`the install failed (no flag given): ${err.message}`);
  });
}, 1_500_000);

afterAll(async () => {
  console.log(
    `install matrix: the client-only app installed, typechecked and run in ${Math.round((Date.now() - started) / 1000)} s`,
  );
  // An app's node_modules: removing it takes minutes at load 15.
  await fs.promises.rm(work, { recursive: true, force: true });
}, 900_000);

describe('a fresh app: client-only', () => {
  it('has one copy of each @temporalio package, no worker runtime and no optional part', () => {
    const names = temporalPackages(app.dir);
    expect(names.has('@temporalio/client')).toBe(true);
    expect(names.has('@temporalio/worker')).toBe(false);
    for (const absent of [
      'pg',
      'prom-client',
      '@opentelemetry/api',
      '@modelcontextprotocol/sdk',
      'tsx',
      'quickjs-emscripten-core',
      '@temporalio/workflow',
      '@temporalio/activity',
    ])
      expect(app.version(absent), absent).toBeUndefined();
    for (const name of names) expect(app.copies(name), name).toHaveLength(1);
  });

  it('typechecks a consumer with skipLibCheck false (CommonJS, node16 resolution)', async () => {
    await app.sh('node', [path.join('node_modules', 'typescript', 'bin', 'tsc'), '-p', '.']);
  }, 300_000);

  it('loads sluice and sluice/client, and the CLI runs a client command on a plain client connection', async () => {
    const { stdout } = await app.sh('node', ['-e', "require('sluice'); require('sluice/client'); console.log('ok')"]);
    expect(stdout.trim()).toBe('ok');
    const setup = await app.sh('node', [path.join('node_modules', '.bin', 'sluice'), 'setup'], {
      env: { TEMPORAL_ADDRESS: inject('temporalAddress') },
    });
    expect(setup.stdout).toMatch(/search attributes (already registered|registered)/);
    const worker = await app
      .sh('node', [path.join('node_modules', '.bin', 'sluice'), 'worker'], {
        env: { TEMPORAL_ADDRESS: inject('temporalAddress') },
      })
      .then(
        () => 'exited 0',
        (err: Error) => err.message,
      );
    expect(worker).toContain('npm install @temporalio/worker');
  }, 300_000);
});
