// The wire forms of the stage contracts (pipeline/stages.ts): what a stage's input and result look
// like as history records them. What crosses history is kept small: a field the other side can
// rebuild exactly is left out (an empty list, the usual gate, the generic card, a profile the
// reply already gave for the tool, content that is the plain rendering of the value). Each unpack
// is the exact inverse of its pack, and takes the forms 1.0.0 recorded as they are, so its
// histories still replay.
import { batchOfWorkflowId } from '../pipeline/batch-id';
import { genericCard } from '../pipeline/cards';
import { isKeyedDigest } from '../pipeline/digest';
import { renderValue } from '../pipeline/normalize';
import type { SeqClaim, SeqClaimRequest } from '../pipeline/seq-claim';
import type { BodyResult, CallRef, Gate, PreflightResult, StagePlan, ToolProfile } from '../pipeline/stages';
import type { Candidate, Card, ContentBlock, EventDraft, Json, StatePatch, UserMessage } from '../pipeline/types';

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

export interface SettleRequest {
  ref: WireCallRef;
  candidate: Candidate;
  skipPostExecute: boolean;
  /** Contexts so far, in the order they will be injected. */
  contexts: { pre: UserMessage[]; body: UserMessage[]; wrapper: UserMessage[] };
}

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

/**
 * A batch's first worker round: the claim, then (only if it holds) the preflight of the first
 * group of calls, so the first workflow task waits for one local activity instead of two.
 */
export interface FirstRoundActivities {
  claimThenPreflight(request: FirstRoundRequest): Promise<FirstRound>;
}

interface FirstRoundRequest {
  claim: SeqClaimRequest;
  /** The first group's calls, preflighted once the claim holds. */
  refs: WireCallRef[];
  /**
   * How many calls the whole batch has: the group is all the worker sees otherwise. A local
   * activity's input is not recorded, so this costs no history; it lets the round say `straight`
   * only for a batch that can use it.
   */
  batchCalls: number;
}

/** What the first round recorded: its marker's result, read on replay as it was recorded. */
interface FirstRound {
  claim: SeqClaim;
  preflight?: PreflightReply;
  /**
   * A batch of one call runs it straight through: admit, body, settle, without the model-order
   * scheduler (workflows/batch.ts). Set by workers of the build that does so, for a batch of one
   * call; a round recorded before has none, and its batch replays on the scheduler.
   */
  straight?: true;
}
