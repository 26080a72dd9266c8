// Issue 22 item 2, end to end: a checkout used as a dependency — linked into an app (what
// `npm link` / `npm install <folder>` make) and as a workspace package — with the worker started
// by `npx sluice worker` from the app's folder. The checkout's bin/sluice.js finds its TypeScript
// source there while the app's `import … from 'sluice'` resolves to its dist/: if the CLI ran the
// source, the config's toolOutput results would be another copy's class and every call would come
// back INVALID_TOOL_OUTPUT after its body ran. test/unit/two-copies.test.ts covers the brands in
// one process; this covers the layouts users have and the CLI's choice of copy.
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SluiceClient } from '../client/client';
import { eventually, within } from './eventually';
import { packSluice, REPO } from './fresh-app';
import { batch, text } from './harness';

// An ES module config as a user writes it, importing the package by name: a tool of its own whose
// result is built with toolOutput, and the built-in todo tool (whose body also returns toolOutput).
const CONFIG = `import { defineConfig, defineTool, toolOutput } from 'sluice';
import { todoWriteTool } from 'sluice/tools';

export default defineConfig({
  tools: [
    defineTool({
      name: 'greet',
      description: 'greets',
      input: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false },
      execute: ({ name }) => toolOutput({ content: [{ type: 'text', text: 'hello ' + name }], value: { greeted: name } }),
    }),
    todoWriteTool(),
  ],
});
`;

const VERSION: string = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')).version;

const APP_PACKAGE = JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' });

let scratch: string;
let connection: NativeConnection;
const workers: ChildProcess[] = [];

beforeAll(async () => {
  // The checkout needs its dist/ (what the app's `sluice` resolves to): packing runs the build,
  // once per test run for every file that asks (the tarball itself is not used here).
  await packSluice(inject('runDir'));
  expect(fs.existsSync(path.join(REPO, 'dist', 'index.js'))).toBe(true);
  // The source is there too: the layout in which a CLI could run it beside the config's dist/.
  expect(fs.existsSync(path.join(REPO, 'cli', 'index.ts'))).toBe(true);
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-dual-copy-'));
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
}, 900_000);

afterAll(async () => {
  await Promise.all(workers.map(stop));
  await connection?.close();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
}, 120_000);

/** Stops a worker started by npx: the whole process group (npx, its shell, node). */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    return; // already gone
  }
  // 30 s to exit by itself; one that has not is killed below, so running late is no failure here.
  await within('the worker to exit after SIGTERM', 30_000, exited).catch(() => undefined);
  if (child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

/**
 * `npx sluice worker --config sluice.config.js` from the app's folder, as the README says to run
 * it; resolves once the worker says it polls its task queue.
 */
async function startWorker(appDir: string, taskQueue: string): Promise<{ log: () => string }> {
  const child = spawn('npx', ['sluice', 'worker', '--config', 'sluice.config.js', '--task-queue', taskQueue], {
    cwd: appDir,
    // Its own process group, so that afterAll stops npx and the node it started together.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      // The bin must come from the app's node_modules: never fetch a package named sluice.
      npm_config_yes: 'false',
      npm_config_update_notifier: 'false',
    },
  });
  workers.push(child);
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  // Bundling the workflows on a loaded machine takes a while.
  await eventually('the worker to start', () => out.includes('sluice worker:') || child.exitCode !== null, {
    timeoutMs: 240_000,
  });
  if (child.exitCode !== null) throw new Error(`npx sluice worker exited with ${child.exitCode}:\n${out}`);
  return { log: () => out };
}

/** A batch calling the config's tool and the built-in todo tool; both must be told they ran. */
async function runsBothTools(taskQueue: string, log: () => string): Promise<void> {
  const client = new SluiceClient({ connection, taskQueue });
  const out = await client.runBatch(
    batch([
      { id: 'greet', name: 'greet', args: { name: 'ada' } },
      {
        id: 'todo',
        name: 'todo_write',
        args: { todos: [{ content: 'Link the checkout', status: 'completed' }] },
      },
    ]),
  );
  const [greet, todo] = out.results;
  const context = `${JSON.stringify(out.results, null, 2)}\nworker output:\n${log()}`;
  expect(greet.result.error, context).toBeUndefined();
  expect(greet.result.isError, context).toBe(false);
  expect(text(greet.result)).toBe('hello ada');
  expect(todo.result.error, context).toBeUndefined();
  expect(todo.result.isError, context).toBe(false);
  expect(text(todo.result)).toContain('Todo list updated: 1 of 1 completed.');
}

