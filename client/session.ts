// Sessions from a client: start one (or attach to it), send messages, interrupt, read its state,
// its pending approvals and its transcript.
import { factsScopeProblem } from '../pipeline/facts';
import { WorkflowExecutionAlreadyStartedError, type WorkflowHandle, WorkflowNotFoundError } from '@temporalio/client';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TranscriptStore } from '../agent/transcript-store';
import type { AgentMessage, SessionInput, SessionOutput, SessionView, TurnOutcome } from '../pipeline/session';
import type { BatchState, ContentBlock, PendingApproval, SessionEvent } from '../pipeline/types';
import type { ResultStore } from '../stores/claim-check';
import { BATCH_WORKFLOW, SESSION_ID, stateQuery } from '../workflows/definitions';
import {
  cancelSessionSignal,
  interruptSignal,
  messageSignal,
  owningSession,
  SESSION_WORKFLOW,
  sendMessageUpdate,
  sessionQuery,
  sessionWorkflowId,
} from '../workflows/session-definitions';
import { type SluiceClient, SluiceError } from './client';
import { type FollowOptions, followSessionEvents, type LiveEvent, type SessionEventSource } from './session-events';
import { InvalidInputError, NotFoundError, SessionIdConflictError } from '../support/errors';
import { sessionConflictsPath, sessionLogPath } from '../stores/session-log-path';
import { executeUpdate } from '../temporal/update';

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
        executeUpdate(this.workflow, sendMessageUpdate, { args: [{ id, content }], updateId: `send:${id}` }),
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
   * The calls of the session's running batch that wait for the user's device or run on it: its
   * client tools (`runsOn: 'client'`) handed to the session's client (none between batches).
   */
  async clientCalls(view?: SessionView): Promise<{ callId: string; name: string; parentCallId?: string }[]> {
    const v = view ?? (await this.state());
    if (!v.activeBatch) return [];
    try {
      const s = (await this.client.temporal.workflow.getHandle(v.activeBatch).query(stateQuery)) as BatchState;
      return s.calls
        .filter((c) => c.stage === 'on-client')
        .map(({ callId, name, parentCallId }) => ({ callId, name, ...(parentCallId ? { parentCallId } : {}) }));
    } catch {
      return []; // finished between the two queries
    }
  }

  /**
   * The session's events as they happen (model text, tool calls and results, approvals asked and
   * decided, injected contexts, turn ends), from `fromSeq` on, read from the session log the
   * workers write: `source` is their state folder or their store (`openStores` from sluice/worker,
   * files or PostgreSQL). Default: the PostgreSQL store of SLUICE_DATABASE_URL when it is set (as
   * the workers'), else SLUICE_STATE_DIR, else `.sluice` in this process's working directory,
   * which is the worker's only when both run in the same folder.
   *
   * Ends with `until: 'turn'` after the first `session/turn-ended` it yields, with `until:
   * 'session'` (the default) after `session/ended`, or when `signal` aborts. With `live: true`
   * the model's answer streams in between (`live/delta` pieces, `live/void` when an attempt
   * failed, `live/dropped` when pieces were lost): see followSessionEvents. When the session has
   * recorded events but the log is not where it looks, it throws a NotFoundError naming the place
   * it looked, instead of waiting on a file no worker writes; when the log holds another
   * workflow's events at the session's seqs (a runBatch under the same session id), a
   * SessionIdConflictError.
   */
  events(opts: SessionEventsOptions & { live: true }): AsyncGenerator<SessionEvent | LiveEvent>;
  events(opts?: SessionEventsOptions): AsyncGenerator<SessionEvent>;
  async *events(opts: SessionEventsOptions = {}): AsyncGenerator<SessionEvent | LiveEvent> {
    // The workers' database, opened here (pg loads only then) and closed when the follower ends.
    const url = opts.source === undefined ? process.env.SLUICE_DATABASE_URL?.trim() : undefined;
    const owned = url ? (await import('../stores/stores')).postgresStores(url) : undefined;
    try {
      yield* this.follow(opts, opts.source ?? owned ?? process.env.SLUICE_STATE_DIR ?? '.sluice');
    } finally {
      await owned?.close();
    }
  }

  private async *follow(
    opts: SessionEventsOptions,
    source: NonNullable<SessionEventsOptions['source']>,
  ): AsyncGenerator<SessionEvent | LiveEvent> {
    // What events() waits for may never come: checked in the follower's own round, which has just
    // read the log (a missing log, or the session's events kept out of it), before it yields that
    // round's events, so no event of another writer's passes for the session's.
    const check = this.logCheck(source, opts.fromSeq ?? 0, opts.missingLogMs ?? 5_000);
    for await (const e of followSessionEvents(source, this.sessionId, {
      ...opts,
      live: opts.live === true,
      check,
      checkMs: typeof source === 'string' ? 500 : 1_000,
    } as FollowOptions & { live: true })) {
      yield e;
      if (!('seq' in e)) continue;
      if (e.type === 'session/ended') return;
      if (opts.until === 'turn' && e.type === 'session/turn-ended') return;
    }
  }

  /**
   * The check events() runs in each round of its follower: an error when what it waits for can
   * never come. The session log stays missing from a state folder for `graceMs` while the session
   * has events past `fromSeq` (or the session does not exist), or the sink kept the session's own
   * events out of the log (see divertedError).
   */
  private logCheck(source: SessionEventSource, fromSeq: number, graceMs: number) {
    const file = typeof source === 'string' ? path.resolve(sessionLogPath(source, this.sessionId)) : undefined;
    let missingSince: number | undefined;
    return async ({ logFound }: { logFound: boolean }): Promise<Error | undefined> => {
      if (file && !logFound) {
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
              `session ${this.sessionId} has recorded ${view.nextSeq} event(s), but its log is not at ${file}: the worker writes session logs in its own state folder (\`npx sluice worker --state-dir\`, SluicePlugin's stateDir; default .sluice in the worker's working directory), or in PostgreSQL when it has SLUICE_DATABASE_URL. Point events() at it: session.events({ source: '<the worker's state folder>' }) or SLUICE_STATE_DIR; for PostgreSQL, the workers' SLUICE_DATABASE_URL in this process's environment, or source: openStores({ databaseUrl }) from sluice/worker.`,
            );
        }
        return undefined;
      }
      missingSince = undefined;
      if (typeof source !== 'string' && !source.conflicts) return undefined; // a store that keeps no conflicts
      return this.divertedError(source).catch(() => undefined);
    };
  }

  /**
   * The error for a session whose own events the sink kept aside: their seqs already held events
   * another workflow numbered under the same session id (a batch run with runBatch, or an earlier
   * run of this session). The sink keeps every later event of the session aside too, so the log
   * never brings them: events() says so instead of waiting for them forever.
   */
  private async divertedError(source: SessionEventSource): Promise<SessionIdConflictError | undefined> {
    let where: string;
    let firstSeq: number | undefined;
    if (typeof source === 'string') {
      where = path.resolve(sessionConflictsPath(source, this.sessionId));
      let text: string;
      try {
        text = await fs.promises.readFile(where, 'utf8');
      } catch {
        return undefined; // none kept aside
      }
      for (const line of text.split('\n')) {
        try {
          const kept = JSON.parse(line) as { batch?: string; event?: { seq?: number } };
          if (kept.batch !== this.workflowId) continue;
          firstSeq = Math.min(firstSeq ?? Number.MAX_SAFE_INTEGER, Number(kept.event?.seq));
        } catch {
          // blank or torn
        }
      }
      if (firstSeq === undefined) return undefined;
    } else {
      const kept = await source.conflicts?.(this.sessionId);
      if (!kept?.batches?.includes(this.workflowId)) return undefined;
      where = kept.where;
    }
    return new SessionIdConflictError(
      this.sessionId,
      `session ${this.sessionId}: its events${firstSeq === undefined ? '' : ` from seq ${firstSeq}`} are not in its log, because the log already held events at those seqs that another workflow numbered under the same session id (a batch run with runBatch or \`sluice batch\` with sessionId '${this.sessionId}', or an earlier run of this session). The worker kept the session's events aside in ${where}, and keeps its later ones there too, so events() would wait for them forever. A durable session needs a session id no other batch uses: start a new session with another sessionId, and give runBatch calls session ids of their own.`,
    );
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
  const scopeProblem = request.factsScope === undefined ? undefined : factsScopeProblem(request.factsScope);
  if (scopeProblem) throw new InvalidInputError(scopeProblem);
  await refuseTakenId(client, request.sessionId);
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

/**
 * A new session on an id that tool batches run with runBatch already used would number its events
 * from 0 in the log that holds theirs: the sink keeps the session's aside and its turns' batches
 * meet the ids those batches took. Refused before anything starts. A running or closed session of
 * that id is attached to as before; what visibility has not listed yet is left to events(), which
 * reports the clash when it shows.
 */
async function refuseTakenId(client: SluiceClient, sessionId: string): Promise<void> {
  const workflowId = sessionWorkflowId(sessionId);
  const exists = await client.temporal.workflow
    .getHandle(workflowId)
    .describe()
    .then(
      () => true,
      (err) => (err instanceof WorkflowNotFoundError ? false : undefined),
    );
  if (exists !== false) return;
  const quoted = `'${sessionId.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  const query = `SluiceSessionId = ${quoted} AND WorkflowType = '${BATCH_WORKFLOW}'`;
  let taken: string | undefined;
  try {
    for await (const wf of client.temporal.workflow.list({ query, pageSize: 10 })) {
      if (owningSession(wf) === workflowId) continue; // the session's own, from a run visibility still lists
      taken = wf.workflowId;
      break;
    }
  } catch {
    return; // visibility unavailable: events() still reports a clash
  }
  if (taken)
    throw new SessionIdConflictError(
      sessionId,
      `session id '${sessionId}' is taken: tool batches were run under it with runBatch or \`sluice batch\` (${taken}), and a durable session numbers its events from seq 0 in the same session log, where they would clash with those batches' events (and its batches with their workflow ids). Start the session with a sessionId of its own; runBatch calls and durable sessions never share one.`,
    );
}

export function sessionHandle(client: SluiceClient, sessionId: string): SessionHandle {
  return new SessionHandle(client, sessionId);
}
