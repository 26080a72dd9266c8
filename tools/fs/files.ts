// Reading and replacing whole files: what is on disk now, binary detection, atomic writes.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { ToolErrorCodes, ToolFailure } from '../errors';
import { versionOf, type DiskState } from './ledger';

/** How much of a file's start is inspected to tell text from binary. */
export const SNIFF_BYTES = 8192;

/** NUL bytes, or many control characters, mean the file is not text a model should read. */
export function looksBinary(head: Buffer): boolean {
  const sample = head.subarray(0, SNIFF_BYTES);
  if (sample.includes(0)) return true;
  let control = 0;
  for (const b of sample) if (b < 7 || (b > 13 && b < 32 && b !== 27)) control++;
  return sample.length > 0 && control / sample.length > 0.1;
}

export interface FileNow {
  disk: DiskState;
  /** The bytes, when present. */
  bytes?: Buffer;
  mode?: number;
}

/** The file as it is now, whole; refuses directories and files above maxBytes. */
export async function loadFile(abs: string, rel: string, maxBytes: number): Promise<FileNow> {
  let stat;
  try {
    stat = await fs.stat(abs);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { disk: { state: 'absent' } };
    throw err;
  }
  if (!stat.isFile())
    throw new ToolFailure(
      `${rel} is a directory, not a file. Use glob to list what is in it.`,
      ToolErrorCodes.FS_NOT_A_FILE,
    );
  if (stat.size > maxBytes) {
    throw new ToolFailure(
      `${rel} is ${stat.size} bytes, more than the ${maxBytes} bytes this tool rewrites whole. Change it with bash (e.g. sed) instead.`,
      ToolErrorCodes.FS_TOO_LARGE,
    );
  }
  const bytes = await fs.readFile(abs);
  return { disk: { state: 'present', version: versionOf(bytes) }, bytes, mode: stat.mode & 0o7777 };
}

/**
 * Replaces the file in one step: a temporary file in the same directory, then a rename, so no
 * reader (and no crash) ever sees half a file. Parent directories are created as needed.
 */
export async function writeAtomically(abs: string, content: string, mode?: number): Promise<void> {
  const dir = path.dirname(abs);
  await fs.mkdir(dir, { recursive: true });
  const tmp = path.join(dir, `.${path.basename(abs)}.${randomBytes(6).toString('hex')}.sluice-tmp`);
  try {
    const handle = await fs.open(tmp, 'wx', mode ?? 0o666);
    try {
      await handle.writeFile(content, 'utf8');
      if (mode !== undefined) await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, abs);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}
