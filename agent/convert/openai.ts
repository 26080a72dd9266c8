// To and from OpenAI's wire formats: chat completions (assistant tool_calls, role:"tool" messages)
// and the Responses API (function_call / function_call_output items). Structural types, so
// this file needs no `openai` package at run time.
import type { ContentBlock, ModelMessage } from '../../pipeline/types';
import { type AgentMessage, type CallIntake, contentText, intakeCalls, type ToolMessage } from '../../pipeline/session';
import { type RawCall, replyOf, type ToolResultMessage } from './common';

export interface OpenAIChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type OpenAIChatContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

export type OpenAIChatMessage =
  | { role: 'system' | 'developer'; content: string }
  | { role: 'user'; content: string | OpenAIChatContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: OpenAIChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string | { type: 'text'; text: string }[] };

/** The calls of an assistant message's `tool_calls`; missing or repeated ids get error results. */
export function fromOpenAIToolCalls(
  toolCalls:
    | readonly { id?: string | null; function?: { name?: string; arguments?: string } | null }[]
    | null
    | undefined,
): CallIntake {
  return intakeCalls(
    (toolCalls ?? []).map((c) => ({
      id: c.id,
      name: c.function?.name ?? '',
      arguments: c.function?.arguments ?? '',
    })),
  );
}

export function toOpenAIToolCalls(
  calls: readonly { id: string; name: string; arguments: string }[],
): OpenAIChatToolCall[] {
  return calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
}

/**
 * Chat tool messages carry text only: an image becomes a note naming its type, so the model
 * knows one was there. Use the Responses or Anthropic format for images.
 */
export function toOpenAIToolMessage(m: ToolResultMessage): OpenAIChatMessage {
  return { role: 'tool', tool_call_id: m.toolCallId, content: textOnly(m.content) };
}

/** A chat `role:"tool"` message back into a tool message (its name from the matching call). */
export function fromOpenAIToolMessage(
  m: { tool_call_id: string; content: string | readonly { type: string; text?: string }[] },
  toolName = '',
): ToolMessage {
  const text = typeof m.content === 'string' ? m.content : m.content.map((p) => p.text ?? '').join('');
  const isError = text.startsWith('Error:');
  return { role: 'tool', toolCallId: m.tool_call_id, toolName, content: [{ type: 'text', text }], isError };
}

/** A batch's messages (tool results, then injected contexts) as chat messages, in order. */
export function toOpenAIChatResults(messages: readonly (ModelMessage | ToolMessage)[]): OpenAIChatMessage[] {
  return messages.map((m) =>
    m.role === 'tool' ? toOpenAIToolMessage(m) : { role: 'user' as const, content: m.content },
  );
}

/** A whole transcript as chat completion messages. */
export function toOpenAIChatMessages(transcript: readonly AgentMessage[]): OpenAIChatMessage[] {
  return transcript.map((m): OpenAIChatMessage => {
    switch (m.role) {
      case 'system':
        return { role: 'system', content: m.content };
      case 'user':
        return { role: 'user', content: typeof m.content === 'string' ? m.content : m.content.map(chatPart) };
      case 'assistant':
        return {
          role: 'assistant',
          content: m.text || null,
          ...(m.toolCalls.length ? { tool_calls: toOpenAIToolCalls(m.toolCalls) } : {}),
        };
      case 'tool':
        return toOpenAIToolMessage(m);
    }
  });
}

// --- Responses API ---

export type ResponsesOutputPart =
  | { type: 'input_text'; text: string }
  | { type: 'input_image'; image_url: string; detail: 'auto' };

export type ResponsesInputItem =
  | { role: 'system' | 'developer' | 'user' | 'assistant'; content: string | ResponsesOutputPart[] }
  | { type: 'function_call'; call_id: string; name: string; arguments: string }
  | { type: 'function_call_output'; call_id: string; output: string | ResponsesOutputPart[] };

/** The text and the function calls of a Responses `output` array. */
export function fromResponsesOutput(
  output: readonly { type: string; call_id?: string; name?: string; arguments?: string; content?: unknown }[],
): { text: string; intake: CallIntake } {
  return replyOf(
    output.flatMap((item): (string | RawCall)[] =>
      item.type === 'function_call'
        ? [{ id: item.call_id, name: item.name ?? '', arguments: item.arguments ?? '' }]
        : item.type === 'message' && Array.isArray(item.content)
          ? (item.content as { type: string; text?: string }[])
              .filter((part) => part.type === 'output_text' && part.text)
              .map((part) => part.text as string)
          : [],
    ),
  );
}

/** A tool message as a `function_call_output` item; images go as `input_image` parts. */
export function toResponsesFunctionOutput(m: ToolResultMessage): ResponsesInputItem {
  const hasImage = m.content.some((b) => b.type === 'image');
  return {
    type: 'function_call_output',
    call_id: m.toolCallId,
    output: hasImage ? m.content.map(responsesPart) : textOnly(m.content),
  };
}

export function fromResponsesFunctionOutput(
  item: { call_id: string; output: string | readonly { type: string; text?: string; image_url?: string }[] },
  toolName = '',
): ToolMessage {
  const content: ContentBlock[] =
    typeof item.output === 'string'
      ? [{ type: 'text', text: item.output }]
      : item.output.map((p) =>
          p.type === 'input_image' && p.image_url ? fromDataUrl(p.image_url) : { type: 'text', text: p.text ?? '' },
        );
  const isError = content[0]?.type === 'text' && content[0].text.startsWith('Error:');
  return { role: 'tool', toolCallId: item.call_id, toolName, content, isError };
}

/** A whole transcript as Responses `input` items. */
export function toResponsesInput(transcript: readonly AgentMessage[]): ResponsesInputItem[] {
  const out: ResponsesInputItem[] = [];
  for (const m of transcript) {
    if (m.role === 'system') out.push({ role: 'system', content: m.content });
    else if (m.role === 'user')
      out.push({ role: 'user', content: typeof m.content === 'string' ? m.content : m.content.map(responsesPart) });
    else if (m.role === 'assistant') {
      if (m.text) out.push({ role: 'assistant', content: m.text });
      for (const c of m.toolCalls)
        out.push({ type: 'function_call', call_id: c.id, name: c.name, arguments: c.arguments });
    } else out.push(toResponsesFunctionOutput(m));
  }
  return out;
}

function textOnly(content: readonly ContentBlock[]): string {
  return contentText(content as ContentBlock[]);
}

function chatPart(b: ContentBlock): OpenAIChatContentPart {
  return b.type === 'text' ? { type: 'text', text: b.text } : { type: 'image_url', image_url: { url: dataUrl(b) } };
}

function responsesPart(b: ContentBlock): ResponsesOutputPart {
  return b.type === 'text'
    ? { type: 'input_text', text: b.text }
    : { type: 'input_image', image_url: dataUrl(b), detail: 'auto' };
}

function dataUrl(b: { data: string; mimeType: string }): string {
  return `data:${b.mimeType};base64,${b.data}`;
}

function fromDataUrl(url: string): ContentBlock {
  const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return m ? { type: 'image', mimeType: m[1], data: m[2] } : { type: 'text', text: `[image ${url}]` };
}
