// The client library: run or start a batch, decide approvals, list what waits, read events.
import { Client, WorkflowExecutionAlreadyStartedError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { NativeConnection } from '@temporalio/worker';
import { batchInputProblem } from '../pipeline/batch-input';
import { jsonBytes, MAX_ARGUMENT_CHARS, MAX_INPUT_BYTES } from '../pipeline/budget';
import type { ApprovalDecision, ApprovalOutcome, BatchInput, BatchOutput, BatchState, Json, PendingApproval, SessionEvent, ToolCall } from '../pipeline/types';
import { BATCH_WORKFLOW, batchWorkflowId, decideSignal, decideUpdate, SESSION_ID, stateQuery } from '../workflows/definitions';
import { DEFAULT_TASK_QUEUE } from '../worker/worker';

export interface SluiceClientOptions {
  connection: NativeConnection;
  namespace?: string;
  taskQueue?: string;
  /** Payload encryption (worker/codec.ts): the same as the workers'. */
  dataConverter?: DataConverter;
}

/** A batch's model-side input: tool calls whose arguments may still be parsed objects. */
export type BatchRequest = Omit<BatchInput, 'calls'> & { calls: (Omit<ToolCall, 'arguments'> & { arguments: string | object })[] };

export class SluiceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SluiceError';
  }
}

export class SluiceClient {
  readonly temporal: Client;
  readonly taskQueue: string;

  constructor(opts: SluiceClientOptions) {
    this.temporal = new Client({ connection: opts.connection, namespace: opts.namespace ?? 'default', ...(opts.dataConverter ? { dataConverter: opts.dataConverter } : {}) });
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
    for await (const wf of this.temporal.workflow.list({ query: `SluiceAwaitingApproval = true AND ExecutionStatus = 'Running'` })) {
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
    for await (const wf of this.temporal.workflow.list({ query: `SluicePendingApprovals = '${approvalId.replace(/'/g, '')}'` })) {
      return wf.workflowId;
    }
    throw new SluiceError(`no batch is waiting on approval ${approvalId}: it may have been decided or expired already. List pending ones with \`npx sluice approvals\`.`);
  }

  /**
   * Decides an approval through the update, so the answer is confirmed: the outcome, or an error
   * saying why the decision was refused (unknown id, already decided, arguments changed).
   */
  async decide(decision: ApprovalDecision & { workflowId?: string }): Promise<{ approvalId: string; outcome: ApprovalOutcome }> {
    const workflowId = decision.workflowId ?? (await this.findApproval(decision.approvalId));
    const { workflowId: _omit, ...payload } = decision;
    try {
      return await this.temporal.workflow.getHandle(workflowId).executeUpdate(decideUpdate, { args: [payload], updateId: `decide:${decision.approvalId}:${decision.decision}:${decision.by ?? ''}` });
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) throw new SluiceError(`decision refused: ${(err.cause as Error)?.message ?? err.message}`);
      throw err;
    }
  }

  /** Fire-and-forget decision by signal: accepted by the server even while no worker runs. */
  async signalDecision(decision: ApprovalDecision & { workflowId?: string }): Promise<void> {
    const workflowId = decision.workflowId ?? (await this.findApproval(decision.approvalId));
    const { workflowId: _omit, ...payload } = decision;
    await this.temporal.workflow.getHandle(workflowId).signal(decideSignal, payload);
  }

  approve(approvalId: string, opts: { by?: string; reason?: string; workflowId?: string; argsDigest?: string } = {}) {
    return this.decide({ approvalId, decision: 'approve', ...opts });
  }

  deny(approvalId: string, opts: { by?: string; reason?: string; workflowId?: string; argsDigest?: string } = {}) {
    return this.decide({ approvalId, decision: 'deny', ...opts });
  }

  /** A session's events in seq order, from the results of its finished batches. */
  async sessionEvents(sessionId: string): Promise<SessionEvent[]> {
    const events: SessionEvent[] = [];
    for await (const wf of this.temporal.workflow.list({ query: `SluiceSessionId = '${sessionId.replace(/'/g, '')}' AND ExecutionStatus = 'Completed'` })) {
      const out = (await this.temporal.workflow.getHandle(wf.workflowId, wf.runId).result()) as BatchOutput;
      events.push(...out.events);
    }
    return events.sort((a, b) => a.seq - b.seq);
  }
}

export function toBatchInput(request: BatchRequest): BatchInput {
  const input: BatchInput = {
    ...request,
    calls: (request.calls ?? []).map((c) => withinArgumentLimit({ id: c.id, name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) })),
  };
  const problem = batchInputProblem(input);
  if (problem) throw new SluiceError(`malformed batch: ${problem}`);
  const bytes = jsonBytes(input as unknown as Json);
  if (bytes > MAX_INPUT_BYTES) {
    throw new SluiceError(`the batch is ${bytes} bytes, over the ${MAX_INPUT_BYTES}-byte limit for one batch (Temporal refuses payloads over 2 MB); no batch was started. Send its calls in several batches.`);
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
