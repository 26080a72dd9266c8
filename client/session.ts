// Sessions from a client: start one (or attach to it), send messages, interrupt, read its state,
// its pending approvals and its transcript.
import { WorkflowExecutionAlreadyStartedError, type WorkflowHandle } from '@temporalio/client';
import { TranscriptStore } from '../agent/transcript-store';
import type { AgentMessage, SessionInput, SessionOutput, SessionView, TurnOutcome } from '../pipeline/session';
import type { BatchState, ContentBlock, PendingApproval, SessionEvent } from '../pipeline/types';
import type { ResultStore } from '../worker/claim-check';
import { SESSION_ID, stateQuery } from '../workflows/definitions';
import {
  cancelSessionSignal,
  interruptSignal,
  messageSignal,
  SESSION_WORKFLOW,
  sendMessageUpdate,
  sessionQuery,
  sessionWorkflowId,
} from '../workflows/session-definitions';
import { type SluiceClient, SluiceError } from './client';
import { followSessionEvents, type SessionEventSource } from './session-events';
import { InvalidInputError } from './errors';

export type SessionRequest = Omit<SessionInput, 'carried'>;

let counter = 0;
function freshId(): string {
  return `m-${Date.now().toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

export class SessionHandle {
  readonly workflowId: string;
  readonly workflow: WorkflowHandle;

  constructor(
    readonly client: SluiceClient,
    readonly sessionId: string,
  ) {
    this.workflowId = sessionWorkflowId(sessionId);
    this.workflow = client.temporal.workflow.getHandle(this.workflowId);
  }

  /**
   * Sends a user message and resolves when the turn it starts has ended. Give an `id` to make a
   * resend after a crash safe: the same id is answered once.
   */
  async send(content: string | ContentBlock[], opts: { id?: string } = {}): Promise<TurnOutcome> {
    const id = opts.id ?? freshId();
    try {
      return await this.client.watchForWorker(
        this.workflow.executeUpdate(sendMessageUpdate, { args: [{ id, content }], updateId: `send:${id}` }),
        `the message to session ${this.sessionId}`,
      );
    } catch (err) {
      throw (await this.endedError()) ?? err;
    }
  }

  /** Why a message cannot go to this session any more, when the session has closed. */
  private async endedError(): Promise<SluiceError | undefined> {
    const info = await this.workflow.describe().catch(() => undefined);
    if (!info || info.status.name === 'RUNNING') return undefined;
    const out = (await this.workflow.result().catch(() => undefined)) as SessionOutput | undefined;
    return new SluiceError(
      `the session ${this.sessionId} has ended (${out?.endReason ?? info.status.name.toLowerCase()}); start a new one`,
    );
  }

  /** Queues a user message without waiting (a signal: accepted even while no worker runs). */
  async post(content: string | ContentBlock[], opts: { id?: string } = {}): Promise<string> {
    const id = opts.id ?? freshId();
    await this.workflow.signal(messageSignal, { id, content });
    return id;
  }

  interrupt(): Promise<void> {
    return this.workflow.signal(interruptSignal);
  }

  cancel(): Promise<void> {
    return this.workflow.signal(cancelSessionSignal);
  }

  state(): Promise<SessionView> {
    return this.workflow.query(sessionQuery);
  }

  result(): Promise<SessionOutput> {
    return this.workflow.result();
  }

  /** The approvals the session's running batch waits on (none between batches). */
  async pendingApprovals(view?: SessionView): Promise<PendingApproval[]> {
    const v = view ?? (await this.state());
    if (!v.activeBatch) return [];
    try {
      const s = (await this.client.temporal.workflow.getHandle(v.activeBatch).query(stateQuery)) as BatchState;
      return s.pending;
    } catch {
      return []; // finished between the two queries
    }
  }

  /**
   * The session's events as they happen (model text, tool calls and results, approvals asked and
   * decided, injected contexts, turn ends), from `fromSeq` on, read from the session log the
   * workers write: `source` is their state folder (default .sluice) or their store
   * (`openStores`, files or PostgreSQL). Ends when `signal` aborts or after the session/ended event.
   */
  async *events(
    opts: { source?: SessionEventSource; fromSeq?: number; signal?: AbortSignal; intervalMs?: number } = {},
  ): AsyncGenerator<SessionEvent> {
    for await (const e of followSessionEvents(opts.source ?? '.sluice', this.sessionId, opts)) {
      yield e;
      if (e.type === 'session/ended') return;
    }
  }

  /**
   * The whole transcript: the stored part read from the result store the workers use (the same
   * state folder, or the config's resultStore), then what the session has not stored yet.
   */
  async transcript(store: ResultStore, view?: SessionView | SessionOutput): Promise<AgentMessage[]> {
    const v = view ?? (await this.state());
    return [...(await new TranscriptStore(store).load(v.head)), ...v.unstored];
  }
}

/** Starts a session, or attaches to the running one with the same id. */
export async function startSession(client: SluiceClient, request: SessionRequest): Promise<SessionHandle> {
  if (!request?.sessionId) throw new InvalidInputError('a session needs a sessionId');
  if (!request.model) throw new InvalidInputError('a session needs a model, e.g. openai:gpt-4.1 or script:./demo.json');
  try {
    await client.startNeedingAttributes(() =>
      client.temporal.workflow.start(SESSION_WORKFLOW, {
        taskQueue: client.taskQueue,
        workflowId: sessionWorkflowId(request.sessionId),
        args: [request],
        workflowIdConflictPolicy: 'USE_EXISTING',
        // Found with its batches: `sluice replay <session>` replays the session's runs too.
        typedSearchAttributes: [{ key: SESSION_ID, value: request.sessionId }],
        staticSummary: `Agent session ${request.sessionId} (${request.model})`,
      }),
    );
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
  return new SessionHandle(client, request.sessionId);
}

export function sessionHandle(client: SluiceClient, sessionId: string): SessionHandle {
  return new SessionHandle(client, sessionId);
}
