// OpenAI through the `openai` package: chat completions and the Responses API, both streamed
// (each piece goes to ModelRequest.onDelta as it arrives; the reply is the whole answer). The client reads
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
      const stream = await client.chat.completions
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
            stream: true,
            stream_options: { include_usage: true },
          },
          { signal: req.signal },
        )
        .catch(rethrow);
      // The answer is put together from the chunks; each piece goes to live followers as it comes.
      let text = '';
      let finishReason: string | undefined;
      let usage = { inputTokens: 0, outputTokens: 0 };
      const calls: { id?: string; name: string; arguments: string }[] = [];
      try {
        for await (const chunk of stream) {
          if (chunk.usage)
            usage = { inputTokens: chunk.usage.prompt_tokens ?? 0, outputTokens: chunk.usage.completion_tokens ?? 0 };
          const choice = chunk.choices?.[0];
          if (!choice) continue;
          const d = choice.delta ?? {};
          if (d.content) {
            text += d.content;
            req.onDelta?.({ kind: 'text', text: d.content });
          }
          const reasoning = (d as { reasoning_content?: string }).reasoning_content;
          if (reasoning) req.onDelta?.({ kind: 'reasoning', text: reasoning });
          for (const t of d.tool_calls ?? []) {
            const c = (calls[t.index] ??= { name: '', arguments: '' });
            if (t.id) c.id = t.id;
            if (t.function?.name) c.name += t.function.name;
            const piece = t.function?.arguments ?? '';
            c.arguments += piece;
            if (piece || t.id || t.function?.name)
              req.onDelta?.({
                kind: 'tool-call',
                text: piece,
                call: {
                  index: t.index,
                  ...(t.id ? { id: t.id } : {}),
                  ...(t.function?.name ? { name: t.function.name } : {}),
                },
              });
          }
          if (choice.finish_reason) finishReason = choice.finish_reason;
        }
      } catch (err) {
        rethrow(err);
      }
      if (!finishReason) throw new Error(streamCut('chat completion'));
      return { text, calls: calls.filter(Boolean), usage, finishReason };
    },
  };
}

export function openAIResponsesModel(model: string, opts: OpenAIModelOptions = {}): ModelAdapter {
  let client: OpenAIClient | undefined;
  return {
    id: `openai-responses:${model}`,
    async step(req: ModelRequest): Promise<ModelReply> {
      client ??= clientOf(opts);
      const stream = await client.responses
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
            stream: true,
          },
          { signal: req.signal },
        )
        .catch(rethrow);
      // The events stream the pieces; the answer is the completed response the last event carries.
      let res: import('openai').default.Responses.Response | undefined;
      try {
        for await (const ev of stream) {
          switch (ev.type) {
            case 'response.output_text.delta':
              req.onDelta?.({ kind: 'text', text: ev.delta });
              break;
            case 'response.reasoning_summary_text.delta':
            case 'response.reasoning_text.delta':
              req.onDelta?.({ kind: 'reasoning', text: ev.delta });
              break;
            case 'response.output_item.added':
              if (ev.item.type === 'function_call')
                req.onDelta?.({
                  kind: 'tool-call',
                  text: ev.item.arguments ?? '',
                  call: { index: ev.output_index, id: ev.item.call_id, name: ev.item.name },
                });
              break;
            case 'response.function_call_arguments.delta':
              req.onDelta?.({ kind: 'tool-call', text: ev.delta, call: { index: ev.output_index } });
              break;
            case 'response.completed':
            case 'response.incomplete':
              res = ev.response;
              break;
            case 'response.failed':
              throw new Error(`the model's response failed: ${ev.response.error?.message ?? 'no reason given'}`);
            case 'error':
              throw new Error(`the model's stream sent an error: ${ev.message}`);
          }
        }
      } catch (err) {
        rethrow(err);
      }
      if (!res) throw new Error(streamCut('response'));
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

/** A stream that ends without its last event: the answer is incomplete, and the step is retried. */
function streamCut(what: string): string {
  return `the provider's stream ended before the ${what} was complete (the connection was cut mid-answer); the step is retried`;
}

function rethrow(err: unknown): never {
  throw refusedFor(err) ?? err;
}
