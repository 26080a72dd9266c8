// The client library: run or start a batch, decide approvals, list what waits, read events.
import { type SealKey, sealIdentity, sealKeyFromEnv } from './identity';
import { createHash } from 'node:crypto';
import {
  Client,
  InternalConnectionLikeSymbol,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type ConnectionLike,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure, type DataConverter } from '@temporalio/common';
import { decodeMapFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import { temporal } from '@temporalio/proto';
import { type BatchRequest, prepareBatch } from '../pipeline/batch-input';
import {
  BatchConflictError,
  DecisionRefusedError,
  InvalidInputError,
  NoWorkerError,
  NotFoundError,
  ServerError,
  SluiceError,
} from '../support/errors';
import { hasVersionedWorker } from '../temporal/eager-start';
import { isEvent } from '../pipeline/events';
import { type BatchOutputWire, expandBatchOutput } from '../pipeline/output';
import type {
  ApprovalDecision,
  ApprovalOutcome,
  ApprovalsMemo,
  BatchInput,
  BatchOutput,
  BatchState,
  DecidedApproval,
  DecisionApplied,
  DecisionRefusal,
  PendingApproval,
  SessionEvent,
} from '../pipeline/types';
import {
  APPROVALS_MEMO,
  BATCH_WORKFLOW,
  batchWorkflowId,
  DEFAULT_TASK_QUEUE,
  EMPTY_APPROVALS_MEMO,
  DECISION_REFUSED,
  decideSignal,
  decideUpdate,
  reassignSignal,
  SEARCH_ATTRIBUTES,
  SEQ_CONFLICT,
  SESSION_ID,
  stateQuery,
} from '../workflows/definitions';
import { RECONCILE_UPDATE, type ReconcileDecision, type Reconciliation } from '../pipeline/reconcile';

export interface SluiceClientOptions {
  /** A client connection (`connect()` from sluice/client) or a worker's NativeConnection. */
  connection: ConnectionLike;
  namespace?: string;
  taskQueue?: string;
  /** Payload encryption (temporal/codec.ts): the same as the workers'. */
  dataConverter?: DataConverter;
  /**
   * Eager start: when this process also runs a worker on the client's task queue over the same
   * NativeConnection (an embedded agent), the server hands the batch's first workflow task back
   * in the start call's answer and that worker runs it at once, with no trip through the task
   * queue. Default: asked for whenever the connection is a NativeConnection (a worker's; the
   * plain Connection from sluice/client's connect() cannot share one); Temporal's core
   * asks the server only when a worker of this process polls the task queue and has a free slot,
   * so elsewhere it changes nothing. `false` never asks; `true` requires a NativeConnection.
   * What it changes: if this process dies while it holds that first task, another worker picks
   * the batch up after the workflow task timeout (10 s) instead of at once. Not asked for on a
   * task queue where this process runs a worker with worker versioning (`deployment`): the
   * server would pin the batch to that worker's version rather than the current one.
   */
  eagerStart?: boolean;
  /**
   * When a batch (runBatch) or a session message (send) is still waiting `noWorkerAfterMs` after
   * it was sent and no worker polls the client's task queue: `'warn'` (the default) writes one line
   * through `onWarning`, naming the task queue and the ones workers do poll, and keeps waiting, so
   * a worker that is only restarting costs nothing; `'fail'` throws NoWorkerError (what was
   * started stays started: the same request sent again attaches to it); `'off'` checks nothing.
   */
  noWorker?: 'warn' | 'fail' | 'off';
  /** How long a call waits before it looks for a worker (default 5000 ms). */
  noWorkerAfterMs?: number;
  /** Where the client's warnings go (default console.warn). */
  onWarning?: (message: string) => void;
}

export type { BatchRequest };

/** The batch workflow's signature as it returns: each result's content once (pipeline/output.ts). */
type ToolBatchFn = (input: BatchInput) => Promise<BatchOutputWire>;

/**
 * A batch's workflow handle whose `result()` is the BatchOutput readers know (expandBatchOutput
 * applied). The raw workflow result, from a plain Temporal handle, is a BatchOutputWire.
 */
export type BatchHandle = Omit<WorkflowHandle<ToolBatchFn>, 'result'> & {
  result(): Promise<BatchOutput>;
  /** True when this call started the batch eagerly on this process's worker (SluiceClientOptions.eagerStart). */
  readonly eagerlyStarted: boolean;
  /** The run the server answered the start with (absent when the batch had finished and was attached to). */
  readonly firstExecutionRunId?: string;
};

function expanding(handle: WorkflowHandle<ToolBatchFn>, eagerlyStarted = false): BatchHandle {
  const result = async () => expandBatchOutput(await handle.result());
  return Object.assign(Object.create(handle) as WorkflowHandle<ToolBatchFn>, { result, eagerlyStarted });
}

/** True for a NativeConnection (@temporalio/worker), the only kind a worker can share for eager start. */
export function supportsEagerStart(connection: ConnectionLike): boolean {
  const internal = (connection as { [InternalConnectionLikeSymbol]?: { supportsEagerStart?: boolean } })[
    InternalConnectionLikeSymbol
  ];
  return internal?.supportsEagerStart === true;
}

export { DecisionRefusedError, SluiceError } from '../support/errors';

/** How long a read that needs no worker may take before the client says it cannot tell. */
const SERVER_DEADLINE_MS = 10_000;
/** How many recent batches a decision for an approval no longer waiting looks through for how it ended. */
const DECIDED_SCAN = 2_000;
/** How long a batch's worker has to answer before a decision is queued by signal instead. */
export const DEFAULT_PROBE_MS = 3_000;
/** How long an update may take to be confirmed once a worker answered. */
const CONFIRM_DEADLINE_MS = 20_000;

/** What waits for a person, and the batches the client could not read (it never guesses "nothing"). */
export interface ApprovalsOverview {
  pending: PendingApproval[];
  unreadable: { workflowId: string; problem: string }[];
}

/** Narrows the approvals listed to one task queue (a team's workers) or one session. */
export interface ApprovalsScope {
  taskQueue?: string;
  sessionId?: string;
}

/** Where a decision went: applied by a running worker, or queued on the server until one runs. */
export type DecisionSubmitted =
  | ({ status: 'applied'; workflowId: string } & DecisionApplied)
  | {
      status: 'queued';
      workflowId: string;
      approvalId: string;
      requestId: string;
      argsDigest?: string;
      /** The call the decision is for, as the memo showed it (absent when it no longer waits). */
      pending?: PendingApproval;
      message: string;
    };

export class SluiceClient {
  readonly temporal: Client;
  readonly taskQueue: string;
  /** Whether batches are started with eager start asked for (SluiceClientOptions.eagerStart). */
  readonly eagerStart: boolean;
  private readonly noWorker: { mode: 'warn' | 'fail' | 'off'; afterMs: number; warn: (message: string) => void };

  constructor(opts: SluiceClientOptions) {
    const eager = supportsEagerStart(opts.connection);
    if (opts.eagerStart === true && !eager)
      throw new InvalidInputError(
        "eagerStart needs the NativeConnection a worker of this process uses (NativeConnection.connect from @temporalio/worker, the one you give Worker.create); this connection is a plain client Connection (sluice/client's connect() makes one). Pass the worker's connection, or leave eagerStart unset.",
      );
    this.eagerStart = opts.eagerStart ?? eager;
    this.temporal = new Client({
      connection: opts.connection,
      namespace: opts.namespace ?? 'default',
      ...(opts.dataConverter ? { dataConverter: opts.dataConverter } : {}),
    });
    this.taskQueue = opts.taskQueue ?? DEFAULT_TASK_QUEUE;
    this.noWorker = {
      mode: opts.noWorker ?? 'warn',
      afterMs: opts.noWorkerAfterMs ?? 5_000,
      warn: opts.onWarning ?? ((m) => console.warn(m)),
    };
  }

  /**
   * `waiting`, watched: if it has not settled after noWorkerAfterMs and no worker polls the task
   * queue, the client warns or fails (SluiceClientOptions.noWorker). A task queue nobody polls is
   * the silent hang of a first setup: a client and a worker given different task queues.
   */
  async watchForWorker<T>(waiting: Promise<T>, what: string): Promise<T> {
    const { mode, afterMs, warn } = this.noWorker;
    if (mode === 'off') return waiting;
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const noWorker = new Promise<never>((_, reject) => {
      timer = setTimeout(async () => {
        const message = await this.noWorkerMessage(what).catch(() => undefined);
        if (!message || settled) return;
        if (mode === 'fail') reject(new NoWorkerError(this.taskQueue, message));
        else warn(`sluice: ${message}`);
      }, afterMs);
      timer.unref?.();
    });
    noWorker.catch(() => undefined);
    try {
      return await Promise.race([waiting, noWorker]);
    } finally {
      settled = true;
      clearTimeout(timer);
    }
  }

  /** Undefined when a worker polls the client's task queue; else what to tell the person. */
  async noWorkerMessage(what: string): Promise<string | undefined> {
    if ((await this.pollers(this.taskQueue)) > 0) return undefined;
    const elsewhere = await this.polledTaskQueues().catch(() => [] as string[]);
    const hint = elsewhere.length
      ? `workers poll ${elsewhere.map((q) => `'${q}'`).join(', ')}: give the client the worker's task queue (new SluiceClient({ taskQueue: '${elsewhere[0]}' }), --task-queue on the CLI)`
      : "start one (npx sluice worker, or your worker with SluicePlugin) on this task queue, or give the client your worker's task queue (new SluiceClient({ taskQueue }))";
    return `no worker is polling task queue '${this.taskQueue}' (namespace ${this.temporal.options.namespace}); ${what} waits until one does. ${hint}. Set noWorker: 'off' on the SluiceClient to silence this, or 'fail' to throw instead.`;
  }

  /** How many workers poll a task queue for workflow tasks (the server forgets a poller minutes after it stops). */
  private async pollers(taskQueue: string): Promise<number> {
    const res = await this.temporal.workflowService.describeTaskQueue({
      namespace: this.temporal.options.namespace,
      taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    return res.pollers?.length ?? 0;
  }

  /** Task queues of recent workflows in the namespace that a worker polls now: where a lost worker likely is. */
  private async polledTaskQueues(): Promise<string[]> {
    const queues = new Set<string>();
    await this.temporal.withDeadline(Date.now() + SERVER_DEADLINE_MS, async () => {
      let seen = 0;
      for await (const wf of this.temporal.workflow.list({ pageSize: 100 })) {
        if (wf.taskQueue !== this.taskQueue) queues.add(wf.taskQueue);
        if (++seen >= 200 || queues.size >= 10) break;
      }
    });
    const polled: string[] = [];
    for (const q of queues) if ((await this.pollers(q).catch(() => 0)) > 0) polled.push(q);
    return polled;
  }

  /**
   * Starts the batch, or attaches to it: the workflow id comes from (session, turn, step), so an
   * agent that crashes and resubmits gets the same batch, running or finished, never a second run.
   */
  async startBatch(request: BatchRequest): Promise<BatchHandle> {
    const input = toBatchInput(request);
    const workflowId = batchWorkflowId(input.sessionId, input.turn, input.step);
    const callsDigest = digestOfCalls(input);
    const start = (reuse: 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE_FAILED_ONLY') =>
      this.temporal.workflow.start(BATCH_WORKFLOW, {
        taskQueue: this.taskQueue,
        workflowId,
        args: [input],
        // A batch that exists, running or closed, is an error here and attached to below, once
        // its calls are known to be these.
        workflowIdConflictPolicy: 'FAIL',
        workflowIdReusePolicy: reuse,
        typedSearchAttributes: [{ key: SESSION_ID, value: input.sessionId }],
        // Approvals: present from the start, so the batch keeps it current (workflows/approvals.ts).
        // Calls: what a resubmission of this (session, turn, step) is compared with.
        memo: { [APPROVALS_MEMO]: EMPTY_APPROVALS_MEMO, [CALLS_MEMO]: callsDigest },
        staticSummary: `Tool batch: session ${input.sessionId}, turn ${input.turn}, step ${input.step}, ${input.calls.length} call(s)`,
        // Only a batch this call creates is started eagerly; an existing one is attached to as is.
        // Never beside a versioned worker of this process: it would pin the batch to its own version.
        ...(this.eagerStart && !hasVersionedWorker(this.temporal.options.namespace, this.taskQueue)
          ? { requestEagerStart: true }
          : {}),
      });
    const started = async (reuse: 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE_FAILED_ONLY') => {
      const handle = await start(reuse);
      return expanding(handle, handle.eagerlyStarted);
    };
    try {
      return await this.startNeedingAttributes(() => started('REJECT_DUPLICATE'));
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      const existing = this.temporal.workflow.getHandle<ToolBatchFn>(workflowId);
      const desc = await existing.describe();
      // A batch refused for its seqs ran nothing, so the same batch may be sent again, renumbered.
      if (await refusedForSeq(existing, desc.status.name)) {
        try {
          return await started('ALLOW_DUPLICATE_FAILED_ONLY');
        } catch (again) {
          if (!(again instanceof WorkflowExecutionAlreadyStartedError)) throw again;
        }
      }
      // The same (session, turn, step) with other calls is another request under a taken id:
      // answering it with the first batch's outcome would give the model results for calls it
      // never made. Batches started before the digest was kept are attached as before.
      const recorded = desc.memo?.[CALLS_MEMO];
      if (typeof recorded === 'string' && recorded !== callsDigest)
        throw new BatchConflictError(
          workflowId,
          `batch ${workflowId} (session ${input.sessionId}, turn ${input.turn}, step ${input.step}) already exists with other calls than these; a resubmission attaches only with the same calls (ids, names, arguments). Send new calls as the next step (step ${input.step + 1}), or resend exactly the calls of the first submission.`,
        );
      // A running batch's run is its first (a batch never continues as new): as the start would say.
      return desc.status.name === 'RUNNING'
        ? Object.assign(expanding(existing), { firstExecutionRunId: desc.runId })
        : expanding(existing);
    }
  }

  /**
   * A workflow start that sets Sluice's search attributes. A server without them refuses it; a
   * worker of this process may be registering them right now (SluicePlugin does before it polls),
   * so the client looks for them for a few seconds and starts again once, else says what to run.
   */
  async startNeedingAttributes<T>(start: () => Promise<T>): Promise<T> {
    const namespace = this.temporal.options.namespace;
    try {
      return await start();
    } catch (err) {
      const explained = explainStartFailure(err, namespace);
      if (explained === err) throw err;
      for (let waited = 0; waited < 10_000; waited += 500) {
        await new Promise((r) => setTimeout(r, 500));
        const have = await this.temporal.connection.operatorService
          .listSearchAttributes({ namespace })
          .then((r) => ({ ...(r.customAttributes ?? {}), ...(r.systemAttributes ?? {}) }))
          .catch(() => ({}));
        if (Object.keys(SEARCH_ATTRIBUTES).every((name) => name in have)) {
          try {
            return await start();
          } catch (again) {
            throw explainStartFailure(again, namespace);
          }
        }
      }
      throw explained;
    }
  }

  async runBatch(request: BatchRequest): Promise<BatchOutput> {
    const handle = await this.startBatch(request);
    return this.watchForWorker(handle.result(), `batch ${handle.workflowId}`);
  }

  async batchState(workflowId: string): Promise<BatchState> {
    return this.temporal.workflow.getHandle(workflowId).query(stateQuery);
  }

  /**
   * Every approval waiting for a person on this client's task queue (`scope.taskQueue` for
   * another, `allTaskQueues: true` for the whole namespace). A batch whose approvals this client
   * cannot read (another team's memo, encrypted with a key it does not hold; an old batch no
   * worker answers for) does not hide the others: the readable ones are returned, and the array's
   * `unreadable` lists the rest with the reason. Check it before concluding nothing waits.
   */
  async pendingApprovals(
    scope: ApprovalsScope & { allTaskQueues?: boolean } = {},
  ): Promise<PendingApproval[] & { unreadable: ApprovalsOverview['unreadable'] }> {
    const { allTaskQueues, ...rest } = scope;
    const { pending, unreadable } = await this.approvalsOverview(
      allTaskQueues || rest.taskQueue ? rest : { ...rest, taskQueue: this.taskQueue },
    );
    return Object.assign(pending, { unreadable });
  }

  /**
   * Every approval waiting for a person, from the server alone: visibility finds the batches, and
   * each batch's memo (read with describe, strongly consistent) holds its cards and digests. No
   * worker is needed. Batches started before the memo existed are queried, with a deadline.
   */
  async approvalsOverview(scope: ApprovalsScope = {}): Promise<ApprovalsOverview> {
    const listed: string[] = [];
    const quote = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
    const query = [
      'SluiceAwaitingApproval = true',
      "ExecutionStatus = 'Running'",
      ...(scope.taskQueue ? [`TaskQueue = ${quote(scope.taskQueue)}`] : []),
      ...(scope.sessionId ? [`SluiceSessionId = ${quote(scope.sessionId)}`] : []),
    ].join(' AND ');
    try {
      // The raw listing, not workflow.list(): that one decodes every batch's memo on the way, so a
      // single memo this client cannot decode (another team's key) failed the whole listing.
      // Each batch's memo is read below, on its own.
      await this.temporal.withDeadline(Date.now() + SERVER_DEADLINE_MS, async () => {
        let nextPageToken: Uint8Array | undefined;
        do {
          const page = await this.temporal.workflowService.listWorkflowExecutions({
            namespace: this.temporal.options.namespace,
            query,
            ...(nextPageToken?.length ? { nextPageToken } : {}),
          });
          for (const e of page.executions ?? []) if (e.execution?.workflowId) listed.push(e.execution.workflowId);
          nextPageToken = page.nextPageToken ?? undefined;
        } while (nextPageToken?.length);
      });
    } catch (err) {
      throw new SluiceError(
        `cannot tell whether any call waits for approval: listing the waiting batches failed (${(err as Error).message}). Check the connection to Temporal (--address, TEMPORAL_ADDRESS).`,
      );
    }
    const out: ApprovalsOverview = { pending: [], unreadable: [] };
    await Promise.all(
      listed.map(async (workflowId) => {
        try {
          const read = await this.readApprovals(workflowId);
          if (read.running) out.pending.push(...read.pending);
        } catch (err) {
          const message = (err as Error).message;
          out.unreadable.push({
            workflowId,
            problem: /encoding|decrypt|codec|key id/i.test(message)
              ? `its memo cannot be decoded by this client (${message}): it was written with a payload codec or key this client does not have (SLUICE_CODEC_KEYS), likely by another team's workers on the namespace`
              : message,
          });
        }
      }),
    );
    out.pending.sort((a, b) => a.expiresAt.localeCompare(b.expiresAt));
    return out;
  }

  /**
   * A batch's approvals as the server holds them: its memo (no worker needed), or for a batch
   * started before the memo existed, its query (bounded: a worker must answer within the probe).
   */
  async readApprovals(
    workflowId: string,
  ): Promise<{ running: boolean; pending: PendingApproval[]; memo?: ApprovalsMemo }> {
    const handle = this.temporal.workflow.getHandle(workflowId);
    const desc = await this.temporal.withDeadline(Date.now() + SERVER_DEADLINE_MS, () => handle.describe());
    const running = desc.status.name === 'RUNNING';
    const memo = desc.memo?.[APPROVALS_MEMO] as ApprovalsMemo | undefined;
    if (memo && memo.v === 1) return { running, pending: running ? memo.pending : [], memo };
    if (!running) return { running, pending: [] };
    try {
      const state = await this.temporal.withDeadline(Date.now() + DEFAULT_PROBE_MS, () => handle.query(stateQuery));
      return { running, pending: state.pending };
    } catch (err) {
      throw new SluiceError(
        `this batch predates the approvals memo and no worker answered its query within ${DEFAULT_PROBE_MS / 1000}s (${(err as Error).message}); start a worker to read it`,
      );
    }
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
    // Not waiting: if a batch's memo records it as decided or expired, that is the answer (a
    // second approve is refused `decided`, as documented), not "unknown id".
    const ended = await this.findDecided(approvalId);
    if (ended) throw ended;
    throw new NotFoundError(
      `no batch is waiting on approval ${approvalId}: it may have been decided or expired already. List pending ones with \`npx sluice approvals\`.`,
    );
  }

  /**
   * The refusal for an approval some batch's memo records as ended (decided or expired), from the
   * newest batches first (at most DECIDED_SCAN of them, running or closed). Memos come from the
   * listing itself, decoded one by one, so a batch this client cannot decode is skipped.
   */
  private async findDecided(approvalId: string): Promise<DecisionRefusedError | undefined> {
    let nextPageToken: Uint8Array | undefined;
    let seen = 0;
    try {
      do {
        const page = await this.temporal.withDeadline(Date.now() + SERVER_DEADLINE_MS, () =>
          this.temporal.workflowService.listWorkflowExecutions({
            namespace: this.temporal.options.namespace,
            query: `WorkflowType = '${BATCH_WORKFLOW}'`,
            pageSize: 200,
            ...(nextPageToken?.length ? { nextPageToken } : {}),
          }),
        );
        for (const e of page.executions ?? []) {
          seen++;
          const fields = e.memo?.fields;
          if (!fields?.[APPROVALS_MEMO]) continue;
          const memo = (
            await decodeMapFromPayloads(this.temporal.options.loadedDataConverter, fields).catch(() => undefined)
          )?.[APPROVALS_MEMO] as ApprovalsMemo | undefined;
          const done = memo?.decided?.find((d) => d.approvalId === approvalId);
          if (!done || !e.execution?.workflowId) continue;
          const info = { callId: done.callId, outcome: done.outcome, ...(done.by ? { by: done.by } : {}) };
          return new DecisionRefusedError(
            done.expired
              ? {
                  code: 'expired',
                  message: `approval ${approvalId} expired at ${done.decidedAt}: nobody decided before the deny timeout, so the call was denied (batch ${e.execution.workflowId})`,
                  ...info,
                }
              : {
                  code: 'decided',
                  message: `approval ${approvalId} was already decided: ${done.outcome}${done.by ? ` by ${done.by}` : ''} (batch ${e.execution.workflowId})`,
                  ...info,
                },
          );
        }
        nextPageToken = page.nextPageToken ?? undefined;
      } while (nextPageToken?.length && seen < DECIDED_SCAN);
    } catch {
      // Visibility unreachable: the caller's NotFoundError still says what to do.
    }
    return undefined;
  }

  /**
   * Decides an approval through the update, so the answer is confirmed: the outcome, or a
   * DecisionRefusedError saying why it was refused (expired, decided, unknown, arguments changed).
   * Pass the argsDigest the person was shown; without one, the digest pending right now is used,
   * which binds the decision to the call but not to what anybody saw.
   */
  async decide(decision: DecisionInput): Promise<DecisionApplied> {
    const workflowId = decision.workflowId ?? (await this.findApproval(decision.approvalId));
    const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
    // From the memo: readable with no worker, so a missing digest never turns into `digest-missing`.
    const pending = await this.readApprovals(workflowId).then(
      (r) => r.pending.find((p) => p.approvalId === decision.approvalId),
      () => undefined,
    );
    if (pending?.kind === 'reconcile') throw notAnApproval(pending.approvalId);
    if (!payload.argsDigest && pending) payload.argsDigest = pending.argsDigest;
    await sealInto(payload, identityToken, sealKey);
    return this.applyByUpdate(workflowId, payload);
  }

  /**
   * Decides an approval whether or not a worker runs its batch. When the batch's worker answers
   * within `probeMs`, the decision goes by update and the outcome is returned; when none does,
   * it is queued by signal, bound to the digest shown (`argsDigest`, else the memo's), and
   * applied when a worker runs the batch. `awaitDecision` then waits for what became of it.
   */
  async submitDecision(decision: DecisionInput, opts: { probeMs?: number } = {}): Promise<DecisionSubmitted> {
    const workflowId = decision.workflowId ?? (await this.findApproval(decision.approvalId));
    const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
    payload.requestId ??= `req-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
    let read: Awaited<ReturnType<SluiceClient['readApprovals']>> | undefined;
    try {
      read = await this.readApprovals(workflowId);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw await this.refusalAfterClose(workflowId, decision.approvalId);
      // An old batch with no memo and no worker: the signal below still reaches it.
    }
    if (read && !read.running) throw await this.refusalAfterClose(workflowId, decision.approvalId);
    const pending = read?.pending.find((p) => p.approvalId === decision.approvalId);
    if (pending?.kind === 'reconcile') throw notAnApproval(pending.approvalId);
    if (!payload.argsDigest && pending) payload.argsDigest = pending.argsDigest;
    await sealInto(payload, identityToken, sealKey);

    const handle = this.temporal.workflow.getHandle(workflowId);
    const probeMs = opts.probeMs ?? DEFAULT_PROBE_MS;
    const workerAnswers = await this.temporal
      .withDeadline(Date.now() + probeMs, () => handle.query(stateQuery))
      .then(
        () => true,
        () => false,
      );
    if (workerAnswers) {
      try {
        const applied = await this.temporal.withDeadline(Date.now() + CONFIRM_DEADLINE_MS, () =>
          this.applyByUpdate(workflowId, payload),
        );
        return { status: 'applied', workflowId, ...applied };
      } catch (err) {
        if (err instanceof SluiceError) throw err;
        return {
          status: 'queued',
          workflowId,
          approvalId: decision.approvalId,
          requestId: payload.requestId,
          ...(payload.argsDigest ? { argsDigest: payload.argsDigest } : {}),
          ...(pending ? { pending } : {}),
          message: `the batch did not confirm within ${CONFIRM_DEADLINE_MS / 1000}s (${(err as Error).message}); its worker may have stopped. The server holds the decision and the batch applies it when a worker runs it; check with \`npx sluice approvals\``,
        };
      }
    }
    await handle.signal(decideSignal, payload);
    return {
      status: 'queued',
      workflowId,
      approvalId: decision.approvalId,
      requestId: payload.requestId,
      ...(payload.argsDigest ? { argsDigest: payload.argsDigest } : {}),
      ...(pending ? { pending } : {}),
      message: `no worker answered batch ${workflowId} within ${probeMs / 1000}s: the decision is queued on the server${payload.argsDigest ? `, bound to digest ${payload.argsDigest},` : ''} and the batch applies or refuses it when a worker runs it${pending ? ` (before the deny timeout at ${pending.expiresAt}, or it is refused as expired)` : ''}`,
    };
  }

  /**
   * Waits for what became of a queued decision, from the batch's memo (no worker needed to read
   * it): its outcome, or a DecisionRefusedError saying why the batch refused it. Throws a
   * SluiceError when `timeoutMs` passes first (the decision stays queued).
   */
  async awaitDecision(
    q: { workflowId: string; approvalId: string; requestId: string },
    opts: { timeoutMs?: number; pollMs?: number } = {},
  ): Promise<DecisionApplied> {
    const until = Date.now() + (opts.timeoutMs ?? 10 * 60_000);
    for (;;) {
      let read: Awaited<ReturnType<SluiceClient['readApprovals']>> | undefined;
      try {
        read = await this.readApprovals(q.workflowId);
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) throw await this.refusalAfterClose(q.workflowId, q.approvalId);
      }
      const refused = read?.memo?.refused.find((r) => r.requestId === q.requestId);
      if (refused) throw new DecisionRefusedError({ code: refused.code, message: refused.message });
      // A quorum vote that left the ask waiting for more: recorded, with the tally.
      const tally = read?.memo?.pending.find((p) => p.approvalId === q.approvalId)?.quorum;
      if (tally && [...tally.approvals, ...tally.rejections].some((v) => v.requestId === q.requestId))
        return { approvalId: q.approvalId, outcome: 'pending', quorum: tally };
      const done = read?.memo?.decided.find((d) => d.approvalId === q.approvalId);
      if (done) {
        if (done.requestId === q.requestId)
          return { approvalId: q.approvalId, outcome: done.outcome, ...(done.by ? { by: done.by } : {}) };
        const ended = { callId: done.callId, outcome: done.outcome, ...(done.by ? { by: done.by } : {}) };
        throw new DecisionRefusedError(
          done.expired
            ? {
                code: 'expired',
                message: `approval ${q.approvalId} expired at ${done.decidedAt}: nobody decided before the deny timeout, so the call was denied`,
                ...ended,
              }
            : {
                code: 'decided',
                message: `approval ${q.approvalId} was already decided: ${done.outcome}${done.by ? ` by ${done.by}` : ''}`,
                ...ended,
              },
        );
      }
      if (read && !read.running) throw await this.refusalAfterClose(q.workflowId, q.approvalId);
      if (Date.now() >= until)
        throw new SluiceError(
          `no outcome for approval ${q.approvalId} yet: the decision stays queued on batch ${q.workflowId} until a worker runs it`,
        );
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 500));
    }
  }

  private async applyByUpdate(workflowId: string, payload: ApprovalDecision): Promise<DecisionApplied> {
    const handle = this.temporal.workflow.getHandle(workflowId);
    const decision = payload;
    try {
      return await handle.executeUpdate(decideUpdate, {
        args: [payload],
        updateId: decideUpdateId(payload),
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

  /**
   * Reconciles an unknown outcome (a reconcile card from `approvals`): done, with the evidence
   * that it ran; not done; or run again (the body runs once more and its result is returned).
   * Recorded with who and why in the reconcile workflow's history, which the audit shows.
   */
  async reconcile(
    decision: ReconcileDecision & { workflowId?: string; identityToken?: string; sealKey?: SealKey },
  ): Promise<Reconciliation> {
    const workflowId = decision.workflowId ?? (await this.findApproval(decision.reconcileId));
    const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
    await this.sealReconcileIdentity(workflowId, payload, identityToken, sealKey);
    const handle = this.temporal.workflow.getHandle(workflowId);
    try {
      return await handle.executeUpdate<Reconciliation, [ReconcileDecision]>(RECONCILE_UPDATE, { args: [payload] });
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError)
        throw new SluiceError(`not reconciled: ${err.cause?.message ?? err.message}`);
      if (err instanceof WorkflowNotFoundError)
        throw new SluiceError(
          `no unknown outcome ${decision.reconcileId} is waiting (workflow ${workflowId} not found)`,
        );
      throw err;
    }
  }

  /**
   * A verified approver's token, sealed to the reconcile card and the call's digest (as for an
   * approval) into `payload.signedIdentity`; nothing without a token.
   */
  private async sealReconcileIdentity(
    workflowId: string,
    payload: ReconcileDecision,
    identityToken: string | undefined,
    sealKey: SealKey | undefined,
  ): Promise<void> {
    if (!identityToken) return;
    const card = (await this.readApprovals(workflowId)).pending.find((p) => p.approvalId === payload.reconcileId);
    const key = sealKey ?? sealKeyFromEnv();
    if (!card) throw new SluiceError(`no unknown outcome ${payload.reconcileId} is waiting in ${workflowId}`);
    if (!key)
      throw new SluiceError(
        "a signed identity is sealed to the workers' public key before it is sent: set SLUICE_SEAL_KEY or pass sealKey",
      );
    payload.signedIdentity = await sealIdentity(
      identityToken,
      { approvalId: payload.reconcileId, argsDigest: card.argsDigest },
      key,
    );
  }

  /**
   * Reconciles whether or not a worker runs the card's workflow: by update when its worker answers
   * within `probeMs` (the reconciliation is returned), else queued by signal (the server holds it;
   * the workflow applies or refuses it when a worker is back). `awaitReconcile` waits for which.
   */
  async submitReconcile(
    decision: ReconcileDecision & {
      workflowId?: string;
      identityToken?: string;
      sealKey?: SealKey;
      requestId?: string;
    },
    opts: { probeMs?: number } = {},
  ): Promise<
    | ({ status: 'applied' } & Reconciliation)
    | { status: 'queued'; workflowId: string; reconcileId: string; requestId: string; message: string }
  > {
    const workflowId = decision.workflowId ?? (await this.findApproval(decision.reconcileId));
    const probeMs = opts.probeMs ?? DEFAULT_PROBE_MS;
    const handle = this.temporal.workflow.getHandle(workflowId);
    const workerAnswers = await this.temporal
      .withDeadline(Date.now() + probeMs, () => handle.query(stateQuery))
      .then(
        () => true,
        () => false,
      );
    if (workerAnswers) return { status: 'applied', ...(await this.reconcile({ ...decision, workflowId })) };
    const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
    const requestId = payload.requestId ?? `req-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
    await this.sealReconcileIdentity(workflowId, payload, identityToken, sealKey);
    try {
      await handle.signal(RECONCILE_UPDATE, { ...payload, requestId });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError)
        throw new SluiceError(
          `no unknown outcome ${decision.reconcileId} is waiting (workflow ${workflowId} not found)`,
        );
      throw err;
    }
    return {
      status: 'queued',
      workflowId,
      reconcileId: decision.reconcileId,
      requestId,
      message: `no worker answered ${workflowId} within ${probeMs / 1000}s: the decision (${decision.decision}) is queued on the server and applied or refused when a worker runs it`,
    };
  }

  /** What became of a queued reconcile decision: the reconciliation, or a SluiceError saying why not. */
  async awaitReconcile(
    q: { workflowId: string; reconcileId: string; requestId: string },
    opts: { timeoutMs?: number; pollMs?: number } = {},
  ): Promise<Reconciliation> {
    const until = Date.now() + (opts.timeoutMs ?? 10 * 60_000);
    const handle = this.temporal.workflow.getHandle(q.workflowId);
    for (;;) {
      const read = await this.readApprovals(q.workflowId).catch(() => undefined);
      const refused = read?.memo?.refused.find((r) => r.requestId === q.requestId);
      if (refused) throw new SluiceError(`not reconciled: ${refused.message}`);
      if (read && !read.running) return (await handle.result()) as Reconciliation;
      if (Date.now() >= until)
        throw new SluiceError(
          `no outcome for ${q.reconcileId} yet: the decision stays queued on ${q.workflowId} until a worker runs it`,
        );
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 500));
    }
  }

  /**
   * Hands a pending approval to someone else (the `sluice.reassign` signal): works with no worker
   * up; the batch records `approval/reassigned` and notifies when a worker runs it.
   */
  async reassign(r: { approvalId: string; to: string; by?: string; reason?: string; workflowId?: string }): Promise<{
    workflowId: string;
  }> {
    if (!r.to?.trim()) throw new SluiceError('say who the approval goes to ("to")');
    const workflowId = r.workflowId ?? (await this.findApproval(r.approvalId));
    const read = await this.readApprovals(workflowId).catch(() => undefined);
    const p = read?.pending.find((x) => x.approvalId === r.approvalId);
    if (read && !p)
      throw new SluiceError(`approval ${r.approvalId} is not waiting in ${workflowId}: nothing to reassign`);
    if (p?.kind === 'reconcile')
      throw new SluiceError(`${r.approvalId} is an unknown outcome, not an approval: reconcile it`);
    const { workflowId: _omit, ...payload } = r;
    await this.temporal.workflow.getHandle(workflowId).signal(reassignSignal, payload);
    return { workflowId };
  }

  /** Why a decision came too late for a batch that has finished: how its ask ended, from the result. */
  private async refusalAfterClose(workflowId: string, approvalId: string): Promise<SluiceError> {
    let output: BatchOutput;
    try {
      output = expandBatchOutput(await this.temporal.workflow.getHandle<ToolBatchFn>(workflowId).result());
    } catch {
      return new SluiceError(`batch ${workflowId} does not exist or did not complete; nothing can be decided there`);
    }
    const decided = output.events.filter((e) => isEvent(e, 'approval/decided')).find((e) => e.data.id === approvalId);
    if (!decided)
      return new DecisionRefusedError({
        code: 'unknown',
        message: `batch ${workflowId} has finished, and it never asked approval ${approvalId}`,
      });
    const d = decided.data;
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
  async signalDecision(decision: DecisionInput): Promise<void> {
    const workflowId = decision.workflowId ?? (await this.findApproval(decision.approvalId));
    const { workflowId: _omit, identityToken, sealKey, ...payload } = decision;
    await sealInto(payload, identityToken, sealKey);
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
    const expected =
      decision.decision !== 'approve' ? 'rejected' : decision.scope === 'session' ? 'allowed-session' : 'allowed-once';
    const fromDecided = (done: DecidedApproval): SignalOutcome =>
      (decision.signedIdentity ? done.verified !== undefined : done.by === decision.by) &&
      done.outcome === expected &&
      !done.expired
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
        const raw = (await handle.result().catch(() => undefined)) as BatchOutputWire | undefined;
        const output = raw && expandBatchOutput(raw);
        const refused = output?.events
          .filter((e) => isEvent(e, 'approval/refused'))
          .find(
            (e) =>
              e.data.id === decision.approvalId &&
              e.data.via === 'signal' &&
              e.data.decision === decision.decision &&
              (e.data.by ?? undefined) === decision.by,
          );
        if (refused)
          return {
            status: 'refused',
            refusal: { code: refused.data.code, message: refused.data.problem },
          };
        const decided = output?.events
          .filter((e) => isEvent(e, 'approval/decided'))
          .find((e) => e.data.id === decision.approvalId);
        if (decided) {
          const { callId, outcome, by, expired } = decided.data;
          return fromDecided({
            approvalId: decision.approvalId,
            decidedAt: decided.time,
            callId,
            outcome,
            ...(by ? { by } : {}),
            ...(expired ? { expired } : {}),
          });
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
      query: `SluiceSessionId = '${sessionId.replace(/'/g, '')}' AND WorkflowType = '${BATCH_WORKFLOW}'`,
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
      query: `SluiceSessionId = '${sessionId.replace(/'/g, '')}' AND WorkflowType = '${BATCH_WORKFLOW}' AND ExecutionStatus = 'Completed'`,
    })) {
      const out = expandBatchOutput(
        (await this.temporal.workflow.getHandle(wf.workflowId, wf.runId).result()) as BatchOutputWire,
      );
      events.push(...out.events);
    }
    return events.sort((a, b) => a.seq - b.seq);
  }
}

