// Every error the client side throws is a SluiceError, so an integration catches one class and
// still tells the cases apart. Each message says what happened and what to do.
import type { DecisionRefusal } from '../pipeline/types';

export class SluiceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A decision the batch did not take: expired, decided already, unknown, or bound to other arguments. */
export class DecisionRefusedError extends SluiceError {
  constructor(readonly refusal: DecisionRefusal) {
    super(`decision refused: ${refusal.message}`);
  }
}

/** The CLI was called wrongly (exit code 2). */
export class UsageError extends SluiceError {}

/** Input that cannot be taken: a malformed batch, calls file, history, or codec request. */
export class InvalidInputError extends SluiceError {}

/** A batch that ended in a failure (a seq conflict, an output too large): the batch's own words, not Temporal's wrapper. */
export class BatchFailedError extends SluiceError {
  constructor(
    readonly workflowId: string,
    readonly cause: Error,
  ) {
    super(`batch ${workflowId} failed: ${cause.message}`);
  }
}

/**
 * The (session, turn, step) of a batch that exists already, submitted with other calls: Sluice
 * refuses rather than return the first batch's outcome for calls it never ran.
 */
export class BatchConflictError extends SluiceError {
  constructor(
    readonly workflowId: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A session id numbered by two writers: a durable session (startSession) and tool batches run under
 * the same id with runBatch (or an earlier run of the session). A session's log holds one
 * numbering, so the events of the second writer never reach it; a durable session needs an id of
 * its own.
 */
export class SessionIdConflictError extends SluiceError {
  constructor(
    readonly sessionId: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * No worker polls the task queue a batch or session was sent to (SluiceClientOptions.noWorker
 * 'fail'). What was started stays started: the same request sent again attaches to it.
 */
export class NoWorkerError extends SluiceError {
  constructor(
    readonly taskQueue: string,
    message: string,
  ) {
    super(message);
  }
}

/** Something asked for is not there: a history, a batch, a session's events. */
export class NotFoundError extends SluiceError {}

/** A history file or batch that cannot be found or read. */
export class HistoryNotFound extends NotFoundError {}

/** No Temporal server answered, or it refused what Sluice needs from it (search attributes). */
export class ServerError extends SluiceError {}

/** Configuration the command needs is missing or wrong (e.g. SLUICE_CODEC_KEYS). */
export class ConfigError extends SluiceError {}
