// What the three converters share: the tool message they take, how an assistant reply's text and
// calls are gathered, and how a result part read back becomes a content block.
import type { ContentBlock, ModelMessage } from '../../pipeline/types';
import { type CallIntake, intakeCalls, type ToolMessage } from '../../pipeline/session';

/** A tool result as the converters take it: a batch's tool message or a transcript's. */
export type ToolResultMessage = ToolMessage | Extract<ModelMessage, { role: 'tool' }>;

/** A call as a provider's reply spells it, before intakeCalls checks its id. */
export interface RawCall {
  id?: string;
  name: string;
  arguments: string;
}

/**
 * An assistant reply read as its pieces in order: the text pieces joined, the calls checked by
 * intakeCalls (missing or repeated ids become error results).
 */
export function replyOf(pieces: readonly (string | RawCall)[]): { text: string; intake: CallIntake } {
  let text = '';
  const raw: RawCall[] = [];
  for (const p of pieces) {
    if (typeof p === 'string') text += p;
    else raw.push(p);
  }
  return { text, intake: intakeCalls(raw) };
}

/** A result part read back: an image when it is one and carries data, else its text. */
export function partBlock(p: { text?: string; data?: string; mimeType?: string }, isImage: boolean): ContentBlock {
  return isImage && p.data
    ? { type: 'image', data: p.data, mimeType: p.mimeType ?? 'application/octet-stream' }
    : { type: 'text', text: p.text ?? '' };
}
