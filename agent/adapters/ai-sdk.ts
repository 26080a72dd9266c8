// Any Vercel AI SDK language model (every provider package, and the SDK's mock models) through
// `generateText` with tools that have no execute: the SDK returns the calls and Sluice runs them.
import { toAISDKMessages } from '../convert/ai-sdk';
import {
  type AISDKLanguageModel,
  loadOptional,
  type ModelAdapter,
  type ModelReply,
  type ModelRequest,
  refusedFor,
} from '../models';

export function aiSdkModel(model: AISDKLanguageModel): ModelAdapter {
  return {
    id: `${model.provider}:${model.modelId}`,
    async step(req: ModelRequest): Promise<ModelReply> {
      const ai = loadOptional('ai', () => require('ai') as typeof import('ai'));
      const system = req.messages.filter((m) => m.role === 'system').map((m) => m.content as string);
      const tools = Object.fromEntries(
        req.tools.map((t) => [
          t.name,
          ai.tool({ description: t.description, inputSchema: ai.jsonSchema(t.parameters as never) }),
        ]),
      );
      const res = await ai
        .generateText({
          model: model as never,
          ...(system.length ? { system: system.join('\n\n') } : {}),
          messages: toAISDKMessages(req.messages.filter((m) => m.role !== 'system')) as never,
          tools,
          maxRetries: 0,
          abortSignal: req.signal,
        })
        .catch((err: unknown) => {
          throw refusedFor(err) ?? err;
        });
      return {
        text: res.text,
        calls: res.toolCalls.map((c) => ({
          id: c.toolCallId,
          name: c.toolName,
          arguments: typeof c.input === 'string' ? c.input : JSON.stringify(c.input ?? {}),
        })),
        usage: { inputTokens: res.usage.inputTokens ?? 0, outputTokens: res.usage.outputTokens ?? 0 },
        finishReason: String(res.finishReason),
      };
    },
  };
}
