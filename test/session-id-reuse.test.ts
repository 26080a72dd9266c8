// A session id used by runBatch and by a durable session, in both orders: startSession and
// runBatch refuse it with SessionIdConflictError, and where a check cannot see the other (visibility
// late, a later turn) events() throws it instead of waiting forever. On both stores a worker
// writes the session log to: the state folder's files, and PostgreSQL (a throw-away server).
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SessionHandle, sessionHandle, startSession } from '../client/session';
import type { SessionEventSource } from '../client/session-events';
import type { SessionEvent } from '../pipeline/types';
import { PostgresStores } from '../stores/postgres';
import { fileStores, postgresStores, type SluiceStores } from '../stores/stores';
import { SessionIdConflictError } from '../support/errors';
import { SESSION_ID } from '../workflows/definitions';
import { SESSION_WORKFLOW, sessionWorkflowId } from '../workflows/session-definitions';
import { eventually } from './eventually';
import { startClockSession } from './clock-session';
import type { Harness } from './harness';
import { startPostgres, type TestPostgres } from './postgres';

const sid = (name: string) => `${name}-${process.pid}-${Date.now()}`;
const rome = { id: 'b1', name: 'clock', arguments: JSON.stringify({ city: 'Rome' }) };

interface Store {
  kind: string;
  /** The worker's stores, or undefined for its state folder's files. */
  worker(): Promise<SluiceStores | undefined>;
  /** Where the client reads the session's events: each source events() is tried with. */
  sources(h: Harness): SessionEventSource[];
  /** Where events() says the session's events were kept aside. */
  keptAside(h: Harness): string;
  close(): Promise<void>;
}

let pg: TestPostgres | undefined;
let reader: SluiceStores | undefined;
const opened: { close(): Promise<void> }[] = [];
const STORES: Store[] = [
  {
    kind: 'the state folder’s files',
    worker: async () => undefined,
    sources: (h) => [h.stateDir, fileStores(h.stateDir)],
    keptAside: (h) => path.join(h.stateDir, 'sessions'),
    close: async () => {},
  },
  {
    kind: 'PostgreSQL',
    async worker() {
      pg = await startPostgres();
      const url = await pg.createDatabase('sluice_session_ids');
      const setup = new PostgresStores(url);
      await setup.migrate();
      await setup.close();
      const stores = postgresStores(url);
      // The client's own stores on the same database, as an app reading events would open them.
      reader = postgresStores(url);
      opened.push(stores, reader);
      return stores;
    },
    sources: () => (reader ? [reader] : []),
    keptAside: () => 'the sluice_session_conflicts table',
    async close() {
      for (const s of opened.splice(0)) await s.close();
      await pg?.stop();
    },
  },
];

