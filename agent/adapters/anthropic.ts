// Anthropic through `@anthropic-ai/sdk` (messages). The client reads ANTHROPIC_API_KEY and
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
      if (!client && opts.client) client = opts.client as AnthropicClient;
      if (!client) {
        // The package before the key: with no package, no key would help.
        const Anthropic = loadOptional(
          '@anthropic-ai/sdk',
          () => require('@anthropic-ai/sdk').default as typeof import('@anthropic-ai/sdk').default,
        );
        requireKey('Anthropic', ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN']);
        client = new Anthropic({ maxRetries: 0 });
      }
      const { system, messages } = toAnthropicMessages(req.messages);
      const res = await client.messages
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
          },
          { signal: req.signal },
        )
        .catch((err: unknown) => {
          throw refusedFor(err) ?? err;
        });
      let text = '';
      const calls: ModelReply['calls'] = [];
      for (const b of res.content) {
        if (b.type === 'text') text += b.text;
        else if (b.type === 'tool_use')
          calls.push({ id: b.id, name: b.name, arguments: JSON.stringify(b.input ?? {}) });
      }
      return {
        text,
        calls,
        usage: { inputTokens: res.usage?.input_tokens ?? 0, outputTokens: res.usage?.output_tokens ?? 0 },
        finishReason: res.stop_reason ?? 'unknown',
      };
    },
  };
}
