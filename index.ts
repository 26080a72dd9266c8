// `sluice`: what a config module and an agent process write against — tools, the config, schemas
// and the types. Loads no Temporal runtime. The rest is layered: sluice/client (run batches,
// decide approvals), sluice/worker (host Sluice), sluice/workflow (inside your workflows),
// sluice/tools, sluice/hooks, sluice/code-mode.
export {
  defineConfig,
  defineTool,
  parseToolManifest,
  toolManifest,
  ToolOutput,
  toolOutput,
  toolSchemas,
} from './worker/config';
export type {
  CallInfo,
  ExecuteWrapper,
  Guard,
  Named,
  PostExecuteContext,
  PostExecuteHandler,
  PreExecuteHandler,
  ResultNotice,
  ResultObserver,
  SluiceConfig,
  StageContext,
  ToolContext,
  ToolDefinition,
  ToolManifest,
  ToolSchema,
  ToolDefinitionInput,
} from './worker/config';
export type { JsonSchema, ToolInputSchema } from './worker/tool-schema';
export type { ConfigExport } from './worker/load-config';
export type { ResultStore } from './worker/claim-check';
export type { EventSink } from './worker/sink';
export type { PostVerdict } from './pipeline/fold';
// The errors and the shared types, as `sluice/client` exports them too.
export * from './client/common-exports';
// Converters between model SDK message formats and batches, and the model adapters a config's
// agent sessions use (their SDKs load on first use).
export * from './agent/convert';
export {
  ModelRefusedError,
  type ModelAdapter,
  type ModelRequest,
  type ModelReply,
  type ModelEntry,
} from './agent/models';
export { openAIChatModel, openAIResponsesModel } from './agent/adapters/openai';
export { anthropicModel } from './agent/adapters/anthropic';
export { aiSdkModel } from './agent/adapters/ai-sdk';
export { scriptedModel, scriptFileModel, type ModelScript, type ScriptStep } from './agent/adapters/scripted';
