// Claim check: a result too big for its share of the batch's Temporal budget (pipeline/budget.ts)
// is stored aside, keyed by the call's idempotency key, and only a preview with a note and a
// reference crosses history. The store is pluggable; the default keeps files in the state folder.
import { createHash } from 'node:crypto';
import * as fsSync from 'node:fs';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { jsonBytes } from '../pipeline/budget';
import { fitResult, renderValue, resultFits } from '../pipeline/normalize';
import type { Candidate, ContentBlock, Json, JsonObject, ToolResult } from '../pipeline/types';
import { inFolder } from './jsonl';

export interface ResultStore {
  /**
   * Stores a value under a key and returns a reference to it. A retried activity writes the same
   * key again: put must be idempotent (the last write wins, and both writes hold the same value).
   */
  put(key: string, value: Json): Promise<string>;
  /** The value behind a reference, or undefined when this store does not have it. */
  get(ref: string): Promise<Json | undefined>;
  /**
   * Deletes what was stored before `before` (retention, `sluice results prune`); returns what went.
   * Optional: a store without it keeps everything.
   */
  prune?(before: Date): Promise<{ results: number; bytes: number }>;
}

const FILE_REF = 'sluice-result:';

/** Values up to this many characters of JSON are written with the synchronous calls. */
const SYNC_WRITE_CHARS = 64 * 1024;

/** Files under one folder, one per key: the default store, `<state folder>/results/`. */
export class FileResultStore implements ResultStore {
  constructor(readonly dir: string) {}

  async put(key: string, value: Json): Promise<string> {
    const name = fileNameFor(key);
    // Write then rename: a worker killed mid-write leaves no half file under the real name.
    const tmp = path.join(this.dir, `.${name}.${process.pid}.${Date.now()}.tmp`);
    const file = path.join(this.dir, name);
    const text = JSON.stringify({ key, value });
    // A session writes a transcript node here every model step, mostly a few KiB: those are
    // written with the synchronous calls (stores/jsonl.ts says why). A large value keeps the event
    // loop free while it is written.
    if (text.length <= SYNC_WRITE_CHARS) {
      inFolder(tmp, () => fsSync.writeFileSync(tmp, text));
      fsSync.renameSync(tmp, file);
    } else {
      await fs.mkdir(this.dir, { recursive: true });
      await fs.writeFile(tmp, text);
      await fs.rename(tmp, file);
    }
    return `${FILE_REF}${name}`;
  }

  async get(ref: string): Promise<Json | undefined> {
    if (!ref.startsWith(FILE_REF)) return undefined;
    const name = ref.slice(FILE_REF.length);
    if (name !== path.basename(name) || name.startsWith('.')) return undefined;
    try {
      return (JSON.parse(await fs.readFile(path.join(this.dir, name), 'utf8')) as { value: Json }).value;
    } catch {
      return undefined;
    }
  }

  async prune(before: Date): Promise<{ results: number; bytes: number }> {
    let results = 0;
    let bytes = 0;
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch {
      return { results, bytes }; // no folder yet: nothing stored
    }
    for (const name of names) {
      const file = path.join(this.dir, name);
      try {
        const st = await fs.stat(file);
        // Leftover temporary files of a killed worker go too, once they are as old.
        if (!st.isFile() || st.mtimeMs >= before.getTime()) continue;
        await fs.unlink(file);
        results += name.startsWith('.') ? 0 : 1;
        bytes += st.size;
      } catch {
        // gone meanwhile (another pruner): nothing to do
      }
    }
    return { results, bytes };
  }

  /** The file behind a reference, for a person who wants to read a stored result. */
  pathOf(ref: string): string | undefined {
    return ref.startsWith(FILE_REF) ? path.join(this.dir, ref.slice(FILE_REF.length)) : undefined;
  }
}

/** A readable, file-system-safe name for a key; long keys keep a readable prefix and a hash. */
export function fileNameFor(key: string): string {
  const readable = key.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^\.+/, '_');
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 16);
  return `${readable.slice(0, 120)}-${hash}.json`;
}

interface Bounds {
  maxChars: number;
  maxBytes: number;
}

/**
 * The model-facing claim check: a result over its bounds is stored whole under the call's
 * idempotency key and replaced by a preview, a note naming the reference, and `meta.storedResult`.
 * When the store fails, the preview still goes out, and the note says the rest was dropped.
 */
