// Policies tried against what already happened. `replayPolicy` re-judges every recorded call of
// past batches under a candidate policy set, with the session facts as they stood at each call
// (the session's earlier calls the batch was started with, and the batch's calls ahead of it in
// flight, as workflows/session-facts.ts hands them to the pre-execute stage; for a batch of a
// facts scope, the facts its decision recorded from the fact store), and says which
// decisions would change; `shadowDiff` lists the calls where a shadow candidate's recorded verdict
// (hooks/policy-shadow.ts) differs from the enforced one. Both read workflow histories, from the
// server (`recentBatchHistories`) or exported files, each once (`readBatches`), and run nothing.
import type { Client } from '@temporalio/client';
import type { PolicyRules } from '../hooks/policy';
import { type RecordedVerdict, verdictRecord } from '../hooks/policy-shadow';
import { argsObject, type CallOutcome, callRecords, type Facts, type SessionRecord } from '../pipeline/facts';
import type { BatchInput, Json, JsonObject, SessionEvent, ToolCall } from '../pipeline/types';
import { BATCH_WORKFLOW } from '../workflows/definitions';
import { recordFor } from '../workflows/session-facts';
import { auditHistories, type BatchAudit } from './audit';
import { decode, type LoadedHistory } from './history';

/** One recorded call judged again: what was decided then, what the candidate says now. */
export interface ReplayedCall {
  workflowId: string;
  sessionId: string;
  turn: number;
  callId: string;
  tool: string;
  args: JsonObject;
  /** What became of the call: `ok` / `failed` (it ran), `denied`, `not-run`, `pending` (no result recorded). */
  outcome: CallOutcome;
  /** The rule on record (`policy/decided`), or `none` when no policy rule decided it. */
  recorded: RecordedVerdict;
  candidate: RecordedVerdict;
}

export interface PolicyReplayReport {
  /** Batches read (completed or not), and the ones skipped because they are not batches. */
  batches: number;
  calls: ReplayedCall[];
  /** The calls whose decision the candidate would change. */
  changed: ReplayedCall[];
}

/** Every model call of the batches, judged again under `candidate`. */
export function replayPolicy(batches: readonly ReadBatch[], candidate: PolicyRules): PolicyReplayReport {
  const calls: ReplayedCall[] = [];
  for (const b of batches) if (b.input) calls.push(...replayBatch(b.workflowId, b.input, b.audit.events, candidate));
  return {
    batches: batches.length,
    calls,
    changed: calls.filter((c) => c.recorded.decision !== c.candidate.decision),
  };
}

function batchInputOf(h: LoadedHistory): BatchInput | undefined {
  const first = h.history.events?.[0]?.workflowExecutionStartedEventAttributes;
  const input = first ? (decode(first.input) as BatchInput | undefined) : undefined;
  return input && Array.isArray(input.calls) ? input : undefined;
}

/** A batch's calls in model order, each judged with the record it was judged with. */
function replayBatch(
  workflowId: string,
  input: BatchInput,
  events: readonly SessionEvent[],
  candidate: PolicyRules,
): ReplayedCall[] {
  const outcomes = new Map(callRecords(events).map((r) => [r.callId, r]));
  const decided = new Map<string, JsonObject>();
  const calledAt = new Map<string, number>();
  for (const e of events) {
    const id = e.data.callId;
    if (typeof id !== 'string') continue;
    if (e.type === 'policy/decided') decided.set(id, e.data);
    if (e.type === 'tool/call' && !calledAt.has(id)) calledAt.set(id, Date.parse(e.time));
  }
  return input.calls.map((call) => {
    const own = outcomes.get(call.id);
    const args = own?.args ?? argsObject(call.arguments);
    // The workflow takes a call's facts when its reference is made, as the call is recorded.
    const now = calledAt.get(call.id) ?? own?.at ?? 0;
    const record = recordOf(input, call, now, decided.get(call.id));
    const x = candidate.explain({
      toolName: call.name,
      args,
      session: input.sessionId,
      callId: call.id,
      turn: input.turn,
      ...(record ? { record } : {}),
    });
    return {
      workflowId,
      sessionId: input.sessionId,
      turn: input.turn,
      callId: call.id,
      tool: call.name,
      args,
      outcome: own?.outcome ?? 'pending',
      recorded: recordedVerdict(decided.get(call.id)),
      candidate: verdictRecord(x),
    };
  });
}

/**
 * The record a call was judged with. A batch without a facts scope: the one the pre-execute stage
 * was handed, by the workflow's own rule, at the recorded time. A facts-scope batch's stage read the
 * scope's other calls from the fact store, which its history does not hold (and the store has moved
 * on since): its decision's recorded facts stand in for them, and a fact it did not record is beyond
 * the replay's reach, so a candidate reading it denies, saying so, rather than judging an undercount.
 */
