// Sluice's public surface.
export { defineConfig, defineTool, toolOutput, toolSchemas } from './worker/config';
export type {
  SluiceConfig,
  ToolDefinition,
  ToolContext,
  StageContext,
  PostExecuteContext,
  PreExecuteHandler,
  Guard,
  ExecuteWrapper,
  PostExecuteHandler,
  ResultObserver,
} from './worker/config';
export { createSluiceWorker, DEFAULT_TASK_QUEUE } from './worker/worker';
export { JsonlSessionLog, type EventSink } from './worker/sink';
export { startDevServer, findTemporalCli } from './worker/dev-server';
export { SluiceClient } from './client/client';
export {
  BatchFailedError,
  ConfigError,
  DecisionRefusedError,
  HistoryNotFound,
  InvalidInputError,
  NotFoundError,
  ServerError,
  SluiceError,
  UsageError,
} from './client/errors';
export { connect } from './client/connection';
export { ensureSearchAttributes } from './client/setup';
export { batchWorkflowId, decideSignal, decideUpdate, stateQuery } from './workflows/definitions';
export { ErrorCodes, FailureTypes, type ErrorCode } from './pipeline/errors';
export type * from './pipeline/types';
export { fsTools, todoWriteTool, bashTool, ledgerWriteIntent, ledgerEditIntent, ToolErrorCodes } from './tools';
export { commandHooks, permissionRules } from './hooks';
export { mcpTools, mcpSource, type McpSourceOptions, type McpToolOverride } from './tools/mcp';
export { codeModeTool, type CodeModeOptions } from './tools/code-mode';
export * from './agent/convert';
export type * from './pipeline/session';
export { startSession, sessionHandle, SessionHandle, type SessionRequest } from './client/session';
export {
  sessionWorkflowId,
  sendMessageUpdate,
  messageSignal,
  interruptSignal,
  cancelSessionSignal,
  sessionQuery,
} from './workflows/session-definitions';
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
