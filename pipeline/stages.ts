// The contracts between the batch workflow and the stage activities. Everything here crosses
// Temporal's wire, so it is plain JSON.
import type { SessionRecord } from './facts';
import type { ApprovalLifecycle } from './lifecycle';
import type { QuorumSettings } from './quorum';
import { batchOfWorkflowId } from './batch-id';
import { genericCard } from './cards';
import { isKeyedDigest } from './digest';
import { renderValue } from './normalize';
import type {
  ApprovalPolicy,
  Candidate,
  Card,
  ContentBlock,
  EventDraft,
  Json,
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
   * Worker-side, the keyed digest (define/args-digest.ts). In the workflow, the keyed digest the
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
}

/** Where a call stands after pre-execute (and guards, when no person has to be asked). */
export type Gate =
  | { kind: 'dispatch' }
  | {
      kind: 'ask';
      reason?: string;
      approvers?: QuorumSettings;
      policy?: PolicyBinding;
      /**
       * Set by workers whose body activity can run the guards first (guardThenExecuteBody): after
       * a yes, the guards judge the call in the activity that runs its body, not in a stage of their
       * own. Absent in preflights recorded before, whose guards replay as their own stage.
       */
      guardsInBody?: true;
    }
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
  /**
   * The keyed digest of the call's arguments (define/args-digest.ts), for a call the workflow
   * binds to it: one that asks (approvers see it, decisions and grants are bound to it) and one
   * that must not run twice (a lost attempt's reconcile card shows it). Absent otherwise: every
   * worker-side stage keys the arguments itself (StageKit.keyed).
   */
  argsDigest?: string;
}

