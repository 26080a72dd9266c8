// The built-in tool families. A config picks what it needs, e.g.
//   defineConfig({ tools: [...fsTools({ root }), todoWriteTool(), bashTool({ root })] })
export {
  fsTools,
  DEFAULT_PROTECTED_NAMES,
  protectStateDir,
  ledgerEditIntent,
  ledgerWriteIntent,
  observationOf,
  versionOf,
  FS_STATE_NAMESPACE,
} from './fs';
export type {
  DiskState,
  EditIntent,
  EditIntentPolicy,
  FsToolsOptions,
  IntentDecision,
  ProtectOptions,
  Observation,
  WriteIntent,
  WriteIntentPolicy,
} from './fs';
export { todoWriteTool, validateTodos, TODO_STATE_KEY, TODO_STATE_NAMESPACE, type Todo } from './todo';
export { protectedPathArgs, type ProtectedPathArgsOptions } from './protected-args';
export { BASH_ENV_ALLOWLIST, bashTool, type BashArgs, type BashToolOptions } from './bash';
export { ToolErrorCodes } from './errors';
export {
  MCP_TOOL_ERROR,
  mcpSource,
  mcpTools,
  type HttpServer,
  type McpSource,
  type McpSourceOptions,
  type McpToolOverride,
  type StdioServer,
} from './mcp';
