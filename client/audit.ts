// `sluice audit`: what happened to every call of a batch, read from its workflow history alone —
// the stage activities (their inputs, results, attempts and failures; a local activity's marker
// keeps its result and attempt, and the results name their calls), the decisions that arrived
// by signal or update (accepted or refused), and the session events in the batch's result.
import { SESSION_WORKFLOW } from '../workflows/session-definitions';
import { type ArgumentPin, describeGrant } from '../pipeline/grants';
import type { temporal } from '@temporalio/proto';
import type {
  BatchInput,
  BatchOutput,
  Candidate,
  Card,
  ContentBlock,
  EventDraft,
  SessionEvent,
  ToolResult,
} from '../pipeline/types';
import type { CallRef, Gate, GuardsResult, SettleResult } from '../pipeline/stages';
import {
  type PackedBodyResult,
  type PackedPreflightResult,
  type PreflightReply,
  packedPreflightResult,
  type SettleRequest,
  unpackBodyResult,
} from '../codec/stages';
import { type BatchOutputWire, expandBatchOutput } from '../codec/output';
import { isEvent, type OutcomeFields } from '../pipeline/events';
import { InvalidInputError } from '../support/errors';
import { RECONCILE_UPDATE, RECONCILE_WORKFLOW, type ReconcileInput, type Reconciliation } from '../pipeline/reconcile';
import { decode, type LoadedHistory } from './history';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Failure = temporal.api.failure.v1.IFailure;

export interface StageRun {
  /** The attempt that ended the stage (1 when it was not retried). */
  attempts: number;
  /** Failed attempts the history keeps: the one before the last (as lastFailure) and the last. */
  failures: { attempt: number; message: string; type?: string }[];
  outcome: 'completed' | 'failed' | 'timed-out' | 'cancelled' | 'running';
  scheduledAt: string;
  closedAt?: string;
  /** Events the stage recorded (hook/*, fs/observed, todo/write, ...). */
  emitted: EventDraft[];
}

export interface CallAudit {
  callId: string;
  name: string;
  arguments?: string;
  /** The policy rule that decided in pre-execute (its policy/decided event), with the session facts it read. */
  policy?: PolicyAudit;
  /** Pre-execute (and, when nobody is asked, the guards): the gate it returned. */
  preExecute?: StageRun & { gate?: string; message?: string; code?: string };
  approval?: {
    id: string;
    reason?: string;
    askedAt?: string;
    expiresAt?: string;
    argsDigest?: string;
    outcome?: string;
    by?: string;
    decisionReason?: string;
    decidedAt?: string;
    latencyMs?: number;
    expired?: boolean;
    /** A session grant this decision gave. */
    grant?: { id: string; toolName: string; pins: ArgumentPin[]; text: string };
    /** The earlier session grant that allowed the call (then there was no ask). */
    grantId?: string;
    /** Lifecycle: escalations, reminders and reassignments, in order. */
    lifecycle?: { type: 'escalated' | 'reminded' | 'reassigned' | 'vote'; at: string; text: string }[];
  };
  guards?: StageRun & { gate?: string; message?: string; code?: string };
  body?: StageRun & { candidate?: { isError: boolean; text: string } };
  /** Post-execute, normalization and finalizeContent: whether they changed the body's result. */
  settle?: StageRun & {
    rewritten?: boolean;
    before?: { isError: boolean; text: string };
    after?: { isError: boolean; text: string };
  };
  result?: { isError: boolean; text: string; error?: { message: string; code?: string }; card?: Card };
  /** An unknown outcome (OUTCOME_UNKNOWN): its reconcile card and how a person settled it. */
  reconciliation?: ReconcileAudit;
}

interface PolicyAudit {
  decision: string;
  /** The format that decided: cedar, codex, gemini, opencode, claude. */
  source?: string;
  file?: string;
  line?: number;
  /** Cedar's `@id`. */
  policyId?: string;
  /** The rule's reason (Cedar's `@reason`), as the model and the approver read it. */
  message?: string;
  /** The session facts the decision read, by name: what a replay reads too. */
  facts?: Record<string, number | boolean>;
}

