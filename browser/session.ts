// A session as a browser page sees it, through the inbox's routes (servers/inbox/sessions.ts and
// decisions.ts): its events as they are written (each once, resumed where the page left off after a
// dropped connection), the model's text per step with what a retried or lost attempt showed taken
// out (live-text.ts), its state, a message or an interrupt sent to it, and its pending approvals,
// decided bound to the digest the page was shown. Browser APIs only (fetch, EventSource, URL).
import type { LiveEvent } from '../pipeline/live';
import type { QuorumTally } from '../pipeline/quorum';
import type { SessionView } from '../pipeline/session';
import type {
  ApprovalOutcome,
  ArgumentPin,
  DecisionRefusal,
  JsonObject,
  PendingApproval,
  RefusalCode,
  SessionEvent,
} from '../pipeline/types';
import { type BrowserClientKey, type ClientToolBody, PageClientTools } from './client-tools';
import { LiveText, type StepText } from './live-text';

export interface ConnectOptions {
  sessionId: string;
  /**
   * The inbox's address (`sluice ui`; ending in `/` when it has a path); default this page's origin. The inbox takes a
   * message or a decision only from a page of its own origin: serve the page behind the same
   * host as the inbox (a proxy in front of both), see docs/browser.md.
   */
  baseUrl?: string;
  /** Where the stream resumes: a `lastEventId` this client gave before (a page reloaded). */
  after?: string;
  /** Follow the inbox's pending approvals of this session (default true). */
  approvals?: boolean;
  /**
   * The session's client key (openClientKey), for a page that serves the session's client tools
   * (`clientTools.serve`): the key whose binding the session was started with.
   */
  clientKey?: BrowserClientKey;
}

/** The session's state as the inbox reads it from its workflow (the answer of its state route). */
export type SessionStateAnswer = Partial<Omit<SessionView, 'tail' | 'unstored'>> & {
  sessionId: string;
  /** Temporal's status of the session's workflow (RUNNING, COMPLETED...), or `none`. */
  workflow: string;
  /** Whether a worker answered the session's query: false while none runs (messages are queued). */
  worker?: boolean;
  /** What stands in the way, for the person. */
  problem?: string;
};

/** What became of a message or an interrupt sent to the session. */
export type SendAnswer =
  | { ok: true; status: 'queued' | 'sent'; id?: string }
  | { ok: false; status: string; message: string };

/** The inbox's answer to a decision (`/api/decide`). */
export type DecisionAnswer =
  | { status: 'applied'; approvalId: string; outcome: ApprovalOutcome | 'pending'; by?: string; quorum?: QuorumTally }
  /** No worker runs the batch: the decision waits for one, bound to the digest shown. */
  | { status: 'queued'; approvalId: string; requestId?: string; argsDigest?: string; message: string }
  /** The batch did not take it (decided already, expired, the digest changed...). */
  | ({ status: RefusalCode } & DecisionRefusal)
  | { status: 'invalid' | 'forbidden' | 'unauthenticated' | 'refused' | 'error' | 'unreachable'; message: string };

export interface DecideOptions {
  /** Who decides; ignored where a proxy names the approver (the inbox's trusted user header). */
  by?: string;
  reason?: string;
  /** Approve for the rest of the session (a session grant), narrowed by `pins`. */
  scope?: 'session';
  pins?: ArgumentPin[];
}

/** The inbox's approvals snapshot: every pending ask it shows, and recent batches (as the inbox page reads them). */
export interface ApprovalSnapshot {
  now: string;
  pending: (PendingApproval & { queued?: true })[];
  batches: unknown[];
}

export type ConnectionState = 'connecting' | 'live' | 'reconnecting' | 'closed';

/** What a session client tells its listeners, by name. */
export interface SessionClientEvents {
  /** An event of the session's log, each once, in seq order. */
  record: SessionEvent;
  /** A piece of the model step under way, a void of what an attempt showed, or a drop. */
  live: LiveEvent;
  /** A model step's text changed: streamed, voided or recorded. */
  step: StepText;
  connection: ConnectionState;
  /** Something stands in the way (an unknown session, a store that is down): for the person. */
  problem: string;
  /** This session's pending approvals, whenever the inbox's list of them changes. */
  approvals: PendingApproval[];
  /** The inbox's whole approvals snapshot (the inbox's own cards read it). */
  snapshot: ApprovalSnapshot;
  /** Whether this page is attached as the session's client (it serves client tools and the inbox relays). */
  client: boolean;
}

export type SessionClientEvent = {
  [K in keyof SessionClientEvents]: { kind: K; value: SessionClientEvents[K] };
}[keyof SessionClientEvents];

type Listener<K extends keyof SessionClientEvents> = (value: SessionClientEvents[K]) => void;

/** How long a refused stream waits before it is opened again. */
const REOPEN_MS = 3_000;