/** Preflight results for calls in model order; `deferred` (and none) when it must run as an activity. */
export interface PreflightReply {
  /** Read it with unpackPlan. */
  plan: PackedPlan;
  /** Absent in a packed reply: false. */
  deferred?: boolean;
  /**
   * Full results (histories recorded before) or packed ones, a result that says no more than its
   * call id being that id alone: read them with unpackPreflightResults.
   */
  results: (PackedPreflightResult | string)[];
  /** Packed replies: each tool's profile, once. */
  profiles?: Record<string, ToolProfile>;
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

/**
 * A plan as a packed reply carries it: a stage that runs locally left out (the usual worker's plan
 * is `{ settleHooks }`). Plans recorded before name all three stages and read the same; one from
 * before `settleHooks` existed keeps it absent, as it was read then.
 */
export type PackedPlan = Omit<StagePlan, StageName> & Partial<Pick<StagePlan, StageName>>;
type StageName = 'preflight' | 'guards' | 'settle';
const STAGE_NAMES: StageName[] = ['preflight', 'guards', 'settle'];

function packPlan(plan: StagePlan): PackedPlan {
  const out: PackedPlan = { ...plan };
  for (const k of STAGE_NAMES) if (out[k] === 'local') delete out[k];
  return out;
}

export function unpackPlan(plan: PackedPlan): StagePlan {
  return { preflight: 'local', guards: 'local', settle: 'local', ...plan };
}

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
export interface GuardsRun {
  gate: Gate;
  contexts: UserMessage[];
  events: EventDraft[];
}

export interface SettleRequest {
  ref: WireCallRef;
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

// ─── Wire forms ───────────────────────────────────────────────────────────────────────────────
// What crosses history is kept small: a field the other side can rebuild exactly is left out
// (an empty list, the usual gate, the generic card, a profile the reply already gave for the tool,
// content that is the plain rendering of the value). Each unpack is the exact inverse of its pack,
// and takes the full form as it is, so histories recorded before still replay.

/** A preflight result as it crosses history: see packPreflightReply. */
export interface PackedPreflightResult {
  callId: string;
  /** Absent: dispatch. */
  gate?: Gate;
  /** Absent: the generic card of the call's own name and arguments. */
  card?: Card;
  /** Absent: the reply's profile for the tool, if any; null: none. */
  profile?: ToolProfile | null;
  contexts?: UserMessage[];
  events?: EventDraft[];
  argsDigest?: string;
}

/** What the preflight's packing reads of a call: the rest of a reference does not matter to it. */
type CalledTool = Pick<CallRef, 'callId' | 'name' | 'args'>;

export function packPreflightReply(plan: StagePlan, results: PreflightResult[], refs: CalledTool[]): PreflightReply {
  const profiles: Record<string, ToolProfile> = Object.create(null);
  const packed = results.map((r): PackedPreflightResult | string => {
    const ref = refs.find((x) => x.callId === r.callId);
    const out: PackedPreflightResult = { callId: r.callId };
    if (r.gate.kind !== 'dispatch') out.gate = r.gate;
    if (!ref || !sameJson(r.card, genericCard(ref.name, ref.args))) out.card = r.card;
    const known = ref && Object.hasOwn(profiles, ref.name) ? profiles[ref.name] : undefined;
    if (!r.profile) {
      if (known || !ref) out.profile = null;
    } else if (!ref) out.profile = r.profile;
    else if (!known) profiles[ref.name] = r.profile;
    else if (!sameJson(known, r.profile)) out.profile = r.profile;
    if (r.contexts.length) out.contexts = r.contexts;
    if (r.events.length) out.events = r.events;
    if (r.argsDigest !== undefined) out.argsDigest = r.argsDigest;
    // A call dispatched with nothing to say, the usual one: its id alone.
    return Object.keys(out).length === 1 ? r.callId : out;
  });
  return {
    plan: packPlan(plan),
    results: packed,
    ...(Object.keys(profiles).length ? { profiles: { ...profiles } } : {}),
  };
}

/** The full results of a preflight reply (packed or not), for the calls it was asked about. */
export function unpackPreflightResults(reply: PreflightReply, refs: CalledTool[]): PreflightResult[] {
  return reply.results.map(packedPreflightResult).map((r) => {
    const ref = refs.find((x) => x.callId === r.callId);
    if (!ref) throw new Error(`internal: a preflight result for ${r.callId}, a call it was not asked about`);
    const profile =
      r.profile === null
        ? undefined
        : (r.profile ??
          (reply.profiles && Object.hasOwn(reply.profiles, ref.name) ? reply.profiles[ref.name] : undefined));
    return {
      callId: r.callId,
      gate: r.gate ?? { kind: 'dispatch' },
      card: r.card ?? genericCard(ref.name, ref.args),
      ...(profile ? { profile } : {}),
      contexts: r.contexts ?? [],
      events: r.events ?? [],
      ...(r.argsDigest !== undefined ? { argsDigest: r.argsDigest } : {}),
    };
  });
}

/** A packed preflight result as an object: a call id alone is a call dispatched with nothing to say. */
export function packedPreflightResult(r: PackedPreflightResult | string): PackedPreflightResult {
  return typeof r === 'string' ? { callId: r } : r;
}

/**
 * A call reference as it crosses to a worker: with `argsDigest` only when it is a keyed digest
 * the workflow holds (a person, a grant or a reconcile card may be bound to it). Otherwise the
 * worker keys the arguments itself (StageKit.keyed), so the workflow's unkeyed sha-256 never
 * reaches a history or an extension, and an allowed call's digest is not in its history at all.
 */
export type WireCallRef = Omit<CallRef, 'argsDigest'> & { argsDigest?: SentDigest };

/**
 * A keyed digest the workflow may send (withoutOwnDigest checked it): a stage's input takes no
 * other string, so a call site that passes a `CallRef` as it is does not compile.
 */
export type SentDigest = string & { readonly __sent: true };

export function withoutOwnDigest(ref: CallRef): WireCallRef {
  if (isKeyedDigest(ref.argsDigest)) return ref as WireCallRef;
  const { argsDigest: _own, ...rest } = ref;
  return rest;
}

/**
 * A body's call reference as it crosses history: the workflow id and idempotency key come from the
 * activity's own info, and so do the session id, turn and step when the workflow id is the batch's
 * usual `sluice-batch:<sessionId>:<turn>:<step>`.
 */
export type PackedCallRef = Omit<
  WireCallRef,
  'workflowId' | 'idempotencyKey' | 'state' | 'sessionId' | 'turn' | 'step'
> &
  Partial<Pick<CallRef, 'workflowId' | 'idempotencyKey' | 'state' | 'sessionId' | 'turn' | 'step'>>;

export function packCallRef(ref: CallRef): PackedCallRef {
  const { workflowId, idempotencyKey, state, sessionId, turn, step, ...rest } = withoutOwnDigest(ref);
  // Only what the worker could not rebuild from the workflow id it runs for.
  const named = batchOfWorkflowId(workflowId);
  const out: PackedCallRef =
    named?.sessionId === sessionId && named.turn === turn && named.step === step
      ? rest
      : { sessionId, turn, step, ...rest };
  if (idempotencyKey !== `${workflowId}/${ref.callId}`) Object.assign(out, { workflowId, idempotencyKey });
  if (Object.keys(state).length) out.state = state;
  return out;
}

export function unpackCallRef(ref: PackedCallRef, workflowId: string): WireCallRef {
  const wf = ref.workflowId ?? workflowId;
  const { sessionId, turn, step } = ref.sessionId === undefined ? batchOfWorkflowIdOrThrow(wf) : (ref as CallRef);
  return {
    sessionId,
    turn,
    step,
    ...ref,
    workflowId: wf,
    idempotencyKey: ref.idempotencyKey ?? `${wf}/${ref.callId}`,
    state: ref.state ?? {},
  };
}

function batchOfWorkflowIdOrThrow(workflowId: string) {
  const named = batchOfWorkflowId(workflowId);
  if (named) return named;
  throw new Error(
    `this tool body's input has no session id, turn or step, and its workflow id ${JSON.stringify(workflowId)} does not name them: only Sluice's batch workflow may leave them out (for a workflow id of the form sluice-batch:<sessionId>:<turn>:<step>); schedule the body with its full call reference`,
  );
}

/** A body's result as it crosses history: see packBodyResult. */
export interface PackedBodyResult {
  /** Set by a local body: its marker keeps the result, not the input, so the result names its call. */
  callId?: string;
  /** Absent: ok. */
  outcome?: 'failed';
  /** Absent when the body's result is its value alone (`value`). */
  candidate?: PackedCandidate;
  /** The candidate's value, when it is all the result says: the candidate `{ value }`. */
  value?: Json;
  bodyContexts?: UserMessage[];
  wrapperContexts?: UserMessage[];
  events?: EventDraft[];
  statePatch?: StatePatch;
  /** Guards run first that said nothing (dispatch, no contexts or events): absent. */
  guards?: { gate?: Gate; contexts?: UserMessage[]; events?: EventDraft[] };
}

/** A candidate without `content` when it is the plain rendering of `value`, and without `isError: false`. */
export type PackedCandidate = Omit<Candidate, 'content' | 'isError'> & { content?: ContentBlock[]; isError?: boolean };

export function packBodyResult(r: BodyResult): PackedBodyResult | string {
  const out: PackedBodyResult = { candidate: packCandidate(r.candidate) };
  if (r.outcome !== 'ok') out.outcome = r.outcome;
  if (r.bodyContexts.length) out.bodyContexts = r.bodyContexts;
  if (r.wrapperContexts.length) out.wrapperContexts = r.wrapperContexts;
  if (r.events.length) out.events = r.events;
  if (r.statePatch) out.statePatch = r.statePatch;
  if (r.guards) {
    const g: NonNullable<PackedBodyResult['guards']> = {};
    if (r.guards.gate.kind !== 'dispatch') g.gate = r.guards.gate;
    if (r.guards.contexts.length) g.contexts = r.guards.contexts;
    if (r.guards.events.length) g.events = r.guards.events;
    if (Object.keys(g).length) out.guards = g;
  }
  // The usual result, a value rendered plainly and nothing else: the value alone, and a string
  // value as itself (what a bare activity returning it records).
  const { value, ...besides } = out.candidate!;
  if (Object.keys(out).length > 1 || Object.keys(besides).length || value === undefined) return out;
  return typeof value === 'string' ? value : { value };
}

export function unpackBodyResult(r: PackedBodyResult | BodyResult | string): BodyResult {
  if (typeof r === 'string') r = { value: r };
  // (`callId`, set by a local body for the audit, is not part of the result.)
  return {
    outcome: r.outcome ?? 'ok',
    candidate: unpackCandidate(r.candidate ?? { value: (r as PackedBodyResult).value }),
    bodyContexts: r.bodyContexts ?? [],
    wrapperContexts: r.wrapperContexts ?? [],
    events: r.events ?? [],
    ...(r.statePatch ? { statePatch: r.statePatch } : {}),
    ...(r.guards
      ? {
          guards: {
            gate: r.guards.gate ?? { kind: 'dispatch' as const },
            contexts: r.guards.contexts ?? [],
            events: r.guards.events ?? [],
          },
        }
      : {}),
  };
}

export function packCandidate(c: Candidate): PackedCandidate {
  const { content, isError, ...rest } = c;
  const out: PackedCandidate = rest;
  if (!('value' in c) || !sameJson(content, renderValue(c.value))) out.content = content;
  if (isError) out.isError = true;
  return out;
}

export function unpackCandidate(c: PackedCandidate): Candidate {
  const { content, isError, ...rest } = c;
  return { content: content ?? renderValue(c.value), isError: isError === true, ...rest };
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
