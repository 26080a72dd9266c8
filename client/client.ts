// The client library: run or start a batch, decide approvals, list what waits, read events.
import { DeprecatedApprovalAliases } from './approval-aliases';
import { ApprovalsClient, SERVER_DEADLINE_MS } from './approvals';
import { createHash } from 'node:crypto';
import {
  Client,
  InternalConnectionLikeSymbol,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  type ConnectionLike,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure, type DataConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { type BatchRequest, prepareBatch } from '../pipeline/batch-input';
import {
  BatchConflictError,
  InvalidInputError,
  NoWorkerError,
  ServerError,
  SessionIdConflictError,
} from '../support/errors';
import { owningSession, sessionWorkflowId } from '../workflows/session-definitions';
import { hasVersionedWorker } from '../temporal/eager-start';
import { type BatchOutputWire, expandBatchOutput } from '../codec/output';
import { SEARCH_ATTRIBUTES } from '../pipeline/search-attributes';
import type { BatchInput, BatchOutput, BatchState, SessionEvent } from '../pipeline/types';
import {
  APPROVALS_MEMO,
  BATCH_WORKFLOW,
  batchWorkflowId,
  DEFAULT_TASK_QUEUE,
  EMPTY_APPROVALS_MEMO,
  SEQ_CONFLICT,
  SESSION_ID,
  stateQuery,
} from '../workflows/definitions';

export interface SluiceClientOptions {
  /** A client connection (`connect()` from sluice/client) or a worker's NativeConnection. */
  connection: ConnectionLike;
  namespace?: string;
  taskQueue?: string;
  /** Payload encryption (codec/payload.ts): the same as the workers'. */
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

/** The batch workflow's signature as it returns: each result's content once (codec/output.ts). */
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
function supportsEagerStart(connection: ConnectionLike): boolean {
  const internal = (connection as { [InternalConnectionLikeSymbol]?: { supportsEagerStart?: boolean } })[
    InternalConnectionLikeSymbol
  ];
  return internal?.supportsEagerStart === true;
}

export { DecisionRefusedError, SluiceError } from '../support/errors';
export {
  ApprovalsClient,
  type ApprovalsOverview,
  type ApprovalsScope,
  DEFAULT_PROBE_MS,
  type DecisionInput,
  type DecisionSubmitted,
  decideUpdateId,
  type SignalOutcome,
} from './approvals';

export class SluiceClient extends DeprecatedApprovalAliases {
  readonly temporal: Client;
  readonly taskQueue: string;
  /** Whether batches are started with eager start asked for (SluiceClientOptions.eagerStart). */
  readonly eagerStart: boolean;
  private readonly noWorker: { mode: 'warn' | 'fail' | 'off'; afterMs: number; warn: (message: string) => void };
  /**
   * The approval protocol: what waits for a person (`list`, `overview`, `read`, `find`), deciding
   * it (`decide`, `approve`, `deny`, `submit`, `waitFor`, `signal`, `signalOutcome`), unknown
   * outcomes (`reconcile`, `submitReconcile`, `waitForReconcile`) and `reassign`.
   */
  readonly approvals: ApprovalsClient;

  constructor(opts: SluiceClientOptions) {
    super();
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
    this.approvals = new ApprovalsClient(this.temporal, this.taskQueue);
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
      // A step of a durable session (its child): the session numbers that id's events and would
      // never see this caller's calls; its own batches carry no calls digest to compare.
      if (owningSession(desc) === sessionWorkflowId(input.sessionId))
        throw new SessionIdConflictError(
          input.sessionId,
          `batch ${workflowId} is a step of the durable session ${input.sessionId} (workflow ${sessionWorkflowId(input.sessionId)}, started with startSession): runBatch cannot add batches under a durable session's id, and attaching would answer these calls with the session's. Give runBatch calls a sessionId no durable session uses, and send the session its messages with session.send().`,
        );
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
    try {
      return await this.watchForWorker(handle.result(), `batch ${handle.workflowId}`);
    } catch (err) {
      throw (await this.sessionOwnsSeqs(request.sessionId, err)) ?? err;
    }
  }

  /**
   * A batch refused for its seqs under the id of a durable session: the session numbers that log,
   * so the refusal's advice (start at the log's next seq) would only move the clash to the
   * session's next turn. Says whose id it is instead.
   */
  private async sessionOwnsSeqs(sessionId: string, err: unknown): Promise<SessionIdConflictError | undefined> {
    if (!(err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure)) return undefined;
    if (err.cause.type !== SEQ_CONFLICT) return undefined;
    const session = await this.temporal.workflow
      .getHandle(sessionWorkflowId(sessionId))
      .describe()
      .catch(() => undefined);
    if (!session) return undefined;
    return new SessionIdConflictError(
      sessionId,
      `session id '${sessionId}' belongs to a durable session (workflow ${session.workflowId}, started with startSession), which numbers that session's events itself; a batch run with runBatch under its id clashes with them, so this one ran nothing. Give runBatch calls a sessionId no durable session uses, and send the session its messages with session.send().`,
    );
  }

  async batchState(workflowId: string): Promise<BatchState> {
    return this.temporal.workflow.getHandle(workflowId).query(stateQuery);
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

/**
 * A start the server refused because Sluice's search attributes are not registered in the
 * namespace (a fresh server or namespace, a worker that never registered them) turned into what to
 * run; any other error as it was.
 */
function explainStartFailure(err: unknown, namespace: string): unknown {
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
function digestOfCalls(input: Pick<BatchInput, 'calls'>): string {
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

/** The client's side of the checks every path runs (pipeline/batch-input.ts). */
export function toBatchInput(request: BatchRequest): BatchInput {
  const prepared = prepareBatch(request);
  if ('problem' in prepared) throw new InvalidInputError(prepared.problem);
  return prepared.input;
}
