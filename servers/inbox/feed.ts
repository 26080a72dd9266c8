// What the approval inbox shows, read from Temporal alone: the batches awaiting approval (by
// search attribute, then the state query), and recent batches with their completed cards (from
// the workflow results), so it works against any server with no access to a worker's files.
import { describeGrant, grantsOf, type SessionGrant } from '../../pipeline/grants';
import type { WorkflowExecutionInfo } from '@temporalio/client';
import type {
  ApprovalsMemo,
  BatchOutput,
  BatchState,
  CallStage,
  Card,
  PendingApproval,
  SessionEvent,
  ToolError,
} from '../../pipeline/types';
import { type BatchOutputWire, expandBatchOutput } from '../../codec/output';
import { isEvent } from '../../pipeline/events';
import { APPROVALS_MEMO, BATCH_WORKFLOW, stateQuery } from '../../workflows/definitions';
import { SESSION_WORKFLOW, sessionWorkflowId } from '../../workflows/session-definitions';
import type { SluiceStores } from '../../stores/stores';
import type { SluiceClient } from '../../client/client';

/** How long a page refresh waits for a worker to answer a batch's query. */
const QUERY_DEADLINE_MS = 3_000;
/** How long a batch that asked stays listed after its last ask was seen. */
const ASKED_KEPT_MS = 15 * 60_000;

interface CallView {
  callId: string;
  name: string;
  stage?: CallStage;
  /** The raw argument string the model sent (completed batches). */
  arguments?: string;
  approval?: { id?: string; pending?: boolean; outcome?: string; by?: string; reason?: string; expired?: boolean };
  result?: { isError: boolean; text: string; card: Card; error?: ToolError };
}

interface BatchView {
  workflowId: string;
  runId: string;
  sessionId: string;
  turn: number;
  step: number;
  /** Temporal's execution status: RUNNING, COMPLETED, FAILED, TERMINATED, ... */
  status: string;
  startTime: string;
  closeTime?: string;
  calls: CallView[];
  /** The session grants this batch knew (given before or in it), described for people. */
  grants?: { id: string; toolName: string; text: string; by?: string }[];
  /** Set when the batch could not be read (no worker answers the query, ...). */
  problem?: string;
}

export interface InboxSnapshot {
  now: string;
  /** `queued` marks asks read from the memo of a batch no worker runs: a decision is queued. */
  pending: (PendingApproval & { queued?: true })[];
  batches: BatchView[];
}

interface SessionTimeline {
  sessionId: string;
  /** Events of the session's finished batches, in seq order. */
  events: SessionEvent[];
  /** Batches still running: where each call stands. */
  running: BatchView[];
}

interface SessionListing {
  sessionId: string;
  /** Temporal's execution status of the session's workflow. */
  status: string;
  startTime: string;
  closeTime?: string;
}

/** What the inbox needs of a listed or described workflow execution. */
type Execution = Pick<
  WorkflowExecutionInfo,
  'workflowId' | 'runId' | 'type' | 'status' | 'startTime' | 'closeTime' | 'memo'
>;

export class InboxFeed {
  /** Results of finished batches never change: read each once. */
  private readonly outputs = new Map<string, Promise<BatchOutput | undefined>>();

  constructor(
    private readonly client: SluiceClient,
    private readonly recentLimit = 20,
    /** The workers' session store, when the inbox can read it: the log as written, running batches included. */
    private readonly store?: Pick<SluiceStores, 'hasSession' | 'events'>,
    /** Only batches of this task queue (one team's workers); unset: every batch in the namespace. */
    private readonly taskQueue?: string,
  ) {}

  private scoped(query: string): string {
    return this.taskQueue ? `${query} AND TaskQueue = '${this.taskQueue.replace(/['\\]/g, '')}'` : query;
  }

  /**
   * Batches that asked for approval while the inbox watched: they stay listed for a while after
   * they finish, however many other batches ran since, so a decided card can show how it ended.
   */
  private readonly asked = new Map<string, { workflowId: string; lastSeen: number; closed?: Execution }>();

