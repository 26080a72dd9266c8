// Every code block of README.md, docs/getting-started.md and docs/installing.md, taken from the
// markdown, and the steps that run them: shared by the readme-blocks test files, which run in
// parallel. README's and getting-started's blocks run in every cell of the install matrix adopters
// have (issue 23), one test file per cell (readme-blocks-*.test.ts): a fresh app made from the
// packed tarball outside the checkout, with the current majors of ai, openai and
// @anthropic-ai/sdk, on Temporal 1.24 and on 1.23, each alone and beside @temporalio/ai-sdk. Each
// cell has its own Temporal dev server (the blocks' ids and task queue are fixed: 'sess-42',
// 'chat-1', 'my-agent') and its own local fake OpenAI provider: the install and setup lines as
// shell, the TypeScript blocks compiled by the app's tsc and run with plain node (the README's
// worker.ts with its sluice.config.ts and getting-started's workflows.ts, the agent loop whose call
// a person approves, the session, the manifest reader, the Code Mode program). A block the tests do
// not know, or one that fails or hangs, fails; `text` blocks and `<!-- not run: why -->` ones are
// skipped (TypeScript ones still typecheck). The README's worker.ts also runs in a CommonJS folder
// of each app (issue 23 item 3), and runs a batch there from CommonJS. The cells with one Temporal
// are the install matrix's worker apps too (install-matrix.test.ts has its client-only app): one
// install per cell and run serves both, and the matrix's checks run on it (one copy of each
// @temporalio package, the consumers of test/consumer.ts typechecked with skipLibCheck false under
// CommonJS node16, the batch through a worker hosting Sluice). installing.md's install lines run in apps of their own (the
// registry name `sluice` stands for the packed tarball), against the suite's dev server
// (readme-blocks.test.ts, with the check that every block is claimed by a step).
//
// @temporalio/ai-sdk has no 1.24 release: 1.23.0 is its newest, and it pins its Temporal packages
// to exactly 1.23.0. Beside an app on 1.24 npm places those 1.23 copies too (two Temporals, which
// docs/installing.md tells an app to avoid by giving its Temporal packages ai-sdk's version); the
// blocks run there all the same, and that cell checks that the app's own client and worker are 1.24.
import { Client, Connection } from '@temporalio/client';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SluiceClient } from '../client/client';
import { type DocBlock, docBlocks, RUN_LANGS, type Proc, startProcess, stopProcesses, where } from './doc-blocks';
import { eventually } from './eventually';
import { text } from './harness';
import { freePort, startDevServer, type DevServer } from '../temporal/dev-server';
import { CONSUMER, STRICT_COMMONJS, temporalPackages, WORKER_CONSUMER } from './consumer';
import { copiesOf, type FreshApp, freshApp, installedVersion, packSluice, REPO, sh } from './fresh-app';
import { startStreamProvider, type StreamProvider } from './stream-provider';

const DOCS = ['README.md', 'docs/getting-started.md', 'docs/installing.md'];
const blocks = DOCS.flatMap(docBlocks);
const given = path.join(__dirname, 'fixtures', 'readme');
const TASK_QUEUE = 'my-agent'; // the docs' own; no other test file polls it

