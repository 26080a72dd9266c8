// The pipeline's own vocabulary of failure: the codes a call's error result carries when the
// pipeline (not a tool) decided it, and the type names of the Temporal failures Sluice throws.
// Tools keep their own codes (tools/errors.ts: FS_*, CODE_RUN_FAILED, COMMAND_TIMEOUT, ...).

/** `error.code` of results the pipeline writes. Stable: models, hooks and UIs match on them. */
export const ErrorCodes = {
  /** Arguments too long to send, not lossless JSON, or failing the tool's schema. */
  INVALID_ARGS: 'INVALID_ARGS',
  UNKNOWN_TOOL: 'UNKNOWN_TOOL',
  /** A body's value, or a finalizeContent's content, that cannot be recorded. */
  INVALID_TOOL_OUTPUT: 'INVALID_TOOL_OUTPUT',
  /** The body was running when the batch was cancelled. */
  ABORTED: 'ABORTED',
  /** The batch was cancelled before the call's body started: it did not run. */
  ABORTED_BEFORE_DISPATCH: 'ABORTED_BEFORE_DISPATCH',
  /** A pre-execute deny, any approval that was not a yes, or a guard. */
  DENIED: 'DENIED',
  /** A post-execute handler blocked the result, with feedback for the model. */
  BLOCKED: 'BLOCKED',
  /** The body threw (after its retries) or timed out. */
  TOOL_FAILED: 'TOOL_FAILED',
  /** An extension threw (pre-execute, guard, execute wrapper, post-execute) or a stage failed for good. */
  PIPELINE_FAILED: 'PIPELINE_FAILED',
  /** A session's model sent a tool call with no id, or an id already used in the same message: not run. */
  INVALID_CALL_ID: 'INVALID_CALL_ID',
  /**
   * A body that must not run twice (`atMostOnce`) lost its attempt after it may have started: it
   * may or may not have done its work. Not run again; an operator reconciles it.
   */
  OUTCOME_UNKNOWN: 'OUTCOME_UNKNOWN',
  /**
   * A client tool (`runsOn: 'client'`) that no client of the session took within its
   * `clientTimeoutMs`, or whose session has no client: its body did not run.
   */
  CLIENT_UNAVAILABLE: 'CLIENT_UNAVAILABLE',
  /** A client tool's result not signed by the session's client key: refused, not recorded as the body's. */
  CLIENT_UNVERIFIED: 'CLIENT_UNVERIFIED',
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** `type` of the ApplicationFailures Sluice throws, as Temporal (and `sluice audit`) shows them. */
export const FailureTypes = {
  /** A tool body threw: the body activity fails and Temporal retries it by the tool's policy. */
  TOOL_BODY: 'SluiceToolBodyError',
  /** The batch input is malformed: the workflow fails at once, nothing recorded. */
  INVALID_BATCH: 'SluiceInvalidBatch',
  /** The batch output would exceed Temporal's payload limit. */
  OUTPUT_TOO_LARGE: 'SluiceOutputTooLarge',
  /** A decision update the batch did not take (details: a DecisionRefusal). */
  DECISION_REFUSED: 'SluiceDecisionRefused',
  /** Another batch of the session claimed this batch's seqs first: it ran nothing and may be sent again. */
  SEQ_CONFLICT: 'SluiceSeqConflict',
  /** A session workflow's input is malformed. */
  INVALID_SESSION: 'SluiceInvalidSession',
  /** The model provider refused the request for good (bad key, bad request): not retried. */
  MODEL_REFUSED: 'SluiceModelRefused',
  /** A reconcile decision the unknown outcome's workflow did not take (already reconciled, no evidence, ...). */
  RECONCILE_REFUSED: 'SluiceReconcileRefused',
  /** A batch a workflow attached to (toolBatchChild) ended without an output: waiting again cannot change that. */
  BATCH_FAILED: 'SluiceBatchFailed',
  /** Workflow code met a state it must never reach: a bug in Sluice, not in the input. */
  INTERNAL: 'SluiceInternalError',
} as const;
