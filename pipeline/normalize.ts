// Outer normalization: whatever the stages produced becomes one frozen, lossless ToolResult.
import { deepFreeze, snapshotJson } from './json';
import type { Candidate, ContentBlock, Json, JsonObject, ToolResult, UserMessage } from './types';

export const ErrorCodes = {
  INVALID_ARGS: 'INVALID_ARGS',
  UNKNOWN_TOOL: 'UNKNOWN_TOOL',
  INVALID_TOOL_OUTPUT: 'INVALID_TOOL_OUTPUT',
  ABORTED: 'ABORTED',
  ABORTED_BEFORE_DISPATCH: 'ABORTED_BEFORE_DISPATCH',
  DENIED: 'DENIED',
  BLOCKED: 'BLOCKED',
  TOOL_FAILED: 'TOOL_FAILED',
  PIPELINE_FAILED: 'PIPELINE_FAILED',
  FS_NOT_OBSERVED: 'FS_NOT_OBSERVED',
  FS_NOT_FOUND: 'FS_NOT_FOUND',
  FS_STALE_VERSION: 'FS_STALE_VERSION',
  CODE_RUN_FAILED: 'CODE_RUN_FAILED',
} as const;

/** Default bound on a result's text; Temporal warns at 256 KB per payload and fails at 2 MB. */
export const DEFAULT_MAX_RESULT_CHARS = 200_000;

export function renderValue(value: Json | undefined): ContentBlock[] {
  if (value === undefined || value === null) return [{ type: 'text', text: '' }];
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  return [{ type: 'text', text: JSON.stringify(value, null, 2) }];
}

/** The error result every denial and failure becomes: `Error: <message>`. */
export function errorCandidate(message: string, code?: string, meta?: JsonObject): Candidate {
  const c: Candidate = { content: [{ type: 'text', text: `Error: ${message}` }], isError: true, error: code ? { message, code } : { message } };
  if (meta) c.meta = meta;
  return c;
}

export interface NormalizeOptions {
  maxResultChars?: number;
}

/**
 * Snapshots the model-facing fields lossless and frozen. Anything that cannot be snapshotted
 * becomes an INVALID_TOOL_OUTPUT error instead of reaching history; oversized text is cut to a
 * preview with a note saying so.
 */
export function normalizeResult(candidate: Candidate, contexts: UserMessage[] = [], opts: NormalizeOptions = {}): ToolResult {
  let result: ToolResult;
  try {
    const content = snapshotJson(candidate.content, 'content') as unknown as ContentBlock[];
    assertContentBlocks(content, 'result');
    result = { content: content.map((b) => ({ ...b })), isError: candidate.isError === true };
    if (candidate.error) {
      result.error = snapshotJson({ message: String(candidate.error.message), ...(candidate.error.code ? { code: String(candidate.error.code) } : {}) }) as never;
    }
    if (candidate.meta !== undefined) result.meta = { ...(snapshotJson(candidate.meta, 'meta') as JsonObject) };
    if (candidate.concludesTurn === true) result.concludesTurn = true;
  } catch (err) {
    const message = `the tool's result could not be recorded: ${(err as Error).message}`;
    result = { content: [{ type: 'text', text: `Error: ${message}` }], isError: true, error: { message, code: ErrorCodes.INVALID_TOOL_OUTPUT } };
  }
  truncate(result, opts.maxResultChars ?? DEFAULT_MAX_RESULT_CHARS);
  const ctx = contexts.map((m) => ({ role: 'user' as const, content: String(m.content), ...(m.source ? { source: String(m.source) } : {}) }));
  if (ctx.length) result.additionalContexts = ctx;
  return deepFreeze(result);
}

function truncate(result: ToolResult, max: number): void {
  let budget = max;
  let cut = 0;
  result.content = result.content.map((block) => {
    const size = block.type === 'text' ? block.text.length : block.data.length;
    if (size <= budget) {
      budget -= size;
      return block;
    }
    cut += size - Math.max(budget, 0);
    if (block.type === 'image') {
      budget = 0;
      return { type: 'text', text: `[image of ${block.data.length} base64 characters omitted: over the result size bound]` };
    }
    const kept = block.text.slice(0, Math.max(budget, 0));
    budget = 0;
    return { type: 'text', text: kept };
  });
  if (cut > 0) {
    result.content.push({ type: 'text', text: `\n[truncated: ${cut} characters over the ${max}-character result bound were dropped]` });
    result.meta = { ...(result.meta ?? {}), truncated: true, truncatedChars: cut };
  }
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

