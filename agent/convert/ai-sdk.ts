// To and from the Vercel AI SDK's message parts: `tool-call` parts in assistant messages and
// `tool-result` parts whose `output` says what kind of result it is (text, JSON, error, a
// denial as `execution-denied`, or content with images).
import { ErrorCodes } from '../../pipeline/errors';
import type { ContentBlock, Json, ModelMessage } from '../../pipeline/types';
import {
  type AgentMessage,
  argumentsObject,
  type CallIntake,
  intakeCalls,
  type ToolMessage,
} from '../../pipeline/session';
import { partBlock, type ToolResultMessage } from './common';

export type AISDKToolResultOutput =
  | { type: 'text'; value: string }
  | { type: 'json'; value: Json }
  | { type: 'error-text'; value: string }
  | { type: 'error-json'; value: Json }
  | { type: 'execution-denied'; reason?: string }
  | {
      type: 'content';
      value: ({ type: 'text'; text: string } | { type: 'image-data'; data: string; mediaType: string })[];
    };

export interface AISDKToolResultPart {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: AISDKToolResultOutput;
}

export type AISDKMessage =
  | { role: 'system'; content: string }
  | {
      role: 'user';
      content: string | ({ type: 'text'; text: string } | { type: 'image'; image: string; mediaType: string })[];
    }
  | {
      role: 'assistant';
      content: (
        | { type: 'text'; text: string }
        | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }
      )[];
    }
  | { role: 'tool'; content: AISDKToolResultPart[] };

/** The calls among an AI SDK result's `toolCalls` or an assistant message's parts. */
export function fromAISDKToolCalls(
  parts: readonly { type?: string; toolCallId?: string; toolName?: string; input?: unknown }[],
): CallIntake {
  return intakeCalls(
    parts
      .filter((p) => p.type === undefined || p.type === 'tool-call')
      .map((p) => ({
        id: p.toolCallId,
        name: p.toolName ?? '',
        arguments: typeof p.input === 'string' ? p.input : JSON.stringify(p.input ?? {}),
      })),
  );
}

/**
 * A tool message as a `tool-result` part: a denial is the SDK's `execution-denied`; a structured
 * value goes as JSON (or `error-json`); images as `content`; anything else as text.
 */
export function toAISDKToolResult(m: ToolResultMessage): AISDKToolResultPart {
  const tm = m as ToolMessage;
  const base = { type: 'tool-result' as const, toolCallId: m.toolCallId, toolName: m.toolName };
  const text = m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
  if (tm.error?.code === ErrorCodes.DENIED)
    return { ...base, output: { type: 'execution-denied', reason: tm.error.message } };
  if (m.content.some((b) => b.type === 'image'))
    return {
      ...base,
      output: {
        type: 'content',
        value: m.content.map((b) =>
          b.type === 'text'
            ? { type: 'text' as const, text: b.text }
            : { type: 'image-data' as const, data: b.data, mediaType: b.mimeType },
        ),
      },
    };
  if (tm.value !== undefined) return { ...base, output: { type: m.isError ? 'error-json' : 'json', value: tm.value } };
  return { ...base, output: { type: m.isError ? 'error-text' : 'text', value: text } };
}

export function fromAISDKToolResult(part: {
  toolCallId: string;
  toolName: string;
  output: { type: string; value?: unknown; reason?: string };
}): ToolMessage {
  const o = part.output;
  const base = { role: 'tool' as const, toolCallId: part.toolCallId, toolName: part.toolName };
  switch (o.type) {
    case 'execution-denied': {
      const message = o.reason ?? 'the call was denied';
      return {
        ...base,
        content: [{ type: 'text', text: `Error: ${message}` }],
        isError: true,
        error: { message, code: ErrorCodes.DENIED },
      };
    }
    case 'json':
    case 'error-json':
      return {
        ...base,
        content: [{ type: 'text', text: JSON.stringify(o.value, null, 2) }],
        isError: o.type === 'error-json',
        value: o.value as Json,
      };
    case 'content':
      return {
        ...base,
        content: ((o.value as { type: string; text?: string; data?: string; mediaType?: string }[]) ?? []).map(
          (p): ContentBlock =>
            partBlock(
              { text: p.text, data: p.data, mimeType: p.mediaType },
              p.type === 'image-data' || p.type === 'media' || p.type === 'file-data',
            ),
        ),
        isError: false,
      };
    default:
      return { ...base, content: [{ type: 'text', text: String(o.value ?? '') }], isError: o.type.startsWith('error') };
  }
}

/** A batch's messages: one `tool` message with every result, then the contexts as user messages. */
export function toAISDKResults(messages: readonly (ModelMessage | ToolMessage)[]): AISDKMessage[] {
  const tools = messages.filter((m) => m.role === 'tool').map((m) => toAISDKToolResult(m as ToolMessage));
  const users = messages
    .filter((m) => m.role === 'user')
    .map((m) => ({ role: 'user' as const, content: m.content as string }));
  return [...(tools.length ? [{ role: 'tool' as const, content: tools }] : []), ...users];
}

/** A whole transcript as AI SDK model messages (consecutive tool results in one tool message). */
export function toAISDKMessages(transcript: readonly AgentMessage[]): AISDKMessage[] {
  const out: AISDKMessage[] = [];
  for (const m of transcript) {
    if (m.role === 'system') out.push({ role: 'system', content: m.content });
    else if (m.role === 'user')
      out.push({
        role: 'user',
        content:
          typeof m.content === 'string'
            ? m.content
            : m.content.map((b) =>
                b.type === 'text'
                  ? { type: 'text' as const, text: b.text }
                  : { type: 'image' as const, image: b.data, mediaType: b.mimeType },
              ),
      });
    else if (m.role === 'assistant')
      out.push({
        role: 'assistant',
        content: [
          ...(m.text ? [{ type: 'text' as const, text: m.text }] : []),
          ...m.toolCalls.map((c) => ({
            type: 'tool-call' as const,
            toolCallId: c.id,
            toolName: c.name,
            input: argumentsObject(c.arguments),
          })),
        ],
      });
    else {
      const last = out[out.length - 1];
      const part = toAISDKToolResult(m);
      if (last?.role === 'tool') last.content.push(part);
      else out.push({ role: 'tool', content: [part] });
    }
  }
  return out;
}
