// OpenAI through the `openai` package: chat completions and the Responses API. The client reads
// OPENAI_API_KEY and OPENAI_BASE_URL from the environment; its own retries are off, because each
// model step is a Temporal activity with its own retry policy.
import { fromResponsesOutput, toOpenAIChatMessages, toResponsesInput } from '../convert/openai';
import { loadOptional, type ModelAdapter, type ModelReply, type ModelRequest, refusedFor, requireKey } from '../models';

type OpenAIClient = import('openai').default;

export interface OpenAIModelOptions {
  /**
   * A configured `OpenAI` client (base URL, organization, ...); default: one from the environment.
   * Typed loosely so these declarations never name the openai package (an optional peer).
   */
  client?: object;
  maxOutputTokens?: number;
}

function clientOf(opts: OpenAIModelOptions): OpenAIClient {
  if (opts.client) return opts.client as OpenAIClient;
  // The package before the key: with no package, no key would help.
  const OpenAI = loadOptional('openai', () => require('openai').default as typeof import('openai').default);
  requireKey('OpenAI', ['OPENAI_API_KEY']);
  return new OpenAI({ maxRetries: 0 });
}

export function openAIChatModel(model: string, opts: OpenAIModelOptions = {}): ModelAdapter {
  let client: OpenAIClient | undefined;
  return {
    id: `openai:${model}`,
    async step(req: ModelRequest): Promise<ModelReply> {
      client ??= clientOf(opts);
      const res = await client.chat.completions
        .create(
          {
            model,
            messages: toOpenAIChatMessages(req.messages) as never,
            ...(req.tools.length
              ? {
                  tools: req.tools.map((t) => ({
                    type: 'function' as const,
                    function: { name: t.name, description: t.description, parameters: t.parameters },
                  })),
                }
              : {}),
            ...(opts.maxOutputTokens ? { max_completion_tokens: opts.maxOutputTokens } : {}),
          },
          { signal: req.signal },
        )
        .catch(rethrow);
      const choice = res.choices[0];
      const calls = (choice?.message.tool_calls ?? []).flatMap((c) =>
        c.type === 'function' ? [{ id: c.id, name: c.function.name, arguments: c.function.arguments }] : [],
      );
      return {
        text: choice?.message.content ?? '',
        calls,
        usage: { inputTokens: res.usage?.prompt_tokens ?? 0, outputTokens: res.usage?.completion_tokens ?? 0 },
        finishReason: choice?.finish_reason ?? 'unknown',
      };
    },
  };
}

export function openAIResponsesModel(model: string, opts: OpenAIModelOptions = {}): ModelAdapter {
  let client: OpenAIClient | undefined;
  return {
    id: `openai-responses:${model}`,
    async step(req: ModelRequest): Promise<ModelReply> {
      client ??= clientOf(opts);
      const res = await client.responses
        .create(
          {
            model,
            input: toResponsesInput(req.messages) as never,
            ...(req.tools.length
              ? {
                  tools: req.tools.map((t) => ({
                    type: 'function' as const,
                    name: t.name,
                    description: t.description,
                    parameters: t.parameters,
                    strict: false,
                  })),
                }
              : {}),
            ...(opts.maxOutputTokens ? { max_output_tokens: opts.maxOutputTokens } : {}),
          },
          { signal: req.signal },
        )
        .catch(rethrow);
      const { text } = fromResponsesOutput(res.output as never);
      const calls = res.output.flatMap((o) =>
        o.type === 'function_call' ? [{ id: o.call_id, name: o.name, arguments: o.arguments }] : [],
      );
      return {
        text,
        calls,
        usage: { inputTokens: res.usage?.input_tokens ?? 0, outputTokens: res.usage?.output_tokens ?? 0 },
        finishReason: res.status ?? 'unknown',
      };
    },
  };
}

function rethrow(err: unknown): never {
  throw refusedFor(err) ?? err;
}
