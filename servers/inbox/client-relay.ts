// Client tools served from a web page (sluice/browser's `clientTools.serve`). A page cannot poll a
// Temporal task queue, so the inbox polls the session's client queue for it, and only while a page
// that proves it holds the queue's key is attached: with no page there, nothing polls, and a call
// waits on Temporal exactly as it waits for an absent `sluice chat`. A call taken goes to one
// attached page over its stream; the relay activity heartbeats while that page stays attached, so
// a page closed mid-body ends like a killed client (its heartbeat times out: a retry for an
// idempotent tool, OUTCOME_UNKNOWN for an at-most-once one).
//
// The inbox never holds the key: the page signs each answer itself, and the worker's
// acceptClientBody checks that signature as for any client. Attaching proves the key too (the page
// signs a one-time challenge of the inbox), because the queue's calls carry their arguments: a
// process that knows the session id (or its key id) cannot take a call, only the key's holder can.
import { createPublicKey, randomBytes, verify } from 'node:crypto';
import type * as http from 'node:http';
import type { DataConverter } from '@temporalio/common';
import type { SluiceClient } from '../../client/client';
import { type ClientAnswer, type ClientCall, clientKeyId, clientTaskQueue } from '../../pipeline/client-tools';
import { FailureTypes } from '../../pipeline/errors';
import { send } from './http';

/** How long a challenge may wait for the page's signature. */
const CHALLENGE_MS = 60_000;
/** Challenges outstanding at most: a flood of asks cannot grow the inbox's memory without end. */
const MAX_CHALLENGES = 10_000;
/** A comment this often keeps proxies from closing a page's quiet stream. */
const BEAT_MS = 15_000;

/** The text a page signs to attach: bound to the session, its key and the inbox's one-time challenge. */
export function attachSignedText(sessionId: string, keyId: string, challenge: string): string {
  return JSON.stringify(['sluice client attach v1', sessionId, keyId, challenge]);
}

/** A page attached with the key: its stream, and the calls it holds. */
interface AttachedPage {
  res: http.ServerResponse;
  /** Resolves when the page's stream closes. */
  gone: Promise<void>;
  closed: boolean;
  holding: number;
}

/** A call handed to a page, until its answer comes. */
interface HeldCall {
  sessionId: string;
  page: AttachedPage;
  answer(body: { answer?: ClientAnswer; error?: string }): void;
}

/** What a relay needs of the worker package, loaded only once a page attaches. */
type WorkerModule = typeof import('@temporalio/worker');

/** The relays of one inbox: one per session client queue that has a page attached. */
export class ClientRelays {
  private readonly challenges = new Map<string, { sessionId: string; expires: number }>();
  private readonly queues = new Map<string, QueueRelay>();
  private readonly held = new Map<string, HeldCall>();
  private ownConnection?: Promise<{ close(): Promise<void> }>;

  constructor(private readonly client: SluiceClient) {}

  /** A one-time challenge for a page of `sessionId` to sign with its key; undefined while too many wait. */
  challenge(sessionId: string): string | undefined {
    const now = Date.now();
    for (const [c, v] of this.challenges) if (v.expires < now) this.challenges.delete(c);
    if (this.challenges.size >= MAX_CHALLENGES) return undefined;
    const challenge = randomBytes(24).toString('base64url');
    this.challenges.set(challenge, { sessionId, expires: now + CHALLENGE_MS });
    return challenge;
  }

