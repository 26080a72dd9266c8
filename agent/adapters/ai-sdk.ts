// Any Vercel AI SDK language model (every provider package, and the SDK's mock models) through
// `streamText` with tools that have no execute: the SDK returns the calls and Sluice runs them.
// Each piece of the answer goes to ModelRequest.onDelta as it streams; a model that cannot stream
// (a mock with only doGenerate) is asked through `generateText`, as before streaming.
import { toAISDKMessages } from '../convert/ai-sdk';
import {
  type AISDKLanguageModel,
  loadOptional,
  type ModelAdapter,
  type ModelReply,
  type ModelRequest,
  refusedFor,
} from '../models';

type AI = typeof import('ai');

/** What both ways of asking return that a reply is made of. */
interface Answer {
  text: string;
  toolCalls: { toolCallId: string; toolName: string; input: unknown }[];
  usage: { inputTokens?: number; outputTokens?: number };
  finishReason: unknown;
}

/** The SDK's mock models throw this from a doStream they were not given. */
const cannotStream = (err: unknown) => (err as Error)?.message === 'Not implemented';

export function aiSdkModel(model: AISDKLanguageModel): ModelAdapter {
  return {
    id: `${model.provider}:${model.modelId}`,
    async step(req: ModelRequest): Promise<ModelReply> {
      const ai = loadOptional('ai', () => require('ai') as AI);
      const system = req.messages.filter((m) => m.role === 'system').map((m) => m.content as string);
      const tools = Object.fromEntries(
        req.tools.map((t) => [
          t.name,
          ai.tool({ description: t.description, inputSchema: ai.jsonSchema(t.parameters as never) }),
        ]),
      );
      const call = {
        model: model as never,
        ...(system.length ? { system: system.join('\n\n') } : {}),
        messages: toAISDKMessages(req.messages.filter((m) => m.role !== 'system')) as never,
        tools,
        maxRetries: 0,
        abortSignal: req.signal,
      };
      let res: Answer;
      try {
        res = await streamed(ai, call, req);
      } catch (err) {
        if (!(err instanceof NoStream)) throw refusedFor(err) ?? err;
        res = await ai.generateText(call).catch((e: unknown) => {
          throw refusedFor(e) ?? e;
        });
      }
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

class NoStream extends Error {}

async function streamed(ai: AI, call: Parameters<AI['streamText']>[0], req: ModelRequest): Promise<Answer> {
  let error: unknown;
  const res = ai.streamText({ ...call, onError: ({ error: e }) => void (error ??= e) });
  const inputs = new Map<string, number>();
  let parts = 0;
  let finished = false;
  for await (const p of res.fullStream) {
    if (p.type === 'error') {
      if (!parts && cannotStream(p.error)) throw new NoStream();
      throw p.error;
    }
    if (p.type !== 'start' && p.type !== 'start-step') parts++;
    if (p.type === 'text-delta') req.onDelta?.({ kind: 'text', text: p.text });
    else if (p.type === 'reasoning-delta') req.onDelta?.({ kind: 'reasoning', text: p.text });
    else if (p.type === 'tool-input-start') {
      inputs.set(p.id, inputs.size);
      req.onDelta?.({ kind: 'tool-call', text: '', call: { index: inputs.get(p.id)!, id: p.id, name: p.toolName } });
    } else if (p.type === 'tool-input-delta')
      req.onDelta?.({ kind: 'tool-call', text: p.delta, call: { index: inputs.get(p.id) ?? inputs.size } });
    else if (p.type === 'finish') finished = true;
    else if (p.type === 'abort') throw new Error(`the model's stream was aborted${p.reason ? `: ${p.reason}` : ''}`);
  }
  if (error) throw !parts && cannotStream(error) ? new NoStream() : error;
  if (!finished)
    throw new Error(
      "the provider's stream ended before the answer was complete (the connection was cut mid-answer); the step is retried",
    );
  const [text, toolCalls, usage, finishReason] = await Promise.all([
    res.text,
    res.toolCalls,
    res.usage,
    res.finishReason,
  ]);
  return { text, toolCalls: toolCalls as Answer['toolCalls'], usage, finishReason };
}
