// To and from Anthropic's messages format: `tool_use` blocks in assistant messages and
// `tool_result` blocks (text and images, `is_error`) in the user message that follows.
import type { ContentBlock, ModelMessage } from '../../pipeline/types';
import { type AgentMessage, argumentsObject, type CallIntake, type ToolMessage } from '../../pipeline/session';
import { partBlock, type RawCall, replyOf, type ToolResultMessage } from './common';

export type AnthropicTextOrImage =
  | { type: 'text'; text: string }
  | { type: 'image'; source: { type: 'base64'; media_type: string; data: string } };

export type AnthropicToolResultBlock = {
  type: 'tool_result';
  tool_use_id: string;
  content: AnthropicTextOrImage[];
  is_error?: boolean;
};

export type AnthropicBlock =
  | AnthropicTextOrImage
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | AnthropicToolResultBlock;

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: AnthropicBlock[];
}

/** The text and the `tool_use` calls of an assistant message's content. */
export function fromAnthropicContent(
  content: readonly { type: string; text?: string; id?: string; name?: string; input?: unknown }[],
): { text: string; intake: CallIntake } {
  return replyOf(
    content.flatMap((b): (string | RawCall)[] =>
      b.type === 'text'
        ? [b.text ?? '']
        : b.type === 'tool_use'
          ? [{ id: b.id, name: b.name ?? '', arguments: JSON.stringify(b.input ?? {}) }]
          : [],
    ),
  );
}

export function toAnthropicToolResult(m: ToolResultMessage): AnthropicToolResultBlock {
  return {
    type: 'tool_result',
    tool_use_id: m.toolCallId,
    content: m.content.map(anthropicPart),
    ...(m.isError ? { is_error: true } : {}),
  };
}

export function fromAnthropicToolResult(
  block: {
    tool_use_id: string;
    content?: string | readonly { type: string; text?: string; source?: { data?: string; media_type?: string } }[];
    is_error?: boolean;
  },
  toolName = '',
): ToolMessage {
  const content: ContentBlock[] =
    typeof block.content === 'string'
      ? [{ type: 'text', text: block.content }]
      : (block.content ?? []).map((p) =>
          partBlock({ text: p.text, data: p.source?.data, mimeType: p.source?.media_type }, p.type === 'image'),
        );
  return { role: 'tool', toolCallId: block.tool_use_id, toolName, content, isError: block.is_error === true };
}

/**
 * A batch's messages as the content of ONE user message: every tool_result first (Anthropic
 * requires them to lead), then the injected contexts as text blocks, in order.
 */
export function toAnthropicResultsMessage(messages: readonly (ModelMessage | ToolMessage)[]): AnthropicMessage {
  return {
    role: 'user',
    content: messages.map((m) =>
      m.role === 'tool' ? toAnthropicToolResult(m) : { type: 'text' as const, text: m.content },
    ),
  };
}

/** A whole transcript: the system prompt apart, consecutive same-role messages merged. */
export function toAnthropicMessages(transcript: readonly AgentMessage[]): {
  system?: string;
  messages: AnthropicMessage[];
} {
  const system = transcript.filter((m) => m.role === 'system').map((m) => m.content as string);
  const messages: AnthropicMessage[] = [];
  const push = (role: 'user' | 'assistant', blocks: AnthropicBlock[]) => {
    const last = messages[messages.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const m of transcript) {
    if (m.role === 'system') continue;
    if (m.role === 'user')
      push('user', typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content.map(anthropicPart));
    else if (m.role === 'tool') push('user', [toAnthropicToolResult(m)]);
    else
      push('assistant', [
        ...(m.text ? [{ type: 'text' as const, text: m.text }] : []),
        ...m.toolCalls.map((c) => ({
          type: 'tool_use' as const,
          id: c.id,
          name: c.name,
          input: argumentsObject(c.arguments),
        })),
      ]);
  }
  return { ...(system.length ? { system: system.join('\n\n') } : {}), messages };
}

function anthropicPart(b: ContentBlock): AnthropicTextOrImage {
  return b.type === 'text'
    ? { type: 'text', text: b.text }
    : { type: 'image', source: { type: 'base64', media_type: b.mimeType, data: b.data } };
}
