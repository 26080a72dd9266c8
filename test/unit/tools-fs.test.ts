// tool-fs bodies called directly: confinement, the ledger and its intent policies, paging,
// binary files, atomic writes, edit matching, glob and grep with .gitignore.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { fsTools, ledgerWriteIntent, type WriteIntentPolicy } from '../../tools';
import { call, session, type Session } from '../tool-context';

let root: string;
let outside: string;
let tools: ReturnType<typeof fsTools>;
let s: Session;

const put = (rel: string, content: string | Buffer) => {
  fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  fs.writeFileSync(path.join(root, rel), content);
};
const get = (rel: string) => fs.readFileSync(path.join(root, rel), 'utf8');

beforeEach(() => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-fs-'));
  root = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  fs.mkdirSync(root);
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret\n');
  tools = fsTools({ root, read: { defaultLines: 5 }, search: { maxResults: 3 } });
  s = session();
});

describe('confinement', () => {
  it("denies '..' even when it would land inside the root", async () => {
    put('a/b.txt', 'x\n');
    for (const p of ['../outside/secret.txt', 'a/../a/b.txt', '..']) {
      const r = await call(tools, 'read', { file_path: p }, s);
      expect(r).toMatchObject({ isError: true, code: 'FS_OUTSIDE_WORKSPACE' });
      expect(r.text).toContain("'..'");
    }
  });

  it('denies absolute paths outside the root and accepts those inside it', async () => {
    put('a.txt', 'hello\n');
    expect(await call(tools, 'read', { file_path: path.join(outside, 'secret.txt') }, s)).toMatchObject({
      isError: true,
      code: 'FS_OUTSIDE_WORKSPACE',
    });
    expect(await call(tools, 'write', { file_path: '/etc/sluice-should-not-exist', content: 'x' }, s)).toMatchObject({
      isError: true,
      code: 'FS_OUTSIDE_WORKSPACE',
    });
    const inside = await call(tools, 'read', { file_path: path.join(root, 'a.txt') }, s);
    expect(inside.isError).toBe(false);
    expect(inside.text).toContain('hello');
    expect(s.events).toEqual([
      { type: 'fs/observed', data: expect.objectContaining({ path: 'a.txt', state: 'present' }) },
    ]);
  });

  it('denies symlinks at any depth that resolve outside, for reads, writes and new files under them', async () => {
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'link.txt'));
    fs.mkdirSync(path.join(root, 'deep', 'er'), { recursive: true });
    fs.symlinkSync(outside, path.join(root, 'deep', 'er', 'out'));
    fs.symlinkSync(path.join(outside, 'missing'), path.join(root, 'dangling'));
    const attempts: [string, object][] = [
      ['read', { file_path: 'link.txt' }],
      ['read', { file_path: 'deep/er/out/secret.txt' }],
      ['write', { file_path: 'deep/er/out/new.txt', content: 'x' }],
      ['write', { file_path: 'dangling', content: 'x' }],
      ['edit', { file_path: 'link.txt', old_string: 'secret', new_string: 'public' }],
      ['grep', { pattern: 'secret', path: 'deep/er/out' }],
    ];
    for (const [tool, args] of attempts)
      expect(await call(tools, tool, args, s), `${tool} ${JSON.stringify(args)}`).toMatchObject({
        isError: true,
        code: 'FS_OUTSIDE_WORKSPACE',
      });
    expect(fs.existsSync(path.join(outside, 'new.txt'))).toBe(false);
    expect(fs.existsSync(path.join(outside, 'missing'))).toBe(false);
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret\n');
    // and a walk does not follow them either
    const g = await call(tools, 'grep', { pattern: 'secret' }, s);
    expect(g.text).toContain('No matches');
  });

  it('follows symlinks that stay inside, keyed by the real path', async () => {
    put('real/f.txt', 'one\n');
    fs.symlinkSync(path.join(root, 'real'), path.join(root, 'alias'));
    await call(tools, 'read', { file_path: 'alias/f.txt' }, s);
    expect(Object.keys(s.state.fs)).toEqual(['real/f.txt']);
    expect(
      await call(tools, 'edit', { file_path: 'real/f.txt', old_string: 'one', new_string: 'two' }, s),
    ).toMatchObject({ isError: false });
    expect(get('real/f.txt')).toBe('two\n');
  });
});

