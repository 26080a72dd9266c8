// Reading whole files: what is on disk now, and binary detection.
import { ToolErrorCodes, ToolFailure } from '../errors';
import { versionOf, type DiskState } from './ledger';
import { openForReading } from './pinned';
import type { Workspace } from './workspace';

/** How much of a file's start is inspected to tell text from binary. */
const SNIFF_BYTES = 8192;

/** NUL bytes, or many control characters, mean the file is not text a model should read. */
export function looksBinary(head: Buffer): boolean {
  const sample = head.subarray(0, SNIFF_BYTES);
  if (sample.includes(0)) return true;
  let control = 0;
  for (const b of sample) if (b < 7 || (b > 13 && b < 32 && b !== 27)) control++;
  return sample.length > 0 && control / sample.length > 0.1;
}

interface FileNow {
  disk: DiskState;
  /** The bytes, when present. */
  bytes?: Buffer;
  mode?: number;
}

/** The file as it is now, whole; refuses directories, files above maxBytes, and hard-linked files. */
export async function loadFile(ws: Workspace, rel: string, maxBytes: number): Promise<FileNow> {
  let handle;
  try {
    handle = await openForReading(ws, rel);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { disk: { state: 'absent' } };
    throw err;
  }
  try {
    const stat = await handle.stat();
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
    const bytes = await handle.readFile();
    return { disk: { state: 'present', version: versionOf(bytes) }, bytes, mode: stat.mode & 0o7777 };
  } finally {
    await handle.close();
  }
}
