// Opening workspace files without a check-then-use race. resolveInWorkspace checks a path's real
// location, but a symbolic link swapped into the path after that check would redirect an open by
// name. So every open walks from the root one component at a time, each relative to the handle
// of the folder above it (through /proc/self/fd, Linux's openat) and never following a link: a
// link that appears meanwhile makes the open fail (FS_RACE) instead of leading outside.
import { randomBytes } from 'node:crypto';
import { constants, existsSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { ToolErrorCodes, ToolFailure } from '../errors';
import type { Workspace } from './workspace';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_WRONLY, O_CREAT, O_EXCL } = constants;

/** Without /proc (not Linux), opens go by name after the check: the race is then not closed. */
const PROC_FD = existsSync('/proc/self/fd');

interface PinnedDir {
  /** A name for the folder that no later change of the path above it can redirect. */
  readonly path: string;
  at(name: string): string;
  close(): Promise<void>;
}

function race(rel: string): ToolFailure {
  return new ToolFailure(
    `${rel} changed while it was being opened (a symbolic link or a file appeared where a folder or file was checked); nothing was read or written. Check the path and try again.`,
    ToolErrorCodes.FS_RACE,
  );
}

/** The folder at `rel` (workspace-relative, `/`-separated, `.` for the root), created when `create`. */
async function pinDir(ws: Workspace, rel: string, create = false): Promise<PinnedDir> {
  const parts = rel === '.' || rel === '' ? [] : rel.split('/');
  if (!PROC_FD) {
    const abs = path.join(ws.realRoot, ...parts);
    if (create) await fs.mkdir(abs, { recursive: true });
    return { path: abs, at: (n) => path.join(abs, n), close: async () => {} };
  }
  let handle = await fs.open(ws.realRoot, O_RDONLY | O_DIRECTORY);
  try {
    for (const part of parts) {
      const next = `/proc/self/fd/${handle.fd}/${part}`;
      let opened;
      try {
        opened = await fs.open(next, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' && create) {
          await fs.mkdir(next).catch((e: NodeJS.ErrnoException) => {
            // ENOENT: the folder above, held open, was itself removed meanwhile.
            if (e.code !== 'EEXIST') throw e.code === 'ENOENT' ? race(rel) : e;
          });
          // The folder was made (or found) a moment ago: gone again (ENOENT) or no longer a
          // folder means something else is changing the path, so the write stops here.
          opened = await fs.open(next, O_RDONLY | O_DIRECTORY | O_NOFOLLOW).catch((e: NodeJS.ErrnoException) => {
            throw e.code === 'ENOTDIR' || e.code === 'ELOOP' || e.code === 'ENOENT' ? race(rel) : e;
          });
        } else if (code === 'ENOTDIR' || code === 'ELOOP') throw race(rel);
        else throw err;
      }
      await handle.close();
      handle = opened;
    }
  } catch (err) {
    await handle.close().catch(() => {});
    throw err;
  }
  const held = handle;
  const dir = `/proc/self/fd/${held.fd}`;
  return { path: dir, at: (n) => `${dir}/${n}`, close: () => held.close() };
}

/**
 * Opens a file for reading by its workspace-relative real path, refusing a link swapped in at any
 * depth and (unless allowed) a file with more than one hard link: its other name may be outside.
 * Throws ENOENT as is, for callers that treat a missing file as an answer.
 */
export async function openForReading(ws: Workspace, rel: string): Promise<fs.FileHandle> {
  const dir = await pinDir(ws, path.posix.dirname(rel));
  let handle: fs.FileHandle;
  try {
    handle = await fs
      .open(dir.at(path.posix.basename(rel)), O_RDONLY | O_NOFOLLOW)
      .catch((e: NodeJS.ErrnoException) => {
        throw e.code === 'ELOOP' ? race(rel) : e;
      });
  } finally {
    await dir.close();
  }
  if (!ws.allowHardLinks) {
    const stat = await handle.stat();
    if (stat.isFile() && stat.nlink > 1) {
      await handle.close();
      throw hardLinked(rel, stat.nlink);
    }
  }
  return handle;
}

function hardLinked(rel: string, links: number): ToolFailure {
  return new ToolFailure(
    `${rel} has ${links} hard links; another name for the same file may lie outside the workspace, so the file tools do not read or change it. Whoever runs Sluice can allow it with fsTools({ hardLinks: 'allow' }).`,
    ToolErrorCodes.FS_HARD_LINK,
  );
}

/**
 * Replaces the file in one step: a temporary file in the same (pinned) folder, then a rename, so
 * no reader and no crash ever sees half a file, and no link swapped in redirects it. Missing
 * parent folders are created.
 */
export async function writeAtomically(ws: Workspace, rel: string, content: string, mode?: number): Promise<void> {
  const dir = await pinDir(ws, path.posix.dirname(rel), true);
  const name = path.posix.basename(rel);
  const tmp = `.${name}.${randomBytes(6).toString('hex')}.sluice-tmp`;
  try {
    const handle = await fs.open(dir.at(tmp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode ?? 0o666);
    try {
      await handle.writeFile(content, 'utf8');
      if (mode !== undefined) await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(dir.at(tmp), dir.at(name));
  } catch (err) {
    await fs.rm(dir.at(tmp), { force: true });
    // The folder is held open, so ENOENT here means it was removed after it was pinned (a folder
    // renamed over it, say): something else is changing the path, and nothing was written.
    throw (err as NodeJS.ErrnoException).code === 'ENOENT' ? race(rel) : err;
  } finally {
    await dir.close();
  }
}