function notAnApproval(id: string): SluiceError {
  return new SluiceError(
    `${id} is not an approval but an unknown outcome to reconcile: the call may or may not have run. Check its effect, then \`npx sluice reconcile ${id} --done --evidence "..."\`, \`--not-done\` or \`--run-again\`.`,
  );
}

/**
 * A start the server refused because Sluice's search attributes are not registered in the
 * namespace (a fresh server or namespace, a worker that never registered them) turned into what to
 * run; any other error as it was.
 */
export function explainStartFailure(err: unknown, namespace: string): unknown {
  const text = [err, (err as { cause?: unknown })?.cause].map((e) => (e as Error | undefined)?.message ?? '').join(' ');
  const missing = /no mapping defined for search attribute (\w+)/i.exec(text);
  if (!missing) return err;
  return new ServerError(
    `the Temporal namespace '${namespace}' has no search attribute ${missing[1]}: Sluice's search attributes are not registered there. Run \`npx sluice setup\` once for this namespace (with the TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE your worker uses), or start the worker with \`npx sluice worker\`, createSluiceWorker or SluicePlugin, which register them at start.`,
  );
}

/** The memo field holding a digest of the calls a batch was started with. */
const CALLS_MEMO = 'sluiceCalls';

/** A digest of a batch's calls (ids, names, arguments as sent), to tell a resubmission from another request. */
export function digestOfCalls(input: Pick<BatchInput, 'calls'>): string {
  const calls = input.calls.map((c) => [c.id, c.name, c.arguments]);
  return `sha256:${createHash('sha256').update(JSON.stringify(calls)).digest('hex')}`;
}

