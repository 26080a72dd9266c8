// The contracts between the batch workflow and the stage activities. Everything here crosses
// Temporal's wire, so it is plain JSON; the packed forms history records are codec/stages.ts's.
import type { SessionRecord } from './facts';
import type { ApprovalLifecycle } from './lifecycle';
import type { QuorumSettings } from './quorum';
import type {
  ApprovalPolicy,
  AskTerms,
  Candidate,
  Card,
  EventDraft,
  JsonObject,
  PolicyBinding,
  RetryPolicyInput,
  SessionState,
  StatePatch,
  ToolResult,
  UserMessage,
} from './types';

/** Which call a stage is working on, with everything it may read. */
export interface CallRef {
  workflowId: string;
  sessionId: string;
  turn: number;
  step: number;
  callId: string;
  name: string;
  /** The frozen argument snapshot every stage sees. */
  args: JsonObject;
  /**
   * Worker-side, the keyed digest (codec/args-digest.ts). In the workflow, the keyed digest the
   * preflight returned for a call a person or grant may decide, else the workflow's own sha-256,
   * which never crosses to a worker (WireCallRef).
   */
  argsDigest: string;
  /** Stable across retries and worker restarts: `<workflowId>/<callId>`. */
  idempotencyKey: string;
  state: SessionState;
  /** Code Mode: the run_code call a sub-call belongs to, and the outermost call of the batch. */
  parentCallId?: string;
  rootCallId?: string;
  /** This call's share of the batch's Temporal budget, in JSON bytes (pipeline/budget.ts). */
  inlineBytes?: number;
  /** Guards after a person's decision: the policy the ask was raised under, to judge the call again. */
  askedUnder?: PolicyBinding;
  /** The calls recorded before this one, as the workflow holds them: what session facts fold (pipeline/facts.ts). */
  record?: SessionRecord;
  /** The batch's facts scope (BatchInput.factsScope): the pre-execute stage reads and writes its calls in the fact store. */
  factsScope?: string;
}

/** Where a call stands after pre-execute (and guards, when no person has to be asked). */
export type Gate =
  | { kind: 'dispatch' }
  | ({
      kind: 'ask';
      approvers?: QuorumSettings;
      /**
       * Set by workers whose body activity can run the guards first (guardThenExecuteBody): after
       * a yes, the guards judge the call in the activity that runs its body, not in a stage of their
       * own. Absent in preflights recorded before, whose guards replay as their own stage.
       */
      guardsInBody?: true;
    } & AskTerms)
  /** A denial: becomes `Error: <message>` and still goes through post-execute. */
  | { kind: 'denied'; message: string; code: string }
  /** A failure of the pipeline itself: skips post-execute. */
  | { kind: 'failed'; message: string; code: string };

/** What the workflow needs to know of a tool to schedule its body; the registry stays worker-side. */
export interface ToolProfile {
  concurrencySafe: boolean;
  timeoutMs: number;
  heartbeatTimeoutMs: number;
  retry: RetryPolicyInput;
  approval: ApprovalPolicy;
  approvalTimeoutMs?: number;
  /** A decision must carry a verified identity (in one of `approverGroups`, when given). */
  identityRequired?: boolean;
  approverGroups?: string[];
  /** N distinct approvers, never the session's user (QuorumSettings). */
  quorum?: QuorumSettings;
  lifecycle?: ApprovalLifecycle;
  /** The worker has notifiers: asks are announced through them. */
  notify?: boolean;
  /** The tool has a finalizeContent or a presentResult: code that only the worker can run at settle. */
  finalizes: boolean;
  /** The body must not run twice: never retried; a lost attempt ends OUTCOME_UNKNOWN. */
  atMostOnce?: true;
  /**
   * The tool declared its body safe to run as a local activity. Recorded with the preflight, so a
   * replay schedules the body the same way whatever the worker's config says now.
   */
  localBody?: true;
  /** The body runs on the session's client (pipeline/client-tools.ts), which must take it within clientTimeoutMs. */
  runsOn?: 'client';
  clientTimeoutMs?: number;
}

interface StageOutput {
  contexts: UserMessage[];
  events: EventDraft[];
}

export interface PreflightResult extends StageOutput {
  /** Results name their call: a local activity's marker keeps the result, not the input. */
  callId: string;
  gate: Gate;
  card: Card;
  profile?: ToolProfile;
  /**
   * The keyed digest of the call's arguments (codec/args-digest.ts), for a call the workflow
   * binds to it: one that asks (approvers see it, decisions and grants are bound to it) and one
   * that must not run twice (a lost attempt's reconcile card shows it). Absent otherwise: every
   * worker-side stage keys the arguments itself (StageKit.keyed).
   */
  argsDigest?: string;
}

/**
 * Which stages run as local activities, as the worker's config allows: a stage whose extensions
 * are all quick runs in the worker that runs the batch, recorded as one marker, and takes the
 * calls that are ready together. The workflow learns the plan from the first preflight, so a
 * replay takes the same path.
 */
export interface StagePlan {
  preflight: StageKind;
  guards: StageKind;
  settle: StageKind;
  /**
   * Whether any post-execute handler or tools/result observer is configured. With none, a call
   * whose tool does not finalize settles in the workflow: the same normalization, no activity.
   */
  settleHooks: boolean;
  maxResultChars?: number;
}
type StageKind = 'local' | 'activity';

export interface GuardsResult extends StageOutput {
  callId: string;
  gate: Gate;
}

export interface BodyResult {
  /** `failed`: a wrapper around dispatch (or a guard run first) threw, so post-execute is skipped. */
  outcome: 'ok' | 'failed';
  candidate: Candidate;
  bodyContexts: UserMessage[];
  wrapperContexts: UserMessage[];
  events: EventDraft[];
  statePatch?: StatePatch;
  /**
   * The guards the same activity ran before the body (guardThenExecuteBody): what they said and
   * added. When they did not dispatch, the body did not run and the candidate is their denial.
   */
  guards?: GuardsRun;
}

/** The guards run inside a body's activity, as their own stage's result says them (GuardsResult). */
interface GuardsRun {
  gate: Gate;
  contexts: UserMessage[];
  events: EventDraft[];
}

export interface SettleResult {
  callId: string;
  result: ToolResult;
  card: Card;
  events: EventDraft[];
  /** The candidate settle started from, when post-execute, normalization or finalizeContent changed it (for the audit). */
  before?: Candidate;
}

/** A body runs as a local activity when its tool says so, unless it must not run twice (a local result is lost with its workflow task). */
export function bodyRunsLocally(p: ToolProfile | undefined): boolean {
  return p?.localBody === true && !p.atMostOnce;
}

/** Default body options when a tool sets none. */
export const BODY_DEFAULTS = {
  timeoutMs: 5 * 60_000,
  heartbeatTimeoutMs: 10_000,
  retry: { maximumAttempts: 3, initialIntervalMs: 500, backoffCoefficient: 2 } as RetryPolicyInput,
};

/** The longest timeout a local body may have, and the one it gets when it sets none. */
export const MAX_LOCAL_BODY_TIMEOUT_MS = 60_000;
export const DEFAULT_LOCAL_BODY_TIMEOUT_MS = 10_000;

export { genericCard, genericResultCard } from './cards';
