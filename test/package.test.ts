// Sluice as a user gets it: `npm pack`, installed into a fresh project outside the checkout (in
// JavaScript, with a TypeScript project in a folder of it sharing its one install), run with plain
// node against the test server: a worker hosting the user's workflow and activity beside Sluice
// (SluicePlugin), a batch through sluice/client, a child batch that asks for approval and is
// approved, a second parent that attaches (the body ran once), and the bin's --help. Every
// TypeScript block in the README typechecks against the built package. The install prints no
// engine warning; CI runs this file again under each supported Node major (SLUICE_TEST_NODE,
// test/fresh-app.ts).
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually } from './eventually';
import {
  NPM_INSTALL,
  installedVersion as installed,
  packSluice,
  REPO as repo,
  sh as shIn,
  TEST_NODE,
} from './fresh-app';

const fixtures = path.join(__dirname, 'fixtures', 'package');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-package-'));
const sh = (cmd: string, args: string[], cwd: string, env: Record<string, string> = {}) =>
  shIn(cmd, args, cwd, { env });

function project(dir: string, name: string, files: string): string {
  fs.cpSync(files, dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true }));
  fs.mkdirSync(path.join(dir, 'state'));
  return dir;
}

/** The app's own tsc. */
const tsc = () => path.join(jsApp, 'node_modules', 'typescript', 'bin', 'tsc');

/** The last line of a run's stdout: the app's JSON report. */
function report(stdout: string): Record<string, unknown> {
  const line = stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(line);
}

let tarball = '';
let jsApp = '';
let tsApp = '';
let started = 0;
let clientSession = '';
/** What npm said installing the JavaScript app, warnings included. */
let jsInstall = '';
/** The Node the apps run with. */
let appNode = '';

beforeAll(async () => {
  started = Date.now();
  // `npm pack` runs `prepack`, which runs `npm run build` (tsc to dist/ with declarations, unless
  // dist/ is up to date with its sources): once per test run, shared with the other files that
  // install the tarball.
  tarball = await packSluice(inject('runDir'));
  jsApp = project(path.join(work, 'js-app'), 'js-app', path.join(fixtures, 'js-app'));
  // The TypeScript project resolves its packages from the JavaScript app's node_modules, a folder
  // up: one install serves both (two installs of the same packages told nothing more).
  tsApp = project(path.join(jsApp, 'ts-app'), 'ts-app', path.join(fixtures, 'ts-app'));
  // A worker app: the worker runtime is an optional peer dependency a worker app installs.
  const worker = `@temporalio/worker@${installed('@temporalio/worker')}`;
  const types = [`typescript@${installed('typescript')}`, `@types/node@${installed('@types/node')}`];
  const r = await sh('npm', [...NPM_INSTALL, '--loglevel=warn', tarball, worker, ...types], jsApp);
  jsInstall = r.stdout + r.stderr;
  appNode = (await sh('node', ['--version'], jsApp)).stdout.trim();
}, 900_000);

afterAll(async () => {
  console.log(
    `package test: build + pack + the install + the runs and typechecks in ${Math.round((Date.now() - started) / 1000)} s`,
  );
  // Fresh apps' node_modules take minutes to remove on a loaded machine.
  await fs.promises.rm(work, { recursive: true, force: true });
}, 900_000);