interface ReconcileAudit {
  id: string;
  workflowId: string;
  /** What was lost, as the card said. */
  problem: string;
  openedAt: string;
  status: 'waiting' | 'done' | 'not-done' | 'ran-again';
  by?: string;
  reason?: string;
  evidence?: string;
  decidedAt?: string;
  rerun?: { isError: boolean; text: string; code?: string };
  /** Every reconcile decision sent, with who sent it (Temporal's client identity too) and its fate. */
  attempts: {
    at: string;
    decision?: string;
    by?: string;
    identity?: string;
    result: 'applied' | 'refused' | 'pending';
    problem?: string;
  }[];
}

export interface DecisionAudit {
  at: string;
  via: 'signal' | 'update';
  approvalId?: string;
  decision?: string;
  by?: string;
  reason?: string;
  argsDigest?: string;
  /** The client identity Temporal recorded for the sender. */
  identity?: string;
  /**
   * applied: the batch took it; refused: it did not (problem says why); pending: an update still
   * open; received: a signal to a batch still running (its fate shows once the batch completes);
   * ignored: a signal the batch neither took nor recorded a refusal for (it came after the batch
   * settled, or past the cap on recorded refusals).
   */
  result: 'applied' | 'refused' | 'pending' | 'received' | 'ignored';
  outcome?: string;
  problem?: string;
}

export interface BatchAudit {
  workflowId: string;
  sessionId: string;
  turn: number;
  step: number;
  status: 'running' | 'completed' | 'failed' | 'cancelled' | 'terminated' | 'timed-out' | 'continued-as-new';
  startedAt: string;
  closedAt?: string;
  failure?: string;
  calls: CallAudit[];
  decisions: DecisionAudit[];
  /** Context messages injected after the batch settled. */
  contexts: { source?: string; content: string }[];
  /** The session events of the batch, from its result (empty while it runs or when it failed). */
  events: SessionEvent[];
}

export interface SessionAudit {
  batches: BatchAudit[];
  /** Every event of the batches that completed, in seq order: the session log, rebuilt. */
  events: SessionEvent[];
}

export function auditHistories(histories: LoadedHistory[]): SessionAudit {
  const reconciles = histories.filter(isReconcileHistory).map(auditReconcile);
  // The session workflow's own runs (its search attribute names the session too) hold no calls:
  // the audit is of the batches it started.
  const batches = histories.filter((h) => !isReconcileHistory(h) && !isSessionHistory(h)).map((h) => auditHistory(h));
  for (const r of reconciles) {
    const c = batches.find((b) => b.workflowId === r.batchWorkflowId)?.calls.find((x) => x.callId === r.callId);
    if (c) c.reconciliation = r.audit;
  }
  return { batches, events: batches.flatMap((b) => b.events).sort((a, b) => a.seq - b.seq) };
}

/** What reading a batch's history carries from one event to the next. */
interface Reading {
  audit: BatchAudit;
  /** The audit of a call, one made up (named '?') for a call the batch's input did not list. */
  call: (id: string) => CallAudit;
  /** Stage activities by their scheduled event's id, which their later events name. */
  activities: Map<string, { type: string; callId: string; run: StageRun; input: unknown }>;
  /** Decisions sent by update, by update id, until their completion is read. */
  updates: Map<string, DecisionAudit>;
  output?: BatchOutput;
  /** Workflow code sees the time its task started; an update is applied then, not when recorded. */
  taskStartedAt: string;
}

type Attributes<K extends keyof HistoryEvent> = NonNullable<HistoryEvent[K]>;

export function auditHistory(loaded: LoadedHistory): BatchAudit {
  const events = loaded.history.events ?? [];
  const read = startReading(loaded.workflowId, events[0]);
  for (const e of events) readEvent(read, e, timeOf(e));
  if (read.output) applyEvents(read.audit, read.output.events, read.call);
  return read.audit;
}