/** The runnable blocks, each claimed by one step below (identical blocks in both docs run once). */
const steps = {
  install: (b: DocBlock) => b.lang === 'sh' && /npm install \.\/sluice-/.test(b.code),
  config: (b: DocBlock) => b.file === 'sluice.config.ts',
  worker: (b: DocBlock) => b.file === 'worker.ts',
  workflows: (b: DocBlock) => b.file === 'workflows.ts',
  agentLoop: (b: DocBlock) => b.lang === 'ts' && b.code.startsWith('// your agent loop'),
  session: (b: DocBlock) => b.lang === 'ts' && /startSession\(/.test(b.code),
  manifest: (b: DocBlock) => b.lang === 'ts' && /parseToolManifest\(/.test(b.code),
  codeMode: (b: DocBlock) => b.lang === 'js' && /await tools\./.test(b.code),
  commandLine: (b: DocBlock) => b.lang === 'text' && b.heading === 'The command line',
  installLines: (b: DocBlock) => b.doc === 'docs/installing.md' && b.lang === 'sh' && !/ai-sdk/.test(b.code),
  besideAiSdk: (b: DocBlock) =>
    b.doc === 'docs/installing.md' && b.lang === 'sh' && /@temporalio\/ai-sdk@/.test(b.code),
};
type Step = keyof typeof steps;

// The tools getting-started's Code Mode program calls (the block is the program a model sends).
const CODE_MODE_CONFIG = `import { z } from 'zod';
import { defineConfig, defineTool } from 'sluice';
import { codeModeTool } from 'sluice/code-mode';

const temps: Record<string, number> = { Lisbon: 21, Oslo: 6, Rome: 18 };
export default defineConfig({
  tools: [
    defineTool({
      name: 'get_weather',
      description: 'The temperature in a city.',
      input: z.object({ city: z.string() }),
      execute: ({ city }) => ({ tempC: temps[city] }),
    }),
    defineTool({
      name: 'delete_files',
      description: 'Deletes the files a pattern matches.',
      input: z.object({ pattern: z.string() }),
      approval: 'deny',
      execute: () => 'deleted',
    }),
    codeModeTool(),
  ],
});
`;

function claimed(step: Step): DocBlock[] {
  return blocks.filter((b) => !b.notRun && steps[step](b));
}

/** The one text of a step's block(s): the same block in two docs must stay the same. */
function code(step: Step): string {
  const found = claimed(step);
  if (found.length === 0) throw new Error(`no block for step ${step} in ${DOCS.join(', ')}`);
  const texts = new Set(found.map((b) => b.code));
  if (texts.size > 1)
    throw new Error(`the ${step} block differs between ${found.map(where).join(' and ')}: keep them the same`);
  return found[0].code;
}

/** A cell of the install matrix: the app's Temporal version, and @temporalio/ai-sdk beside it or not. */
interface Cell {
  name: string;
  temporal: string;
  aiSdk?: string;
}
/** The cells, one test file each (readme-blocks-*.test.ts). */
export const CELLS = {
  temporal124: { name: 'Temporal 1.24', temporal: '1.24.0' },
  temporal123: { name: 'Temporal 1.23', temporal: '1.23.0' },
  aiSdkBeside124: {
    name: 'Temporal 1.24 beside @temporalio/ai-sdk 1.23 (its newest)',
    temporal: '1.24.0',
    aiSdk: '1.23.0',
  },
  aiSdkBeside123: { name: 'Temporal 1.23 beside @temporalio/ai-sdk 1.23', temporal: '1.23.0', aiSdk: '1.23.0' },
} satisfies Record<string, Cell>;
const TEMPORAL_PACKAGES = ['client', 'common', 'proto', 'workflow', 'activity', 'worker'].map(
  (p) => `@temporalio/${p}`,
);

/**
 * One copy of each Temporal package, at the cell's version. Beside an ai-sdk of another version,
 * its pinned copies are there too: the app's own client and worker are the cell's version, and
 * every copy is the app's version or ai-sdk's.
 */
/** Two Temporals: ai-sdk's pinned copies beside the app's own of another version. */
const isMixed = (cell: Cell) => cell.aiSdk !== undefined && cell.aiSdk !== cell.temporal;

function expectCellTemporal(cell: Cell): void {
  const mixed = isMixed(cell);
  // Every @temporalio package the install placed, not only the SDK's own: one copy each, at the
  // cell's version (ai-sdk at its own).
  if (!mixed)
    for (const name of temporalPackages(app.dir)) {
      const copies = app.copies(name);
      expect(copies, name).toHaveLength(1);
      if (name !== '@temporalio/ai-sdk') expect(copies[0], name).toBe(`node_modules/${name}@${cell.temporal}`);
    }
  for (const name of TEMPORAL_PACKAGES) {
    const copies = app.copies(name);
    if (!mixed) expect(copies).toEqual([`node_modules/${name}@${cell.temporal}`]);
    else for (const c of copies) expect([cell.temporal, cell.aiSdk], c).toContain(c.slice(c.lastIndexOf('@') + 1));
  }
  for (const name of ['@temporalio/client', '@temporalio/worker']) expect(app.version(name), name).toBe(cell.temporal);
  if (cell.aiSdk) expect(app.copies('@temporalio/ai-sdk')).toEqual([`node_modules/@temporalio/ai-sdk@${cell.aiSdk}`]);
}
// The current majors adopters have (ai and openai 6 are the checkout's own, tested in-repo).
const MODEL_SDKS = ['ai@7', 'openai@7', '@anthropic-ai/sdk@1'];

let tarball = '';
let parent = '';
const stamp = `${process.pid}-${Date.now()}`;

// This file's cell: its app, server, provider and worker.
let app: FreshApp;
let address = '';
let provider: StreamProvider;
let connection: Connection;
let worker: Proc | undefined;
const givenLog = () => path.join(app.dir, 'given.log');
const givenEntries = (): Record<string, unknown>[] =>
  fs.existsSync(givenLog())
    ? fs
        .readFileSync(givenLog(), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
    : [];

const NPM_ENV = {
  npm_config_prefer_offline: 'true',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_loglevel: 'error',
};
/** The environment every process of the cell's app runs with: its server, its fake provider. */
const env = () => ({
  TEMPORAL_ADDRESS: address,
  OPENAI_API_KEY: 'sk-fake',
  OPENAI_BASE_URL: `${provider.base}/v1`,
  GIVEN_LOG: givenLog(),
  ...NPM_ENV,
});

/** A compiled block run with plain node, the given names preloaded. */
const runNode = (label: string, file: string, extra: Record<string, string> = {}) =>
  startProcess(label, process.execPath, ['--require', path.join(app.dir, 'given.cjs'), path.join('build', file)], {
    cwd: app.dir,
    env: { ...env(), ...extra },
  });

/** A block's command lines, one by one (comments and blank lines left out). */
const commandLines = (block: string) => block.split('\n').filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));

/**
 * An empty app in this file's folder, holding the tarball. installing.md installs Sluice by its
 * registry name; here the packed tarball stands in for it (the same command once it is published).
 */
function emptyApp(name: string, type: 'module' | 'commonjs'): string {
  const dir = path.join(parent, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, type }));
  fs.copyFileSync(tarball, path.join(dir, path.basename(tarball)));
  return dir;
}
/** An install line of installing.md in `dir`, against the suite's dev server. */
const runLine = (dir: string, line: string) =>
  sh(
    'bash',
    ['-euo', 'pipefail', '-c', line.replace(/^(\s*npm install )sluice(?=\s|$)/, `$1./${path.basename(tarball)}`)],
    dir,
    { env: { TEMPORAL_ADDRESS: inject('temporalAddress'), ...NPM_ENV }, timeoutMs: 600_000 },
  );