export async function claimCheck(
  store: ResultStore | undefined,
  key: string,
  result: ToolResult,
  bounds: Bounds,
  already?: { ref: string; content: Candidate['content']; isError: boolean },
): Promise<ToolResult> {
  if (resultFits(result, bounds.maxChars, bounds.maxBytes)) return result;
  if (!store) return fitResult(result, bounds);
  const full: JsonObject = { content: result.content as unknown as Json, isError: result.isError };
  if (result.error) full.error = result.error as unknown as Json;
  if (result.meta) full.meta = result.meta;
  let ref: string;
  try {
    // The body's result, stored already and unchanged since: written once, referred to twice.
    ref =
      already && already.isError === result.isError && sameContent(already.content, result.content)
        ? already.ref
        : await store.put(key, full);
  } catch (err) {
    return fitResult(result, {
      ...bounds,
      note: (shown, total) =>
        `[truncated: showing ${shown} of ${total} characters; the full result could not be stored aside (${(err as Error).message}) and was dropped]`,
    });
  }
  return fitResult(result, {
    ...bounds,
    meta: { storedResult: { ref, key: ref === already?.ref ? `${key}#body` : key, bytes: jsonBytes(full) } },
    note: (shown, total) =>
      `[truncated: showing ${shown} of ${total} characters. The full result is stored aside as ${ref}; it is too large to show here, so work from this part or ask for a narrower result.]`,
  });
}

/**
 * The body's side of the claim check: a candidate over the share is stored under
 * `<idempotency key>#body` and crosses history as a preview carrying `stashed`; settle reads it
 * back (unstashCandidate) so post-execute sees the whole result.
 */
export async function stashCandidate(
  store: ResultStore | undefined,
  key: string,
  candidate: Candidate,
  maxBytes: number,
): Promise<Candidate> {
  if (!store || jsonBytes(candidate as unknown as Json) <= maxBytes) return candidate;
  let ref: string;
  try {
    ref = await store.put(`${key}#body`, storedForm(candidate));
  } catch {
    return candidate; // settle's claim check still bounds it; history takes the larger body result
  }
  const preview = fitResult(
    { content: candidate.content, isError: candidate.isError, ...(candidate.error ? { error: candidate.error } : {}) },
    { maxChars: Infinity, maxBytes: Math.floor(maxBytes / 2) },
  );
  return {
    content: preview.content,
    isError: candidate.isError,
    ...(preview.error ? { error: preview.error } : {}),
    ...(candidate.concludesTurn ? { concludesTurn: true as const } : {}),
    stashed: ref,
  };
}

const readBack = new WeakSet<Candidate>();

/** Whether unstashCandidate read this candidate back whole from the store (not a preview left over). */
export function readFromStore(candidate: Candidate): boolean {
  return readBack.has(candidate);
}

export async function unstashCandidate(store: ResultStore | undefined, candidate: Candidate): Promise<Candidate> {
  if (!candidate.stashed) return candidate;
  const { stashed, ...preview } = candidate;
  const full = store ? await store.get(stashed) : undefined;
  if (full && typeof full === 'object' && !Array.isArray(full)) {
    const loaded = fromStoredForm(full as JsonObject) as unknown as Candidate;
    readBack.add(loaded);
    return loaded;
  }
  return {
    ...preview,
    content: [
      ...preview.content,
      {
        type: 'text',
        text: `\n[the full result (${stashed}) is not readable from this worker's result store; only this preview is left]`,
      },
    ],
  };
}

/**
 * A candidate as the store keeps it: a value whose rendering is the content is stored without
 * that rendering (a 20 MB text once, not twice); `fromStoredForm` renders it back.
 */
function storedForm(candidate: Candidate): Json {
  const { stashed: _stashed, ...rest } = candidate;
  if (rest.value !== undefined && sameContent(renderValue(rest.value), rest.content)) {
    const { content: _content, ...withoutContent } = rest;
    return { ...withoutContent, contentIsValue: true } as unknown as Json;
  }
  return rest as unknown as Json;
}

function fromStoredForm(stored: JsonObject): JsonObject {
  if (stored.contentIsValue !== true) return stored;
  const { contentIsValue: _flag, ...rest } = stored;
  return { ...rest, content: renderValue(rest.value) as unknown as Json };
}

function sameContent(a: readonly ContentBlock[], b: readonly ContentBlock[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((x, i) => {
    const y = b[i];
    if (x.type === 'text') return y.type === 'text' && x.text === y.text;
    return y.type === 'image' && x.data === y.data && x.mimeType === y.mimeType;
  });
}

/** A stored result as a reader gets it: what the model would have read in full. */
export interface StoredResult {
  content: ContentBlock[];
  isError: boolean;
  error?: { message: string; code?: string };
  /** The tool's structured value, when the stored result is the body's own and it gave one. */
  value?: Json;
  meta?: JsonObject;
}

/** The stored record behind a reference as a StoredResult (both the settle's and the body's form). */
export function storedResultOf(stored: Json): StoredResult {
  if (!stored || typeof stored !== 'object' || Array.isArray(stored))
    throw new Error('the stored record is not a result object; it was written by something other than Sluice');
  const r = fromStoredForm(stored) as unknown as StoredResult & { concludesTurn?: true };
  if (!Array.isArray(r.content) || typeof r.isError !== 'boolean')
    throw new Error('the stored record has no content/isError; it was written by something other than Sluice');
  const out: StoredResult = { content: r.content, isError: r.isError };
  if (r.error) out.error = r.error;
  if (r.value !== undefined) out.value = r.value;
  if (r.meta) out.meta = r.meta;
  return out;
}