/** The audit as the batch's input starts it: its calls, nothing run yet. */
function startReading(workflowId: string, first: HistoryEvent | undefined): Reading {
  const input = decode(first?.workflowExecutionStartedEventAttributes?.input) as BatchInput | undefined;
  if (!input || !Array.isArray(input.calls))
    throw new InvalidInputError(`${workflowId} is not a Sluice batch: its first event carries no batch input`);
  const audit: BatchAudit = {
    workflowId,
    sessionId: input.sessionId,
    turn: input.turn,
    step: input.step,
    status: 'running',
    startedAt: timeOf(first),
    calls: input.calls.map((c) => ({ callId: c.id, name: c.name, arguments: c.arguments })),
    decisions: [],
    contexts: [],
    events: [],
  };
  const call = (id: string) => {
    let c = audit.calls.find((x) => x.callId === id);
    if (!c) audit.calls.push((c = { callId: id, name: '?' }));
    return c;
  };
  return { audit, call, activities: new Map(), updates: new Map(), taskStartedAt: audit.startedAt };
}

/** One event, read into the audit; events of other kinds tell it nothing. */
function readEvent(read: Reading, e: HistoryEvent, at: string): void {
  if (e.workflowTaskStartedEventAttributes) read.taskStartedAt = at;
  else if (e.activityTaskScheduledEventAttributes)
    readScheduled(read, String(e.eventId), e.activityTaskScheduledEventAttributes, at);
  else if (e.markerRecordedEventAttributes?.markerName === LOCAL_ACTIVITY_MARKER)
    readLocalActivity(read, e.markerRecordedEventAttributes, at);
  else if (e.activityTaskStartedEventAttributes) readAttemptStarted(read, e.activityTaskStartedEventAttributes);
  else if (e.activityTaskCompletedEventAttributes) readCompleted(read, e.activityTaskCompletedEventAttributes, at);
  else if (e.activityTaskFailedEventAttributes) readFailed(read, e.activityTaskFailedEventAttributes, 'failed', at);
  else if (e.activityTaskTimedOutEventAttributes)
    readFailed(read, e.activityTaskTimedOutEventAttributes, 'timed-out', at);
  else if (e.activityTaskCanceledEventAttributes) {
    const act = read.activities.get(String(e.activityTaskCanceledEventAttributes.scheduledEventId));
    if (act) Object.assign(act.run, { outcome: 'cancelled', closedAt: at });
  } else if (e.workflowExecutionSignaledEventAttributes)
    readSignal(read.audit, e.workflowExecutionSignaledEventAttributes, at);
  else if (e.workflowExecutionUpdateAcceptedEventAttributes)
    readUpdateAccepted(read, e.workflowExecutionUpdateAcceptedEventAttributes);
  else if (e.workflowExecutionUpdateCompletedEventAttributes)
    readUpdateCompleted(read, e.workflowExecutionUpdateCompletedEventAttributes);
  else readClosed(read, e, at);
}

/** A stage activity scheduled: its run starts, on the call its input names. */
function readScheduled(
  read: Reading,
  eventId: string,
  a: Attributes<'activityTaskScheduledEventAttributes'>,
  at: string,
): void {
  const type = a.activityType?.name ?? '?';
  // preflight and settle take a list of calls (one, when they run as activities)
  const raw = decode(a.input) as CallRef | CallRef[] | SettleRequest[] | undefined;
  const inp = Array.isArray(raw) ? raw[0] : raw;
  const ref = inp && 'ref' in inp ? inp.ref : (inp as CallRef | undefined);
  if (!ref?.callId) return;
  const run: StageRun = { attempts: 1, failures: [], outcome: 'running', scheduledAt: at, emitted: [] };
  read.activities.set(eventId, { type, callId: ref.callId, run, input: inp });
  const c = read.call(ref.callId);
  if (type === 'preflight') c.preExecute = run;
  else if (type === 'runGuards') c.guards = run;
  // After a person's yes, the guards and the body in one activity: the body's run until it ends.
  else if (type === 'executeBody' || type === 'guardThenExecuteBody') c.body = run;
  else if (type === 'settle') {
    c.settle = run;
    c.settle.before = excerpt((inp as SettleRequest).candidate);
  }
}

