// Outer normalization: whatever the stages produced becomes one frozen, lossless ToolResult.
import { jsonBytes, MIN_SHARE_BYTES, resultBytes, sliceToJsonBytes } from './budget';
import { ErrorCodes } from './errors';
import { canonicalJson, deepFreeze, snapshotJson } from './json';
import type { Candidate, ContentBlock, Json, JsonObject, ToolResult, UserMessage } from './types';

/**
 * Default bound on a result's text. Above it the full result is stored aside and the model gets a
 * preview with a note (stores/claim-check.ts); Temporal warns at 256 KB per payload, fails at 2 MB.
 */
export const DEFAULT_MAX_RESULT_CHARS = 64 * 1024;

export function renderValue(value: Json | undefined): ContentBlock[] {
  if (value === undefined || value === null) return [{ type: 'text', text: '' }];
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  return [{ type: 'text', text: JSON.stringify(value, null, 2) }];
}

/**
 * The body's structured value, when the result still shows exactly what the body gave: no
 * post-execute handler, finalizeContent or size bound changed the content. Undefined otherwise,
 * for a body result that was stored aside (its value stayed in the store), and for a string or
 * null value (the content is that text already).
 */
export function untouchedValue(body: Candidate, result: ToolResult): Json | undefined {
  if (body.value === undefined || body.value === null || typeof body.value === 'string') return undefined;
  if (body.stashed || body.isError !== result.isError) return undefined;
  const same = canonicalJson(body.content as unknown as Json) === canonicalJson(result.content as unknown as Json);
  return same ? body.value : undefined;
}

/** The error result every denial and failure becomes: `Error: <message>`. */
export function errorCandidate(message: string, code?: string, meta?: JsonObject): Candidate {
  const c: Candidate = {
    content: [{ type: 'text', text: `Error: ${message}` }],
    isError: true,
    error: code ? { message, code } : { message },
  };
  if (meta) c.meta = meta;
  return c;
}

interface NormalizeOptions {
  maxResultChars?: number;
  /** The batch's share for this result, in JSON bytes (pipeline/budget.ts). */
  maxResultBytes?: number;
}

/**
 * Snapshots the model-facing fields lossless and frozen. Anything that cannot be snapshotted
 * becomes an INVALID_TOOL_OUTPUT error instead of reaching history; oversized text is cut to a
 * preview with a note saying so.
 */
export function normalizeResult(
  candidate: Candidate,
  contexts: UserMessage[] = [],
  opts: NormalizeOptions = {},
): ToolResult {
  let result: ToolResult;
  try {
    const content = snapshotJson(candidate.content, 'content') as unknown as ContentBlock[];
    assertContentBlocks(content, 'result');
    result = { content: content.map((b) => ({ ...b })), isError: candidate.isError === true };
    if (candidate.error) {
      result.error = snapshotJson({
        message: String(candidate.error.message),
        ...(candidate.error.code ? { code: String(candidate.error.code) } : {}),
      }) as never;
    }
    if (candidate.meta !== undefined) result.meta = { ...(snapshotJson(candidate.meta, 'meta') as JsonObject) };
    if (candidate.concludesTurn === true) result.concludesTurn = true;
  } catch (err) {
    const message = `the tool's result could not be recorded: ${(err as Error).message}`;
    result = {
      content: [{ type: 'text', text: `Error: ${message}` }],
      isError: true,
      error: { message, code: ErrorCodes.INVALID_TOOL_OUTPUT },
    };
  }
  const ctx = contexts.map((m) => ({
    role: 'user' as const,
    content: String(m.content),
    ...(m.source ? { source: String(m.source) } : {}),
  }));
  if (ctx.length) result.additionalContexts = ctx;
  return deepFreeze(
    fitResult(result, {
      maxChars: opts.maxResultChars ?? DEFAULT_MAX_RESULT_CHARS,
      maxBytes: opts.maxResultBytes ?? Infinity,
    }),
  );
}