/** Every TypeScript block, run or not, as a file of the app: named ones under their name. */
function appFiles(): Record<string, string> {
  const files: Record<string, string> = {
    'given.cjs': fs.readFileSync(path.join(given, 'given.cjs'), 'utf8'),
    'given.d.ts': fs.readFileSync(path.join(given, 'given.d.ts'), 'utf8'),
    'code-mode.config.ts': CODE_MODE_CONFIG,
  };
  blocks
    .filter((b) => b.lang === 'ts')
    .forEach((b, i) => {
      files[b.file ?? `block-${i + 1}.ts`] = b.code;
    });
  return files;
}

/** A cell's app: ESM, the tarball under its own name in its folder as the docs' install line has it. */
async function installCell(cell: Cell): Promise<FreshApp> {
  const cellParent = path.join(parent, 'cell');
  fs.mkdirSync(path.join(cellParent, 'app'), { recursive: true });
  fs.copyFileSync(tarball, path.join(cellParent, 'app', path.basename(tarball)));
  return freshApp({
    tarball: `./${path.basename(tarball)}`,
    parent: cellParent,
    type: 'module',
    with: [
      // The app's Temporal, client and worker at one version (the rest comes with the worker).
      `@temporalio/client@${cell.temporal}`,
      `@temporalio/worker@${cell.temporal}`,
      ...(cell.aiSdk ? [`@temporalio/ai-sdk@${cell.aiSdk}`] : []),
      ...MODEL_SDKS,
      // What the install line brings (tsx for sluice.config.ts); Code Mode's optional parts for
      // the run_code program (docs/installing.md); the app's own tsc to compile the blocks.
      `tsx@${installedVersion('tsx')}`,
      `quickjs-emscripten-core@${installedVersion('quickjs-emscripten-core')}`,
      `@jitl/quickjs-wasmfile-release-sync@${installedVersion('@jitl/quickjs-wasmfile-release-sync')}`,
      `typescript@${installedVersion('typescript')}`,
      `@types/node@${installedVersion('@types/node')}`,
      // The install matrix's consumers compile with skipLibCheck false (test/consumer.ts).
      '@types/ms@2',
    ],
    files: appFiles(),
  });
}

