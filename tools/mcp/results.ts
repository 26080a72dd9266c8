// An MCP tool result as a Sluice result: text and image blocks as they are, the other block kinds
// as text the model can read (with their URIs kept in meta), structuredContent as the structured
// value, isError as an error result.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ContentBlock, Json, JsonObject } from '../../pipeline/types';
import { ToolOutput } from '../../define/config';
import { ToolErrorCodes } from '../errors';

export const MCP_TOOL_ERROR = ToolErrorCodes.MCP_TOOL_ERROR;

/** @internal (its type is the MCP SDK's, an optional peer that declarations must not name) */
export function toSluiceResult(server: string, tool: string, result: CallToolResult): ToolOutput {
  const content: ContentBlock[] = [];
  const resources: JsonObject[] = [];
  for (const block of result.content ?? []) {
    switch (block.type) {
      case 'text':
        content.push({ type: 'text', text: block.text });
        break;
      case 'image':
        content.push({ type: 'image', data: block.data, mimeType: block.mimeType });
        break;
      case 'audio':
        content.push({ type: 'text', text: `[audio ${block.mimeType}, ${base64Bytes(block.data)} bytes, not shown]` });
        break;
      case 'resource_link': {
        resources.push(compact({ kind: 'link', uri: block.uri, name: block.name, mimeType: block.mimeType }));
        const about = [block.name, block.description, block.mimeType].filter(Boolean).join(', ');
        content.push({ type: 'text', text: `[resource link: ${block.uri}${about ? ` (${about})` : ''}]` });
        break;
      }
      case 'resource': {
        const r = block.resource;
        resources.push(compact({ kind: 'embedded', uri: r.uri, mimeType: r.mimeType }));
        if ('text' in r && typeof r.text === 'string') {
          content.push({ type: 'text', text: `[resource ${r.uri}${r.mimeType ? ` (${r.mimeType})` : ''}]\n${r.text}` });
        } else if ('blob' in r && typeof r.blob === 'string' && r.mimeType?.startsWith('image/')) {
          content.push({ type: 'image', data: r.blob, mimeType: r.mimeType });
        } else if ('blob' in r && typeof r.blob === 'string') {
          content.push({
            type: 'text',
            text: `[resource ${r.uri}: ${r.mimeType ?? 'binary'}, ${base64Bytes(r.blob)} bytes, not shown]`,
          });
        }
        break;
      }
      default:
        content.push({ type: 'text', text: `[${(block as { type: string }).type} content, not shown]` });
    }
  }
  const structured = result.structuredContent as Json | undefined;
  if (!content.length && structured !== undefined)
    content.push({ type: 'text', text: JSON.stringify(structured, null, 2) });
  const meta: JsonObject = { mcp: compact({ server, tool, ...(resources.length ? { resources } : {}) }) };
  if (result.isError) {
    const message = content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('\n') || `${tool} failed`;
    return new ToolOutput({ content, isError: true, error: { message, code: MCP_TOOL_ERROR }, meta });
  }
  // With a structured value and only text beside it (by the MCP spec, that text is the value's
  // serialization), the value is the result: Sluice renders it, and a Code Mode program gets the
  // value itself rather than its text. Images or resources beside it are kept as content.
  if (structured !== undefined && content.every((b) => b.type === 'text') && !resources.length)
    return new ToolOutput({ value: structured, meta });
  return new ToolOutput({ content, ...(structured !== undefined ? { value: structured } : {}), meta });
}

function base64Bytes(data: string): number {
  return Math.floor((data.length * 3) / 4) - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
}

function compact(o: Record<string, unknown>): JsonObject {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as JsonObject;
}
