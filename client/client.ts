// The client library: run or start a batch, decide approvals, list what waits, read events.
import {
  Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure, type DataConverter } from '@temporalio/common';
import type { NativeConnection } from '@temporalio/worker';
import { batchInputProblem } from '../pipeline/batch-input';
import { jsonBytes, MAX_ARGUMENT_CHARS, MAX_INPUT_BYTES } from '../pipeline/budget';
import type {
  ApprovalDecision,
  ApprovalOutcome,
  BatchInput,
  BatchOutput,
  BatchState,
  DecidedApproval,
  DecisionApplied,
  DecisionRefusal,
  Json,
  PendingApproval,
  RefusalCode,
  SessionEvent,
  ToolCall,
} from '../pipeline/types';
import {
  BATCH_WORKFLOW,
  batchWorkflowId,
  DECISION_REFUSED,
  decideSignal,
  decideUpdate,
  SESSION_ID,
  stateQuery,
} from '../workflows/definitions';
import { DEFAULT_TASK_QUEUE } from '../worker/worker';

export interface SluiceClientOptions {
  connection: NativeConnection;
  namespace?: string;
  taskQueue?: string;
  /** Payload encryption (worker/codec.ts): the same as the workers'. */
  dataConverter?: DataConverter;
}

/** A batch's model-side input: tool calls whose arguments may still be parsed objects. */
export type BatchRequest = Omit<BatchInput, 'calls'> & {
  calls: (Omit<ToolCall, 'arguments'> & { arguments: string | object })[];
};

export class SluiceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SluiceError';
  }
}

/** A decision the batch did not take: expired, decided already, unknown, or bound to other arguments. */
export class DecisionRefusedError extends SluiceError {
  constructor(readonly refusal: DecisionRefusal) {
    super(`decision refused: ${refusal.message}`);
    this.name = 'DecisionRefusedError';
  }
}

export class SluiceClient {
  readonly temporal: Client;
  readonly taskQueue: string;

  constructor(opts: SluiceClientOptions) {
    this.temporal = new Client({
      connection: opts.connection,
      namespace: opts.namespace ?? 'default',
      ...(opts.dataConverter ? { dataConverter: opts.dataConverter } : {}),
    });
    this.taskQueue = opts.taskQueue ?? DEFAULT_TASK_QUEUE;
  }

  /**
   * Starts the batch, or attaches to it: the workflow id comes from (session, turn, step), so an
   * agent that crashes and resubmits gets the same batch, running or finished, never a second run.
   */
  async startBatch(request: BatchRequest): Promise<WorkflowHandle<(input: BatchInput) => Promise<BatchOutput>>> {
    const input = toBatchInput(request);
    const workflowId = batchWorkflowId(input.sessionId, input.turn, input.step);
    try {
      return await this.temporal.workflow.start(BATCH_WORKFLOW, {
        taskQueue: this.taskQueue,
        workflowId,
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: [{ key: SESSION_ID, value: input.sessionId }],
        staticSummary: `Tool batch: session ${input.sessionId}, turn ${input.turn}, step ${input.step}, ${input.calls.length} call(s)`,
      });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return this.temporal.workflow.getHandle(workflowId);
      throw err;
    }
  }

  async runBatch(request: BatchRequest): Promise<BatchOutput> {
    const handle = await this.startBatch(request);
    return handle.result();
  }

  async batchState(workflowId: string): Promise<BatchState> {
    return this.temporal.workflow.getHandle(workflowId).query(stateQuery);
  }

  /** Every approval waiting for a person, across all batches (needs a worker to answer queries). */
  async pendingApprovals(): Promise<PendingApproval[]> {
    const out: PendingApproval[] = [];
    for await (const wf of this.temporal.workflow.list({
      query: `SluiceAwaitingApproval = true AND ExecutionStatus = 'Running'`,
    })) {
      try {
        const state = await this.temporal.workflow.getHandle(wf.workflowId, wf.runId).query(stateQuery);
        out.push(...state.pending);
      } catch {
        // finished or unreachable between list and query: nothing pending there any more
      }
    }
    return out.sort((a, b) => a.expiresAt.localeCompare(b.expiresAt));
  }

  /** Finds the batch that waits on an approval id, from search attributes alone (no worker needed). */
  async findApproval(approvalId: string): Promise<string> {
    // Search attributes reach visibility a moment after the ask: look again briefly before
    // telling a person their id is unknown.
    for (let attempt = 0; attempt < 4; attempt++) {
      if (attempt) await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
      for await (const wf of this.temporal.workflow.list({
        query: `SluicePendingApprovals = '${approvalId.replace(/'/g, '')}'`,
      })) {
        return wf.workflowId;
      }
    }
    throw new SluiceError(
      `no batch is waiting on approval ${approvalId}: it may have been decided or expired already. List pending ones with \`npx sluice approvals\`.`,
    );
  }