describe('read', () => {
  it('numbers lines, pages large files with a note, and records partial reads as partial', async () => {
    put('big.txt', `${Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join('\n')}\n`);
    const first = await call(tools, 'read', { file_path: 'big.txt' }, s);
    expect(first.text).toContain('     1\tline 1');
    expect(first.text).not.toContain('line 6');
    expect(first.text).toContain('[Showing lines 1-5 of 12. To read more, call read with offset=6.]');
    expect(s.state.fs['big.txt']).toMatchObject({ state: 'present', partial: true });

    const rest = await call(tools, 'read', { file_path: 'big.txt', offset: 6, limit: 100 }, s);
    expect(rest.text).toContain('    12\tline 12');
    expect(rest.text).toContain('[Showing lines 6-12 of 12.]');
    expect(rest.text).not.toContain('offset=');

    const whole = await call(tools, 'read', { file_path: 'big.txt', limit: 12 }, s);
    expect(whole.text).not.toContain('Showing');
    expect(s.state.fs['big.txt']).toEqual({
      state: 'present',
      partial: false,
      version: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
    expect(s.events.map((e) => e.data.partial)).toEqual([true, true, false]);
  });

  it('cuts pages at the character bound and very long lines', async () => {
    const t = fsTools({ root, read: { defaultLines: 100, maxChars: 50, maxLineChars: 10 } });
    put('wide.txt', `${'a'.repeat(5000)}\nb\nc\nd\ne\nf\ng\n`);
    const r = await call(t, 'read', { file_path: 'wide.txt' }, s);
    expect(r.text).toContain(`${'a'.repeat(10)}… [line cut]`);
    expect(r.text).toContain('stopped at 50 characters');
    expect(r.text).toMatch(/call read with offset=\d/);
    expect(s.state.fs['wide.txt']).toMatchObject({ partial: true });
  });

  it('does not dump binary files, and records missing files as absent', async () => {
    put('img.bin', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3, 0, 0]));
    const bin = await call(tools, 'read', { file_path: 'img.bin' }, s);
    expect(bin.isError).toBe(false);
    expect(bin.text).toMatch(/binary file of 10 bytes; its content is not shown/);
    expect(bin.text).not.toContain('PNG');

    const missing = await call(tools, 'read', { file_path: 'nope/x.txt' }, s);
    expect(missing).toMatchObject({ isError: true, code: 'FS_NOT_FOUND' });
    expect(s.state.fs['nope/x.txt']).toEqual({ state: 'absent', partial: false });
    expect(s.events.at(-1)).toEqual({
      type: 'fs/observed',
      data: { path: 'nope/x.txt', state: 'absent', partial: false },
    });

    fs.mkdirSync(path.join(root, 'dir'));
    expect(await call(tools, 'read', { file_path: 'dir' }, s)).toMatchObject({ isError: true, code: 'FS_NOT_A_FILE' });
  });

  it('says so when a file is empty or the offset is past its end', async () => {
    put('empty.txt', '');
    expect((await call(tools, 'read', { file_path: 'empty.txt' }, s)).text).toBe('(empty.txt is empty)');
    put('two.txt', 'a\nb\n');
    expect((await call(tools, 'read', { file_path: 'two.txt', offset: 9 }, s)).text).toContain('has only 2 lines');
  });
});