  /**
   * Attaches a page that signed a challenge with the key whose public `x` it gives; answers the
   * request itself when the proof fails. The page is then a stream of the calls it is handed.
   */
  async attach(sessionId: string, url: URL, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const x = url.searchParams.get('key') ?? '';
    const challenge = url.searchParams.get('challenge') ?? '';
    const problem = this.proofProblem(sessionId, x, challenge, url.searchParams.get('signature') ?? '');
    if (problem) return send(res, 403, { status: 'forbidden', message: problem });
    const queue = clientTaskQueue(sessionId, clientKeyId(x));
    let relay = this.queues.get(queue);
    if (!relay)
      this.queues.set(queue, (relay = new QueueRelay(this, sessionId, queue, (mod) => this.workerConnection(mod))));
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'x-accel-buffering': 'no',
    });
    res.write('retry: 2000\n\n');
    let left = () => undefined as void;
    const page: AttachedPage = { res, closed: false, holding: 0, gone: new Promise<void>((r) => (left = r)) };
    const beat = setInterval(() => res.write(': beat\n\n'), BEAT_MS);
    const leave = () => {
      if (page.closed) return;
      page.closed = true;
      clearInterval(beat);
      left();
      relay.detach(page);
    };
    req.on('close', leave);
    res.on('close', leave);
    relay.attach(page);
  }

  /** A page's answer to a call it was handed. */
  answer(sessionId: string, body: Record<string, unknown>, res: http.ServerResponse): void {
    const held = typeof body.token === 'string' ? this.held.get(body.token) : undefined;
    if (!held || held.sessionId !== sessionId || held.page.closed) {
      send(res, 404, {
        status: 'not-found',
        message:
          'no call of this session waits for that answer (it was answered, it ended, or the page that held it was closed): only the attached page that was handed a call answers it',
      });
      return;
    }
    this.held.delete(body.token as string);
    held.answer({
      ...(body.answer && typeof body.answer === 'object' ? { answer: body.answer as ClientAnswer } : {}),
      ...(typeof body.error === 'string' ? { error: body.error.slice(0, 2_000) } : {}),
    });
    send(res, 202, { status: 'accepted' });
  }

  /** Hands a call to a page: its token, until the page answers or leaves. */
  hold(sessionId: string, page: AttachedPage, answer: HeldCall['answer']): string {
    const token = randomBytes(24).toString('base64url');
    this.held.set(token, { sessionId, page, answer });
    return token;
  }

  release(token: string): void {
    this.held.delete(token);
  }

  forget(queue: string, relay: QueueRelay): void {
    if (this.queues.get(queue) === relay) this.queues.delete(queue);
  }

  /** The worker connection the relays poll with: the inbox client's own when it is a worker's. */
  private async workerConnection(worker: WorkerModule): Promise<{ close(): Promise<void> }> {
    const c = this.client.temporal.connection;
    if (c instanceof worker.NativeConnection) return c;
    const o = (
      c as { options?: { address?: string; tls?: unknown; metadata?: Record<string, string>; apiKey?: string } }
    ).options;
    this.ownConnection ??= worker.NativeConnection.connect({
      ...(o?.address ? { address: o.address } : {}),
      ...(o?.tls ? { tls: o.tls as never } : {}),
      ...(o?.metadata ? { metadata: o.metadata } : {}),
      ...(o?.apiKey ? { apiKey: o.apiKey } : {}),
    });
    return this.ownConnection;
  }

  get namespace(): string {
    return this.client.temporal.options.namespace;
  }

  get dataConverter(): DataConverter | undefined {
    return (this.client.temporal.options as { dataConverter?: DataConverter }).dataConverter;
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((r) => r.stop()));
    const own = this.ownConnection;
    this.ownConnection = undefined;
    await own?.then((c) => c.close()).catch(() => undefined);
  }

  private proofProblem(sessionId: string, x: string, challenge: string, signature: string): string | undefined {
    const issued = this.challenges.get(challenge);
    this.challenges.delete(challenge);
    if (!issued || issued.sessionId !== sessionId || issued.expires < Date.now())
      return 'the challenge is unknown, used or expired: ask for a new one (GET client/challenge) and sign it';
    try {
      const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' });
      const text = attachSignedText(sessionId, clientKeyId(x), challenge);
      if (verify(null, Buffer.from(text), key, Buffer.from(signature, 'base64url'))) return undefined;
    } catch {
      // An unreadable key or signature is refused as a wrong one.
    }
    return "the challenge was not signed by the key given: only the holder of a session's client key attaches as its client";
  }
}

/**
 * One session client queue: a Temporal worker polls it while at least one page is attached, and
 * stops when the last one leaves (a call it holds then ends as that page's loss).
 */