  /**
   * Decides an approval through the update, so the answer is confirmed: the outcome, or a
   * DecisionRefusedError saying why it was refused (expired, decided, unknown, arguments changed).
   * Pass the argsDigest the person was shown; without one, the digest pending right now is used,
   * which binds the decision to the call but not to what anybody saw.
   */
  async decide(decision: ApprovalDecision & { workflowId?: string }): Promise<DecisionApplied> {
    const workflowId = decision.workflowId ?? (await this.findApproval(decision.approvalId));
    const { workflowId: _omit, ...payload } = decision;
    const handle = this.temporal.workflow.getHandle(workflowId);
    if (!payload.argsDigest) {
      const pending = await handle.query(stateQuery).then(
        (s) => s.pending.find((p) => p.approvalId === decision.approvalId),
        () => undefined,
      );
      if (pending) payload.argsDigest = pending.argsDigest;
    }
    try {
      return await handle.executeUpdate(decideUpdate, {
        args: [payload],
        updateId: `decide:${decision.approvalId}:${decision.decision}:${decision.by ?? ''}:${payload.argsDigest ?? ''}`,
      });
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) {
        const cause = err.cause;
        if (cause instanceof ApplicationFailure && cause.type === DECISION_REFUSED && cause.details?.[0])
          throw new DecisionRefusedError(cause.details[0] as DecisionRefusal);
        throw new SluiceError(`decision refused: ${cause?.message ?? err.message}`);
      }
      if (err instanceof WorkflowNotFoundError) throw await this.refusalAfterClose(workflowId, decision.approvalId);
      throw err;
    }
  }

  /** Why a decision came too late for a batch that has finished: how its ask ended, from the result. */
  private async refusalAfterClose(workflowId: string, approvalId: string): Promise<SluiceError> {
    let output: BatchOutput;
    try {
      output = await this.temporal.workflow.getHandle(workflowId).result();
    } catch {
      return new SluiceError(`batch ${workflowId} does not exist or did not complete; nothing can be decided there`);
    }
    const decided = output.events.find((e) => e.type === 'approval/decided' && e.data.id === approvalId);
    if (!decided)
      return new DecisionRefusedError({
        code: 'unknown',
        message: `batch ${workflowId} has finished, and it never asked approval ${approvalId}`,
      });
    const d = decided.data as { callId: string; outcome: DecisionRefusal['outcome']; by?: string; expired?: boolean };
    const ended = { callId: d.callId, outcome: d.outcome, ...(d.by ? { by: d.by } : {}) };
    if (d.expired)
      return new DecisionRefusedError({
        code: 'expired',
        message: `approval ${approvalId} expired at ${decided.time}: nobody decided before the deny timeout, so the call was denied`,
        ...ended,
      });
    return new DecisionRefusedError({
      code: 'decided',
      message: `approval ${approvalId} was already decided: ${d.outcome}${d.by ? ` by ${d.by}` : ''}`,
      ...ended,
    });
  }

  /** Fire-and-forget decision by signal: accepted by the server even while no worker runs (see signalOutcome). */
  async signalDecision(decision: ApprovalDecision & { workflowId?: string }): Promise<void> {
    const workflowId = decision.workflowId ?? (await this.findApproval(decision.approvalId));
    const { workflowId: _omit, ...payload } = decision;
    await this.temporal.workflow.getHandle(workflowId).signal(decideSignal, payload);
  }

  /**
   * What became of a decision sent by signal, as far as it can be known within `waitMs`: applied,
   * refused (and why), or unknown when no worker answered (the server keeps the signal; the batch
   * takes or refuses it when a worker is back, and `sluice audit` shows which).
   */
  async signalOutcome(decision: ApprovalDecision, workflowId: string, waitMs = 5000): Promise<SignalOutcome> {
    const handle = this.temporal.workflow.getHandle(workflowId);
    const deadline = Date.now() + waitMs;
    const expected = decision.decision === 'approve' ? 'allowed-once' : 'rejected';
    const fromDecided = (done: DecidedApproval): SignalOutcome =>
      done.by === decision.by && done.outcome === expected && !done.expired
        ? { status: 'applied', outcome: done.outcome, ...(done.by ? { by: done.by } : {}) }
        : {
            status: 'refused',
            refusal: {
              code: done.expired ? 'expired' : 'decided',
              message: done.expired
                ? `approval ${decision.approvalId} expired at ${done.decidedAt}: nobody decided before the deny timeout, so the call was denied`
                : `approval ${decision.approvalId} was already decided: ${done.outcome}${done.by ? ` by ${done.by}` : ''}`,
              callId: done.callId,
              outcome: done.outcome,
              ...(done.by ? { by: done.by } : {}),
            },
          };
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const description = await handle.describe().catch(() => undefined);
      if (description && description.status.name !== 'RUNNING') {
        const output = (await handle.result().catch(() => undefined)) as BatchOutput | undefined;
        const refused = output?.events.find(
          (e) =>
            e.type === 'approval/refused' &&
            e.data.id === decision.approvalId &&
            e.data.via === 'signal' &&
            e.data.decision === decision.decision &&
            (e.data.by ?? undefined) === decision.by,
        );
        if (refused)
          return {
            status: 'refused',
            refusal: { code: refused.data.code as RefusalCode, message: String(refused.data.problem) },
          };
        const decided = output?.events.find((e) => e.type === 'approval/decided' && e.data.id === decision.approvalId);
        if (decided) {
          const d = decided.data as { callId: string; outcome: ApprovalOutcome; by?: string; expired?: true };
          return fromDecided({ approvalId: decision.approvalId, decidedAt: decided.time, ...d });
        }
        return { status: 'unknown', message: `batch ${workflowId} has closed and its result does not say` };
      }
      const state = await Promise.race([
        handle.query(stateQuery).catch(() => undefined),
        new Promise<undefined>((r) => setTimeout(r, Math.min(left, 2000))),
      ]);
      if (state) {
        const done = state.decided.find((d) => d.approvalId === decision.approvalId);
        if (done) return fromDecided(done);
        const pending = state.pending.find((p) => p.approvalId === decision.approvalId);
        if (!pending)
          return {
            status: 'refused',
            refusal: {
              code: 'unknown',
              message: `no approval ${decision.approvalId} is pending in batch ${workflowId}; list pending ones with \`npx sluice approvals\``,
            },
          };
        if (decision.argsDigest && decision.argsDigest !== pending.argsDigest)
          return {
            status: 'refused',
            refusal: {
              code: 'digest-mismatch',
              message: `the arguments you were shown (digest ${decision.argsDigest.slice(0, 80)}) are not the ones this call would run with (${pending.argsDigest}); reload and decide again`,
              callId: pending.callId,
            },
          };
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    return {
      status: 'unknown',
      message: `no worker answered within ${Math.round(waitMs / 1000)} s; the server keeps the signal and the batch applies or refuses it when a worker runs it (\`npx sluice audit ${workflowId}\` shows which)`,
    };
  }

  approve(approvalId: string, opts: { by?: string; reason?: string; workflowId?: string; argsDigest?: string } = {}) {
    return this.decide({ approvalId, decision: 'approve', ...opts });
  }

  deny(approvalId: string, opts: { by?: string; reason?: string; workflowId?: string; argsDigest?: string } = {}) {
    return this.decide({ approvalId, decision: 'deny', ...opts });
  }

  /**
   * Where a session's next batch starts, as the server sees it: one past the last seq of its
   * completed batches, and the batches still running (whose events are not all numbered yet).
   */
  async sessionSeq(sessionId: string): Promise<{ nextSeq: number; running: string[] }> {
    let nextSeq = 0;
    const running: string[] = [];
    for await (const wf of this.temporal.workflow.list({
      query: `SluiceSessionId = '${sessionId.replace(/'/g, '')}'`,
    })) {
      if (wf.status.name === 'RUNNING') running.push(wf.workflowId);
      else if (wf.status.name === 'COMPLETED') {
        const out = (await this.temporal.workflow.getHandle(wf.workflowId, wf.runId).result()) as BatchOutput;
        nextSeq = Math.max(nextSeq, out.nextSeq);
      }
    }
    return { nextSeq, running };
  }

  /** A session's events in seq order, from the results of its finished batches. */
  async sessionEvents(sessionId: string): Promise<SessionEvent[]> {
    const events: SessionEvent[] = [];
    for await (const wf of this.temporal.workflow.list({
      query: `SluiceSessionId = '${sessionId.replace(/'/g, '')}' AND ExecutionStatus = 'Completed'`,
    })) {
      const out = (await this.temporal.workflow.getHandle(wf.workflowId, wf.runId).result()) as BatchOutput;
      events.push(...out.events);
    }
    return events.sort((a, b) => a.seq - b.seq);
  }
}