export interface SessionClient {
  readonly sessionId: string;
  /** The last event id seen: give it as `after` to resume there (a page reloaded). */
  readonly lastEventId: string;
  /** The model's text per step, as shown now. */
  readonly text: LiveText;
  /** Listens to one kind of event; returns what stops it. */
  on<K extends keyof SessionClientEvents>(kind: K, listener: Listener<K>): () => void;
  /** Every event from now on, in order, until `close()` (or the loop breaks). */
  [Symbol.asyncIterator](): AsyncIterator<SessionClientEvent>;
  /** The session's state now (turn, step, usage; whether a worker runs it). */
  state(): Promise<SessionStateAnswer>;
  /** A person's message: queued, answered in its turn (even while no worker runs). */
  send(text: string): Promise<SendAnswer>;
  /** Ends the turn under way: a model call in flight is cancelled, unstarted calls do not run. */
  interrupt(): Promise<SendAnswer>;
  readonly clientTools: {
    /**
     * Runs the session's client tool `name` in this page (needs `clientKey`): calls that wait for
     * the user's device come here while the page is open. Returns what stops serving it.
     */
    serve<Args extends JsonObject = JsonObject>(name: string, body: ClientToolBody<Args>): () => void;
  };
  readonly approvals: {
    /** This session's pending asks, as the inbox last listed them. */
    list(): PendingApproval[];
    approve(ask: PendingApproval, opts?: DecideOptions): Promise<DecisionAnswer>;
    deny(ask: PendingApproval, opts?: Omit<DecideOptions, 'scope' | 'pins'>): Promise<DecisionAnswer>;
  };
  close(): void;
}

/** Opens a session's event stream (and the inbox's approvals) and returns its client. */
export function connectSession(opts: ConnectOptions): SessionClient {
  return new Connection(opts);
}

class Connection implements SessionClient {
  readonly sessionId: string;
  readonly text = new LiveText();
  lastEventId: string;
  private readonly base: string;
  private readonly api: string;
  private readonly listeners = new Map<keyof SessionClientEvents, Set<(v: never) => void>>();
  private events?: EventSource;
  private snapshots?: EventSource;
  private pending: PendingApproval[] = [];
  private reopen?: ReturnType<typeof setTimeout>;
  private closed = false;

  constructor(opts: ConnectOptions) {
    if (typeof opts.sessionId !== 'string' || !opts.sessionId)
      throw new TypeError('connectSession needs the sessionId of the session to follow');
    this.sessionId = opts.sessionId;
    this.lastEventId = opts.after ?? '';
    if (opts.baseUrl === undefined && !globalThis.location)
      throw new TypeError('connectSession outside a web page needs the inbox address: give baseUrl');
    this.base = new URL(opts.baseUrl ?? '/', globalThis.location?.href).href;
    this.api = this.url(`api/sessions/${encodeURIComponent(opts.sessionId)}`);
    this.follow();
    if (opts.approvals !== false) this.watchApprovals();
    this.tools = new PageClientTools(
      this.api,
      this.sessionId,
      opts.clientKey,
      (m) => this.emit('problem', m),
      (on) => this.emit('client', on),
    );
  }

  private readonly tools: PageClientTools;

  readonly clientTools = {
    serve: <Args extends JsonObject = JsonObject>(name: string, body: ClientToolBody<Args>) =>
      this.tools.serve(name, body),
  };

  readonly approvals = {
    list: (): PendingApproval[] => [...this.pending],
    approve: (ask: PendingApproval, o: DecideOptions = {}) => this.decide(ask, 'approve', o),
    deny: (ask: PendingApproval, o: DecideOptions = {}) => this.decide(ask, 'deny', { by: o.by, reason: o.reason }),
  };

  on<K extends keyof SessionClientEvents>(kind: K, listener: Listener<K>): () => void {
    let set = this.listeners.get(kind);
    if (!set) this.listeners.set(kind, (set = new Set()));
    set.add(listener as (v: never) => void);
    return () => set.delete(listener as (v: never) => void);
  }

  [Symbol.asyncIterator](): AsyncIterator<SessionClientEvent> {
    return iterate(this);
  }

  async state(): Promise<SessionStateAnswer> {
    const r = await fetch(`${this.api}/state`, { cache: 'no-store' });
    const answer = (await r.json()) as SessionStateAnswer & { message?: string };
    // Refused (an unknown session, one of another team's queue): the inbox says why.
    if (!r.ok) throw new Error(answer.message ?? `the inbox answered ${r.status}`);
    return answer;
  }

  send(text: string): Promise<SendAnswer> {
    return this.post(`${this.api}/message`, { text });
  }