/** A local activity's marker: scheduled, run and completed at once, its results naming their calls. */
function readLocalActivity(read: Reading, m: Attributes<'markerRecordedEventAttributes'>, at: string): void {
  const meta = decode(m.details?.data) as { activity_type?: string; attempt?: number } | undefined;
  const recorded = decode(m.details?.result);
  if (!meta?.activity_type || m.failure || recorded === undefined) return;
  // A batch's first worker round: the seq claim and the first group's preflight (batch.ts).
  const firstRound = meta.activity_type === 'claimThenPreflight';
  const stage = firstRound ? 'preflight' : meta.activity_type;
  const result = firstRound ? (recorded as { preflight?: PreflightReply }).preflight : recorded;
  if (result === undefined) return;
  for (const r of localResults(stage, result)) {
    const c = read.call(r.callId);
    const run: StageRun = {
      attempts: meta.attempt ?? 1,
      failures: [],
      outcome: 'completed',
      scheduledAt: at,
      closedAt: at,
      emitted: [],
    };
    if (stage === 'preflight') c.preExecute = run;
    else if (stage === 'runGuards') c.guards = run;
    else if (stage === 'executeBody') c.body = run;
    else c.settle = run;
    completeStage(c, stage, r);
  }
}

/** A local stage's recorded result as one result per call (none for a deferred preflight). */
function localResults(stage: string, result: unknown): { callId: string }[] {
  return stage === 'preflight'
    ? (result as PreflightReply).deferred
      ? []
      : (result as PreflightReply).results.map(packedPreflightResult)
    : stage === 'settle'
      ? (result as SettleResult[])
      : stage === 'runGuards'
        ? [result as GuardsResult]
        : stage === 'executeBody' && (result as PackedBodyResult).callId
          ? [result as PackedBodyResult & { callId: string }]
          : [];
}

/** An attempt started: the attempt that ends the stage, and the failure of the one before it. */
function readAttemptStarted(read: Reading, a: Attributes<'activityTaskStartedEventAttributes'>): void {
  const act = read.activities.get(String(a.scheduledEventId));
  if (!act) return;
  act.run.attempts = a.attempt ?? 1;
  if (a.lastFailure) act.run.failures.push({ attempt: act.run.attempts - 1, ...failureOf(a.lastFailure) });
}

function readCompleted(read: Reading, a: Attributes<'activityTaskCompletedEventAttributes'>, at: string): void {
  const act = read.activities.get(String(a.scheduledEventId));
  if (!act) return;
  Object.assign(act.run, { outcome: 'completed', closedAt: at });
  const result = decode(a.result) as PreflightReply | SettleResult[] | unknown;
  const own =
    act.type === 'preflight'
      ? packedPreflightResult((result as PreflightReply).results?.[0] as PackedPreflightResult | string)
      : act.type === 'settle'
        ? (result as SettleResult[])[0]
        : result;
  completeStage(read.call(act.callId), act.type, own);
}

/** A stage that failed or timed out: how it ended, and the failure its last attempt met. */
function readFailed(
  read: Reading,
  a: { scheduledEventId?: unknown; failure?: Failure | null },
  outcome: 'failed' | 'timed-out',
  at: string,
): void {
  const act = read.activities.get(String(a.scheduledEventId));
  if (!act) return;
  Object.assign(act.run, { outcome, closedAt: at });
  if (a.failure) act.run.failures.push({ attempt: act.run.attempts, ...failureOf(a.failure) });
}

/** A decision sent by signal: received, its fate read later from the batch's events. */
function readSignal(audit: BatchAudit, s: Attributes<'workflowExecutionSignaledEventAttributes'>, at: string): void {
  if (s.signalName !== 'sluice.decide') return;
  const fields = decisionFields(decode(s.input));
  const malformed = !fields.approvalId || (fields.decision !== 'approve' && fields.decision !== 'deny');
  audit.decisions.push({
    at,
    via: 'signal',
    ...fields,
    ...(s.identity ? { identity: s.identity } : {}),
    ...(malformed ? { result: 'refused', problem: 'malformed decision' } : { result: 'received' }),
  });
}