describe('write', () => {
  it('creates new files (and folders) atomically and records them', async () => {
    const r = await call(tools, 'write', { file_path: 'new/dir/f.txt', content: 'hi\n' }, s);
    expect(r).toMatchObject({ isError: false, text: 'Created new/dir/f.txt (3 bytes).' });
    expect(get('new/dir/f.txt')).toBe('hi\n');
    expect(fs.readdirSync(path.join(root, 'new/dir'))).toEqual(['f.txt']);
    expect(s.state.fs['new/dir/f.txt']).toMatchObject({ state: 'present', partial: false });
  });

  it('refuses to replace a file never read, read only in part, or changed since', async () => {
    put('f.txt', Array.from({ length: 10 }, (_, i) => `${i}`).join('\n'));
    const blind = await call(tools, 'write', { file_path: 'f.txt', content: 'x' }, s);
    expect(blind).toMatchObject({ isError: true, code: 'FS_NOT_OBSERVED' });
    expect(blind.text).toMatch(/Read the whole file first/);

    await call(tools, 'read', { file_path: 'f.txt', limit: 2 }, s);
    const partial = await call(tools, 'write', { file_path: 'f.txt', content: 'x' }, s);
    expect(partial).toMatchObject({ isError: true, code: 'FS_NOT_OBSERVED' });
    expect(partial.text).toMatch(/only part of f.txt/);

    await call(tools, 'read', { file_path: 'f.txt', limit: 100 }, s);
    put('f.txt', 'changed by someone else');
    const stale = await call(tools, 'write', { file_path: 'f.txt', content: 'x' }, s);
    expect(stale).toMatchObject({ isError: true, code: 'FS_STALE_VERSION' });
    expect(stale.text).toMatch(/Read the file again/);
    expect(get('f.txt')).toBe('changed by someone else');

    await call(tools, 'read', { file_path: 'f.txt' }, s);
    expect(await call(tools, 'write', { file_path: 'f.txt', content: 'mine' }, s)).toMatchObject({
      isError: false,
      text: 'Replaced f.txt (4 bytes).',
    });
    expect(get('f.txt')).toBe('mine');
    // its own write counts as an observation: writing again needs no new read
    expect(await call(tools, 'write', { file_path: 'f.txt', content: 'again' }, s)).toMatchObject({ isError: false });
  });

  it('keeps the file mode and leaves no temp file behind', async () => {
    put('run.sh', 'echo 1\n');
    fs.chmodSync(path.join(root, 'run.sh'), 0o750);
    await call(tools, 'read', { file_path: 'run.sh' }, s);
    await call(tools, 'write', { file_path: 'run.sh', content: 'echo 2\n' }, s);
    expect(fs.statSync(path.join(root, 'run.sh')).mode & 0o777).toBe(0o750);
    expect(fs.readdirSync(root)).toEqual(['run.sh']);
  });

  it('asks a custom fs/write-intent policy, which can wrap the default; a throwing policy denies', async () => {
    put('scratch/a.txt', 'old');
    put('keep.txt', 'old');
    const seen: string[] = [];
    const writeIntent: WriteIntentPolicy = (intent) => {
      seen.push(`${intent.tool}:${intent.path}:${intent.current.state}:${intent.observed?.state ?? 'never'}`);
      return intent.path.startsWith('scratch/') ? { kind: 'allow' } : ledgerWriteIntent(intent);
    };
    const t = fsTools({ root, writeIntent });
    expect(await call(t, 'write', { file_path: 'scratch/a.txt', content: 'new' }, s)).toMatchObject({ isError: false });
    expect(await call(t, 'write', { file_path: 'keep.txt', content: 'new' }, s)).toMatchObject({
      isError: true,
      code: 'FS_NOT_OBSERVED',
    });
    expect(seen).toEqual(['write:scratch/a.txt:present:never', 'write:keep.txt:present:never']);

    const throwing = fsTools({
      root,
      writeIntent: () => {
        throw new Error('policy service down');
      },
    });
    const r = await call(throwing, 'write', { file_path: 'new.txt', content: 'x' }, s);
    expect(r).toMatchObject({ isError: true, code: 'PIPELINE_FAILED' });
    expect(r.text).toContain('fs/write-intent policy failed (policy service down)');
    expect(fs.existsSync(path.join(root, 'new.txt'))).toBe(false);
  });
});