interface FitOptions {
  maxChars: number;
  maxBytes: number;
  /** Extra meta for a result that did not fit, e.g. where its full copy is stored. */
  meta?: JsonObject;
  /** The note the model reads after the preview; says what was dropped and where it is. */
  note?: (shownChars: number, totalChars: number) => string;
}

const ERROR_MESSAGE_MAX_CHARS = 2000;

/** Whether a result is within both bounds as it stands. */
export function resultFits(result: ToolResult, maxChars: number, maxBytes: number): boolean {
  return contentChars(result.content) <= maxChars && resultBytes(result) <= maxBytes;
}

/**
 * Shrinks a result to its bounds: the text becomes a preview (images are left out), then a note
 * says what was dropped; an over-long error message, contexts or meta are cut too, so the whole
 * result, as JSON, fits in maxBytes (or in MIN_SHARE_BYTES when the share is smaller).
 */
export function fitResult(result: ToolResult, opts: FitOptions): ToolResult {
  if (resultFits(result, opts.maxChars, opts.maxBytes)) return result;
  const maxBytes = Math.max(opts.maxBytes, MIN_SHARE_BYTES);
  const total = contentChars(result.content);
  const text = result.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
  const images = result.content.filter((b) => b.type === 'image').length;
  const note = (shown: number) =>
    (
      opts.note ??
      ((s: number, t: number) =>
        `[truncated: showing ${s} of ${t} characters; the rest is over the result size bound and was dropped]`)
    )(shown, total) + (images ? ` [${images} image(s) left out]` : '');
  const out: ToolResult = { content: [], isError: result.isError };
  if (result.error)
    out.error = {
      ...result.error,
      message: cut(result.error.message, Math.min(ERROR_MESSAGE_MAX_CHARS, Math.floor(maxBytes / 4))),
    };
  out.meta = { ...(result.meta ?? {}), ...(opts.meta ?? {}), truncated: true, originalChars: total };
  if (jsonBytes(out.meta) > maxBytes / 4) {
    // The tool's own meta gives way; where the full result is stored never does.
    const stored = opts.meta?.storedResult ?? result.meta?.storedResult;
    out.meta = {
      ...(stored !== undefined ? { storedResult: stored } : {}),
      truncated: true,
      originalChars: total,
      metaDropped: true,
    };
  }
  if (result.concludesTurn) out.concludesTurn = true;
  if (result.additionalContexts?.length) {
    const each = Math.max(64, Math.floor(maxBytes / 4 / result.additionalContexts.length));
    out.additionalContexts = result.additionalContexts.map((m) => {
      const kept = sliceToJsonBytes(m.content, each);
      return { ...m, content: kept.length < m.content.length ? `${kept} [context truncated]` : m.content };
    });
  }
  // What is left for the preview once the note and everything else are in.
  out.content = [{ type: 'text', text: `\n${note(total)}` }];
  const room = maxBytes - resultBytes(out) - 32;
  const preview = sliceToJsonBytes(text.slice(0, opts.maxChars), Math.max(0, room)).slice(
    0,
    Math.max(0, opts.maxChars),
  );
  out.content = preview
    ? [
        { type: 'text', text: preview },
        { type: 'text', text: `\n${note(preview.length)}` },
      ]
    : [{ type: 'text', text: note(0) }];
  return out;
}

function contentChars(content: ContentBlock[]): number {
  return content.reduce((n, b) => n + (b.type === 'text' ? b.text.length : b.data.length), 0);
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)} [${text.length - max} more characters cut]` : text;
}

export function assertContentBlocks(content: unknown, who: string): asserts content is ContentBlock[] {
  if (!Array.isArray(content)) throw new Error(`${who}: content must be an array of content blocks`);
  content.forEach((block: unknown, i) => {
    const b = block as { type?: unknown; text?: unknown; data?: unknown; mimeType?: unknown };
    const ok =
      (b?.type === 'text' && typeof b.text === 'string') ||
      (b?.type === 'image' && typeof b.data === 'string' && typeof b.mimeType === 'string');
    if (!ok) throw new Error(`${who}: content[${i}] is not {type:'text',text} or {type:'image',data,mimeType}`);
  });
}