/** A decision sent by update: pending until its completion is read. */
function readUpdateAccepted(read: Reading, u: Attributes<'workflowExecutionUpdateAcceptedEventAttributes'>): void {
  const req = u.acceptedRequest;
  if (req?.input?.name !== 'sluice.decide') return;
  const d: DecisionAudit = {
    at: read.taskStartedAt,
    via: 'update',
    ...decisionFields(decode(req.input.args)),
    ...(req.meta?.identity ? { identity: req.meta.identity } : {}),
    result: 'pending',
  };
  read.updates.set(req.meta?.updateId ?? '', d);
  read.audit.decisions.push(d);
}

function readUpdateCompleted(read: Reading, u: Attributes<'workflowExecutionUpdateCompletedEventAttributes'>): void {
  const d = read.updates.get(u.meta?.updateId ?? '');
  if (!d) return;
  if (u.outcome?.failure) Object.assign(d, { result: 'refused', problem: u.outcome.failure.message ?? 'refused' });
  else
    Object.assign(d, {
      result: 'applied',
      outcome: (decode(u.outcome?.success) as { outcome?: string } | undefined)?.outcome,
    });
}

/** How the batch's run ended, if this event ends it; a completed one keeps its output for its events. */
function readClosed(read: Reading, e: HistoryEvent, at: string): void {
  const audit = read.audit;
  if (e.workflowExecutionCompletedEventAttributes) {
    const raw = decode(e.workflowExecutionCompletedEventAttributes.result) as BatchOutputWire | undefined;
    read.output = raw && expandBatchOutput(raw);
    Object.assign(audit, { status: 'completed', closedAt: at });
  } else if (e.workflowExecutionFailedEventAttributes) {
    Object.assign(audit, {
      status: 'failed',
      closedAt: at,
      failure: e.workflowExecutionFailedEventAttributes.failure?.message ?? 'failed',
    });
  } else if (e.workflowExecutionCanceledEventAttributes) {
    Object.assign(audit, { status: 'cancelled', closedAt: at });
  } else if (e.workflowExecutionTerminatedEventAttributes) {
    Object.assign(audit, {
      status: 'terminated',
      closedAt: at,
      failure: e.workflowExecutionTerminatedEventAttributes.reason ?? undefined,
    });
  } else if (e.workflowExecutionTimedOutEventAttributes) {
    Object.assign(audit, { status: 'timed-out', closedAt: at });
  } else if (e.workflowExecutionContinuedAsNewEventAttributes) {
    Object.assign(audit, { status: 'continued-as-new', closedAt: at });
  }
}

function completeStage(c: CallAudit, type: string, result: unknown): void {
  if (type === 'preflight' && c.preExecute) {
    // Packed results leave out the usual gate (dispatch) and empty lists (pipeline/stages.ts).
    const r = result as PackedPreflightResult;
    Object.assign(c.preExecute, gateFields(r.gate ?? { kind: 'dispatch' }), { emitted: r.events ?? [] });
  } else if (type === 'runGuards' && c.guards) {
    const r = result as GuardsResult;
    Object.assign(c.guards, gateFields(r.gate), { emitted: r.events ?? [] });
  } else if (type === 'guardThenExecuteBody' && c.body) {
    // The guards' part of the activity's result; a body they did not dispatch never ran.
    const r = unpackBodyResult(result as PackedBodyResult);
    const guards = r.guards ?? { gate: { kind: 'dispatch' as const }, events: [] };
    c.guards = { ...c.body, ...gateFields(guards.gate), emitted: guards.events };
    if (guards.gate.kind === 'dispatch') Object.assign(c.body, { candidate: excerpt(r.candidate), emitted: r.events });
    else c.body = undefined;
  } else if (type === 'executeBody' && c.body) {
    const r = unpackBodyResult(result as PackedBodyResult);
    Object.assign(c.body, { candidate: excerpt(r.candidate), emitted: r.events });
  } else if (type === 'settle' && c.settle) {
    const r = result as SettleResult;
    if (r.before) c.settle.before = excerpt(r.before);
    c.settle.before ??= excerpt(r.result);
    const after = excerpt(r.result);
    Object.assign(c.settle, {
      after,
      rewritten:
        !!c.settle.before && (c.settle.before.text !== after.text || c.settle.before.isError !== after.isError),
      emitted: r.events ?? [],
    });
    c.result ??= {
      isError: r.result.isError,
      text: after.text,
      ...(r.result.error ? { error: r.result.error } : {}),
      card: r.card,
    };
  }
}

