// What one call carries between its stages, as types of their own: the admission (stages 1–6),
// the settlement (what settle starts from), and where a call stands. call-pipeline.ts makes
// them; the approval stage, the look-ahead and the stage runners read them.
import type { CallRef, ToolProfile } from '../pipeline/stages';
import type { CallStage, Candidate, Card, PolicyBinding, ToolCall, UserMessage } from '../pipeline/types';

/** Code Mode: the run_code call a sub-call belongs to, and the outermost call of the batch. */
export interface Lineage {
  parentCallId?: string;
  rootCallId?: string;
}

/** A call after admission: either free to run its body, or already holding its outcome-to-be. */
export interface Admission {
  call: ToolCall;
  lineage: Lineage;
  /** Set once the arguments snapshotted: from then on, the stages have something to run on. */
  ref?: CallRef;
  card: Card;
  profile?: ToolProfile;
  preContexts: UserMessage[];
  verdict: { kind: 'run' } | ({ kind: 'settle' } & Settlement);
  /**
   * A person said yes, and the guards are to judge the call in its body's activity
   * (guardThenExecuteBody), under the policy the ask was raised under, if any.
   */
  guardsFirst?: { askedUnder?: PolicyBinding };
}

/** What settle starts from: the body's candidate, or the one admission wrote instead. */
export interface Settlement {
  candidate: Candidate;
  /** A failure of the pipeline itself skips post-execute; a denial or a tool's error does not. */
  skipPostExecute: boolean;
  bodyContexts?: UserMessage[];
  wrapperContexts?: UserMessage[];
}

/** Where each call stands, for the batch's state query. */
export interface CallTracker {
  stage(callId: string, stage: CallStage, isError?: boolean): void;
}

/** An admission that already holds the call's outcome-to-be: the body will not run. */
export function settledAtAdmission(
  call: ToolCall,
  lineage: Lineage,
  opts: { card: Card; candidate: Candidate; skipPostExecute: boolean; ref?: CallRef },
): Admission {
  return {
    call,
    lineage,
    ref: opts.ref,
    card: opts.card,
    preContexts: [],
    verdict: { kind: 'settle', candidate: opts.candidate, skipPostExecute: opts.skipPostExecute },
  };
}
