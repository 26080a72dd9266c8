// read: a file's lines, numbered, a page at a time. The whole file is hashed on the way through,
// so even a paged read records the exact version it saw (marked partial).
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { z } from 'zod';
import { defineTool, toolOutput, type ToolDefinition } from '../../define/config';
import { answering, ToolErrorCodes, ToolFailure } from '../errors';
import { looksBinary } from './files';
import { recordObservation } from './ledger';
import { openForReading } from './pinned';
import { resolveInWorkspace, type Workspace } from './workspace';

export interface ReadLimits {
  /** Lines returned when the call gives no limit. */
  defaultLines: number;
  /** Longer lines are cut, with a marker. */
  maxLineChars: number;
  /** The page stops early (and says so) once its text reaches this size. */
  maxChars: number;
}

export const READ_DEFAULTS: ReadLimits = { defaultLines: 2000, maxLineChars: 2000, maxChars: 100_000 };

const input = z.strictObject({
  file_path: z.string().min(1).describe('The file to read: relative to the workspace root, or absolute inside it'),
  offset: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('The line number to start at (1 = the first line). Only for files too large to read at once'),
  limit: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('How many lines to read. Only for files too large to read at once'),
});

export function readTool(
  workspace: () => Promise<Workspace>,
  limits: ReadLimits,
): ToolDefinition<z.infer<typeof input>> {
  return defineTool({
    name: 'read',
    aliases: ['Read'],
    description:
      'Reads a text file from the workspace. Lines come back numbered (`<number>\\t<text>`); the numbers are not part of the file. ' +
      `Up to ${limits.defaultLines} lines are returned at once; for larger files, page with offset and limit as the note at the end says. ` +
      'You must read a file before you edit it, and read it whole before you overwrite it with write.',
    input,
    isConcurrencySafe: () => true,
    presentCall: (a) => ({
      title: `Read ${a.file_path}`,
      ...(a.offset || a.limit ? { summary: `lines from ${a.offset || 1}${a.limit ? `, ${a.limit} lines` : ''}` } : {}),
    }),
    execute: (args, ctx) =>
      answering(async () => {
        const ws = await workspace();
        const target = await resolveInWorkspace(ws, args.file_path);
        let handle;
        try {
          handle = await openForReading(ws, target.rel);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
          recordObservation(ctx, target.rel, { state: 'absent', partial: false });
          throw new ToolFailure(
            `${target.rel} does not exist. Check the path with glob; to create the file, use write.`,
            ToolErrorCodes.FS_NOT_FOUND,
          );
        }
        const first = Math.max(1, args.offset ?? 1);
        let page: Page;
        try {
          if (!(await handle.stat()).isFile())
            throw new ToolFailure(
              `${target.rel} is a directory, not a file. Use glob to list what is in it.`,
              ToolErrorCodes.FS_NOT_A_FILE,
            );
          page = await scan(handle, first, args.limit ?? limits.defaultLines, limits);
        } finally {
          await handle.close();
        }
        if (page.binary) {
          // All there is to see of a binary file was seen: its size and that it is binary.
          recordObservation(ctx, target.rel, { state: 'present', version: page.version, partial: false });
          return toolOutput({
            content: [
              {
                type: 'text',
                text: `${target.rel} is a binary file of ${page.bytes} bytes; its content is not shown. Use bash (e.g. file, xxd | head) to inspect it.`,
              },
            ],
            meta: { path: target.rel, version: page.version, binary: true, bytes: page.bytes },
          });
        }
        const shownLast = first + page.lines.length - 1;
        const partial = first > 1 || shownLast < page.totalLines;
        recordObservation(ctx, target.rel, { state: 'present', version: page.version, partial });

        let text = page.lines.join('\n');
        if (page.totalLines === 0) text = `(${target.rel} is empty)`;
        else if (page.lines.length === 0)
          text = `(${target.rel} has only ${page.totalLines} lines; offset ${first} is past its end)`;
        else if (partial) {
          const why = page.cutForSize ? ` (this page stopped at ${limits.maxChars} characters)` : '';
          const next = shownLast < page.totalLines ? ` To read more, call read with offset=${shownLast + 1}.` : '';
          text += `\n\n[Showing lines ${first}-${shownLast} of ${page.totalLines}${why}.${next}]`;
        }
        if (page.cutLines > 0)
          text += `\n[${page.cutLines} long line(s) were cut at ${limits.maxLineChars} characters.]`;
        return toolOutput({
          content: [{ type: 'text', text }],
          meta: { path: target.rel, version: page.version, totalLines: page.totalLines, partial },
        });
      }),
  });
}

interface Page {
  version: string;
  bytes: number;
  binary: boolean;
  totalLines: number;
  lines: string[];
  cutForSize: boolean;
  cutLines: number;
}

/** Streams the file once: hashes every byte, counts every line, keeps only the requested page. */
async function scan(handle: FileHandle, first: number, limit: number, limits: ReadLimits): Promise<Page> {
  const hash = createHash('sha256');
  const decoder = new StringDecoder('utf8');
  const page: Page = { version: '', bytes: 0, binary: false, totalLines: 0, lines: [], cutForSize: false, cutLines: 0 };
  let chars = 0;
  let carry = '';
  // A single line longer than any page may be enormous; keep only what could be shown of it.
  let carryCut = false;
  const keepCarry = limits.maxLineChars + 1;

  const take = (raw: string, cut: boolean) => {
    const n = ++page.totalLines;
    if (n < first || page.lines.length >= limit || page.cutForSize) return;
    let line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (cut || line.length > limits.maxLineChars) {
      line = `${line.slice(0, limits.maxLineChars)}… [line cut]`;
      page.cutLines++;
    }
    const rendered = `${String(n).padStart(6)}\t${line}`;
    if (page.lines.length > 0 && chars + rendered.length + 1 > limits.maxChars) {
      page.cutForSize = true;
      return;
    }
    chars += rendered.length + 1;
    page.lines.push(rendered);
  };

  let sniffed = false;
  for await (const chunk of handle.createReadStream({ autoClose: false }) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    page.bytes += chunk.length;
    if (!sniffed) {
      sniffed = true;
      page.binary = looksBinary(chunk);
    }
    if (page.binary) continue;
    const parts = decoder.write(chunk).split('\n');
    for (let i = 0; i < parts.length - 1; i++) {
      take(carry + parts[i], carryCut);
      carry = '';
      carryCut = false;
    }
    carry += parts[parts.length - 1];
    if (carry.length > keepCarry) {
      carry = carry.slice(0, keepCarry);
      carryCut = true;
    }
  }
  if (!page.binary) {
    carry += decoder.end();
    if (carry.length > 0) take(carry, carryCut);
  }
  page.version = `sha256:${hash.digest('hex')}`;
  return page;
}