  interrupt(): Promise<SendAnswer> {
    return this.post(`${this.api}/interrupt`, {});
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.reopen);
    this.events?.close();
    this.snapshots?.close();
    this.tools.close();
    this.emit('connection', 'closed');
  }

  private url(path: string): string {
    return new URL(path, this.base).href;
  }

  private emit<K extends keyof SessionClientEvents>(kind: K, value: SessionClientEvents[K]): void {
    for (const l of [...(this.listeners.get(kind) ?? [])]) (l as Listener<K>)(value);
  }

  /**
   * The session's events: the browser reconnects a dropped stream itself (with Last-Event-ID); a
   * stream the inbox refused is asked why, and opened again a while later from the last event seen.
   */
  private follow(): void {
    if (this.closed) return;
    const after = this.lastEventId ? `?after=${encodeURIComponent(this.lastEventId)}` : '';
    const events = new EventSource(`${this.api}/events${after}`);
    this.events = events;
    this.emit('connection', 'connecting');
    events.addEventListener('open', () => this.emit('connection', 'live'));
    events.addEventListener('record', (ev) => this.take(ev as MessageEvent<string>));
    events.addEventListener('live', (ev) => this.take(ev as MessageEvent<string>));
    events.addEventListener('problem', (ev) => {
      const { error } = JSON.parse((ev as MessageEvent<string>).data) as { error: string };
      this.emit('problem', error);
    });
    events.addEventListener('error', () => {
      if (this.closed) return;
      this.emit('connection', 'reconnecting');
      if (events.readyState !== EventSource.CLOSED) return; // the browser reconnects by itself
      void this.whyRefused().then((message) => message && this.emit('problem', message));
      this.reopen = setTimeout(() => this.follow(), REOPEN_MS);
    });
  }

  /** One streamed event: recorded or live, then the step it changed. */
  private take(ev: MessageEvent<string>): void {
    this.lastEventId = ev.lastEventId;
    const e = JSON.parse(ev.data) as SessionEvent | LiveEvent;
    const step = this.text.apply(e);
    if ('seq' in e) this.emit('record', e);
    else this.emit('live', e);
    if (step) this.emit('step', step);
  }

  /** Why the inbox refused the stream (an unknown session, no store): its JSON answer's message. */
  private async whyRefused(): Promise<string | undefined> {
    try {
      const r = await fetch(`${this.api}/events`, { cache: 'no-store' });
      if (!(r.headers.get('content-type') ?? '').startsWith('application/json')) {
        await r.body?.cancel();
        return undefined;
      }
      return ((await r.json()) as { message?: string }).message;
    } catch {
      return undefined;
    }
  }

  private watchApprovals(): void {
    const snapshots = new EventSource(this.url('api/stream'));
    this.snapshots = snapshots;
    snapshots.addEventListener('snapshot', (ev) => {
      const snap = JSON.parse((ev as MessageEvent<string>).data) as ApprovalSnapshot | { error: string };
      if (!('pending' in snap)) return void this.emit('problem', snap.error);
      this.pending = snap.pending.filter((p) => p.sessionId === this.sessionId);
      this.emit('snapshot', snap);
      this.emit('approvals', [...this.pending]);
    });
  }

  private async decide(ask: PendingApproval, decision: 'approve' | 'deny', o: DecideOptions): Promise<DecisionAnswer> {
    // The digest sent is the one of the ask as listed: the decision is bound to what was shown.
    const body = {
      workflowId: ask.workflowId,
      approvalId: ask.approvalId,
      argsDigest: ask.argsDigest,
      decision,
      ...(o.by ? { by: o.by } : {}),
      ...(o.reason ? { reason: o.reason } : {}),
      ...(o.scope === 'session' ? { scope: 'session', pins: o.pins ?? [] } : {}),
    };
    return (await this.postJson(this.url('api/decide'), body)) as DecisionAnswer;
  }

  private async post(url: string, body: object): Promise<SendAnswer> {
    const answer = await this.postJson(url, body);
    if (answer.status === 'queued' || answer.status === 'sent')
      return { ok: true, status: answer.status, ...(typeof answer.id === 'string' ? { id: answer.id } : {}) };
    return { ok: false, status: answer.status, message: answer.message ?? answer.status };
  }

  /** A JSON POST to the inbox; an inbox that does not answer is an answer too, saying so. */
  private async postJson(url: string, body: object): Promise<{ status: string; message?: string; id?: unknown }> {
    try {
      const r = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return (await r.json()) as { status: string; message?: string };
    } catch (err) {
      return { status: 'unreachable', message: `the inbox server did not answer: ${(err as Error).message}` };
    }
  }
}

/** The client's events as an async iterator: buffered from the call on, ended by close(). */
function iterate(client: Connection): AsyncIterator<SessionClientEvent> {
  const queue: SessionClientEvent[] = [];
  let wake: (() => void) | undefined;
  let done = false;
  const kinds: (keyof SessionClientEvents)[] = [
    'record',
    'live',
    'step',
    'connection',
    'problem',
    'approvals',
    'snapshot',
    'client',
  ];
  const stops = kinds.map((kind) =>
    client.on(kind, (value: SessionClientEvents[typeof kind]) => {
      if (kind === 'connection' && value === 'closed') done = true;
      queue.push({ kind, value } as SessionClientEvent);
      wake?.();
    }),
  );
  const stop = () => {
    done = true;
    for (const s of stops) s();
  };
  return {
    async next(): Promise<IteratorResult<SessionClientEvent>> {
      while (!queue.length && !done) await new Promise<void>((resolve) => (wake = resolve));
      const value = queue.shift();
      if (value) return { value, done: false };
      stop();
      return { value: undefined, done: true };
    },
    async return(): Promise<IteratorResult<SessionClientEvent>> {
      stop();
      return { value: undefined, done: true };
    },
  };
}
