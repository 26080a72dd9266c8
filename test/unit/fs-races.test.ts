// tool-fs under attack from the file system itself (issue 10, item 12): a symbolic link swapped in
// between the check and the open, and a hard link to an outside file; and the protected paths'
// configuration (item 1).
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fsTools, protectStateDir } from '../../tools';
import { call, session } from '../tool-context';

let base: string;
let root: string;
let outside: string;

beforeEach(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-race-')));
  root = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  fs.mkdirSync(root);
  fs.mkdirSync(outside);
});

/**
 * A separate process that keeps swapping `ws/d` between a real folder and a link to the outside
 * folder, staying in each state up to 2 ms, until killed.
 */
function startSwapper(): { stop(): Promise<void> } {
  const script = `
    const fs = require('fs');
    const [d, real, out] = process.argv.slice(1);
    const dwell = () => { const until = performance.now() + Math.random() * 2; while (performance.now() < until); };
    for (;;) {
      try { fs.renameSync(d, real); fs.symlinkSync(out, d); } catch {}
      dwell();
      try { fs.unlinkSync(d); fs.renameSync(real, d); } catch {}
      dwell();
    }`;
  const child = spawn(process.execPath, ['-e', script, path.join(root, 'd'), path.join(root, 'd.real'), outside], {
    stdio: 'ignore',
  });
  return {
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}

describe('a symbolic link swapped in between check and open', () => {
  let swapper: { stop(): Promise<void> } | undefined;
  afterEach(async () => {
    await swapper?.stop();
    swapper = undefined;
  });

  it('sends no write outside the workspace and shows no outside file, over many tries', async () => {
    fs.mkdirSync(path.join(root, 'd'));
    fs.writeFileSync(path.join(root, 'd', 'in.txt'), 'inside\n');
    fs.writeFileSync(path.join(outside, 'in.txt'), 'OUTSIDE SECRET\n');
    const tools = fsTools({ root });
    const s = session();
    swapper = startSwapper();
    const codes = new Map<string, number>();
    let landed = 0;
    for (let i = 0; i < 150; i++) {
      const w = await call(tools, 'write', { file_path: `d/f${i}.txt`, content: `write ${i}\n` }, s);
      const r = await call(tools, 'read', { file_path: 'd/in.txt' }, session());
      const g = await call(tools, 'grep', { pattern: 'SECRET', path: 'd', output_mode: 'content' }, session());
      for (const o of [w, r, g]) codes.set(o.code ?? 'ok', (codes.get(o.code ?? 'ok') ?? 0) + 1);
      if (!w.isError) landed++;
      expect(r.text).not.toContain('OUTSIDE');
      expect(g.text).not.toContain('OUTSIDE');
    }
    await swapper.stop();
    swapper = undefined;
    expect(fs.readdirSync(outside)).toEqual(['in.txt']);
    // The race was real: both outcomes happened, and some writes still landed inside.
    expect(landed).toBeGreaterThan(0);
    expect([...codes.keys()].some((c) => c !== 'ok')).toBe(true);
  });
});

describe('hard links', () => {
  it('refuses to read, edit or overwrite a file with another name outside, unless allowed', async () => {
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'OUTSIDE SECRET\n');
    fs.linkSync(path.join(outside, 'secret.txt'), path.join(root, 'innocent.txt'));
    const tools = fsTools({ root });
    const s = session();
    for (const [name, args] of [
      ['read', { file_path: 'innocent.txt' }],
      ['edit', { file_path: 'innocent.txt', old_string: 'OUTSIDE', new_string: 'x' }],
      ['write', { file_path: 'innocent.txt', content: 'x' }],
    ] as const) {
      const r = await call(tools, name, args, s);
      expect(r).toMatchObject({ isError: true, code: 'FS_HARD_LINK' });
      expect(r.text).toMatch(/2 hard links.*hardLinks: 'allow'/);
    }
    const g = await call(tools, 'grep', { pattern: 'SECRET', output_mode: 'content' }, s);
    expect(g.text).not.toContain('OUTSIDE');
    expect(g.text).toContain('1 file(s) with several hard links');
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('OUTSIDE SECRET\n');

    const allowed = await call(fsTools({ root, hardLinks: 'allow' }), 'read', { file_path: 'innocent.txt' }, s);
    expect(allowed.text).toContain('OUTSIDE SECRET');
  });
});

describe('protected paths, configured', () => {
  it('are lifted or extended by configuration, but the state folder stays protected', async () => {
    fs.mkdirSync(path.join(root, '.claude'));
    fs.mkdirSync(path.join(root, 'state'));
    fs.mkdirSync(path.join(root, 'vault'));
    fs.writeFileSync(path.join(root, 'vault', 'key'), 'k\n');
    protectStateDir(path.join(root, 'state'));
    const s = session();

    const open = fsTools({ root, protect: false });
    expect(await call(open, 'write', { file_path: '.claude/settings.local.json', content: '{}' }, s)).toMatchObject({
      isError: false,
    });
    expect(await call(open, 'write', { file_path: 'state/x', content: '' }, s)).toMatchObject({
      code: 'FS_PROTECTED_PATH',
    });

    const strict = fsTools({ root, protect: { paths: ['vault'] } });
    expect(await call(strict, 'read', { file_path: 'vault/key' }, s)).toMatchObject({ code: 'FS_PROTECTED_PATH' });
    expect(await call(strict, 'read', { file_path: '.claude/settings.local.json' }, s)).toMatchObject({
      code: 'FS_PROTECTED_PATH',
    });
  });
});