function link(target: string, at: string): void {
  fs.mkdirSync(path.dirname(at), { recursive: true });
  fs.symlinkSync(target, at, 'dir');
}

describe('two copies of Sluice: a checkout as a dependency, the worker from npx in the app', () => {
  it('a linked checkout (node_modules/sluice a link to it, as npm link makes)', async () => {
    const app = path.join(scratch, 'linked', 'app');
    fs.mkdirSync(app, { recursive: true });
    fs.writeFileSync(path.join(app, 'package.json'), APP_PACKAGE);
    fs.writeFileSync(path.join(app, 'sluice.config.js'), CONFIG);
    // What `npm link sluice` / `npm install <checkout>` leave in the app: the package a link to the
    // checkout, its bin a link into it. Nothing is written into the checkout.
    link(REPO, path.join(app, 'node_modules', 'sluice'));
    fs.mkdirSync(path.join(app, 'node_modules', '.bin'));
    fs.symlinkSync(path.join('..', 'sluice', 'bin', 'sluice.js'), path.join(app, 'node_modules', '.bin', 'sluice'));

    const taskQueue = `dual-copy-linked-${process.pid}-${Date.now()}`;
    const { log } = await startWorker(app, taskQueue);
    // Its first line names the copy it runs: the checkout's dist/, the one the config imports.
    expect(log()).toContain(`sluice worker: sluice ${VERSION} (dist) at ${fs.realpathSync(REPO)};`);
    await runsBothTools(taskQueue, log);
  }, 600_000);

  it('a workspace (packages/sluice a copy of the checkout, packages/app the app)', async () => {
    const root = path.join(scratch, 'workspace');
    fs.mkdirSync(root, { recursive: true });
    fs.writeFileSync(
      path.join(root, 'package.json'),
      JSON.stringify({ name: 'monorepo', private: true, workspaces: ['packages/*'] }),
    );
    // The package: the checkout's files with its source and its dist/, as a monorepo holds it.
    const pkg = path.join(root, 'packages', 'sluice');
    const skip = new Set(['node_modules', '.git', '.sluice', 'test', 'bench', 'examples']);
    fs.cpSync(REPO, pkg, {
      recursive: true,
      filter: (src) => path.dirname(src) !== REPO || !skip.has(path.basename(src)),
    });
    const app = path.join(root, 'packages', 'app');
    fs.mkdirSync(app, { recursive: true });
    fs.writeFileSync(path.join(app, 'package.json'), APP_PACKAGE);
    fs.writeFileSync(path.join(app, 'sluice.config.js'), CONFIG);
    // The links `npm install` makes at a workspace's root, built by hand: an install would have to
    // fetch every dependency again (or write into the checkout's node_modules through a link).
    // Each workspace is linked under the root's node_modules with its bin in node_modules/.bin;
    // the package's dependencies, which an install hoists to the root, resolve from its own
    // node_modules, a link to the checkout's installed ones.
    link(path.join('..', 'packages', 'sluice'), path.join(root, 'node_modules', 'sluice'));
    link(path.join('..', 'packages', 'app'), path.join(root, 'node_modules', 'app'));
    fs.mkdirSync(path.join(root, 'node_modules', '.bin'));
    fs.symlinkSync(path.join('..', 'sluice', 'bin', 'sluice.js'), path.join(root, 'node_modules', '.bin', 'sluice'));
    link(fs.realpathSync(path.join(REPO, 'node_modules')), path.join(pkg, 'node_modules'));

    const taskQueue = `dual-copy-workspace-${process.pid}-${Date.now()}`;
    const { log } = await startWorker(app, taskQueue);
    expect(log()).toContain(`sluice worker: sluice ${VERSION} (dist) at ${fs.realpathSync(pkg)};`);
    await runsBothTools(taskQueue, log);
  }, 600_000);
});
