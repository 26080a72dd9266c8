// The words of the outcomes the workflow itself writes: a denial after approval, a stage that
// failed for good, a body that failed, timed out or was aborted. Each says what happened to the
// call and, where the model can act on it, what to do.
import { ActivityFailure, CancelledFailure, TimeoutFailure } from '@temporalio/workflow';
import { errorCandidate } from '../pipeline/normalize';
import { ErrorCodes } from '../pipeline/errors';
import type { Candidate } from '../pipeline/types';

export function approvalDenial(outcome: string, reason?: string, by?: string): string {
  switch (outcome) {
    case 'rejected':
      return `the call was rejected${by ? ` by ${by}` : ''}${reason ? `: ${reason}` : ''}. Do not retry it unchanged; ask the user what they want instead.`;
    case 'cancelled':
      return `${reason ?? 'the batch was cancelled'} while this call awaited approval; it did not run.`;
    default:
      return `approval was required but not given (${reason ?? 'no approval channel answered'}); the call did not run.`;
  }
}

/** A stage activity that failed for good (its retries ran out): the call fails, the batch goes on. */
export function stageFailure(stage: string, err: unknown): Candidate {
  return errorCandidate(
    `the ${stage} stage failed and the call did not complete: ${causeMessage(err)}`,
    ErrorCodes.PIPELINE_FAILED,
  );
}

/** The body activity failed for good: aborted by a cancel, timed out, or the tool's own error. */
export function bodyFailure(name: string, timeoutMs: number, err: unknown): Candidate {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof CancelledFailure)
    return errorCandidate(`${name} was aborted because the batch was cancelled`, ErrorCodes.ABORTED);
  if (cause instanceof TimeoutFailure)
    return errorCandidate(
      `${name} timed out (limit ${Math.round(timeoutMs / 1000)}s) and was not retried further`,
      ErrorCodes.TOOL_FAILED,
    );
  return errorCandidate(causeMessage(err), ErrorCodes.TOOL_FAILED);
}

function causeMessage(err: unknown): string {
  let e = err as { cause?: unknown; message?: string } | undefined;
  while (e?.cause && (e instanceof ActivityFailure || !(e as { message?: string }).message)) e = e.cause as typeof e;
  return e?.message ?? String(err);
}
