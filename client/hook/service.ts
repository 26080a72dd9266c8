// `sluice hook`'s decisions: a harness's tool call as a durable Sluice batch (docs/gateway.md).
//
// Each call is a one-call batch of the harness's session, named by the harness's tool name and
// served by the decision-only tools of the worker's config (hooks/harness-tools.ts): the config's
// policy decides it, an ask waits durably for a person until its deny timeout, and the body runs
// nothing. The harness runs the tool; PostToolUse / AfterTool then record its result as a second
// one-call batch (`harness_result`) of the same session.
//
// Which batch a hook attaches to. PermissionRequest (Claude Code, Codex) and Gemini CLI's hooks
// carry no tool_use_id, and a model that is told "wait for approval" calls again with a new one,
// so a call is keyed by what it does: a keyed MAC of (session, tool name, tool input) gives the
// batch's step, and its turn counts the times that same call was asked for ("occurrences"). The
// step is 48 bits, so two calls may share it: a model that could compute steps could search for a
// harmless call and a harmful one on the same step (a birthday search takes seconds), so the MAC's
// key is secret (hook-key.ts), and an occurrence answers only a request whose tool and arguments
// are the ones it was started with; any other is a new occurrence. A hook attaches to the
// latest occurrence while it runs (an ask still waiting: it waits on that batch), or after it
// finished when it is the same call (the same tool_use_id; without one, asked within SAME_CALL_MS),
// or when its decision came from a person after the hook that asked had given up (a late decision,
// applied to the call asked again within LATE_DECISION_MS). A finished occurrence whose result the
// harness recorded (PostToolUse, AfterTool) ran: only its own tool_use_id attaches to it then.
// Anything else is a new occurrence, decided afresh.
import { createHmac } from 'node:crypto';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import { canonicalJson } from '../../pipeline/json';
import type { BatchOutput, Json, JsonObject, SessionEvent } from '../../pipeline/types';
import { type BatchOutputWire, expandBatchOutput } from '../../codec/output';
import { batchWorkflowId, SEQ_CONFLICT } from '../../workflows/definitions';
import type { BatchHandle, SluiceClient } from '../client';
import type { HarnessRequest, HookAnswer } from './dialects';
import { hookCallKey } from './hook-key';

/** Without a tool_use_id, a finished batch this recent is the same call asked again (PermissionRequest after PreToolUse). */
const SAME_CALL_MS = 30_000;
/** A person's decision that came after the asking hook gave up applies to the same call asked again this soon after. */
const LATE_DECISION_MS = 10 * 60_000;
/** A harness result bigger than this is recorded cut, with its length: it travels as a call's arguments. */
const MAX_RECORDED_CHARS = 64 * 1024;
const HARNESS_RESULT_TOOL = 'harness_result';
/** Occurrences of one call in one session looked at before giving up (a loop that asks the same thing forever). */
const MAX_OCCURRENCES = 200;
// Seqs. A harness's hooks run concurrently (parallel tool calls), as do a gateway client's calls,
// so no batch can know the previous one's nextSeq; yet every batch of a session numbers its events
// from its startSeq, and the sink refuses a batch whose start is not after every earlier claim's
// (SEQ_CONFLICT: it ran nothing). So each batch takes a block of SEQ_BLOCK seqs, block-aligned:
// - the block of the current millisecond (later batches claim later seqs), but never a block this
//   process gave out already (two batches in one millisecond, a clock that stepped back);
// - after a refused claim, the first whole block past what the sink says is taken (`nextSeq`), so
//   the retry cannot land inside the range of the batch that won.
// Blocks never overlap (a one-call batch records a handful of events, far under SEQ_BLOCK), and two
// processes that pick the same block are told apart by the sink's claim, first come first served:
// the loser is renumbered. Seqs are no longer than a timestamp: 1,000 per millisecond since 2026-01-01.
const SEQ_EPOCH_MS = Date.UTC(2026, 0, 1);
const SEQS_PER_MS = 1000;
export const SEQ_BLOCK = 1000;
/** Refused claims a batch is renumbered after before the error is the answer. */
const MAX_RENUMBERED = 8;
/** The first seq past every block this process gave out. */
let seqFloor = 0;

