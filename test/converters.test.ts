// The exported message converters: each format round-trips calls and results, refuses bad call
// ids per call, and keeps results before injected contexts.
import { describe, expect, it } from 'vitest';
import {
  fromAISDKToolCalls,
  fromAISDKToolResult,
  fromAnthropicContent,
  fromAnthropicToolResult,
  fromOpenAIToolCalls,
  fromOpenAIToolMessage,
  fromResponsesFunctionOutput,
  fromResponsesOutput,
  mergeToolMessages,
  toAISDKMessages,
  toAISDKToolResult,
  toAnthropicMessages,
  toAnthropicResultsMessage,
  toAnthropicToolResult,
  toOpenAIChatMessages,
  toOpenAIChatResults,
  toResponsesFunctionOutput,
  toResponsesInput,
  type AgentMessage,
  type ToolMessage,
} from '../agent/convert';

const image = { type: 'image' as const, data: 'iVBORw0KGgo=', mimeType: 'image/png' };
const ok: ToolMessage = {
  role: 'tool',
  toolCallId: 'c1',
  toolName: 'get',
  content: [{ type: 'text', text: '42' }],
  isError: false,
};
const denied: ToolMessage = {
  role: 'tool',
  toolCallId: 'c2',
  toolName: 'rm',
  content: [{ type: 'text', text: 'Error: deleting files is not allowed' }],
  isError: true,
  error: { message: 'deleting files is not allowed', code: 'DENIED' },
};
const structured: ToolMessage = { ...ok, toolCallId: 'c3', value: { temp: 21, unit: 'C' } };
const pic: ToolMessage = { ...ok, toolCallId: 'c4', content: [{ type: 'text', text: 'see:' }, image] };

describe('call intake', () => {
  it('gives empty and repeated ids an error result each, and runs the rest in model order', () => {
    const intake = fromOpenAIToolCalls([
      { id: 'a', function: { name: 'x', arguments: '{}' } },
      { id: '', function: { name: 'y', arguments: '{}' } },
      { id: 'a', function: { name: 'z', arguments: '{"n":1}' } },
      { id: 'b', function: { name: 'w', arguments: '{}' } },
    ]);
    expect(intake.calls.map((c) => c.id)).toEqual(['a', 'b']);
    expect(intake.rejected.map((r) => [r.index, r.message.toolCallId, r.message.error?.code])).toEqual([
      [1, 'missing-id-2', 'INVALID_CALL_ID'],
      [2, 'a', 'INVALID_CALL_ID'],
    ]);
    const merged = mergeToolMessages(intake, [
      { role: 'tool', toolCallId: 'a', toolName: 'x', content: [{ type: 'text', text: 'A' }], isError: false },
      { role: 'tool', toolCallId: 'b', toolName: 'w', content: [{ type: 'text', text: 'B' }], isError: false },
      { role: 'user', content: 'context', source: 'tool:x' },
    ]);
    expect(merged.map((m) => (m.role === 'tool' ? `${m.toolName}:${m.isError}` : `user:${m.content}`))).toEqual([
      'x:false',
      'y:true',
      'z:true',
      'w:false',
      'user:context',
    ]);
    expect((merged[2] as ToolMessage).content[0]).toMatchObject({ text: expect.stringContaining('already used') });
  });
});

describe('OpenAI', () => {
  it('round-trips chat tool messages and turns images into a note', () => {
    const msgs = toOpenAIChatResults([ok, pic, { role: 'user', content: 'ctx' }]);
    expect(msgs).toEqual([
      { role: 'tool', tool_call_id: 'c1', content: '42' },
      { role: 'tool', tool_call_id: 'c4', content: 'see:[image image/png]' },
      { role: 'user', content: 'ctx' },
    ]);
    expect(fromOpenAIToolMessage(msgs[0] as never, 'get')).toEqual(ok);
  });

  it('writes a transcript as chat messages with tool_calls', () => {
    const t: AgentMessage[] = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', text: '', toolCalls: [{ id: 'c1', name: 'get', arguments: '{"k":1}' }] },
      ok,
    ];
    expect(toOpenAIChatMessages(t)).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get', arguments: '{"k":1}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: '42' },
    ]);
  });

  it('reads Responses output and writes function_call_output with images as input_image', () => {
    const { text, intake } = fromResponsesOutput([
      { type: 'message', content: [{ type: 'output_text', text: 'Let me look.' }] },
      { type: 'function_call', call_id: 'r1', name: 'get', arguments: '{}' },
      { type: 'function_call', call_id: 'r1', name: 'get', arguments: '{}' },
    ]);
    expect(text).toBe('Let me look.');
    expect(intake.calls).toHaveLength(1);
    expect(intake.rejected).toHaveLength(1);
    const out = toResponsesFunctionOutput(pic);
    expect(out).toEqual({
      type: 'function_call_output',
      call_id: 'c4',
      output: [
        { type: 'input_text', text: 'see:' },
        { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' },
      ],
    });
    expect(fromResponsesFunctionOutput(out as never, 'get')).toEqual(pic);
    expect(
      toResponsesInput([
        { role: 'assistant', text: 'ok', toolCalls: [{ id: 'c1', name: 'get', arguments: '{}' }] },
        ok,
      ]),
    ).toEqual([
      { role: 'assistant', content: 'ok' },
      { type: 'function_call', call_id: 'c1', name: 'get', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: '42' },
    ]);
  });
});