describe('the packed tarball in fresh projects, with plain node', () => {
  it('installs with no engine warning, on the Node CI asked for; neither Sluice nor its dependencies ask npm to run an install script', () => {
    console.log(`package test: the apps run on Node ${appNode}`);
    if (TEST_NODE) expect(appNode).toBe(execFileSync(TEST_NODE, ['--version'], { encoding: 'utf8' }).trim());
    expect(jsInstall).not.toContain('EBADENGINE');
    // npm 11 lists the packages whose install scripts it skipped: not Sluice (its tarball has no
    // `prepare`, scripts/pack-manifest.js) nor a dependency of its, only the Temporal SDK's
    // (protobufjs, @swc/core; esbuild with tsx), none needed.
    const skipped = [...jsInstall.matchAll(/install-scripts\s+(@?[^@\s]+)@\d/g)].map((m) => m[1]);
    for (const name of skipped) expect(['@swc/core', 'esbuild', 'protobufjs']).toContain(name);
  });

  it('installs outside the checkout, with compiled JavaScript and declarations only', () => {
    expect(path.relative(repo, jsApp).startsWith('..')).toBe(true);
    const pkg = path.join(jsApp, 'node_modules', 'sluice');
    expect(fs.existsSync(path.join(pkg, 'dist', 'index.js'))).toBe(true);
    expect(fs.existsSync(path.join(pkg, 'dist', 'index.d.ts'))).toBe(true);
    expect(fs.existsSync(path.join(pkg, 'worker', 'worker.ts'))).toBe(false);
  });

  it('JavaScript: plugin worker with the user’s workflow and activity, client batch, approved child batch, attaching second parent', async () => {
    const { stdout } = await sh('node', ['main.js'], jsApp, {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      APP_STATE_DIR: path.join(jsApp, 'state'),
    });
    const r = report(stdout);
    expect(r.clientBatch).toBe('noon');
    expect(r.asked).toBe('send_email');
    expect(r.decision).toBe('allowed-once');
    expect(r.firstHello).toMatch(/^hello js-/);
    expect(JSON.parse(r.firstResult as string)).toEqual({ sent: 'ada@example.com' });
    expect(r.secondResult).toBe(r.firstResult);
    expect(r.sameBatchEvents).toBe(true);
    expect(r.bodyRuns).toBe(1);
    // The child batch set its own SluiceSessionId: sessionEvents finds it.
    expect(r.sessionEventTypes).toEqual(['approval/asked', 'approval/decided', 'tool/call', 'tool/result']);
    expect(r.tsxLoaded).toBe(false);
    clientSession = r.clientSession as string;
  }, 300_000);

  // npm nests a protobufjs 8 under @temporalio/common and @temporalio/proto each when
  // @grpc/proto-loader's protobufjs 7 takes the top level: the checkout has one copy and hid that
  // @temporalio/common's history JSON helpers then fail ("type must be a Type").
  it('the sluice bin exports a batch history the app ran, and replays and audits the file', async () => {
    expect(clientSession).toMatch(/-client$/);
    const bin = path.join('node_modules', '.bin', 'sluice');
    const env = { TEMPORAL_ADDRESS: inject('temporalAddress') };
    const id = `sluice-batch:${clientSession}:1:1`;
    const out = path.join(jsApp, 'history.json');
    await sh('node', [bin, 'export', id, '--out', out], jsApp, env);
    const history = JSON.parse(fs.readFileSync(out, 'utf8'));
    expect(history.events[0].eventType).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_STARTED');
    expect(history.events.at(-1).eventType).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
    const replay = await sh('node', [bin, 'replay', out], jsApp);
    expect(replay.stdout).toContain(`ok      ${id}`);
    const audit = await sh('node', [bin, 'audit', out], jsApp);
    expect(audit.stdout).toContain(`batch ${id} · session ${clientSession} · turn 1 · step 1`);
    expect(audit.stdout).toContain('get_time');
  }, 300_000);

  it('TypeScript: compiles against the declarations, then runs with plain node', async () => {
    await sh('node', [tsc(), '-p', '.'], tsApp);
    const { stdout } = await sh('node', [path.join('build', 'main.js')], tsApp, {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      APP_STATE_DIR: path.join(tsApp, 'state'),
    });
    const r = report(stdout);
    expect(JSON.parse(r.weather as string)).toEqual({ city: 'Oslo', sky: 'sun' });
    expect(r.workflowType).toBe(true);
    expect(r.child).toMatch(/^TS-/);
  }, 300_000);

  it('the sluice bin runs with plain node', async () => {
    const { stdout } = await sh('node', [path.join('node_modules', '.bin', 'sluice'), '--help'], jsApp);
    expect(stdout).toContain('sluice — durable tool batches for AI agents');
    expect(stdout).toContain('manifest');
    // The copy it runs: the app's, compiled.
    const version = await sh('node', [path.join('node_modules', '.bin', 'sluice'), '--version'], jsApp);
    const pkg = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8'));
    expect(version.stdout.trim()).toBe(
      `sluice ${pkg.version} (dist) at ${fs.realpathSync(path.join(jsApp, 'node_modules', 'sluice'))}`,
    );
  });

  it('the shipped chat example runs in the app: its worker config, then `sluice chat --script` with an approval', async () => {
    const bin = path.join('node_modules', '.bin', 'sluice');
    const taskQueue = `chat-example-${process.pid}-${Date.now()}`;
    const where = ['--address', inject('temporalAddress'), '--task-queue', taskQueue, '--state-dir', 'chat-state'];
    const worker = spawn(
      process.execPath,
      [bin, 'worker', '--config', 'node_modules/sluice/examples/chat.config.mjs', ...where],
      { cwd: jsApp, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const chat = spawn(
      process.execPath,
      [bin, 'chat', '--script', 'node_modules/sluice/examples/chat-script.json', ...where],
      { cwd: jsApp, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, SLUICE_APPROVER: 'tester' } },
    );
    let said = '';
    let shown = '';
    worker.stdout.on('data', (b: Buffer) => (said += b));
    worker.stderr.on('data', (b: Buffer) => (said += b));
    chat.stdout.on('data', (b: Buffer) => (shown += b));
    chat.stderr.on('data', (b: Buffer) => (shown += b));
    const shows = (what: string) =>
      eventually(`the chat to show ${what}`, () => shown.includes(what), { timeoutMs: 240_000 }).catch((err: Error) => {
        throw new Error(`${err.message}; it showed:\n${shown}\nthe worker said:\n${said}`);
      });
    const exited = new Promise<number | null>((r) => chat.on('exit', (code) => r(code)));
    try {
      await eventually('the worker to start', () => said.includes('sluice worker:') || worker.exitCode !== null, {
        timeoutMs: 240_000,
      });
      expect(said).toContain('2 tool(s) on task queue');
      chat.stdin.write('publish the report\n');
      await shows('Approve this call? [y/N]');
      chat.stdin.write('y\n');
      await shows('model: Done: the report is out.');
      chat.stdin.write('/end\n');
      expect(await exited, shown).toBe(0);
      expect(shown).toContain('✓ note (n1): { "noted": 1 }');
      expect(shown).toContain('✓ publish (p1): published the report');
      expect(shown).not.toContain('unknown tool');
    } finally {
      chat.kill('SIGKILL');
      worker.kill('SIGTERM');
      await new Promise((r) => (worker.exitCode !== null ? r(undefined) : worker.on('exit', r)));
    }
  }, 600_000);

  it('sluice and sluice/client load no worker runtime; sluice loads no Temporal at all', async () => {
    const probe = `
      const loaded = () => Object.keys(require.cache);
      require('sluice');
      const root = loaded().filter((f) => f.includes('@temporalio'));
      require('sluice/client');
      const client = loaded().filter((f) => /@temporalio[\\\\/]worker|[\\\\/]dist[\\\\/](activities|tools|hooks)[\\\\/]|[\\\\/]dist[\\\\/]worker[\\\\/](sink|claim-check|worker)/.test(f));
      console.log(JSON.stringify({ root, client }));`;
    const { stdout } = await sh('node', ['-e', probe], jsApp);
    expect(JSON.parse(stdout)).toEqual({ root: [], client: [] });
  });

  it('every TypeScript block in the README typechecks against the built package', async () => {
    const readme = fs.readFileSync(path.join(repo, 'README.md'), 'utf8');
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    const dir = path.join(tsApp, 'readme');
    fs.mkdirSync(dir);
    blocks.forEach((code, i) => fs.writeFileSync(path.join(dir, `block-${i + 1}.ts`), `${code}\nexport {};\n`));
    fs.copyFileSync(path.join(fixtures, 'readme-globals.d.ts'), path.join(dir, 'globals.d.ts'));
    fs.writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'ESNext',
          moduleResolution: 'Bundler',
          strict: true,
          skipLibCheck: true,
          noEmit: true,
          types: ['node'],
        },
        include: ['*.ts'],
      }),
    );
    await sh('node', [tsc(), '-p', '.'], dir);
  }, 300_000);
});
