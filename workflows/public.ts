// `sluice/workflow`: what a user's own workflow code may import. Bundle-safe (no Node, no
// activities, no worker code): the batch workflow's name and type, its signal, update and query,
// its id, its search attribute keys, and the child-batch helper.
import './needs-workflow-package';
import type { toolBatch } from './batch';

/**
 * The batch workflow's type, for typed handles: `getHandle<ToolBatchWorkflow>(batchWorkflowId(...))`.
 * Its result is a BatchOutputWire (each result's content once); `expandBatchOutput` reads it.
 */
export type ToolBatchWorkflow = typeof toolBatch;
export { toolBatchChild, type ChildBatchOptions } from './child';
export {
  AWAITING_APPROVAL,
  BATCH_WORKFLOW,
  batchWorkflowId,
  codeCallUpdate,
  DECISION_REFUSED,
  decideSignal,
  decideUpdate,
  DEFAULT_TASK_QUEUE,
  PENDING_APPROVALS,
  SESSION_ID,
  stateQuery,
} from './definitions';
export {
  cancelSessionSignal,
  interruptSignal,
  messageSignal,
  sendMessageUpdate,
  SESSION_WORKFLOW,
  sessionQuery,
  sessionWorkflowId,
} from './session-definitions';
export type { BatchRequest } from '../pipeline/batch-input';
export { expandBatchOutput, type BatchOutputWire, type WireResult } from '../codec/output';
export type * from '../pipeline/types';