/** The batch's own record: approvals asked and decided, refusals, final results, contexts. */
function applyEvents(audit: BatchAudit, events: SessionEvent[], call: (id: string) => CallAudit): void {
  audit.events = events;
  settleSignalDecisions(audit.decisions, events);
  for (const e of events) applyEvent(audit, e, call);
}

/** Signals carry no answer: each one received takes its fate from the batch's events. */
function settleSignalDecisions(decisions: DecisionAudit[], events: SessionEvent[]): void {
  const refusals = events.filter((e) => isEvent(e, 'approval/refused')).filter((e) => e.data.via === 'signal');
  for (const d of decisions) {
    if (d.via !== 'signal') continue;
    // Signals carry no answer; a refused one left an approval/refused event, in the same order.
    if (d.result !== 'received') continue;
    const i = refusals.findIndex(
      (r) => r.data.id === d.approvalId && r.data.decision === d.decision && (r.data.by ?? undefined) === d.by,
    );
    if (i >= 0) {
      Object.assign(d, { result: 'refused', problem: refusals[i].data.problem });
      refusals.splice(i, 1);
    } else {
      const decided = events.filter((e) => isEvent(e, 'approval/decided')).find((e) => e.data.id === d.approvalId);
      d.result = decided && (decided.data.by ?? undefined) === d.by ? 'applied' : 'ignored';
      if (decided && d.result === 'applied') d.outcome = decided.data.outcome;
    }
  }
}

/** One event of the batch's record, on the call it names (or the batch's contexts). */
function applyEvent(audit: BatchAudit, e: SessionEvent, call: (id: string) => CallAudit): void {
  if (isEvent(e, 'approval/asked')) {
    const d = e.data;
    call(d.callId).approval = {
      id: d.id,
      ...(d.reason ? { reason: d.reason } : {}),
      askedAt: e.time,
      ...(d.expiresAt ? { expiresAt: d.expiresAt } : {}),
      ...(d.argsDigest ? { argsDigest: d.argsDigest } : {}),
    };
  } else if (isEvent(e, 'approval/decided')) {
    const d = e.data;
    const c = call(d.callId);
    c.approval = {
      ...(c.approval ?? { id: d.id }),
      outcome: d.outcome,
      ...(d.by ? { by: d.by } : {}),
      ...(d.reason ? { decisionReason: d.reason } : {}),
      decidedAt: e.time,
      ...(typeof d.latencyMs === 'number' ? { latencyMs: d.latencyMs } : {}),
      ...(d.expired ? { expired: true } : {}),
      ...(d.grant
        ? { grant: { id: d.grant.id, toolName: d.grant.toolName, pins: d.grant.pins, text: describeGrant(d.grant) } }
        : {}),
      ...(d.grantId ? { grantId: d.grantId } : {}),
    };
  } else if (isEvent(e, 'approval/escalated') || isEvent(e, 'approval/reminded') || isEvent(e, 'approval/reassigned')) {
    const d = e.data as Record<string, string | number | undefined>;
    const c = call(String(d.callId));
    if (!c.approval) return;
    const type = e.type.slice('approval/'.length) as 'escalated' | 'reminded' | 'reassigned';
    c.approval.lifecycle = [...(c.approval.lifecycle ?? []), { type, at: e.time, text: lifecycleText(type, d) }];
  } else if (isEvent(e, 'approval/vote')) {
    // A quorum ask: each approver's vote as it came, with the tally after it.
    const d = e.data;
    const c = call(d.callId);
    if (!c.approval) return;
    const text = `${d.decision === 'approve' ? 'approved' : 'rejected'} by ${d.by}${d.verified ? ' (verified)' : ''} via ${d.via}: ${d.approvals} of ${d.quorum} approvals${d.rejections ? `, ${d.rejections} rejection${d.rejections > 1 ? 's' : ''}` : ''}${d.reason ? ` — ${d.reason}` : ''}`;
    c.approval.lifecycle = [...(c.approval.lifecycle ?? []), { type: 'vote', at: e.time, text }];
  } else if (isEvent(e, 'approval/grant-used')) {
    const d = e.data;
    call(d.callId).approval = {
      id: d.grantId,
      outcome: 'allowed-session',
      ...(d.grantedBy ? { by: d.grantedBy } : {}),
      decidedAt: e.time,
      grantId: d.grantId,
    };
  } else if (e.type === 'policy/decided') {
    call(String(e.data.callId)).policy = policyAudit(e.data);
  } else if (isEvent(e, 'tool/result')) {
    const c = call(e.data.callId);
    c.result = resultAudit(e.data, c);
  } else if (isEvent(e, 'tool/code-dispatch-start') || isEvent(e, 'tool/code-dispatch')) {
    // A Code Mode sub-call: the batch's input lists only the program's call, so its name and
    // arguments come from here, and its result from the dispatch that ends it.
    const c = call(e.data.subCallId);
    Object.assign(c, { name: e.data.name, arguments: e.data.arguments });
    if (isEvent(e, 'tool/code-dispatch')) c.result = resultAudit(e.data, c);
  } else if (isEvent(e, 'user/message')) {
    const d = e.data;
    audit.contexts.push({ ...(d.source ? { source: d.source } : {}), content: String(d.content) });
  }
}

