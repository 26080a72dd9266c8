// The JSON-lines files of the file stores (the session log and its side files, the live channel):
// how they are parsed, read and appended, and how a write makes its folder. Small reads and
// appends use Node's synchronous file calls: on every batch a promise file call costs several
// times the CPU of the call itself (its trip through the thread pool; docs/performance.md, "the
// session log's file calls are synchronous"), and each blocks the event loop for one small read or
// write only. A whole log is read with a promise.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The whole JSON lines of a text, in order: blank lines and torn ones (a crash mid-append) carry nothing. */
export function parseJsonl(text: string): unknown[] {
  const out: unknown[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // torn: it carries nothing
    }
  }
  return out;
}

/**
 * Every whole JSON line of a file, in order (`parseJsonl`); a file that cannot be read holds none.
 * The whole session log is read this way; its small side files with `readJsonlSync`.
 */
export async function readJsonl(file: string): Promise<unknown[]> {
  return parseJsonl(await fs.promises.readFile(file, 'utf8').catch(() => ''));
}

/** `readJsonl` with the synchronous call, for the small files read on every batch. */
export function readJsonlSync(file: string): unknown[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return parseJsonl(text);
}

/**
 * Runs a synchronous write into `file`'s folder; when it finds the folder missing, makes it and
 * runs the write again. Made before every write, the folder would cost a call on every write.
 */
export function inFolder<T>(file: string, write: () => T): T {
  try {
    return write();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    return write();
  }
}

/**
 * Appends whole lines to a file. A file left ending in a torn line (a crash mid-append, by any
 * worker) gets a fresh line first: appended to the torn one, the new line would be unreadable too,
 * and a claim or a kept-aside event lost with it.
 */
export function appendLines(file: string, text: string): void {
  const fd = inFolder(file, () => fs.openSync(file, 'a+'));
  try {
    const { size } = fs.fstatSync(fd);
    const last = Buffer.alloc(1);
    if (size > 0) fs.readSync(fd, last, 0, 1, size - 1);
    // O_APPEND: each write lands whole at the end, whoever else appends.
    fs.appendFileSync(fd, size > 0 && last[0] !== 0x0a ? `\n${text}` : text);
  } finally {
    fs.closeSync(fd);
  }
}
