// The contracts between the batch workflow and the stage activities. Everything here crosses
// Temporal's wire, so it is plain JSON.
import type {
  ApprovalPolicy,
  Candidate,
  Card,
  EventDraft,
  JsonObject,
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
  argsDigest: string;
  /** Stable across retries and worker restarts: `<workflowId>/<callId>`. */
  idempotencyKey: string;
  state: SessionState;
  /** Code Mode: the run_code call a sub-call belongs to, and the outermost call of the batch. */
  parentCallId?: string;
  rootCallId?: string;
  /** This call's share of the batch's Temporal budget, in JSON bytes (pipeline/budget.ts). */
  inlineBytes?: number;
}

/** Where a call stands after pre-execute (and guards, when no person has to be asked). */
export type Gate =
  | { kind: 'dispatch' }
  | { kind: 'ask'; reason?: string }
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
  /** The tool has a finalizeContent or a presentResult: code that only the worker can run at settle. */
  finalizes: boolean;
  /** The body must not run twice: never retried; a lost attempt ends OUTCOME_UNKNOWN. */
  atMostOnce?: true;
}

export interface StageOutput {
  contexts: UserMessage[];
  events: EventDraft[];
}

export interface PreflightResult extends StageOutput {
  /** Results name their call: a local activity's marker keeps the result, not the input. */
  callId: string;
  gate: Gate;
  card: Card;
  profile?: ToolProfile;
  /** The keyed digest of the call's arguments, shown to approvers (worker/args-digest.ts). */
  argsDigest?: string;
}

/** Preflight results for calls in model order; `deferred` (and none) when it must run as an activity. */
export interface PreflightReply {
  plan: StagePlan;
  deferred: boolean;
  results: PreflightResult[];
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
export type StageKind = 'local' | 'activity';

export interface GuardsResult extends StageOutput {
  callId: string;
  gate: Gate;
}

export interface BodyResult {
  /** `failed`: a wrapper around dispatch threw, so post-execute is skipped. */
  outcome: 'ok' | 'failed';
  candidate: Candidate;
  bodyContexts: UserMessage[];
  wrapperContexts: UserMessage[];
  events: EventDraft[];
  statePatch?: StatePatch;
}

export interface SettleRequest {
  ref: CallRef;
  candidate: Candidate;
  skipPostExecute: boolean;
  /** Contexts so far, in the order they will be injected. */
  contexts: { pre: UserMessage[]; body: UserMessage[]; wrapper: UserMessage[] };
}

export interface SettleResult {
  callId: string;
  result: ToolResult;
  card: Card;
  events: EventDraft[];
  /** The candidate settle started from, when post-execute, normalization or finalizeContent changed it (for the audit). */
  before?: Candidate;
}

/** Default body options when a tool sets none. */
export const BODY_DEFAULTS = {
  timeoutMs: 5 * 60_000,
  heartbeatTimeoutMs: 10_000,
  retry: { maximumAttempts: 3, initialIntervalMs: 500, backoffCoefficient: 2 } as RetryPolicyInput,
};

/** The completed card when a tool has no presentResult, or it throws or returns nonsense. */
export function genericResultCard(name: string, isError: boolean): Card {
  return { title: name, summary: isError ? 'failed' : 'done' };
}

/** The card any UI shows when a tool's presentCall is missing, throws or returns nonsense. */
export function genericCard(name: string, args: JsonObject): Card {
  return { title: name, fields: args };
}