/** True when the batch failed its seq claim (SluiceSeqConflict): it ran no call and recorded nothing. */
async function refusedForSeq(handle: WorkflowHandle, status: string): Promise<boolean> {
  if (status !== 'FAILED') return false;
  try {
    await handle.result();
    return false;
  } catch (err) {
    return (
      err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure && err.cause.type === SEQ_CONFLICT
    );
  }
}

/** What became of a decision sent by signal (`SluiceClient.signalOutcome`). */
export type SignalOutcome =
  | { status: 'applied'; outcome: ApprovalOutcome; by?: string }
  | { status: 'refused'; refusal: DecisionRefusal }
  | { status: 'unknown'; message: string };

/** The client's side of the checks every path runs (pipeline/batch-input.ts). */
export function toBatchInput(request: BatchRequest): BatchInput {
  const prepared = prepareBatch(request);
  if ('problem' in prepared) throw new InvalidInputError(prepared.problem);
  return prepared.input;
}

/**
 * The same decision sent twice (a retry, a double click) is one update; the id says nothing of who
 * decided or of the digest, which Temporal stores in clear even when payloads are encrypted.
 */
export function decideUpdateId(d: ApprovalDecision): string {
  const hash = createHash('sha256')
    .update(
      JSON.stringify([
        d.approvalId,
        d.decision,
        d.by ?? '',
        d.argsDigest ?? '',
        // A session grant, its pins, or a signed identity make it another decision (absent: as before).
        ...(d.scope === 'session' || d.signedIdentity ? [d.scope ?? '', d.pins ?? [], d.signedIdentity ?? ''] : []),
        // A link decision is its own request: a second use of the same link must reach the batch
        // (which refuses it, link-used), not be answered with the first use's result.
        ...(d.link ? ['link', d.link.id, d.requestId ?? ''] : []),
      ]),
    )
    .digest('hex');
  return `decide:${d.approvalId}:${hash.slice(0, 32)}`;
}

/**
 * A decision as callers give it: `identityToken` is the approver's JWT, sealed here to the
 * workers' key (`sealKey`, else SLUICE_SEAL_KEY) and bound to the approval and its digest; only
 * the sealed form is sent.
 */
export type DecisionInput = ApprovalDecision & { workflowId?: string; identityToken?: string; sealKey?: SealKey };

async function sealInto(payload: ApprovalDecision, token: string | undefined, key: SealKey | undefined): Promise<void> {
  if (!token) return;
  const sealKey = key ?? sealKeyFromEnv();
  if (!sealKey)
    throw new SluiceError(
      "a signed identity is sealed to the workers' public key before it is sent: set SLUICE_SEAL_KEY (the JWK the workers' operator publishes) or pass sealKey",
    );
  if (!payload.argsDigest)
    throw new SluiceError(
      `a signed identity is bound to the arguments shown: pass the argsDigest of approval ${payload.approvalId} (--digest)`,
    );
  payload.signedIdentity = await sealIdentity(
    token,
    { approvalId: payload.approvalId, argsDigest: payload.argsDigest },
    sealKey,
  );
}
