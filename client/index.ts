// `sluice/client`: an agent process's side — run or attach to a batch, decide approvals, read a
// session's events. Loads no worker runtime, no activities and no file-system code.
export {
  SluiceClient,
  toBatchInput,
  type ApprovalsClient,
  type BatchHandle,
  type SluiceClientOptions,
} from './client';
export { sealIdentity, sealKeyFromEnv, type SealKey } from './identity';
export { expandBatchOutput, type BatchOutputWire, type WireResult } from '../codec/output';
// The errors and the shared types, as `sluice` exports them too.
export * from './common-exports';
export {
  batchVersion,
  deploymentStatus,
  setCurrentVersion,
  type DeploymentStatus,
  type DeploymentVersionSummary,
} from './deployment';
export { connectClient as connect, type ConnectOptions, type Connected } from '../temporal/client-connection';
export { ensureSearchAttributes } from '../temporal/setup';
export {
  BATCH_WORKFLOW,
  batchWorkflowId,
  DEFAULT_TASK_QUEUE,
  decideSignal,
  decideUpdate,
  stateQuery,
} from '../workflows/definitions';
export { startSession, sessionHandle, SessionHandle, type SessionRequest } from './session';
// Client tools: the session's key, and the bodies of its runsOn: 'client' tools served here (docs/sessions.md).
export {
  createClientKey,
  loadClientKey,
  saveClientKey,
  serveClientTools,
  type ClientKey,
  type ClientToolServer,
  type ServeClientToolsOptions,
} from './client-tools';
export { followSessionEvents, type SessionEventSource } from './session-events';
export {
  cancelSessionSignal,
  interruptSignal,
  messageSignal,
  sendMessageUpdate,
  sessionQuery,
  sessionWorkflowId,
} from '../workflows/session-definitions';
export { isEvent } from '../pipeline/events';
export {
  RECONCILE_CHOICES,
  RECONCILE_WORKFLOW,
  reconcileWorkflowId,
  type ReconcileChoice,
  type ReconcileDecision,
  type ReconcileInput,
  type Reconciliation,
} from '../pipeline/reconcile';
// The agent SDKs' approval points answered by Sluice (docs/gateway.md, "Agent SDKs").
export { askSluice, type SluiceApprovalOptions, type SluiceVerdict } from './integrations/approval';
export {
  sluiceApprovalResponses,
  type AiSdkApprovalRequest,
  type AiSdkApprovalResponse,
} from './integrations/ai-sdk';
export {
  sluiceDecideInterruptions,
  type AgentsApprovalItem,
  type AgentsInterruptedRun,
} from './integrations/openai-agents';
export {
  type CanUseToolResult,
  type PreToolUseInput,
  type PreToolUseOutput,
  sluiceCanUseTool,
  sluicePreToolUse,
  type SluicePreToolUseMatcher,
} from './integrations/claude-agent-sdk';
