// The workflow bundle's entry: every workflow type a Sluice worker registers.
export { toolBatch } from './batch';
export { agentSession } from './session';
export { sluiceSessionBatchWatch } from './session-batch-watch';
export { reconcileCall } from './reconcile';
