// A folder removed after the write pinned it (the swap in fs-races.test.ts does this now and then:
// the write makes the missing folder, and a rename puts another folder over it). The write must
// answer FS_RACE, write nothing and leave no temporary file, not throw ENOENT out of the tool.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { fsTools } from '../../tools';
import { call, session } from '../tool-context';

// vi.mock is hoisted above the imports, so the tools load the wrapped module.
// The fault: just before the temporary file is opened in the pinned folder, that folder is
// replaced by another one renamed over it, as the swapping process in the race test does.
const fault = vi.hoisted(() => ({ armed: false, folder: '', replacement: '' }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>();
  const open: typeof real.open = async (file, ...rest) => {
    if (fault.armed && String(file).endsWith('.sluice-tmp')) {
      fault.armed = false;
      await real.rename(fault.replacement, fault.folder);
    }
    return real.open(file, ...rest);
  };
  return { ...real, default: { ...real, open }, open };
});

let root: string;
beforeEach(() => {
  root = path.join(fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-removed-'))), 'ws');
  fs.mkdirSync(root);
});
afterEach(() => {
  fault.armed = false;
});

it('a write whose folder was replaced after it was pinned answers FS_RACE and writes nothing', async () => {
  fs.mkdirSync(path.join(root, 'd'));
  fs.mkdirSync(path.join(root, 'other'));
  fs.writeFileSync(path.join(root, 'other', 'kept.txt'), 'kept\n');
  Object.assign(fault, { armed: true, folder: path.join(root, 'd'), replacement: path.join(root, 'other') });

  const w = await call(fsTools({ root }), 'write', { file_path: 'd/new.txt', content: 'x\n' }, session());

  expect(fault.armed).toBe(false);
  expect(w).toMatchObject({ isError: true, code: 'FS_RACE' });
  expect(w.text).toContain('d/new.txt changed while it was being opened');
  expect(fs.readdirSync(path.join(root, 'd'))).toEqual(['kept.txt']);
});

it('a write into a folder left alone lands', async () => {
  fs.mkdirSync(path.join(root, 'd'));
  const w = await call(fsTools({ root }), 'write', { file_path: 'd/new.txt', content: 'x\n' }, session());
  expect(w).toMatchObject({ isError: false });
  expect(fs.readFileSync(path.join(root, 'd', 'new.txt'), 'utf8')).toBe('x\n');
});
