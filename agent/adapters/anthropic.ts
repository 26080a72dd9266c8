// Anthropic through `@anthropic-ai/sdk` (messages, streamed: each piece goes to
// ModelRequest.onDelta as it arrives; the reply is the whole message). The client reads ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL from the environment; its retries are off (the activity retries).
import { toAnthropicMessages } from '../convert/anthropic';
import { loadOptional, type ModelAdapter, type ModelReply, type ModelRequest, refusedFor, requireKey } from '../models';

type AnthropicClient = import('@anthropic-ai/sdk').default;

export interface AnthropicModelOptions {
  /**
   * A configured `Anthropic` client; default: one from the environment. Typed loosely so these
   * declarations never name @anthropic-ai/sdk (an optional peer).
   */
  client?: object;
  /** Anthropic requires a bound on the answer. Default 4096. */
  maxTokens?: number;
}

export function anthropicModel(model: string, opts: AnthropicModelOptions = {}): ModelAdapter {
  let client: AnthropicClient | undefined;
  return {
    id: `anthropic:${model}`,
    async step(req: ModelRequest): Promise<ModelReply> {
      client ??= clientFor(opts);
      const stream = await openStream(client, model, opts, req);
      const message = await collectMessage(stream, req);
      return replyOf(message);
    },
  };
}

/** The client in the options, else one from the environment (built on the first step, not at config load). */
function clientFor(opts: AnthropicModelOptions): AnthropicClient {
  if (opts.client) return opts.client as AnthropicClient;
  // The package before the key: with no package, no key would help.
  const Anthropic = loadOptional(
    '@anthropic-ai/sdk',
    () => require('@anthropic-ai/sdk').default as typeof import('@anthropic-ai/sdk').default,
  );
  requireKey('Anthropic', ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN']);
  return new Anthropic({ maxRetries: 0 });
}

type MessageStream = AsyncIterable<import('@anthropic-ai/sdk').default.RawMessageStreamEvent>;

/** Sends the request as a streamed message; a refusal by the provider becomes the adapter's refusal. */
async function openStream(
  client: AnthropicClient,
  model: string,
  opts: AnthropicModelOptions,
  req: ModelRequest,
): Promise<MessageStream> {
  const { system, messages } = toAnthropicMessages(req.messages);
  return client.messages
    .create(
      {
        model,
        max_tokens: opts.maxTokens ?? 4096,
        ...(system ? { system } : {}),
        messages: messages as never,
        ...(req.tools.length
          ? {
              tools: req.tools.map((t) => ({
                name: t.name,
                description: t.description,
                input_schema: t.parameters as never,
              })),
            }
          : {}),
        stream: true,
      },
      { signal: req.signal },
    )
    .catch((err: unknown) => {
      throw refusedFor(err) ?? err;
    });
}

interface Block {
  type: string;
  text: string;
  id?: string;
  name?: string;
}

interface StreamedMessage {
  blocks: Block[];
  usage: ModelReply['usage'];
  stopReason: string | undefined;
}

/** The message put together from its events; each piece goes to live followers (onDelta) as it comes. */
async function collectMessage(stream: MessageStream, req: ModelRequest): Promise<StreamedMessage> {
  const message: StreamedMessage = { blocks: [], usage: { inputTokens: 0, outputTokens: 0 }, stopReason: undefined };
  let stopped = false;
  try {
    for await (const ev of stream) {
      if (ev.type === 'message_stop') stopped = true;
      else applyEvent(message, ev, req);
    }
  } catch (err) {
    throw refusedFor(err) ?? err;
  }
  if (!stopped)
    throw new Error(
      "the provider's stream ended before the message was complete (the connection was cut mid-answer); the step is retried",
    );
  return message;
}

/** One stream event folded into the message so far. */
function applyEvent(
  message: StreamedMessage,
  ev: import('@anthropic-ai/sdk').default.RawMessageStreamEvent,
  req: ModelRequest,
): void {
  const { blocks } = message;
  if (ev.type === 'message_start')
    message.usage = {
      inputTokens: ev.message.usage?.input_tokens ?? 0,
      outputTokens: ev.message.usage?.output_tokens ?? 0,
    };
  else if (ev.type === 'content_block_start') {
    const b = ev.content_block;
    if (b.type === 'tool_use') {
      blocks[ev.index] = { type: 'tool_use', text: '', id: b.id, name: b.name };
      req.onDelta?.({ kind: 'tool-call', text: '', call: { index: ev.index, id: b.id, name: b.name } });
    } else if (b.type === 'text') {
      blocks[ev.index] = { type: 'text', text: b.text ?? '' };
      if (b.text) req.onDelta?.({ kind: 'text', text: b.text });
    } else blocks[ev.index] = { type: b.type, text: '' };
  } else if (ev.type === 'content_block_delta') {
    const b = (blocks[ev.index] ??= { type: 'text', text: '' });
    const d = ev.delta;
    if (d.type === 'text_delta') {
      b.text += d.text;
      req.onDelta?.({ kind: 'text', text: d.text });
    } else if (d.type === 'input_json_delta') {
      b.text += d.partial_json;
      req.onDelta?.({ kind: 'tool-call', text: d.partial_json, call: { index: ev.index } });
    } else if (d.type === 'thinking_delta') req.onDelta?.({ kind: 'reasoning', text: d.thinking });
  } else if (ev.type === 'message_delta') {
    message.stopReason = ev.delta.stop_reason ?? message.stopReason;
    if (ev.usage?.output_tokens !== undefined) message.usage.outputTokens = ev.usage.output_tokens;
    if (typeof ev.usage?.input_tokens === 'number') message.usage.inputTokens = ev.usage.input_tokens;
  }
}

/** The reply: the text blocks joined, the tool calls with their parsed input. */
function replyOf({ blocks, usage, stopReason }: StreamedMessage): ModelReply {
  let text = '';
  const calls: ModelReply['calls'] = [];
  for (const b of blocks) {
    if (b?.type === 'text') text += b.text;
    else if (b?.type === 'tool_use') {
      // The input streams as JSON text; what the record keeps is the parsed input, as before streaming.
      let input: unknown;
      try {
        input = b.text.trim() ? JSON.parse(b.text) : {};
      } catch {
        throw new Error(
          `the model streamed arguments for tool call ${b.id} (${b.name}) that are not valid JSON; the step is retried`,
        );
      }
      calls.push({ id: b.id, name: b.name ?? '', arguments: JSON.stringify(input ?? {}) });
    }
  }
  return { text, calls, usage, finishReason: stopReason ?? 'unknown' };
}
