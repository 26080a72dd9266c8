// The install matrix: the packed tarball installed with plain `npm install` (no flag) into fresh
// apps outside the checkout, on the SDK versions adopters have: Temporal 1.23 and 1.24 with the
// current majors of ai, openai and @anthropic-ai/sdk, the same beside @temporalio/ai-sdk, and a
// client-only app. Each app: one copy of every @temporalio package, a consumer typechecked with
// skipLibCheck false under CommonJS node16 resolution, and (worker apps) a small batch through a
// worker hosting Sluice against the test server. The registry is needed for what the npm cache
// lacks; installs run two at a time.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type FreshApp, freshApp, installedVersion, packSluice } from './fresh-app';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-matrix-'));
const TEMPORAL = ['client', 'common', 'workflow', 'activity', 'worker'].map((p) => `@temporalio/${p}`);
const MODEL_SDKS = ['ai@7', 'openai@7', '@anthropic-ai/sdk@1'];
// @types/ms: @temporalio/common's declarations name `ms`, whose CommonJS entry has none; any app
// with skipLibCheck false needs it, Sluice or not (docs/installing.md).
const TYPES = [
  `typescript@${installedVersion('typescript')}`,
  `@types/node@${installedVersion('@types/node')}`,
  '@types/ms@2',
];

interface Cell {
  name: string;
  with: string[];
  /** The Temporal version every @temporalio package must have, or none installed (client-only). */
  temporal?: string;
  worker: boolean;
}

const CELLS: Cell[] = [
  { name: 'client-only', with: [...TYPES], worker: false },
  {
    name: 'temporal-1.24',
    with: [...TEMPORAL.map((p) => `${p}@1.24.0`), ...MODEL_SDKS, ...TYPES],
    temporal: '1.24.0',
    worker: true,
  },
  {
    // As most apps list Temporal: the client and the worker, the rest coming with the worker.
    name: 'temporal-1.23',
    with: ['@temporalio/client@1.23.0', '@temporalio/worker@1.23.0', ...MODEL_SDKS, ...TYPES],
    temporal: '1.23.0',
    worker: true,
  },
  {
    name: 'beside-temporal-ai-sdk',
    with: ['@temporalio/ai-sdk@1.23.0', ...TEMPORAL.map((p) => `${p}@1.23.0`), ...MODEL_SDKS, ...TYPES],
    temporal: '1.23.0',
    worker: true,
  },
];

/** A consumer of the entries a config and a client use; compiled with every check on. */
const CONSUMER = `
import { defineConfig, defineTool, MissingPackageError, type SluiceConfig, type BatchOutput } from 'sluice';
import { connect, SluiceClient, sealIdentity, type SealKey } from 'sluice/client';
import { scriptedModel, toOpenAIChatMessages } from 'sluice/agent';

export const config: SluiceConfig = defineConfig({
  tools: [defineTool({ name: 't', description: 'd', input: { type: 'object', properties: {} }, execute: () => 'ok' })],
});
export type Out = BatchOutput;
export const uses = [connect, SluiceClient, sealIdentity, scriptedModel, toOpenAIChatMessages, MissingPackageError];
export type Key = SealKey;
`;

/**
 * A worker app: every entry, sluice/workflow among them (it needs @temporalio/workflow, which the
 * worker brings), with none of the optional packages (pg, OpenTelemetry, prom-client, the MCP SDK)
 * installed: no declaration may name one.
 */
const WORKER_CONSUMER = `
import { type ToolBatchWorkflow, BATCH_WORKFLOW } from 'sluice/workflow';
import { SluicePlugin, SluiceTelemetry, PostgresStores, createSluiceWorker } from 'sluice/worker';
import * as tools from 'sluice/tools';
import * as hooks from 'sluice/hooks';
import * as codeMode from 'sluice/code-mode';
export const name = BATCH_WORKFLOW;
export type W = ToolBatchWorkflow;
export const uses = [SluicePlugin, SluiceTelemetry, PostgresStores, createSluiceWorker, tools.mcpTools, hooks, codeMode];
`;

const TSCONFIG = JSON.stringify({
  compilerOptions: {
    target: 'ES2022',
    module: 'node16',
    moduleResolution: 'node16',
    strict: true,
    skipLibCheck: false,
    noEmit: true,
    types: ['node'],
  },
  files: ['consumer.ts'],
});
const tsconfig = (files: string[]) => TSCONFIG.replace('["consumer.ts"]', JSON.stringify(files));