describe('edit', () => {
  it('fails FS_NOT_OBSERVED, FS_NOT_FOUND and FS_STALE_VERSION with what to do next', async () => {
    put('f.txt', 'alpha\n');
    const unread = await call(tools, 'edit', { file_path: 'f.txt', old_string: 'alpha', new_string: 'beta' }, s);
    expect(unread).toMatchObject({ isError: true, code: 'FS_NOT_OBSERVED' });
    expect(unread.text).toContain('Read the file first, then retry the edit.');

    await call(tools, 'read', { file_path: 'gone.txt' }, s);
    const absent = await call(tools, 'edit', { file_path: 'gone.txt', old_string: 'a', new_string: 'b' }, s);
    expect(absent).toMatchObject({ isError: true, code: 'FS_NOT_FOUND' });
    expect(absent.text).toContain('Use write to create it');

    await call(tools, 'read', { file_path: 'f.txt' }, s);
    put('f.txt', 'alpha\ngamma\n');
    const stale = await call(tools, 'edit', { file_path: 'f.txt', old_string: 'alpha', new_string: 'beta' }, s);
    expect(stale).toMatchObject({ isError: true, code: 'FS_STALE_VERSION' });
    expect(stale.text).toContain('Read the file again, then retry the edit.');
    expect(get('f.txt')).toBe('alpha\ngamma\n');

    await call(tools, 'read', { file_path: 'f.txt' }, s);
    fs.rmSync(path.join(root, 'f.txt'));
    expect(await call(tools, 'edit', { file_path: 'f.txt', old_string: 'alpha', new_string: 'beta' }, s)).toMatchObject(
      { isError: true, code: 'FS_NOT_FOUND' },
    );
  });

  it('judges by content, not mtime: a same-content rewrite is not stale', async () => {
    put('f.txt', 'same\n');
    await call(tools, 'read', { file_path: 'f.txt' }, s);
    put('f.txt', 'same\n');
    fs.utimesSync(path.join(root, 'f.txt'), new Date(2001, 1, 1), new Date(2001, 1, 1));
    expect(await call(tools, 'edit', { file_path: 'f.txt', old_string: 'same', new_string: 'new' }, s)).toMatchObject({
      isError: false,
    });
  });

  it('needs exactly one match unless replace_all, keeps $ patterns literal, and chains without re-reading', async () => {
    put('f.txt', 'a = 1\nb = 1\n');
    await call(tools, 'read', { file_path: 'f.txt' }, s);
    expect(await call(tools, 'edit', { file_path: 'f.txt', old_string: 'x = 9', new_string: 'y' }, s)).toMatchObject({
      isError: true,
      code: 'FS_NO_MATCH',
    });
    const ambiguous = await call(tools, 'edit', { file_path: 'f.txt', old_string: '= 1', new_string: '= 2' }, s);
    expect(ambiguous).toMatchObject({ isError: true, code: 'FS_AMBIGUOUS_MATCH' });
    expect(ambiguous.text).toContain('occurs 2 times');
    expect(
      await call(tools, 'edit', { file_path: 'f.txt', old_string: 'a = 1', new_string: "a = '$&'" }, s),
    ).toMatchObject({ isError: false, text: 'Edited f.txt: replaced 1 occurrence.' });
    expect(
      await call(tools, 'edit', { file_path: 'f.txt', old_string: '1', new_string: '3', replace_all: true }, s),
    ).toMatchObject({ isError: false, text: 'Edited f.txt: replaced 1 occurrence.' });
    expect(get('f.txt')).toBe("a = '$&'\nb = 3\n");
    expect(await call(tools, 'edit', { file_path: 'f.txt', old_string: 'same', new_string: 'same' }, s)).toMatchObject({
      isError: true,
      code: 'INVALID_ARGS',
    });
  });

  it('replaces every occurrence with replace_all and matches LF text in CRLF files', async () => {
    put('w.txt', 'x\r\ny\r\nx\r\n');
    await call(tools, 'read', { file_path: 'w.txt' }, s);
    expect(await call(tools, 'edit', { file_path: 'w.txt', old_string: 'x\ny', new_string: 'x\nz' }, s)).toMatchObject({
      isError: false,
    });
    expect(
      await call(tools, 'edit', { file_path: 'w.txt', old_string: 'x', new_string: 'q', replace_all: true }, s),
    ).toMatchObject({ isError: false, text: 'Edited w.txt: replaced 2 occurrences.' });
    expect(get('w.txt')).toBe('q\r\nz\r\nq\r\n');
  });

  it('keeps a partial observation partial after an edit, so a whole-file write still needs a full read', async () => {
    put('f.txt', Array.from({ length: 10 }, (_, i) => `row ${i}`).join('\n'));
    await call(tools, 'read', { file_path: 'f.txt', limit: 2 }, s);
    expect(
      await call(tools, 'edit', { file_path: 'f.txt', old_string: 'row 0', new_string: 'row zero' }, s),
    ).toMatchObject({ isError: false });
    expect(s.state.fs['f.txt']).toMatchObject({ partial: true });
    expect(await call(tools, 'write', { file_path: 'f.txt', content: 'x' }, s)).toMatchObject({
      isError: true,
      code: 'FS_NOT_OBSERVED',
    });
  });

  it('refuses binary files', async () => {
    put('b.bin', Buffer.from([1, 0, 2, 0]));
    await call(tools, 'read', { file_path: 'b.bin' }, s);
    expect(await call(tools, 'edit', { file_path: 'b.bin', old_string: 'a', new_string: 'b' }, s)).toMatchObject({
      isError: true,
      code: 'FS_BINARY_FILE',
    });
  });

  it('keeps sessions apart: one session reading does not license another', async () => {
    put('f.txt', 'shared\n');
    const other = session('other');
    await call(tools, 'read', { file_path: 'f.txt' }, s);
    expect(
      await call(tools, 'edit', { file_path: 'f.txt', old_string: 'shared', new_string: 'b' }, other),
    ).toMatchObject({ isError: true, code: 'FS_NOT_OBSERVED' });
  });
});

