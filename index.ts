// `sluice`: what a config module writes against — defineTool, defineConfig, the manifest helpers,
// the errors and the types. Loads no Temporal runtime and names no optional package in its
// declarations. The rest is layered: sluice/client (run batches, decide approvals), sluice/worker
// (host Sluice), sluice/workflow (inside your workflows), sluice/agent (model adapters and message
// converters), sluice/tools, sluice/hooks, sluice/code-mode. docs/api-report.md lists every export.
export {
  defineConfig,
  defineTool,
  parseToolManifest,
  toolManifest,
  ToolOutput,
  toolOutput,
  toolSchemas,
} from './define/config';
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
} from './define/config';
// What a tool body throws for an error result the model reads, with no retry (docs/tools.md).
export { ToolFailure } from './define/tool-failure';
export type { JsonSchema, ToolInputSchema } from './define/tool-schema';
export type { ConfigExport } from './worker/load-config';
export type { ResultStore } from './stores/claim-check';
export type { EventSink } from './stores/sink';
export type { PostVerdict } from './pipeline/fold';
// The errors and the shared types, as `sluice/client` exports them too.
export * from './client/common-exports';
// The model types a config's `models` names; the adapters and converters are in sluice/agent.
export type { ModelAdapter, ModelRequest, ModelReply, ModelEntry } from './agent/models';