/** What became of a decision sent by signal (`SluiceClient.signalOutcome`). */
export type SignalOutcome =
  | { status: 'applied'; outcome: ApprovalOutcome; by?: string }
  | { status: 'refused'; refusal: DecisionRefusal }
  | { status: 'unknown'; message: string };

export function toBatchInput(request: BatchRequest): BatchInput {
  const input: BatchInput = {
    ...request,
    calls: (request.calls ?? []).map((c) =>
      withinArgumentLimit({
        id: c.id,
        name: c.name,
        arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
      }),
    ),
  };
  const problem = batchInputProblem(input);
  if (problem) throw new SluiceError(`malformed batch: ${problem}`);
  const bytes = jsonBytes(input as unknown as Json);
  if (bytes > MAX_INPUT_BYTES) {
    throw new SluiceError(
      `the batch is ${bytes} bytes, over the ${MAX_INPUT_BYTES}-byte limit for one batch (Temporal refuses payloads over 2 MB); no batch was started. Send its calls in several batches.`,
    );
  }
  return input;
}

/**
 * Arguments too large for Temporal never leave the client: the call goes with a preview, and the
 * batch gives it an INVALID_ARGS result the model can act on, while the other calls run.
 */
function withinArgumentLimit(call: ToolCall): ToolCall {
  if (typeof call.arguments !== 'string' || call.arguments.length <= MAX_ARGUMENT_CHARS) return call;
  return { ...call, arguments: call.arguments.slice(0, 1000), argumentsChars: call.arguments.length };
}