describe.each(STORES)('session ids on $kind', (store) => {
  let h: Harness;
  let script: string;

  beforeAll(async () => {
    ({ h, script } = await startClockSession('session-id-reuse', 'Still noon.', { stores: await store.worker() }));
  }, 180_000);

  afterAll(async () => {
    await h?.close();
    await store.close();
  });

  /**
   * What events() ends with: the events it yielded and the error it threw. A follower that hangs
   * is stopped after a generous while, and the test fails on the missing error, not on a timeout.
   */
  async function follow(session: SessionHandle, opts: Parameters<SessionHandle['events']>[0] = {}) {
    const seen: SessionEvent[] = [];
    const hung = new AbortController();
    const timer = setTimeout(() => hung.abort(), 120_000);
    try {
      for await (const e of session.events({
        source: store.sources(h)[0],
        until: 'turn',
        ...opts,
        signal: hung.signal,
      }))
        seen.push(e);
      return { seen, error: undefined, hung: hung.signal.aborted };
    } catch (error) {
      return { seen, error: error as Error, hung: hung.signal.aborted };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A batch run with runBatch under the id, then the session started straight on Temporal, as
   * startSession starts it once its visibility check has let it through (visibility late).
   */
  async function sessionAfterBatch(id: string): Promise<void> {
    await h.client.runBatch({ sessionId: id, turn: 1, step: 1, calls: [rome] });
    await h.client.temporal.workflow.start(SESSION_WORKFLOW, {
      taskQueue: h.taskQueue,
      workflowId: sessionWorkflowId(id),
      args: [{ sessionId: id, model: `script:${script}` }],
      typedSearchAttributes: [{ key: SESSION_ID, value: id }],
    });
  }

  describe('runBatch first, then a durable session with the same id', () => {
    it('startSession refuses the id, naming the batch, and starts nothing', async () => {
      const id = sid('batch-first');
      await h.client.runBatch({ sessionId: id, turn: 1, step: 1, calls: [rome] });
      // The check reads visibility: wait until it lists the batch, as it does a moment after.
      await eventually('visibility lists the batch', async () => {
        for await (const _ of h.client.temporal.workflow.list({ query: `SluiceSessionId = '${id}'` })) return true;
        return false;
      });
      const err = await startSession(h.client, { sessionId: id, model: `script:${script}` }).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err).toBeInstanceOf(SessionIdConflictError);
      expect(err?.message).toContain(`sluice-batch:${id}:1:1`);
      expect(err?.message).toContain('a sessionId of its own');
      const started = await h.client.temporal.workflow
        .getHandle(sessionWorkflowId(id))
        .describe()
        .then(
          () => true,
          () => false,
        );
      expect(started).toBe(false);
    }, 300_000);

    it('a session that got past that check (visibility late): events() throws instead of waiting forever', async () => {
      const id = sid('batch-first-late');
      // What startSession starts, started directly: as when visibility has not listed the batch yet.
      await sessionAfterBatch(id);
      const session = sessionHandle(h.client, id);
      await session.send('What time is it in Oslo?', { id: 'msg-1' });
      const { seen, error, hung } = await follow(session);
      expect(hung, 'events() hung').toBe(false);
      expect(error).toBeInstanceOf(SessionIdConflictError);
      expect(error?.message).toContain('runBatch');
      expect(error?.message).toContain(store.keptAside(h));
      expect(error?.message).toContain('start a new session with another sessionId');
      // Nothing of the batch's passed for the session's.
      expect(seen).toEqual([]);
      await session.cancel();
    }, 300_000);
    it('a session whose first batch meets that batch’s workflow id: the turn fails naming the id and what to do', async () => {
      const id = sid('batch-first-child');
      // The batch the session's first step would start (turn 1, step 1) is run first with runBatch.
      await sessionAfterBatch(id);
      const session = sessionHandle(h.client, id);
      // The script's first step calls the clock: its batch is sluice-batch:<id>:1:1, taken.
      const turn = await session.send('What time is it in Oslo?', { id: 'msg-1' });
      expect(turn.reason).toBe('batch-failed');
      expect(turn.error).not.toMatch(/^Workflow execution already started$/);
      expect(turn.error).toContain(`session ${id}`);
      expect(turn.error).toContain(`workflow sluice-batch:${id}:1:1 already exists`);
      expect(turn.error).toContain('runBatch');
      expect(turn.error).toContain('start a new session with another sessionId');
      // The same words in the session's state, for a caller that did not send the message.
      expect((await session.state()).lastTurn?.error).toBe(turn.error);
      await session.cancel();
    }, 300_000);
  });

  describe('a durable session first, then runBatch with the same id', () => {
    it('the same turn and step: runBatch refuses to attach to the session’s batch', async () => {
      const id = sid('session-first-same');
      const session = await startSession(h.client, { sessionId: id, model: `script:${script}` });
      expect((await session.send('What time is it in Oslo?', { id: 'msg-1' })).reason).toBe('done');
      const err = await h.client.runBatch({ sessionId: id, turn: 1, step: 1, calls: [rome] }).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err).toBeInstanceOf(SessionIdConflictError);
      expect(err?.message).toContain('durable session');
      await session.cancel();
    }, 300_000);

    it('another turn: runBatch says the id is a durable session’s, not "start at seq N"', async () => {
      const id = sid('session-first-other');
      const session = await startSession(h.client, { sessionId: id, model: `script:${script}` });
      await session.send('What time is it in Oslo?', { id: 'msg-1' });
      const err = await h.client.runBatch({ sessionId: id, turn: 7, step: 1, calls: [rome] }).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err).toBeInstanceOf(SessionIdConflictError);
      expect(err?.message).toContain(`belongs to a durable session (workflow ${sessionWorkflowId(id)}`);
      await session.cancel();
    }, 300_000);

    it('a runBatch at the log’s next seq gets in; the session’s next turn: events() throws, from a folder or a store', async () => {
      const id = sid('session-first-next');
      const session = await startSession(h.client, { sessionId: id, model: `script:${script}` });
      await session.send('What time is it in Oslo?', { id: 'msg-1' });
      const first = await follow(session);
      expect(first.error).toBeUndefined();
      expect(first.seen.at(-1)?.type).toBe('session/turn-ended');
      const out = await h.client.runBatch({
        sessionId: id,
        turn: 7,
        step: 1,
        calls: [rome],
        startSeq: first.seen.length,
      });
      expect(out.nextSeq).toBeGreaterThan(first.seen.length);
      await session.send('And now?', { id: 'msg-2' });
      for (const source of store.sources(h)) {
        const { error, hung } = await follow(session, { source, fromSeq: first.seen.length });
        expect(hung, 'events() hung').toBe(false);
        expect(error).toBeInstanceOf(SessionIdConflictError);
        expect(error?.message).toContain(`session ${id}: its events`);
      }
      await session.cancel();
    }, 300_000);
  });
});