interface HookServiceOptions {
  sluice: SluiceClient;
  /** When the harness stops waiting for this hook (epoch ms): the answer must be out before. */
  deadline: number;
  /** How long the hook may wait in all (ms), to tell a late decision from a prompt one. */
  budgetMs: number;
  /** The deny timeout of asks, when the worker's tool sets none (BatchOptions.approvalTimeoutMs). */
  approvalTimeoutMs?: number;
  /** The key of callStep's MAC; hookCallKey() (the environment's, else this user's key file) when absent. */
  callKey?: Buffer;
  /** The facts scope the calls count in (`--facts-scope`); default the harness session's. */
  factsScope?: string;
}

interface Decided {
  answer: HookAnswer;
  workflowId: string;
  /** Who decided: `policy`, the approver's name, or `deny timeout`. */
  by?: string;
  /** True when Sluice has not decided yet and the answer is the fallback (ask, or deny where the harness cannot ask). */
  pending?: boolean;
  /** The approval the batch waits on, when pending. */
  approvalId?: string;
}

/**
 * The step of every batch of one call: HMAC-SHA256 under `key` of (session, tool name, tool
 * input), cut to a 48-bit whole number (a step must be a safe integer). Unequal calls may share a
 * step; `sameArguments` tells them apart.
 */
export function callStep(
  req: Pick<HarnessRequest, 'sessionId' | 'toolName' | 'toolInput'>,
  key: Buffer,
  salt = '',
): number {
  const hex = createHmac('sha256', key)
    .update(canonicalJson([salt, req.sessionId, req.toolName, req.toolInput as Json]))
    .digest('hex');
  return Number.parseInt(hex.slice(0, 12), 16);
}

export function clockSeq(now = Date.now()): number {
  return (now - SEQ_EPOCH_MS) * SEQS_PER_MS;
}

/**
 * The startSeq of a new batch's block: the clock's, never one this process gave out, and past
 * `taken` (a refused claim's nextSeq) when given.
 */
export function nextBatchSeq(taken = 0, now = Date.now()): number {
  const block = (n: number) => Math.ceil(n / SEQ_BLOCK) * SEQ_BLOCK;
  const seq = Math.max(block(clockSeq(now)), seqFloor, block(taken));
  seqFloor = seq + SEQ_BLOCK;
  return seq;
}

/**
 * Starts a batch in its own block of seqs and waits with `wait`; a batch whose claim was refused
 * ran nothing, so it is started again in a block past the one the sink says is taken.
 */
export async function startInOwnBlock<T>(
  sluice: SluiceClient,
  request: Omit<Parameters<SluiceClient['startBatch']>[0], 'startSeq'>,
  wait: (handle: BatchHandle) => Promise<T>,
): Promise<{ handle: BatchHandle; value: T }> {
  let startSeq = nextBatchSeq();
  for (let renumbered = 0; ; renumbered++) {
    const handle = await sluice.startBatch({ ...request, startSeq });
    try {
      return { handle, value: await wait(handle) };
    } catch (err) {
      if (renumbered >= MAX_RENUMBERED || !isSeqConflict(err)) throw err;
      startSeq = nextBatchSeq(takenUpTo(err));
    }
  }
}

/** The nextSeq a refused claim reports (ApplicationFailure details), or 0. */
function takenUpTo(err: unknown): number {
  const details = ((err as WorkflowFailedError).cause as { details?: unknown[] } | undefined)?.details;
  const next = (details?.[0] as { nextSeq?: unknown } | undefined)?.nextSeq;
  return typeof next === 'number' && Number.isSafeInteger(next) ? next : 0;
}

interface Occurrence {
  n: number;
  workflowId: string;
  status: string;
  closeTime?: Date;
}

/** The latest occurrence of a call, by describing turn 0, 1, 2, ... until one does not exist. */
async function latestOccurrence(
  sluice: SluiceClient,
  sessionId: string,
  step: number,
): Promise<Occurrence | undefined> {
  let latest: Occurrence | undefined;
  for (let n = 0; n < MAX_OCCURRENCES; n++) {
    const workflowId = batchWorkflowId(sessionId, n, step);
    try {
      const d = await sluice.temporal.workflow.getHandle(workflowId).describe();
      latest = { n, workflowId, status: d.status.name, ...(d.closeTime ? { closeTime: d.closeTime } : {}) };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return latest;
      throw err;
    }
  }
  return latest;
}