/** A worker hosting Sluice and the app's tool; a client runs one batch through it. */
const RUN = `
const { NativeConnection, Worker } = require('@temporalio/worker');
const { SluicePlugin, ensureSearchAttributes } = require('sluice/worker');
const { SluiceClient, connect } = require('sluice/client');
const { defineConfig, defineTool } = require('sluice');

async function main() {
  const address = process.env.TEMPORAL_ADDRESS;
  const taskQueue = 'matrix-' + process.env.CELL + '-' + process.pid + '-' + Date.now();
  const connection = await NativeConnection.connect({ address });
  await ensureSearchAttributes(connection, 'default');
  const config = defineConfig({
    tools: [defineTool({
      name: 'add', description: 'Adds.',
      input: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
      execute: ({ a, b }) => ({ sum: a + b }),
    })],
  });
  const worker = await Worker.create({ connection, taskQueue, plugins: [new SluicePlugin({ config, stateDir: 'state' })] });
  const out = await worker.runUntil(async () => {
    const c = await connect({ address });
    const sluice = new SluiceClient({ connection: c.connection, taskQueue });
    return sluice.runBatch({
      sessionId: taskQueue, turn: 1, step: 1,
      calls: [{ id: 'c1', name: 'add', arguments: { a: 2, b: 3 } }, { id: 'c2', name: 'add', arguments: { a: 4, b: 5 } }],
    });
  });
  console.log(JSON.stringify(out.results.map((r) => r.result.content.map((b) => b.text).join(''))));
  await connection.close();
}
main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
`;

const apps = new Map<string, FreshApp>();
let started = 0;

beforeAll(async () => {
  started = Date.now();
  const tarball = await packSluice(inject('runDir'));
  // Two installs at a time: the npm cache serves most of it; the CPU is shared with other files.
  const queue = [...CELLS];
  const failures: string[] = [];
  await Promise.all(
    [0, 1].map(async () => {
      for (let cell = queue.shift(); cell; cell = queue.shift()) {
        const c = cell;
        try {
          const app = await freshApp({
            tarball,
            name: c.name,
            parent: work,
            with: c.with,
            files: {
              'consumer.ts': CONSUMER,
              'worker-consumer.ts': WORKER_CONSUMER,
              'tsconfig.json': tsconfig(c.worker ? ['consumer.ts', 'worker-consumer.ts'] : ['consumer.ts']),
              'run.js': RUN,
            },
          });
          apps.set(c.name, app);
        } catch (err) {
          failures.push(`${c.name}: ${(err as Error).message}`);
        }
      }
    }),
  );
  if (failures.length) throw new Error(`installs failed (no flag given):\n${failures.join('\n')}`);
}, 1_500_000);

afterAll(async () => {
  console.log(
    `install matrix: ${CELLS.length} fresh apps installed, typechecked and run in ${Math.round((Date.now() - started) / 1000)} s`,
  );
  // Four apps' node_modules: removing them took over three minutes at load 15.
  await fs.promises.rm(work, { recursive: true, force: true });
}, 900_000);

describe.each(CELLS)('a fresh app: $name', (cell) => {
  const app = () => apps.get(cell.name)!;

  it('has one copy of each @temporalio package, at the app’s version', () => {
    const lock = JSON.parse(fs.readFileSync(path.join(app().dir, 'node_modules', '.package-lock.json'), 'utf8'));
    const names = new Set(
      Object.keys(lock.packages)
        .map((p) => p.match(/node_modules\/(@temporalio\/[^/]+)$/)?.[1])
        .filter((n): n is string => !!n),
    );
    if (!cell.temporal) {
      // Client-only: the client's Temporal packages, no worker runtime, no optional part.
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
        expect(app().version(absent), absent).toBeUndefined();
    }
    for (const name of names) {
      const copies = app().copies(name);
      expect(copies, name).toHaveLength(1);
      if (cell.temporal && name !== '@temporalio/ai-sdk')
        expect(copies[0].endsWith(`@${cell.temporal}`), copies[0]).toBe(true);
    }
  });

  it('typechecks a consumer with skipLibCheck false (CommonJS, node16 resolution)', async () => {
    await app().sh('node', [path.join('node_modules', 'typescript', 'bin', 'tsc'), '-p', '.']);
  }, 300_000);
});

describe.each(CELLS.filter((c) => c.worker))('a worker app: $name', (cell) => {
  it('runs a batch through a worker hosting Sluice against the test server', async () => {
    const { stdout } = await apps.get(cell.name)!.sh('node', ['run.js'], {
      env: { TEMPORAL_ADDRESS: inject('temporalAddress'), CELL: cell.name },
      timeoutMs: 280_000,
    });
    const texts: string[] = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(texts.map((t) => JSON.parse(t))).toEqual([{ sum: 5 }, { sum: 9 }]);
  }, 300_000);
});

describe('the client-only app', () => {
  it('loads sluice and sluice/client, and the CLI runs a client command on a plain client connection', async () => {
    const app = apps.get('client-only')!;
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
