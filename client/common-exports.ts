// What `sluice` and `sluice/client` both export, written once: the error classes and codes, and
// the types of batches, results, events and sessions. Loads no Temporal runtime, so the root entry
// can re-export it.
export {
  BatchConflictError,
  BatchFailedError,
  ConfigError,
  DecisionRefusedError,
  HistoryNotFound,
  InvalidInputError,
  NoWorkerError,
  NotFoundError,
  ServerError,
  SessionIdConflictError,
  SluiceError,
  UsageError,
} from '../support/errors';
export { MissingPackageError } from '../support/optional';
export { ErrorCodes, FailureTypes, type ErrorCode } from '../pipeline/errors';
export type { BatchRequest } from '../pipeline/batch-input';
export type * from '../pipeline/events';
export type * from '../pipeline/types';
export type * from '../pipeline/session';
