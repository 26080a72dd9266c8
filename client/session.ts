// Sessions from a client: start one (or attach to it), send messages, interrupt, read its state,
// its pending approvals and its transcript.
import { WorkflowExecutionAlreadyStartedError, type WorkflowHandle, WorkflowNotFoundError } from '@temporalio/client';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TranscriptStore } from '../agent/transcript-store';
import type { AgentMessage, SessionInput, SessionOutput, SessionView, TurnOutcome } from '../pipeline/session';
import type { BatchState, ContentBlock, PendingApproval, SessionEvent } from '../pipeline/types';
import type { ResultStore } from '../stores/claim-check';
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
import { type FollowOptions, followSessionEvents, type LiveEvent, type SessionEventSource } from './session-events';
import { InvalidInputError, NotFoundError } from '../support/errors';
import { sessionLogPath } from '../stores/session-log-path';

export type SessionRequest = Omit<SessionInput, 'carried'>;

export interface SessionEventsOptions {
  source?: SessionEventSource;
  fromSeq?: number;
  signal?: AbortSignal;
  intervalMs?: number;
  until?: 'turn' | 'session';
  /** How long the log may stay missing while the session has events (default 5000 ms). */
  missingLogMs?: number;
  /** Also the model's answer as it streams (live/delta, live/void, live/dropped). */
  live?: boolean;
}

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
   * workers write: `source` is their state folder or their store (`openStores` from sluice/worker,
   * files or PostgreSQL). Default: SLUICE_STATE_DIR, else `.sluice` in this process's working
   * directory, which is the worker's only when both run in the same folder.
   *
   * Ends with `until: 'turn'` after the first `session/turn-ended` it yields, with `until:
   * 'session'` (the default) after `session/ended`, or when `signal` aborts. With `live: true`
   * the model's answer streams in between (`live/delta` pieces, `live/void` when an attempt
   * failed, `live/dropped` when pieces were lost): see followSessionEvents. When the session has
   * recorded events but the log is not where it looks, it throws a NotFoundError naming the place
   * it looked, instead of waiting on a file no worker writes.
   */
  events(opts: SessionEventsOptions & { live: true }): AsyncGenerator<SessionEvent | LiveEvent>;
  events(opts?: SessionEventsOptions): AsyncGenerator<SessionEvent>;
  async *events(opts: SessionEventsOptions = {}): AsyncGenerator<SessionEvent | LiveEvent> {
    const source = opts.source ?? process.env.SLUICE_STATE_DIR ?? '.sluice';
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) stop.abort();
    const check =
      typeof source === 'string'
        ? this.watchLog(source, opts.fromSeq ?? 0, opts.missingLogMs ?? 5_000, stop.signal)
        : undefined;
    let missing: Error | undefined;
    check?.then(
      (err) => {
        if (err) {
          missing = err;
          stop.abort();
        }
      },
      () => undefined,
    );
    try {
      for await (const e of followSessionEvents(source, this.sessionId, {
        ...opts,
        live: opts.live === true,
        signal: stop.signal,
      } as FollowOptions & { live: true })) {
        yield e;
        if (!('seq' in e)) continue;
        if (e.type === 'session/ended') return;
        if (opts.until === 'turn' && e.type === 'session/turn-ended') return;
      }
      if (missing) throw missing;
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
      stop.abort();
      await check?.catch(() => undefined);
    }
  }

  /**
   * Resolves to an error when the session log stays missing from `stateDir` for `graceMs` while
   * the session has events past `fromSeq` (or the session does not exist); to undefined once the
   * log is there or `signal` aborts.
   */
  private async watchLog(stateDir: string, fromSeq: number, graceMs: number, signal: AbortSignal) {
    const file = path.resolve(sessionLogPath(stateDir, this.sessionId));
    let missingSince: number | undefined;
    while (!signal.aborted) {
      if (fs.existsSync(file)) return undefined;
      const info = await this.workflow.describe().catch((err: Error) => err);
      if (info instanceof WorkflowNotFoundError)
        return new NotFoundError(
          `there is no session ${this.sessionId} on this server (namespace ${this.client.temporal.options.namespace}); start it with startSession first`,
        );
      const view = info instanceof Error ? undefined : await this.viewWithin(3_000);
      if (view && view.nextSeq > fromSeq) {
        missingSince ??= Date.now();
        if (Date.now() - missingSince >= graceMs)
          return new NotFoundError(
            `session ${this.sessionId} has recorded ${view.nextSeq} event(s), but its log is not at ${file}: the worker writes session logs in its own state folder (\`npx sluice worker --state-dir\`, SluicePlugin's stateDir; default .sluice in the worker's working directory), or in PostgreSQL when it has SLUICE_DATABASE_URL. Point events() at it: session.events({ source: '<the worker's state folder>' }), set SLUICE_STATE_DIR, or pass source: openStores({ databaseUrl }) from sluice/worker.`,
          );
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 500);
        signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
      });
    }
    return undefined;
  }

  private async viewWithin(ms: number): Promise<SessionView | undefined> {
    return this.client.temporal.withDeadline(Date.now() + ms, () => this.state()).catch(() => undefined);
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