/** The deciding rule as its policy/decided event records it: what it said, where it is, what it read. */
function policyAudit(d: SessionEvent['data']): PolicyAudit {
  const text = (k: string) => (typeof d[k] === 'string' ? { [k]: d[k] as string } : {});
  const facts = d.facts;
  return {
    decision: String(d.decision),
    ...text('source'),
    ...text('file'),
    ...(typeof d.line === 'number' ? { line: d.line } : {}),
    ...text('policyId'),
    ...text('message'),
    ...(facts !== null && typeof facts === 'object' && !Array.isArray(facts)
      ? { facts: facts as Record<string, number | boolean> }
      : {}),
  };
}

/** A call's result as its outcome event records it; a card seen earlier is kept when it has none. */
function resultAudit(d: OutcomeFields, c: CallAudit): NonNullable<CallAudit['result']> {
  return {
    isError: d.isError === true,
    text: contentText(d.content),
    ...(d.error ? { error: d.error } : {}),
    ...(d.card ? { card: d.card } : c.result?.card ? { card: c.result.card } : {}),
  };
}

function lifecycleText(
  type: 'escalated' | 'reminded' | 'reassigned',
  d: Record<string, string | number | undefined>,
): string {
  return type === 'reminded'
    ? `reminder sent${d.assignee ? ` to ${d.assignee}` : ''} (deny timeout ${d.expiresAt})`
    : type === 'escalated'
      ? `escalated${d.from ? ` from ${d.from}` : ''} to ${d.to} after ${Math.round(Number(d.afterMs) / 1000)}s`
      : `reassigned${d.from ? ` from ${d.from}` : ''} to ${d.to}${d.by ? ` by ${d.by}` : ''}${d.reason ? ` — ${d.reason}` : ''}`;
}

const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

function gateFields(gate: Gate | undefined): { gate?: string; message?: string; code?: string } {
  if (!gate) return {};
  switch (gate.kind) {
    case 'dispatch':
      return { gate: 'allow' };
    case 'ask':
      return { gate: 'ask', ...(gate.reason ? { message: gate.reason } : {}) };
    case 'denied':
      return { gate: 'deny', message: gate.message, code: gate.code };
    case 'failed':
      return { gate: 'failed', message: gate.message, code: gate.code };
  }
}

function decisionFields(d: unknown): Pick<DecisionAudit, 'approvalId' | 'decision' | 'by' | 'reason' | 'argsDigest'> {
  const x = (d && typeof d === 'object' ? d : {}) as Record<string, unknown>;
  const s = (k: string) => (typeof x[k] === 'string' && x[k] ? { [k]: x[k] as string } : {});
  return { ...s('approvalId'), ...s('decision'), ...s('by'), ...s('reason'), ...s('argsDigest') };
}