  async snapshot(): Promise<InboxSnapshot> {
    const temporal = this.client.temporal;
    const awaiting = await take(
      temporal.workflow.list({ query: this.scoped(`SluiceAwaitingApproval = true AND ExecutionStatus = 'Running'`) }),
      200,
    );
    const recent = await take(
      temporal.workflow.list({ query: this.scoped(`WorkflowType = '${BATCH_WORKFLOW}'`) }),
      this.recentLimit,
    );
    const now = Date.now();
    for (const wf of awaiting) this.asked.set(wf.runId, { workflowId: wf.workflowId, lastSeen: now });
    const byRun = new Map<string, Execution>();
    for (const wf of [...awaiting, ...recent]) byRun.set(wf.runId, wf);
    for (const [runId, a] of this.asked) {
      if (now - a.lastSeen > ASKED_KEPT_MS) this.asked.delete(runId);
      else if (!byRun.has(runId)) {
        const wf =
          a.closed ??
          (await temporal.workflow
            .getHandle(a.workflowId, runId)
            .describe()
            .catch(() => undefined));
        if (wf && wf.status.name !== 'RUNNING') a.closed = wf; // a finished run does not change: describe it once
        // A finished reconcile card (an unknown outcome settled) is no batch: its result is the
        // reconcile outcome, not a batch's output, and it has no calls to show.
        if (wf && (wf.status.name === 'RUNNING' || wf.type === BATCH_WORKFLOW)) byRun.set(runId, wf);
      }
    }
    const views = await Promise.all([...byRun.values()].map((wf) => this.view(wf)));
    // A batch seen waiting through the recent list (visibility may not show its search attribute
    // yet) is followed to its end too, however many batches start after it.
    for (const v of views)
      if (v.pending.length && !this.asked.has(v.batch.runId))
        this.asked.set(v.batch.runId, { workflowId: v.batch.workflowId, lastSeen: now });
    const pending = views.flatMap((v) => v.pending).sort((a, b) => a.expiresAt.localeCompare(b.expiresAt));
    const batches = views.map((v) => v.batch).sort((a, b) => b.startTime.localeCompare(a.startTime));
    return { now: new Date(now).toISOString(), pending, batches };
  }