/** The packed tarball, and a folder of this file's, under the run's, for the apps made from it. */
async function useTarball(): Promise<void> {
  tarball = await packSluice(inject('runDir'));
  parent = fs.mkdtempSync(path.join(inject('runDir'), 'readme-app-'));
}

/** The check that every block of the docs is run by one step, or says why not. */
export function everyBlockClaimed(): void {
  describe('the docs’ code blocks', () => {
    it('each names its language, and each runnable one is run by a step here (or says why not)', () => {
      expect(blocks.length).toBeGreaterThan(10);
      for (const b of blocks) {
        expect(b.lang, `${where(b)}: a fence without a language; use text for output and listings`).not.toBe('');
        if (b.notRun !== undefined) expect(b.notRun, `${where(b)}: <!-- not run: --> needs a reason`).not.toBe('');
        if ((b.lang === 'text' && !steps.commandLine(b)) || b.notRun) continue;
        if (b.lang !== 'text') expect(RUN_LANGS, `${where(b)}: a block in ${b.lang}`).toContain(b.lang);
        const by = (Object.keys(steps) as Step[]).filter((s) => steps[s](b));
        expect(by, `${where(b)} is run by no step of test/readme-blocks.ts: add one, or tag it not run`).toHaveLength(
          1,
        );
      }
    });
  });
}

/**
 * A client of the README's worker, in CommonJS with the app's sluice/client (the install matrix's
 * batch through a worker): one call a person approves, one the config's preExecute denies.
 */
const CJS_BATCH = `
const { connect, SluiceClient } = require('sluice/client');
const email = (id, to) => ({ id, name: 'send_email', arguments: JSON.stringify({ to, subject: 'Minutes', body: 'Attached.' }) });
async function main() {
  const { connection } = await connect();
  const sluice = new SluiceClient({ connection, taskQueue: '${TASK_QUEUE}' });
  const out = await sluice.runBatch({
    sessionId: process.env.SESSION, turn: 1, step: 1,
    calls: [email('cjs-1', 'cjs@example.com'), email('cjs-2', 'cjs@rival.com')],
  });
  console.log(JSON.stringify(out.results.map((r) => ({ isError: r.result.isError, text: r.result.content.map((b) => b.text).join('') }))));
  await connection.close();
}
main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
`;

type Compiled = { cjs: string; errors: string[] };
let compiledApp: Promise<Compiled> | undefined;
/**
 * The app compiled once by its tsc (module node16: each file ESM or CommonJS by its folder's
 * package.json): every TypeScript block in the app's folder (ESM, to build/), the README's worker.ts
 * in a CommonJS folder (to build/cjs/, to run) and, in the install matrix's cells (one Temporal),
 * the matrix's consumers (test/consumer.ts) there, with every check on (skipLibCheck false). One
 * program: the declarations it reads are read and checked once. Its errors, one per line
 * (`file(line,col): error TS…`, relative to the app), for the tests to share out by file.
 */