/** Decides a harness call: attaches to or starts its batch and waits for the outcome until the deadline. */
export async function decide(req: HarnessRequest, opts: HookServiceOptions): Promise<Decided> {
  const { sluice } = opts;
  const step = callStep(req, opts.callKey ?? hookCallKey());
  const latest = await latestOccurrence(sluice, req.sessionId, step);
  let n = latest ? latest.n : 0;
  if (latest && !(await sameArguments(sluice, latest.workflowId, req))) {
    // Another call on the same step: its decision is not this one's, nor is its wait.
    n = latest.n + 1;
  } else if (latest?.status === 'RUNNING') {
    const attached = await attachRunning(latest.workflowId, opts);
    if (attached) return attached;
  } else if (latest && latest.status === 'COMPLETED') {
    const out = await sluice.temporal.workflow.getHandle(latest.workflowId).result().then(expand);
    if (sameCall(req, out, latest, opts.budgetMs) && !(await ranSince(req, out, latest, opts)))
      return { ...decisionOf(out), workflowId: latest.workflowId };
    n = latest.n + 1;
  } else if (latest && latest.status !== 'RUNNING' && !(await seqRefused(sluice, latest.workflowId))) {
    // Terminated, cancelled or failed for another reason: that occurrence never decided.
    n = latest.n + 1;
  }
  const { handle, out } = await run(opts, req, n, step, {
    id: req.toolUseId ?? `harness-${n}`,
    name: req.toolName,
    arguments: JSON.stringify(req.toolInput),
  });
  if (out) return { ...decisionOf(out), workflowId: handle.workflowId };
  return await notYet(handle.workflowId, opts);
}

/**
 * A call asked for again while its batch still runs: Claude Code's and Codex's PermissionRequest
 * after a PreToolUse that gave up (no tool_use_id), or the same call retried with a new one
 * (headless Claude Code refuses an `ask`, and the model, told so, calls again). It waits on that
 * batch, so the one approval a person gives reaches it; resubmitting would be refused as a batch
 * with other calls. Undefined when that batch lost its seq claim: it ran nothing, start afresh.
 */
async function attachRunning(workflowId: string, opts: HookServiceOptions): Promise<Decided | undefined> {
  const handle = opts.sluice.temporal.workflow.getHandle(workflowId);
  let out: BatchOutput | undefined;
  try {
    out = await resultBy({ result: () => handle.result().then(expand) }, opts);
  } catch (err) {
    if (isSeqConflict(err)) return undefined;
    throw err;
  }
  if (out) return { ...decisionOf(out), workflowId };
  return await notYet(workflowId, opts);
}

/**
 * Whether the harness recorded a result for that finished occurrence (PostToolUse, AfterTool):
 * the call ran, so an identical call now is a new one, never answered by the decision that call
 * used up. The same tool_use_id is still the same call (a harness resending its hook).
 */