describe('glob', () => {
  beforeEach(() => {
    put('.gitignore', 'node_modules/\n*.log\n!keep.log\nbuild\n');
    put('src/a.ts', '');
    put('src/b.ts', '');
    put('src/gen/.gitignore', '*.ts\n!main.ts\n');
    put('src/gen/x.ts', '');
    put('src/gen/main.ts', '');
    put('node_modules/m/index.ts', '');
    put('debug.log', '');
    put('keep.log', '');
    put('build/out.ts', '');
    put('.git/HEAD', 'ref\n');
  });

  it('matches paths relative to path, respects nested .gitignore with negation, skips .git', async () => {
    const t = fsTools({ root });
    expect((await call(t, 'glob', { pattern: '**/*.ts' }, s)).text.split('\n')).toEqual([
      'src/a.ts',
      'src/b.ts',
      'src/gen/main.ts',
    ]);
    expect((await call(t, 'glob', { pattern: '*.log' }, s)).text).toBe('keep.log');
    expect((await call(t, 'glob', { pattern: '*' }, s)).text.split('\n')).toEqual(['.gitignore', 'keep.log', 'src/']);
    expect((await call(t, 'glob', { pattern: '*.ts', path: 'src' }, s)).text.split('\n')).toEqual([
      'src/a.ts',
      'src/b.ts',
    ]);
    expect((await call(t, 'glob', { pattern: '**/*.ts', path: 'src' }, s)).text.split('\n')).toEqual([
      'src/a.ts',
      'src/b.ts',
      'src/gen/main.ts',
    ]);
    expect((await call(t, 'glob', { pattern: '**', path: 'src/gen' }, s)).text.split('\n')).toEqual([
      'src/gen/.gitignore',
      'src/gen/main.ts',
    ]);
    expect((await call(t, 'glob', { pattern: '**/HEAD' }, s)).text).toMatch(/^No files match/);
    expect((await call(t, 'glob', { pattern: `${root}/src/*.ts` }, s)).text.split('\n')).toEqual([
      'src/a.ts',
      'src/b.ts',
    ]);
  });

  it('searches an ignored folder when asked for it by name', async () => {
    expect((await call(fsTools({ root }), 'glob', { pattern: '**/*.ts', path: 'node_modules' }, s)).text).toBe(
      'node_modules/m/index.ts',
    );
  });

  it('caps its output with a note', async () => {
    const r = await call(tools, 'glob', { pattern: '**/*' }, s);
    const lines = r.text.split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatch(/^\[\d+ more matches not shown; narrow the pattern or the path\.\]$/);
    expect(r.meta).toMatchObject({ truncated: true });
  });

  it('says so when path is missing or a file', async () => {
    expect(await call(tools, 'glob', { pattern: '*', path: 'nowhere' }, s)).toMatchObject({
      isError: true,
      code: 'FS_NOT_FOUND',
    });
    expect(await call(tools, 'glob', { pattern: '*', path: 'keep.log' }, s)).toMatchObject({
      isError: true,
      code: 'FS_NOT_A_FILE',
    });
    expect(await call(tools, 'grep', { pattern: 'x', path: 'nowhere' }, s)).toMatchObject({
      isError: true,
      code: 'FS_NOT_FOUND',
    });
  });

  it('denies patterns and paths that leave the workspace', async () => {
    expect(await call(tools, 'glob', { pattern: '../*' }, s)).toMatchObject({
      isError: true,
      code: 'FS_OUTSIDE_WORKSPACE',
    });
    expect(await call(tools, 'glob', { pattern: '*', path: outside }, s)).toMatchObject({
      isError: true,
      code: 'FS_OUTSIDE_WORKSPACE',
    });
  });
});

