// `sluice/agent`: for an agent process or a config that talks to models — the message converters
// between model SDK formats and batches (for people who keep their own agent loop), and the model
// adapters a config's agent sessions use. Each adapter loads its SDK (openai, @anthropic-ai/sdk,
// ai) on first use, and its declarations name none of them, so the root entry stays free of them.
export * from './convert';
export {
  ModelRefusedError,
  type ModelAdapter,
  type ModelRequest,
  type ModelReply,
  type ModelEntry,
} from './models';
export { openAIChatModel, openAIResponsesModel, type OpenAIModelOptions } from './adapters/openai';
export { anthropicModel, type AnthropicModelOptions } from './adapters/anthropic';
export { aiSdkModel } from './adapters/ai-sdk';
export { scriptedModel, scriptFileModel, type ModelScript, type ScriptStep } from './adapters/scripted';