  /**
   * Why this inbox will not show a session: an id it cannot look up safely (400), or, with a task
   * queue set, no workflow of the session on that queue (404, the same for a session of another
   * team and one that does not exist). Undefined when it may show it.
   */
  async sessionProblem(sessionId: string): Promise<{ status: 400 | 404; message: string } | undefined> {
    // Quotes and backslashes would change the visibility query below; no session id needs them.
    if (!sessionId || sessionId.length > 512 || /['"\\]/.test(sessionId) || [...sessionId].some((c) => c < ' '))
      return {
        status: 400,
        message: 'a session id is 1 to 512 characters with no quotes, backslashes or control characters',
      };
    if (!this.taskQueue) return undefined;
    // The session's workflow, described (no visibility lag for a session that just started)...
    const info = await this.client.temporal.workflow
      .getHandle(sessionWorkflowId(sessionId))
      .describe()
      .catch(() => undefined);
    if (info?.taskQueue === this.taskQueue) return undefined;
    // ...or, for batches started on their own, one of its batches on this queue.
    const found = info
      ? []
      : await take(this.client.temporal.workflow.list({ query: this.scoped(`SluiceSessionId = '${sessionId}'`) }), 1);
    return found.length
      ? undefined
      : {
          status: 404,
          message: `this inbox shows the sessions of task queue ${this.taskQueue}, and session ${sessionId} has no workflow there (yet)`,
        };
  }

  /** The most recent sessions (their workflows), newest first. */
  async sessions(limit = 50): Promise<SessionListing[]> {
    const list = await take(
      this.client.temporal.workflow.list({ query: this.scoped(`WorkflowType = '${SESSION_WORKFLOW}'`) }),
      limit,
    );
    return list.map((wf) => ({
      sessionId: wf.workflowId.replace(/^sluice-session:/, ''),
      status: wf.status.name,
      startTime: wf.startTime.toISOString(),
      ...(wf.closeTime ? { closeTime: wf.closeTime.toISOString() } : {}),
    }));
  }

  async session(sessionId: string): Promise<SessionTimeline> {
    const list = await take(
      this.client.temporal.workflow.list({
        query: `SluiceSessionId = '${sessionId.replace(/'/g, '')}' AND WorkflowType = '${BATCH_WORKFLOW}'`,
      }),
      1000,
    );
    const views = await Promise.all(list.map((wf) => this.view(wf)));
    const fromStore = this.store && (await this.store.hasSession(sessionId));
    const events: SessionEvent[] = fromStore ? await this.store!.events(sessionId) : [];
    if (!fromStore)
      for (const wf of list) {
        if (wf.status.name !== 'COMPLETED') continue;
        const out = await this.output(wf);
        if (out) events.push(...out.events);
      }
    return {
      sessionId,
      events: events.sort((a, b) => a.seq - b.seq),
      running: views
        .filter((v) => v.batch.status === 'RUNNING')
        .map((v) => v.batch)
        .sort((a, b) => a.turn - b.turn || a.step - b.step),
    };
  }

  private async view(wf: Execution): Promise<{ batch: BatchView; pending: InboxSnapshot['pending'] }> {
    const batch: BatchView = {
      workflowId: wf.workflowId,
      runId: wf.runId,
      ...idParts(wf.workflowId),
      status: wf.status.name,
      startTime: wf.startTime.toISOString(),
      ...(wf.closeTime ? { closeTime: wf.closeTime.toISOString() } : {}),
      calls: [],
    };
    if (wf.status.name === 'RUNNING') {
      // The memo needs no worker: what waits, with cards and digests, is shown even when none runs.
      const memo = wf.memo?.[APPROVALS_MEMO] as ApprovalsMemo | undefined;
      let state: BatchState;
      try {
        state = await this.client.temporal.withDeadline(Date.now() + QUERY_DEADLINE_MS, () =>
          this.client.temporal.workflow.getHandle(wf.workflowId, wf.runId).query(stateQuery),
        );
      } catch (err) {
        batch.problem = memo
          ? `no worker is running this batch right now: decisions made here are queued and applied when one starts (\`npx sluice worker\`)`
          : `no worker answered this batch's query (${(err as Error).message}); start one with \`npx sluice worker\``;
        if (memo?.grants?.length) batch.grants = grantViews(memo.grants);
        return { batch, pending: memo?.v === 1 ? memo.pending.map((p) => ({ ...p, queued: true })) : [] };
      }
      Object.assign(batch, { sessionId: state.sessionId, turn: state.turn, step: state.step });
      batch.calls = viewsFromState(state);
      const given = state.decided.flatMap((d) => (d.grant ? [d.grant] : []));
      const grants = [...(state.grants ?? []), ...given.filter((g) => !state.grants?.some((x) => x.id === g.id))];
      if (grants.length) batch.grants = grantViews(grants);
      return { batch, pending: state.pending };
    }
    if (wf.status.name === 'COMPLETED' && wf.type === BATCH_WORKFLOW) {
      const out = await this.output(wf);
      if (out) {
        Object.assign(batch, { sessionId: out.sessionId, turn: out.turn, step: out.step });
        batch.calls = viewsFromEvents(out.events);
        const grants = grantsOf(out.state);
        if (grants.length) batch.grants = grantViews(grants);
      }
    }
    return { batch, pending: [] };
  }

  private output(wf: Execution): Promise<BatchOutput | undefined> {
    let p = this.outputs.get(wf.runId);
    if (!p) {
      p = this.client.temporal.workflow
        .getHandle(wf.workflowId, wf.runId)
        .result()
        .then(
          (o) => expandBatchOutput(o as BatchOutputWire),
          () => undefined,
        );
      this.outputs.set(wf.runId, p);
    }
    return p;
  }
}

function grantViews(grants: SessionGrant[]): NonNullable<BatchView['grants']> {
  return grants.map((g) => ({ id: g.id, toolName: g.toolName, text: describeGrant(g), ...(g.by ? { by: g.by } : {}) }));
}

/** Calls of a finished batch, each with its approval and completed card, from its events. */
function viewsFromEvents(events: SessionEvent[]): CallView[] {
  const calls = new Map<string, CallView>();
  for (const e of events) {
    if (isEvent(e, 'tool/call')) {
      const d = e.data;
      if (typeof d.callId === 'string')
        calls.set(d.callId, { callId: d.callId, name: d.name, arguments: d.arguments, stage: 'done' });
      continue;
    }
    const call = typeof e.data.callId === 'string' ? calls.get(e.data.callId) : undefined;
    if (!call) continue;
    if (isEvent(e, 'approval/asked')) call.approval = { id: e.data.id };
    else if (isEvent(e, 'approval/grant-used')) {
      const d = e.data;
      call.approval = {
        outcome: 'allowed-session',
        ...(d.grantedBy ? { by: d.grantedBy } : {}),
        reason: `session grant ${d.grantId}`,
      };
    } else if (isEvent(e, 'approval/decided')) {
      const d = e.data;
      call.approval = {
        id: d.id,
        outcome: d.outcome,
        ...(d.by ? { by: d.by } : {}),
        ...(d.reason
          ? { reason: d.reason }
          : d.grant
            ? { reason: `grant ${d.grant.id}: ${describeGrant(d.grant)}` }
            : {}),
        ...(d.expired ? { expired: true } : {}),
      };
    } else if (isEvent(e, 'tool/result')) {
      const d = e.data;
      call.result = {
        isError: d.isError === true,
        text: contentText(d.content),
        card:
          d.card && typeof d.card.title === 'string'
            ? d.card
            : { title: call.name, summary: d.isError ? 'failed' : 'done' },
        ...(d.error ? { error: d.error } : {}),
      };
    }
  }
  return [...calls.values()];
}

/** Calls of a running batch: where each stands, and how its approvals went so far. */
function viewsFromState(state: BatchState): CallView[] {
  return state.calls.map((c) => {
    const pending = state.pending.find((p) => p.callId === c.callId);
    const decided = [...state.decided].reverse().find((d) => d.callId === c.callId);
    const view: CallView = { callId: c.callId, name: c.name, stage: c.stage };
    const use = state.grantUses?.find((u) => u.callId === c.callId);
    if (pending) view.approval = { id: pending.approvalId, pending: true };
    else if (use)
      view.approval = {
        outcome: 'allowed-session',
        ...(use.by ? { by: use.by } : {}),
        reason: `session grant ${use.grantId}`,
      };
    else if (decided) {
      view.approval = {
        id: decided.approvalId,
        outcome: decided.outcome,
        ...(decided.by ? { by: decided.by } : {}),
        ...(decided.reason
          ? { reason: decided.reason }
          : decided.grant
            ? { reason: `grant ${decided.grant.id}: ${describeGrant(decided.grant)}` }
            : {}),
        ...(decided.expired ? { expired: true } : {}),
      };
    }
    return view;
  });
}

function contentText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .map((b: { type?: string; text?: string; mimeType?: string }) =>
      b?.type === 'text' ? b.text : `[image ${b?.mimeType ?? ''}]`,
    )
    .join('');
}

/** Session, turn and step from a batch id `sluice-batch:<session>:<turn>:<step>`, for batches not yet read. */
function idParts(workflowId: string): { sessionId: string; turn: number; step: number } {
  const m = /^sluice-batch:(.*):(\d+):(\d+)$/.exec(workflowId);
  return m ? { sessionId: m[1], turn: Number(m[2]), step: Number(m[3]) } : { sessionId: '', turn: 0, step: 0 };
}

async function take<T>(it: AsyncIterable<T>, n: number): Promise<T[]> {
  const out: T[] = [];
  if (n <= 0) return out;
  for await (const x of it) {
    out.push(x);
    if (out.length >= n) break;
  }
  return out;
}