describe('grep', () => {
  beforeEach(() => {
    put('.gitignore', 'ignored/\n');
    put('src/a.ts', 'const Foo = 1;\nconst bar = 2;\n// foo again\n');
    put('src/b.py', 'foo = 3\n');
    put('ignored/c.ts', 'foo\n');
    put('bin.dat', Buffer.concat([Buffer.from('foo'), Buffer.from([0, 0, 0])]));
  });

  it('lists files with matches by default, skipping ignored and binary files', async () => {
    expect((await call(fsTools({ root }), 'grep', { pattern: 'foo' }, s)).text.split('\n')).toEqual([
      'src/a.ts',
      'src/b.py',
    ]);
  });

  it('shows content with line numbers and context, case-insensitive, filtered by glob or type', async () => {
    const t = fsTools({ root });
    expect(
      (await call(t, 'grep', { pattern: 'foo', '-i': true, output_mode: 'content', glob: '*.ts' }, s)).text.split('\n'),
    ).toEqual(['src/a.ts:1:const Foo = 1;', 'src/a.ts:3:// foo again']);
    expect(
      (await call(t, 'grep', { pattern: 'bar', output_mode: 'content', '-B': 1, type: 'ts' }, s)).text.split('\n'),
    ).toEqual(['src/a.ts-1-const Foo = 1;', 'src/a.ts:2:const bar = 2;']);
    expect((await call(t, 'grep', { pattern: 'o', output_mode: 'count', path: 'src' }, s)).text.split('\n')).toEqual([
      'src/a.ts:3',
      'src/b.py:1',
    ]);
    expect(
      (
        await call(t, 'grep', { pattern: 'Foo = 1;\\nconst', multiline: true, output_mode: 'content', '-n': false }, s)
      ).text.split('\n'),
    ).toEqual(['src/a.ts:const Foo = 1;', 'src/a.ts:const bar = 2;']);
    expect((await call(t, 'grep', { pattern: 'foo', path: 'src/b.py', output_mode: 'content' }, s)).text).toBe(
      'src/b.py:1:foo = 3',
    );
  });

  it('caps output with a note and explains a bad pattern', async () => {
    const r = await call(tools, 'grep', { pattern: 'o', output_mode: 'content' }, s);
    expect(r.text.split('\n')).toHaveLength(4);
    expect(r.text).toContain('[Output stopped at 3 lines; there are more.');
    const bad = await call(tools, 'grep', { pattern: 'a(b' }, s);
    expect(bad).toMatchObject({ isError: true, code: 'INVALID_ARGS' });
    expect(bad.text).toContain('not a valid regular expression');
  });
});