describe('Anthropic', () => {
  it('reads tool_use blocks and writes tool_result blocks with images and is_error', () => {
    const { text, intake } = fromAnthropicContent([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'tu1', name: 'get', input: { k: 1 } },
      { type: 'tool_use', id: '', name: 'get', input: {} },
    ]);
    expect(text).toBe('Checking.');
    expect(intake.calls).toEqual([{ id: 'tu1', name: 'get', arguments: '{"k":1}' }]);
    expect(intake.rejected[0].message.toolCallId).toBe('missing-id-2');
    expect(toAnthropicToolResult(denied)).toEqual({
      type: 'tool_result',
      tool_use_id: 'c2',
      content: [{ type: 'text', text: 'Error: deleting files is not allowed' }],
      is_error: true,
    });
    const withImage = toAnthropicToolResult(pic);
    expect(withImage.content[1]).toEqual({
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: image.data },
    });
    expect(fromAnthropicToolResult(withImage, 'get')).toEqual(pic);
  });

  it('puts every tool_result first and merges consecutive user content into one message', () => {
    expect(toAnthropicResultsMessage([ok, { role: 'user', content: 'ctx' }]).content.map((b) => b.type)).toEqual([
      'tool_result',
      'text',
    ]);
    const { system, messages } = toAnthropicMessages([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', text: 'ok', toolCalls: [{ id: 'c1', name: 'get', arguments: '{"k":1}' }] },
      ok,
      { role: 'user', content: 'ctx', source: 'tool:get' },
    ]);
    expect(system).toBe('sys');
    expect(messages.map((m) => [m.role, m.content.map((b) => b.type)])).toEqual([
      ['user', ['text']],
      ['assistant', ['text', 'tool_use']],
      ['user', ['tool_result', 'text']],
    ]);
  });
});

describe('AI SDK', () => {
  it('maps denials, structured values, errors and images to the right output kind, and back', () => {
    expect(toAISDKToolResult(denied).output).toEqual({
      type: 'execution-denied',
      reason: 'deleting files is not allowed',
    });
    expect(toAISDKToolResult(structured).output).toEqual({ type: 'json', value: { temp: 21, unit: 'C' } });
    expect(toAISDKToolResult({ ...ok, isError: true }).output).toEqual({ type: 'error-text', value: '42' });
    expect(toAISDKToolResult(pic).output).toEqual({
      type: 'content',
      value: [
        { type: 'text', text: 'see:' },
        { type: 'image-data', data: image.data, mediaType: 'image/png' },
      ],
    });
    expect(fromAISDKToolResult(toAISDKToolResult(denied))).toMatchObject({ isError: true, error: { code: 'DENIED' } });
    expect(fromAISDKToolResult(toAISDKToolResult(structured)).value).toEqual({ temp: 21, unit: 'C' });
    expect(fromAISDKToolResult(toAISDKToolResult(pic)).content).toEqual(pic.content);
  });

  it('reads tool-call parts and groups consecutive results into one tool message', () => {
    const intake = fromAISDKToolCalls([
      { type: 'text' },
      { type: 'tool-call', toolCallId: 't1', toolName: 'get', input: { k: 1 } },
      { type: 'tool-call', toolCallId: 't1', toolName: 'get', input: {} },
    ]);
    expect(intake.calls).toEqual([{ id: 't1', name: 'get', arguments: '{"k":1}' }]);
    expect(intake.rejected).toHaveLength(1);
    const msgs = toAISDKMessages([
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        text: '',
        toolCalls: [
          { id: 'c1', name: 'get', arguments: '{}' },
          { id: 'c2', name: 'rm', arguments: '{}' },
        ],
      },
      ok,
      denied,
    ]);
    expect(msgs.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect((msgs[2].content as unknown[]).length).toBe(2);
  });
});