function compileApp(cell: Cell): Promise<Compiled> {
  const consumers = isMixed(cell) ? [] : ['cjs/consumer.ts', 'cjs/worker-consumer.ts'];
  compiledApp ??= (async () => {
    const cjs = path.join(app.dir, 'cjs');
    app.write({
      'cjs/package.json': JSON.stringify({ type: 'commonjs' }),
      'build/cjs/package.json': JSON.stringify({ type: 'commonjs' }),
      'cjs/batch.js': CJS_BATCH,
      'cjs/consumer.ts': CONSUMER,
      'cjs/worker-consumer.ts': WORKER_CONSUMER,
      'tsconfig.json': JSON.stringify({
        compilerOptions: { ...STRICT_COMMONJS, skipLibCheck: consumers.length === 0, outDir: 'build' },
        include: ['*.ts'],
        files: ['cjs/worker.ts', ...consumers],
      }),
    });
    for (const step of ['worker', 'config', 'workflows'] as const)
      app.write({ [`cjs/${claimed(step)[0].file}`]: code(step) });
    const failed = await app
      .sh('node', [path.join('node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], { timeoutMs: 300_000 })
      .then(
        () => '',
        (err: Error) => err.message,
      );
    const errors = failed.split('\n').filter((l) => /error TS\d+/.test(l));
    // A failure with no error line (tsc crashed, or timed out) is every test's.
    return { cjs, errors: failed && errors.length === 0 ? [failed] : errors };
  })();
  return compiledApp;
}
/** An error in a file of the app's own folder (a block), in the CommonJS worker.ts, or elsewhere. */
const inBlock = (e: string) => /^[^/\\(]+\.ts\(/.test(e);
const inCjsWorker = (e: string) => /^cjs[/\\]worker\.ts\(/.test(e);
const lines = (errors: string[]) => errors.join('\n');

/** README's and getting-started's blocks in one cell's fresh app, on a dev server of the cell's own. */
export function readmeCell(cell: Cell): void {
  describe(`README’s and getting-started’s blocks in a fresh app on ${cell.name} (ai 7, openai 7, @anthropic-ai/sdk 1)`, () => {
    let server: DevServer | undefined;

    beforeAll(async () => {
      await useTarball();
      // The app installs while its server and provider start; each waits for the other to settle.
      const [installed, started] = await Promise.allSettled([
        installCell(cell),
        (async () => {
          server = await startDevServer({
            stateDir: path.join(REPO, '.sluice'),
            port: await freePort(),
            headless: true,
            dbFile: ':memory:',
          });
          address = server.address;
          connection = await Connection.connect({ address });
          provider = await startStreamProvider();
        })(),
      ]);
      if (installed.status === 'rejected') throw installed.reason;
      if (started.status === 'rejected') throw started.reason;
      app = installed.value;
    }, 1_200_000);

    afterAll(async () => {
      await stopProcesses();
      worker = undefined;
      await provider?.close();
      await connection?.close();
      await server?.stop();
      // The app's node_modules (some 300 MB).
      if (parent) await fs.promises.rm(parent, { recursive: true, force: true });
    }, 300_000);

    it('has Sluice, the model SDKs and the cell’s Temporal (one copy of each where ai-sdk’s version is the app’s)', () => {
      expect(app.version('sluice')).toBe(JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')).version);
      for (const sdk of MODEL_SDKS) {
        const [name, major] = sdk.split(/@(?=\d+$)/);
        expect(app.version(name)?.split('.')[0], sdk).toBe(major);
      }
      expectCellTemporal(cell);
    });

    it('the install and setup lines run as written in the app’s folder', async () => {
      // The one change: the app's Temporal version on the unversioned @temporalio/worker, as
      // docs/installing.md tells an app staying on its Temporal (unversioned, npm would move every
      // cell to the newest Temporal).
      const asWritten = (line: string) => line.replace(/(\s@temporalio\/worker)(?=\s|$)/, `$1@${cell.temporal}`);
      let said = '';
      for (const block of new Set(claimed('install').map((b) => b.code)))
        for (const line of commandLines(block))
          said += (
            await sh('bash', ['-euo', 'pipefail', '-c', asWritten(line)], app.dir, { env: env(), timeoutMs: 600_000 })
          ).stdout;
      expect(said).toMatch(/registered search attributes|search attributes already registered/);
      expect(app.version('sluice')).toBe(JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')).version);
      expectCellTemporal(cell);
      // npx sluice setup's search attributes are on the cell's server.
      const client = new Client({ connection });
      const attrs = await connection.operatorService.listSearchAttributes({ namespace: client.options.namespace });
      expect(Object.keys(attrs.customAttributes ?? {})).toContain('SluiceSessionId');
    }, 600_000);

    it('every TypeScript block compiles with the app’s tsc (module node16, ESM)', async () => {
      const { errors } = await compileApp(cell);
      expect(lines(errors.filter((e) => inBlock(e) || !/error TS/.test(e)))).toBe('');
      expect(fs.existsSync(path.join(app.dir, 'build', 'worker.js'))).toBe(true);
    }, 600_000);

    // As the install matrix has them: its cells have one Temporal.
    if (!isMixed(cell))
      it('the install matrix’s consumers of every entry typecheck with skipLibCheck false (CommonJS, node16 resolution)', async () => {
        const { errors } = await compileApp(cell);
        // The consumers' errors and the declarations' (the blocks' and the CommonJS worker.ts's are
        // the other tests').
        expect(lines(errors.filter((e) => !inBlock(e) && !inCjsWorker(e)))).toBe('');
      }, 600_000);

    it('worker.ts runs as written in a CommonJS folder too, and a batch runs through it from the app’s sluice/client', async () => {
      const { cjs, errors } = await compileApp(cell);
      expect(lines(errors.filter((e) => inCjsWorker(e) || !/error TS/.test(e)))).toBe('');
      const log = path.join(cjs, 'given.log');
      const cjsWorker = startProcess(
        'the CommonJS worker.ts',
        process.execPath,
        ['--require', path.join(app.dir, 'given.cjs'), path.join('..', 'build', 'cjs', 'worker.js')],
        { cwd: cjs, env: { ...env(), GIVEN_LOG: log } },
      );
      // Stopped however the batch ends: left polling, it would take the next tests' calls.
      try {
        await cjsWorker.waitFor('the worker polls its task queue', /Worker state changed.*state: 'RUNNING'/);
        const sessionId = `cjs-${stamp}`;
        const batch = sh('node', ['batch.js'], cjs, { env: { ...env(), SESSION: sessionId }, timeoutMs: 280_000 });
        batch.catch(() => undefined); // awaited below, once its call is approved; its failure reported there
        const sluice = new SluiceClient({ connection, taskQueue: TASK_QUEUE });
        const pending = await eventually(
          'the send_email call waits for a person',
          async () => (await sluice.pendingApprovals()).find((p) => p.sessionId === sessionId),
          { timeoutMs: 240_000, intervalMs: 500 },
        );
        await sluice.approve(pending.approvalId, { by: 'alice' });
        const results = JSON.parse((await batch).stdout.trim().split('\n').pop()!);
        expect(results[0]).toEqual({ isError: false, text: expect.stringContaining('queued for cjs@example.com') });
        expect(results[1]).toEqual({ isError: true, text: expect.stringContaining('no mail to rivals') });
      } finally {
        await cjsWorker.stop();
      }
      // The approved body ran once, in the CommonJS worker; the rival's never.
      const mailed = fs
        .readFileSync(log, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .filter((e) => e.mailer);
      expect(mailed).toEqual([expect.objectContaining({ mailer: 'cjs@example.com', pid: cjsWorker.child.pid })]);
    }, 600_000);

    it('worker.ts, with the README’s sluice.config.ts and getting-started’s workflows.ts, polls its queue', async () => {
      expect(code('worker')).toContain(`taskQueue: '${TASK_QUEUE}'`);
      code('config');
      worker = runNode('worker.ts', 'worker.js');
      await worker.waitFor('the worker polls its task queue', /Worker state changed.*state: 'RUNNING'/);
    }, 600_000);

    it('workflows.ts: the agent workflow runs on that worker (its callModel asks for no tool)', async () => {
      code('workflows');
      const client = new Client({ connection });
      const history = await client.workflow.execute('agent', {
        taskQueue: TASK_QUEUE,
        workflowId: `readme-agent-${stamp}`,
        args: [`readme-agent-${stamp}`, 1],
        workflowExecutionTimeout: '5 minutes',
      });
      expect(history).toEqual([]);
    }, 600_000);

    it('the agent loop runs a batch: send_email is asked for, a person approves, the mail goes once', async () => {
      code('agentLoop');
      const call = {
        id: 'call-1',
        name: 'send_email',
        arguments: JSON.stringify({ to: 'ann@example.com', subject: 'Minutes', body: 'Attached.' }),
      };
      const loop = runNode('the agent loop', compiled('agentLoop'), {
        GIVEN_MODEL_MESSAGE: JSON.stringify({ toolCalls: [call] }),
      });
      const sluice = new SluiceClient({ connection, taskQueue: TASK_QUEUE });
      const pending = await eventually(
        'the send_email call waits for a person',
        async () =>
          (await sluice.pendingApprovals()).find((p) => p.toolName === 'send_email' && p.sessionId === 'sess-42'),
        { timeoutMs: 240_000, intervalMs: 500 },
      );
      expect(pending.card.title).toBe('Email ann@example.com');
      await sluice.approve(pending.approvalId, { by: 'alice' });
      await loop.succeeds();
      const log = givenEntries();
      // The body ran in this cell's worker.ts process, once.
      expect(log.filter((e) => e.mailer === 'ann@example.com' && e.pid === worker?.child.pid)).toHaveLength(1);
      expect(log.filter((e) => e.mailer === 'ann@example.com')).toHaveLength(1);
      expect(log.some((e) => e.metrics === 'send_email')).toBe(true);
      expect(log.some((e) => e.audit === 'call-1' && e.isError === false)).toBe(true);
      const messages = log.find((e) => e.pid === loop.child.pid && e.messages)?.messages as {
        role: string;
        content: unknown;
      }[];
      expect(JSON.stringify(messages)).toContain('queued for ann@example.com');
      expect(JSON.stringify(messages)).toContain('Remind the user the email is sent.');
    }, 600_000);

    it('the same worker and config, the ask denied: no mail, and the model is not told the email is sent', async () => {
      // Issue 23, item 9: the README's postExecute once told the model "the email is sent" for a
      // call a person denied. The batch runs on the README's worker.ts and sluice.config.ts.
      const sluice = new SluiceClient({ connection, taskQueue: TASK_QUEUE });
      const sessionId = `sess-denied-${stamp}`;
      const run = sluice.runBatch({
        sessionId,
        turn: 1,
        step: 1,
        calls: [
          {
            id: 'call-denied',
            name: 'send_email',
            arguments: JSON.stringify({ to: 'bob@example.com', subject: 'Minutes', body: 'Attached.' }),
          },
        ],
      });
      const pending = await eventually(
        'the send_email call waits for a person',
        async () => (await sluice.pendingApprovals()).find((p) => p.sessionId === sessionId),
        { timeoutMs: 240_000, intervalMs: 500 },
      );
      await sluice.deny(pending.approvalId, { by: 'alice', reason: 'not today' });
      const out = await run;
      expect(out.results.map((r) => r.result.isError)).toEqual([true]);
      expect(givenEntries().filter((e) => e.mailer === 'bob@example.com')).toEqual([]);
      expect(JSON.stringify(out.messages)).not.toContain('the email is sent');
      expect(JSON.stringify(out.messages)).toContain('call-denied');
    }, 600_000);

    it('the session block: a turn against the fake OpenAI provider, its events to the turn’s end', async () => {
      code('session');
      const run = runNode('the session block', compiled('session'));
      const out = await run.succeeds();
      const types = out.trim().split('\n');
      expect(types).toContain('model/message');
      expect(types[types.length - 1]).toBe('session/turn-ended');
      // The model step asked the fake provider (the worker's OPENAI_BASE_URL), for the README's model.
      expect(provider.requests('gpt-4.1')).toBeGreaterThan(0);
    }, 600_000);

    it('the manifest: `npx sluice manifest --out tools.json`, then the block reads it', async () => {
      await app.sh('npx', ['sluice', 'manifest', '--out', 'tools.json'], { env: env(), timeoutMs: 240_000 });
      const manifest = JSON.parse(fs.readFileSync(path.join(app.dir, 'tools.json'), 'utf8'));
      expect(JSON.stringify(manifest)).toContain('send_email');
      await runNode('the manifest block', compiled('manifest')).succeeds();
    }, 600_000);

    it('the Code Mode program runs as run_code: the temperatures summed, the refused delete caught', async () => {
      const taskQueue = `readme-code-mode-${stamp}`;
      const codeWorker = startProcess(
        'npx sluice worker (Code Mode)',
        'npx',
        ['sluice', 'worker', '--config', 'code-mode.config.ts', '--task-queue', taskQueue],
        { cwd: app.dir, env: env() },
      );
      await codeWorker.waitFor('the worker polls its task queue', /sluice worker: .* on task queue/);
      const sluice = new SluiceClient({ connection, taskQueue });
      const out = await sluice.runBatch({
        sessionId: `readme-code-mode-${stamp}`,
        turn: 1,
        step: 1,
        calls: [
          {
            id: 'run-1',
            name: 'run_code',
            arguments: JSON.stringify({ code: code('codeMode'), description: 'average temperature, then a cleanup' }),
          },
        ],
      });
      const result = text(out.results[0].result);
      expect(out.results[0].result.isError, result).toBe(false);
      expect(result).toContain('refused:');
      expect(result).toMatch(/"averageC": 15\b/);
      await codeWorker.stop();
    }, 600_000);

    it('the command-line listing is the CLI’s: every command it shows exists, every command is shown', async () => {
      const { stdout } = await app.sh('npx', ['sluice', '--help'], { env: env(), timeoutMs: 120_000 });
      // A command line of the help: two spaces, the command, then its arguments or the description.
      const commands = stdout.slice(stdout.indexOf('Commands'), stdout.indexOf('Common options:'));
      const helpCommands = new Set(
        [...commands.matchAll(/^ {2}([a-z][a-z-]*)(?=\s{2,}| <| [a-z|]+\s{2,}|\s*$)/gm)].map((m) => m[1]),
      );
      expect(helpCommands.size, commands).toBeGreaterThan(15);
      const listing = claimed('commandLine')[0].code;
      const listed = new Set([...listing.matchAll(/^npx sluice ([a-z][a-z-]*)/gm)].map((m) => m[1]));
      expect(
        [...listed].filter((c) => !helpCommands.has(c)),
        'listed but not a command',
      ).toEqual([]);
      expect(
        [...helpCommands].filter((c) => !listed.has(c)),
        'commands the listing leaves out',
      ).toEqual([]);
    }, 300_000);
  });
}

/** installing.md's install lines, each in an empty app beside the tarball. */
export function installingLines(): void {
  describe('docs/installing.md’s install lines, each in an empty app', () => {
    beforeAll(useTarball, 1_200_000);
    afterAll(async () => {
      if (parent) await fs.promises.rm(parent, { recursive: true, force: true });
    }, 300_000);

    it('the client-only line, then the worker line', async () => {
      const [clientLine, workerLine, ...more] = commandLines(code('installLines'));
      expect(more, 'installing.md’s first block: a client line and a worker line').toEqual([]);
      const dir = emptyApp('installing-app', 'commonjs');
      await runLine(dir, clientLine);
      await sh('node', ['-e', "require('sluice'); require('sluice/client')"], dir);
      expect(fs.existsSync(path.join(dir, 'node_modules', '@temporalio', 'worker')), 'a client-only app').toBe(false);
      await runLine(dir, workerLine);
      await sh('node', ['-e', "require('sluice/worker'); require('sluice/workflow')"], dir);
    }, 900_000);

    it('beside @temporalio/ai-sdk on Temporal 1.23: one copy of each Temporal package', async () => {
      // The README's blocks run in such an app in the cell above; this is installing.md's own line.
      const dir = emptyApp('temporal-123-app', 'module');
      for (const line of commandLines(code('besideAiSdk'))) await runLine(dir, line);
      for (const p of ['client', 'common', 'proto', 'workflow', 'activity', 'worker'])
        expect(copiesOf(dir, `@temporalio/${p}`)).toEqual([`node_modules/@temporalio/${p}@1.23.0`]);
      expect(copiesOf(dir, '@temporalio/ai-sdk')).toEqual(['node_modules/@temporalio/ai-sdk@1.23.0']);
    }, 900_000);
  });
}

/** The compiled file of a step's TypeScript block under build/ (appFiles names them). */
function compiled(step: Step): string {
  const b = claimed(step)[0];
  const file = b.file ?? `block-${blocks.filter((x) => x.lang === 'ts').indexOf(b) + 1}.ts`;
  return file.replace(/\.ts$/, '.js');
}