function recordOf(
  input: BatchInput,
  call: ToolCall,
  now: number,
  decided: JsonObject | undefined,
): SessionRecord | undefined {
  const record = recordFor(input, call, undefined, now);
  if (input.factsScope === undefined || !record) return record;
  const facts = factsOnRecord(decided?.facts);
  return facts
    ? { calls: record.calls, now, reach: 'scope', facts }
    : {
        calls: record.calls,
        now,
        reach: 'batch',
        unreadable: `the call's recorded decision carries no facts (no policy rule decided it, or none that read a fact judged it), and a replay of a facts-scope batch has only the facts its decisions recorded`,
      };
}

/** A recorded decision's facts, when they are facts: names to whole numbers and booleans. */
function factsOnRecord(v: Json | undefined): Facts | undefined {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const facts: Facts = {};
  for (const [name, value] of Object.entries(v))
    if (typeof value === 'number' || typeof value === 'boolean') facts[name] = value;
  return facts;
}

/** A `policy/decided` event's rule in the shape a verdict is recorded in. */
function recordedVerdict(d: JsonObject | undefined): RecordedVerdict {
  if (!d || typeof d.decision !== 'string') return { decision: 'none' };
  const keep = ['source', 'file', 'line', 'rule', 'policyId', 'message', 'facts'];
  const out: RecordedVerdict = { decision: d.decision as RecordedVerdict['decision'] };
  for (const k of keep) if (d[k] !== undefined) out[k] = d[k];
  return out;
}

/** A call where the shadow candidate's recorded verdict differs from the enforced one. */
export interface ShadowDifference {
  workflowId: string;
  sessionId: string;
  callId: string;
  tool: string;
  args: string;
  time: string;
  enforced: RecordedVerdict;
  candidate: RecordedVerdict;
  candidateDigest: string;
}

/** The `policy/shadow` events of the batches whose two verdicts differ, oldest first; and how many were read. */
export function shadowDiff(batches: readonly ReadBatch[]): { shadowed: number; differences: ShadowDifference[] } {
  let shadowed = 0;
  const differences: ShadowDifference[] = [];
  for (const { audit: b } of batches) {
    for (const e of b.events) {
      if (e.type !== 'policy/shadow') continue;
      shadowed++;
      const d = e.data as JsonObject;
      const enforced = d.enforced as RecordedVerdict;
      const candidate = d.candidate as RecordedVerdict;
      if (enforced?.decision === candidate?.decision) continue;
      const call = b.calls.find((c) => c.callId === d.callId);
      differences.push({
        workflowId: b.workflowId,
        sessionId: b.sessionId,
        callId: String(d.callId),
        tool: call?.name ?? '?',
        args: call?.arguments ?? '',
        time: e.time,
        enforced,
        candidate,
        candidateDigest: String(d.candidateDigest),
      });
    }
  }
  return { shadowed, differences: differences.sort((a, b) => a.time.localeCompare(b.time)) };
}

/** The histories of every batch started since `sinceMs` (ms since the epoch), oldest first. */
export async function recentBatchHistories(
  client: Client,
  sinceMs: number,
  sessionId?: string,
): Promise<LoadedHistory[]> {
  const runs: { workflowId: string; runId: string; start: number }[] = [];
  // Visibility's query language quotes with ' and has no escape for it: a session id holding one
  // is refused rather than read as query syntax.
  if (sessionId?.includes("'")) throw new Error(`a session id with a ' cannot be listed by query: ${sessionId}`);
  const session = sessionId === undefined ? '' : ` AND SluiceSessionId = '${sessionId}'`;
  const query = `WorkflowType = '${BATCH_WORKFLOW}' AND StartTime > '${new Date(sinceMs).toISOString()}'${session}`;
  for await (const wf of client.workflow.list({ query }))
    runs.push({ workflowId: wf.workflowId, runId: wf.runId, start: wf.startTime.getTime() });
  runs.sort((a, b) => a.start - b.start);
  const out: LoadedHistory[] = [];
  for (const r of runs)
    out.push({
      workflowId: r.workflowId,
      history: await client.workflow.getHandle(r.workflowId, r.runId).fetchHistory(),
      source: 'server',
    });
  return out;
}

/** A batch's history read once: what its audit found, and the input it was started with. */
export interface ReadBatch {
  workflowId: string;
  audit: BatchAudit;
  input: BatchInput | undefined;
}

/**
 * The batches of `histories`, each read once, and the histories that cannot be read (a payload
 * encrypted with keys this process does not hold, a history cut short): one unreadable batch must
 * not hide the rest. A session's own runs and reconcile runs hold no calls and are left out.
 */
export function readBatches(histories: readonly LoadedHistory[]): {
  batches: ReadBatch[];
  unreadable: { workflowId: string; why: string }[];
} {
  const batches: ReadBatch[] = [];
  const unreadable: { workflowId: string; why: string }[] = [];
  for (const h of histories) {
    try {
      const [audit] = auditHistories([h]).batches;
      if (audit) batches.push({ workflowId: h.workflowId, audit, input: batchInputOf(h) });
    } catch (err) {
      unreadable.push({ workflowId: h.workflowId, why: (err as Error).message.split('\n')[0] });
    }
  }
  return { batches, unreadable };
}