async function ranSince(req: HarnessRequest, out: BatchOutput, latest: Occurrence, opts: HookServiceOptions) {
  if (req.toolUseId && out.results[0]?.callId === req.toolUseId) return false;
  const key = opts.callKey ?? hookCallKey();
  const resultBatch = batchWorkflowId(req.sessionId, latest.n, callStep(req, key, 'result'));
  try {
    await opts.sluice.temporal.workflow.getHandle(resultBatch).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** Records what a harness call returned, as a `harness_result` batch beside the call's decision. */
export async function record(
  req: HarnessRequest,
  opts: HookServiceOptions,
): Promise<{ workflowId: string; decisionBatch?: string }> {
  const key = opts.callKey ?? hookCallKey();
  const decision = await decisionBatchOf(opts.sluice, req, callStep(req, key));
  const n = decision?.n ?? 0;
  const args: JsonObject = { tool_name: req.toolName };
  if (req.toolUseId) args.tool_use_id = req.toolUseId;
  if (decision) args.decision_batch = decision.workflowId;
  if (req.error) args.error = bound(req.error).text;
  if (req.toolResponse !== undefined) {
    const text = typeof req.toolResponse === 'string' ? req.toolResponse : JSON.stringify(req.toolResponse);
    const b = bound(text);
    args.tool_response = b.cut ? b.text : req.toolResponse;
    if (b.cut) {
      args.truncated = true;
      args.response_chars = text.length;
    }
  }
  const { handle, out } = await run(opts, req, n, callStep(req, key, 'result'), {
    id: req.toolUseId ?? `harness-result-${n}`,
    name: HARNESS_RESULT_TOOL,
    arguments: JSON.stringify(args),
  });
  if (!out)
    throw new Error(
      `the result was handed to batch ${handle.workflowId}, which did not finish within the hook's time (is a worker running on task queue ${opts.sluice.taskQueue}?); it is recorded when a worker runs it`,
    );
  return { workflowId: handle.workflowId, ...(decision ? { decisionBatch: decision.workflowId } : {}) };
}

/**
 * Whether the batch was started for this request's call: the same tool name and the same
 * arguments (canonical JSON, so key order does not matter), read from the batch's start event,
 * which holds them whatever the batch's status and however long the arguments.
 */
async function sameArguments(sluice: SluiceClient, workflowId: string, req: HarnessRequest): Promise<boolean> {
  const page = await sluice.temporal.workflowService.getWorkflowExecutionHistory({
    namespace: sluice.temporal.options.namespace,
    execution: { workflowId },
    maximumPageSize: 1,
  });
  const payloads = page.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads;
  const [input] = await decodeArrayFromPayloads(sluice.temporal.options.loadedDataConverter, payloads);
  const calls = (input as { calls?: { name?: unknown; arguments?: unknown }[] } | undefined)?.calls;
  if (calls?.length !== 1 || calls[0]?.name !== req.toolName || typeof calls[0]?.arguments !== 'string') return false;
  try {
    return canonicalJson(JSON.parse(calls[0].arguments)) === canonicalJson(req.toolInput as Json);
  } catch {
    return false;
  }
}

/** The occurrence whose call this result belongs to: the one with its tool_use_id, else the latest. */
async function decisionBatchOf(
  sluice: SluiceClient,
  req: HarnessRequest,
  step: number,
): Promise<Occurrence | undefined> {
  const latest = await latestOccurrence(sluice, req.sessionId, step);
  if (!latest || !req.toolUseId) return latest;
  for (let n = latest.n; n >= 0 && n > latest.n - 5; n--) {
    const workflowId = batchWorkflowId(req.sessionId, n, step);
    try {
      const d = await sluice.temporal.workflow.getHandle(workflowId).describe();
      const out =
        d.status.name === 'COMPLETED'
          ? expand(await sluice.temporal.workflow.getHandle(workflowId).result())
          : undefined;
      if (out?.results[0]?.callId === req.toolUseId) return { n, workflowId, status: d.status.name };
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }
  return latest;
}

/**
 * Starts (or attaches to) the batch and waits for its outcome until the deadline; a batch that
 * lost the seq claim is renumbered and started again (startInOwnBlock). The check rides on the
 * result, so an allowed call costs no extra round trip.
 */
async function run(
  opts: HookServiceOptions,
  req: HarnessRequest,
  turn: number,
  step: number,
  call: { id: string; name: string; arguments: string },
): Promise<{ handle: BatchHandle; out?: BatchOutput }> {
  const request = {
    sessionId: req.sessionId,
    turn,
    step,
    calls: [call],
    // Each call is its own batch: the harness's session is the scope its policies' facts count in,
    // unless the hook names one (a person's calls across sessions, `--facts-scope user:alice`).
    factsScope: opts.factsScope ?? hookFactsScope(req.sessionId),
    ...(opts.approvalTimeoutMs !== undefined ? { options: { approvalTimeoutMs: opts.approvalTimeoutMs } } : {}),
  };
  const { handle, value: out } = await startInOwnBlock(opts.sluice, request, (h) => resultBy(h, opts));
  return { handle, ...(out ? { out } : {}) };
}

/** The facts scope of a harness session's hook calls: `harness:<the harness's session id>`. */
function hookFactsScope(sessionId: string): string {
  return `harness:${sessionId}`;
}

function isSeqConflict(err: unknown): boolean {
  return err instanceof WorkflowFailedError && (err.cause as { type?: string } | undefined)?.type === SEQ_CONFLICT;
}

async function seqRefused(sluice: SluiceClient, workflowId: string): Promise<boolean> {
  const handle = sluice.temporal.workflow.getHandle(workflowId);
  const d = await handle.describe();
  if (d.status.name !== 'FAILED') return false;
  try {
    await handle.result();
    return false;
  } catch (err) {
    return isSeqConflict(err);
  }
}

/** The batch's output if it finishes before the deadline, else undefined; the wait is abandoned, not the batch. */
async function resultBy(
  handle: { result(): Promise<BatchOutput> },
  opts: HookServiceOptions,
): Promise<BatchOutput | undefined> {
  const left = opts.deadline - Date.now();
  if (left <= 0) return undefined;
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      abort.abort();
      resolve(undefined);
    }, left);
  });
  try {
    return await Promise.race([
      opts.sluice.temporal
        .withAbortSignal(abort.signal, () => handle.result())
        .catch((err) => {
          if (abort.signal.aborted) return undefined;
          throw err;
        }),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The answer while the batch still waits (an ask nobody decided yet, or no worker answering). */
async function notYet(workflowId: string, opts: HookServiceOptions): Promise<Decided> {
  let read: Awaited<ReturnType<SluiceClient['readApprovals']>> | undefined;
  try {
    read = await opts.sluice.readApprovals(workflowId);
  } catch {
    read = undefined;
  }
  const pending = read?.pending[0];
  const secs = Math.round(opts.budgetMs / 1000);
  const reason = pending
    ? `Sluice is waiting for a person to approve this call (approval ${pending.approvalId}, denied at ${pending.expiresAt} if nobody decides): approve it in the inbox or with \`sluice approve ${pending.approvalId}\`, then run the same call again and the decision applies to it. Not allowed yet, so this answer fails closed`
    : `Sluice did not decide this call within ${secs}s (batch ${workflowId}; is a worker running on task queue ${opts.sluice.taskQueue}?). Not allowed, so this answer fails closed`;
  return {
    answer: { decision: 'ask', reason },
    workflowId,
    pending: true,
    ...(pending ? { approvalId: pending.approvalId } : {}),
  };
}

/** A raw handle's result() is the compact wire form; expanded, each result has its content. */
function expand(out: unknown): BatchOutput {
  return expandBatchOutput(out as BatchOutputWire);
}

function decidedEvent(out: BatchOutput): SessionEvent | undefined {
  const callId = out.results[0]?.callId;
  return out.events.find((e) => e.type === 'approval/decided' && e.data.callId === callId);
}

/** Allow when the decision-only body ran (every gate let it through); otherwise deny with the pipeline's reason. */
export function decisionOf(out: BatchOutput): Omit<Decided, 'workflowId'> {
  const r = out.results[0];
  if (!r) return { answer: { decision: 'deny', reason: 'Sluice recorded no result for this call; denied' } };
  const decided = decidedEvent(out);
  const by = decided
    ? decided.data.expired
      ? 'deny timeout'
      : typeof decided.data.by === 'string'
        ? decided.data.by
        : 'an approver'
    : 'policy';
  if (!r.result.isError)
    return {
      answer: { decision: 'allow', reason: decided ? `approved in Sluice by ${by}` : 'allowed by Sluice policy' },
      by,
    };
  const code = r.result.error?.code;
  const message = r.result.error?.message ?? r.result.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
  if (code === 'UNKNOWN_TOOL')
    return {
      answer: {
        decision: 'deny',
        reason: `Sluice has no decision tool for ${JSON.stringify(r.name)}, so it cannot allow it: add the name to harnessTools({ names: [...] }) in the worker's config, or leave the tool out of this hook's matcher`,
      },
      by: 'policy',
    };
  return { answer: { decision: 'deny', reason: `Sluice: ${message}` }, by };
}

/**
 * Whether a finished occurrence answers this request: the same call asked again (its
 * tool_use_id; without one, within SAME_CALL_MS), or a person's decision that came after the
 * hook that asked for it had given up, applied once more to the call asked again.
 */
function sameCall(req: HarnessRequest, out: BatchOutput, latest: Occurrence, budgetMs: number): boolean {
  const callId = out.results[0]?.callId;
  if (req.toolUseId && callId === req.toolUseId) return true;
  const closedAgo = latest.closeTime ? Date.now() - latest.closeTime.getTime() : Number.POSITIVE_INFINITY;
  if (!req.toolUseId && closedAgo <= SAME_CALL_MS) return true;
  const decided = decidedEvent(out);
  const asked = out.events.find((e) => e.type === 'tool/call');
  if (!decided || decided.data.expired || !asked) return false;
  const late = Date.parse(decided.time) - Date.parse(asked.time) > budgetMs;
  return late && closedAgo <= LATE_DECISION_MS;
}

function bound(text: string): { text: string; cut: boolean } {
  return text.length > MAX_RECORDED_CHARS
    ? { text: `${text.slice(0, MAX_RECORDED_CHARS)}…`, cut: true }
    : { text, cut: false };
}