class QueueRelay {
  private readonly pages = new Set<AttachedPage>();
  private worker?: { shutdown(): void; getState(): string };
  private running?: Promise<void>;
  /** Starts and stops, one after another. */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly relays: ClientRelays,
    private readonly sessionId: string,
    private readonly queue: string,
    private readonly connection: (mod: WorkerModule) => Promise<{ close(): Promise<void> }>,
  ) {}

  attach(page: AttachedPage): void {
    this.pages.add(page);
    this.chain = this.chain.then(() => this.start(page)).catch((err) => this.fail(err));
  }

  detach(page: AttachedPage): void {
    this.pages.delete(page);
    if (this.pages.size === 0) this.chain = this.chain.then(() => this.stop());
  }

  async stop(): Promise<void> {
    if (this.worker?.getState() === 'RUNNING') this.worker.shutdown();
    await this.running?.catch(() => undefined);
    this.worker = undefined;
    this.running = undefined;
    if (this.pages.size === 0) this.relays.forget(this.queue, this);
  }

  private async start(page: AttachedPage): Promise<void> {
    if (this.running || page.closed || this.pages.size === 0) {
      if (!page.closed) page.res.write('event: attached\ndata: {}\n\n');
      return;
    }
    const mod: WorkerModule = await import('@temporalio/worker');
    const converter = this.relays.dataConverter;
    const worker = await mod.Worker.create({
      connection: (await this.connection(mod)) as WorkerModule['NativeConnection']['prototype'],
      namespace: this.relays.namespace,
      taskQueue: this.queue,
      activities: { runClientTool: (call: ClientCall) => this.relay(call) },
      ...(converter ? { dataConverter: converter } : {}),
    });
    this.worker = worker;
    this.running = worker.run();
    for (const p of this.pages) p.res.write('event: attached\ndata: {}\n\n');
  }

  private fail(err: unknown): void {
    for (const p of this.pages)
      p.res.write(
        `event: problem\ndata: ${JSON.stringify({ error: `the inbox cannot take this session's client calls: ${(err as Error).message}` })}\n\n`,
      );
  }

  /** The relay activity: the call goes to the attached page holding fewest, heartbeating while it stays. */
  private async relay(call: ClientCall): Promise<ClientAnswer> {
    const { Context, ApplicationFailure } = await import('@temporalio/activity');
    const activity = Context.current();
    const page = [...this.pages].sort((a, b) => a.holding - b.holding)[0];
    if (!page || call.sessionId !== this.sessionId)
      throw ApplicationFailure.retryable(
        "no page of the session's client is attached to run it (the last one left as the call came)",
        FailureTypes.TOOL_BODY,
      );
    let answered = (_: { answer?: ClientAnswer; error?: string }) => undefined as void;
    const answer = new Promise<{ answer?: ClientAnswer; error?: string }>((r) => (answered = r));
    const token = this.relays.hold(this.sessionId, page, answered);
    const info = activity.info;
    const heartbeatMs = info.heartbeatTimeoutMs || info.startToCloseTimeoutMs;
    const beat = setInterval(() => activity.heartbeat(), Math.max(200, Math.floor(heartbeatMs / 3)));
    page.holding++;
    try {
      const handed = { token, workflowId: info.workflowExecution?.workflowId ?? '', attempt: info.attempt, call };
      page.res.write(`event: call\ndata: ${JSON.stringify(handed)}\n\n`);
      const end = await Promise.race([answer, page.gone.then(() => 'gone' as const), activity.cancelled]);
      if (end === 'gone') {
        // As a killed client: no more heartbeats, so Temporal times the attempt out (a retry, or
        // OUTCOME_UNKNOWN for an at-most-once tool). The attempt is not ended from here, not even
        // by this worker's shutdown: it ends after its heartbeat timeout has passed on the server
        // (a heartbeat sent late by the SDK's throttle included), when no answer counts any more.
        clearInterval(beat);
        await new Promise((r) => setTimeout(r, heartbeatMs * 3));
        throw ApplicationFailure.retryable('the page holding the call was closed', FailureTypes.TOOL_BODY);
      }
      if (end.error !== undefined)
        throw ApplicationFailure.retryable(`${call.name} failed on the page: ${end.error}`, FailureTypes.TOOL_BODY);
      return end.answer as ClientAnswer;
    } catch (err) {
      if (!page.closed && activity.cancellationSignal.aborted)
        page.res.write(`event: cancel\ndata: ${JSON.stringify({ token })}\n\n`);
      throw err;
    } finally {
      clearInterval(beat);
      page.holding--;
      this.relays.release(token);
    }
  }
}