function failureOf(f: Failure): { message: string; type?: string } {
  let message = f.message ?? '';
  if (f.timeoutFailureInfo) message = `${message || 'timed out'} (${timeoutName(f.timeoutFailureInfo.timeoutType)})`;
  const type = f.applicationFailureInfo?.type ?? undefined;
  return { message, ...(type ? { type } : {}) };
}

function timeoutName(t: number | null | undefined): string {
  return ['unspecified', 'start-to-close', 'schedule-to-start', 'schedule-to-close', 'heartbeat'][t ?? 0] ?? 'timeout';
}

function excerpt(c: Candidate | ToolResult | undefined): { isError: boolean; text: string } {
  return { isError: c?.isError === true, text: contentText(c?.content) };
}

function contentText(content: ContentBlock[] | unknown): string {
  if (!Array.isArray(content)) return '';
  return content.map((b: ContentBlock) => (b?.type === 'text' ? b.text : `[image ${b?.mimeType ?? ''}]`)).join('');
}

function timeOf(e: HistoryEvent | undefined): string {
  const t = e?.eventTime;
  if (!t) return '';
  const seconds = typeof t.seconds === 'number' ? t.seconds : Number(t.seconds?.toString() ?? 0);
  return new Date(seconds * 1000 + Math.floor((t.nanos ?? 0) / 1e6)).toISOString();
}

function isSessionHistory(h: LoadedHistory): boolean {
  return h.history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name === SESSION_WORKFLOW;
}

function isReconcileHistory(h: LoadedHistory): boolean {
  return h.history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name === RECONCILE_WORKFLOW;
}

/** A reconcile workflow's history: the card it opened, every decision sent, how it ended. */
function auditReconcile(loaded: LoadedHistory): { batchWorkflowId: string; callId: string; audit: ReconcileAudit } {
  const events = loaded.history.events ?? [];
  const input = decode(events[0]?.workflowExecutionStartedEventAttributes?.input) as ReconcileInput;
  const audit: ReconcileAudit = {
    id: input.reconcileId,
    workflowId: loaded.workflowId,
    problem: input.problem,
    openedAt: timeOf(events[0]),
    status: 'waiting',
    attempts: [],
  };
  const sent = new Map<string, ReconcileAudit['attempts'][number]>();
  for (const e of events) {
    const at = timeOf(e);
    if (e.workflowExecutionUpdateAcceptedEventAttributes) {
      const req = e.workflowExecutionUpdateAcceptedEventAttributes.acceptedRequest;
      if (req?.input?.name !== RECONCILE_UPDATE) continue;
      const d = decode(req.input.args) as { decision?: string; by?: string } | undefined;
      const a = {
        at,
        ...(typeof d?.decision === 'string' ? { decision: d.decision } : {}),
        ...(typeof d?.by === 'string' ? { by: d.by } : {}),
        ...(req.meta?.identity ? { identity: req.meta.identity } : {}),
        result: 'pending' as const,
      };
      sent.set(req.meta?.updateId ?? '', a);
      audit.attempts.push(a);
    } else if (e.workflowExecutionUpdateCompletedEventAttributes) {
      const u = e.workflowExecutionUpdateCompletedEventAttributes;
      const a = sent.get(u.meta?.updateId ?? '');
      if (!a) continue;
      if (u.outcome?.failure) Object.assign(a, { result: 'refused', problem: u.outcome.failure.message ?? 'refused' });
      else a.result = 'applied';
    } else if (e.workflowExecutionCompletedEventAttributes) {
      const r = decode(e.workflowExecutionCompletedEventAttributes.result) as Reconciliation | undefined;
      if (r)
        Object.assign(audit, {
          status: r.outcome,
          by: r.by,
          decidedAt: r.decidedAt,
          ...(r.reason ? { reason: r.reason } : {}),
          ...(r.evidence ? { evidence: r.evidence } : {}),
          ...(r.rerun ? { rerun: r.rerun } : {}),
        });
    }
  }
  return { batchWorkflowId: input.batchWorkflowId, callId: input.callId, audit };
}
