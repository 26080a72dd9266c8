// Stage 8 for a client tool (`runsOn: 'client'`): the body is an activity on the task queue the
// session's client polls (pipeline/client-tools.ts), and its answer goes through a worker activity
// that checks the session's client key signed it before anything of it is recorded. Every other
// stage is the call pipeline's as for any tool.
//
// Why an activity on a client-polled task queue and not an update the client answers: a waiting
// activity is Temporal's own durable queue (it outlives workers, clients and the batch's cache),
// its schedule-to-start timeout is the "no client came" timeout, and its heartbeat timeout notices
// a client killed mid-body, which then retries (idempotent tools) or ends OUTCOME_UNKNOWN
// (at-most-once) exactly as a worker killed mid-body does. An update has no heartbeat, so a dead
// client would hold the call until the body's whole timeout.
import { ActivityFailure, proxyActivities, TimeoutFailure, upsertMemo, workflowInfo } from '@temporalio/workflow';
import type { StageActivities } from '../activities/stages';
import {
  type PackedBodyResult,
  type PackedCallRef,
  packBodyResult,
  unpackBodyResult,
  withoutOwnDigest,
} from '../codec/stages';
import {
  CLIENT_TOOL_ACTIVITY,
  type ClientBinding,
  type ClientCall,
  type ClientToolActivities,
  type ClientWait,
  clientTaskQueue,
} from '../pipeline/client-tools';
import { ErrorCodes } from '../pipeline/errors';
import { errorCandidate } from '../pipeline/normalize';
import type { CallRef, GuardsResult, ToolProfile } from '../pipeline/stages';
import type { BatchContext } from './batch-context';
import { CLIENT_WAITS_MEMO } from './definitions';

/** The worker's activities around a client body: the guards after a yes, and the answer's check. */
const worker = proxyActivities<Pick<StageActivities, 'runGuards' | 'acceptClientBody'>>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 5 },
});

/**
 * Runs a client tool's body: the guards first when a person said yes (they judge the call right
 * before its body would run, as guardThenExecuteBody does on a worker), then the client's activity,
 * then the worker's check of its answer. Returns what a worker-side body activity returns.
 */
export async function runClientBody(
  batch: BatchContext,
  ref: CallRef,
  packed: PackedCallRef,
  p: ToolProfile,
  guardsFirst: boolean,
): Promise<PackedBodyResult | string> {
  const binding = batch.input.options?.client;
  if (!binding)
    return ended(
      `${ref.name} runs on the user's device, and this session has no client attached to run it (a session started without a client key): it did not run. Tell the user it needs a client such as \`sluice chat --client-tools\`.`,
      ErrorCodes.CLIENT_UNAVAILABLE,
    );
  const guards = guardsFirst ? await worker.runGuards(withoutOwnDigest(ref)) : undefined;
  if (guards && guards.gate.kind !== 'dispatch') {
    const gate = guards.gate as Extract<typeof guards.gate, { message: string }>;
    return packBodyResult({
      outcome: gate.kind === 'failed' ? 'failed' : 'ok',
      candidate: errorCandidate(gate.message, gate.code),
      ...empty(),
      guards,
    });
  }
  const timeoutMs = p.clientTimeoutMs!;
  batch.tracker.stage(ref.callId, 'on-client');
  batch.events.record('client/waiting', { callId: ref.callId, name: ref.name, clientTimeoutMs: timeoutMs });
  let answer: Awaited<ReturnType<ClientToolActivities['runClientTool']>>;
  const wait = waitListed(batch, ref, timeoutMs);
  try {
    answer = await clientActivity(ref.sessionId, binding, p)(clientCall(ref));
  } catch (err) {
    if (!noClientCame(err)) throw err;
    return ended(
      `${ref.name} runs on the user's device, and no client of this session took the call within ${Math.round(timeoutMs / 1000)}s (the user's device is not attached): it did not complete. Tell the user; they can reattach (e.g. \`sluice chat --resume\` with the client tools) and ask again.`,
      ErrorCodes.CLIENT_UNAVAILABLE,
      guards,
    );
  } finally {
    wait.end();
  }
  const out = await worker.acceptClientBody({ ref: packed, binding, answer });
  return guards ? packBodyResult({ ...unpackBodyResult(out), guards }) : out;
}

/**
 * Lists the call in the batch's memo while it waits for the user's device, so `sluice approvals`
 * finds it from the server alone (the state query and `client/waiting` need a worker or the
 * history). Client tools came after 1.0.0, so no recorded history meets this memo's writes.
 */
function waitListed(batch: BatchContext, ref: CallRef, timeoutMs: number): { end(): void } {
  const waits = batch.clientWaits;
  const now = Date.now();
  const wait: ClientWait = {
    callId: ref.callId,
    name: ref.name,
    sessionId: ref.sessionId,
    workflowId: workflowInfo().workflowId,
    since: new Date(now).toISOString(),
    expiresAt: new Date(now + timeoutMs).toISOString(),
  };
  waits.push(wait);
  upsertMemo({ [CLIENT_WAITS_MEMO]: waits });
  return {
    end() {
      waits.splice(waits.indexOf(wait), 1);
      upsertMemo({ [CLIENT_WAITS_MEMO]: waits });
    },
  };
}

function clientActivity(sessionId: string, binding: ClientBinding, p: ToolProfile) {
  return proxyActivities<ClientToolActivities>({
    taskQueue: clientTaskQueue(sessionId, binding.keyId),
    scheduleToStartTimeout: p.clientTimeoutMs!,
    startToCloseTimeout: p.timeoutMs,
    heartbeatTimeout: p.heartbeatTimeoutMs,
    retry: {
      maximumAttempts: p.atMostOnce ? 1 : p.retry.maximumAttempts,
      initialInterval: p.retry.initialIntervalMs,
      backoffCoefficient: p.retry.backoffCoefficient,
      maximumInterval: p.retry.maximumIntervalMs,
      nonRetryableErrorTypes: p.retry.nonRetryableErrorTypes,
    },
    cancellationType: 'WAIT_CANCELLATION_COMPLETED',
    summary: `${p.atMostOnce ? 'at-most-once ' : ''}client tool`,
  })[CLIENT_TOOL_ACTIVITY];
}

function clientCall(ref: CallRef): ClientCall {
  return {
    callId: ref.callId,
    name: ref.name,
    args: ref.args,
    sessionId: ref.sessionId,
    turn: ref.turn,
    step: ref.step,
    idempotencyKey: ref.idempotencyKey,
    ...(ref.parentCallId ? { parentCallId: ref.parentCallId } : {}),
  };
}

/** No client took the call in time: the attempt was never started, so nothing ran on it. */
function noClientCame(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  return cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_START';
}

function ended(message: string, code: string, guards?: GuardsResult) {
  return packBodyResult({
    outcome: 'ok',
    candidate: errorCandidate(message, code),
    ...empty(),
    ...(guards ? { guards } : {}),
  });
}

function empty() {
  return { bodyContexts: [], wrapperContexts: [], events: [] };
}
