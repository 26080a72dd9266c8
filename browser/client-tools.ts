// Client tools (`runsOn: 'client'`) served from a web page: the session's client key, made and
// kept in the browser, and the page's side of the inbox's relay (servers/inbox/client-relay.ts).
// The key is a WebCrypto Ed25519 pair whose private half cannot be exported: it stays in this
// origin's IndexedDB, so a reloaded page (or the next one) serves the same session, and neither
// the inbox nor the page's own scripts can read it out. The page proves it holds the key to attach,
// and signs every answer with it, so the worker takes an answer only from this page's key.
import type { ClientCall } from '../pipeline/client-tools';
import type { ClientBinding, JsonObject } from '../pipeline/types';

/** A session client key held by this browser. `binding` goes into the session's start. */
export interface BrowserClientKey {
  /** The public half and its id: what the session records (`batch: { client: binding }`). */
  readonly binding: ClientBinding;
  /** An Ed25519 signature over `text`, base64url. */
  sign(text: string): Promise<string>;
}

const DB = 'sluice-client-keys';
const STORE = 'keys';

interface StoredKey {
  binding: ClientBinding;
  privateKey: CryptoKey;
}

function database(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(DB, 1);
    open.onupgradeneeded = () => open.result.createObjectStore(STORE);
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(open.error);
  });
}

async function inStore<T>(mode: IDBTransactionMode, act: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  const db = await database();
  try {
    return await new Promise<T>((resolve, reject) => {
      const r = act(db.transaction(STORE, mode).objectStore(STORE));
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
  } finally {
    db.close();
  }
}

const base64url = (bytes: ArrayBuffer) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

/** The key's id as the worker computes it (pipeline/client-tools.ts clientKeyId). */
async function keyIdOf(x: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(x)));
  return Array.from(digest.slice(0, 16), (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * The client key this browser keeps under `name` (e.g. the session id), made on first use. Give
 * its `binding` to whatever starts the session; any later page of this origin that opens the same
 * name serves the session's client tools.
 */
export async function openClientKey(name: string): Promise<BrowserClientKey> {
  if (!globalThis.crypto?.subtle || !globalThis.indexedDB)
    throw new Error('client tools in a page need WebCrypto and IndexedDB: serve the page over https (or localhost)');
  let stored = await inStore<StoredKey | undefined>('readonly', (s) => s.get(name));
  if (!stored) {
    const pair = (await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify'])) as CryptoKeyPair;
    const x = String((await crypto.subtle.exportKey('jwk', pair.publicKey)).x);
    stored = {
      binding: { keyId: await keyIdOf(x), publicKey: { kty: 'OKP', crv: 'Ed25519', x } },
      privateKey: pair.privateKey,
    };
    await inStore('readwrite', (s) => s.add(stored, name));
  }
  const { binding, privateKey } = stored;
  return {
    binding,
    sign: async (text) =>
      base64url(await crypto.subtle.sign({ name: 'Ed25519' }, privateKey, new TextEncoder().encode(text))),
  };
}

/** Deletes the key kept under `name` (the session ended): its calls can no longer be served here. */
export async function forgetClientKey(name: string): Promise<void> {
  await inStore('readwrite', (s) => s.delete(name));
}

/** What a page's client tool body is given besides its arguments. */
export interface ClientToolContext {
  callId: string;
  name: string;
  sessionId: string;
  turn: number;
  step: number;
  /** 1 on the first attempt; more when a page was closed mid-body and the call runs again. */
  attempt: number;
  /** The same for every attempt of the call: use it to make a retried body do its work once. */
  idempotencyKey: string;
  /** Aborted when the call is cancelled (the turn interrupted, the batch ended). */
  signal: AbortSignal;
}

/**
 * A client tool's body in the page: what it returns (JSON) is the call's result. A throw fails the
 * attempt, retried as the tool's retry policy says (at-most-once tools are not).
 */
export type ClientToolBody<Args extends JsonObject = JsonObject> = (
  args: Args,
  ctx: ClientToolContext,
) => unknown | Promise<unknown>;

/** A call the relay handed to this page (client-relay.ts). */
interface HandedCall {
  token: string;
  workflowId: string;
  attempt: number;
  /** What the client's activity was given (the relay hands it on as it came). */
  call: ClientCall;
}

/** How long a refused or lost attachment waits before it asks again. */
const REATTACH_MS = 2_000;

/** The page's side of the relay: attached while it serves at least one tool. */
export class PageClientTools {
  private readonly bodies = new Map<string, ClientToolBody>();
  private readonly running = new Map<string, AbortController>();
  private stream?: EventSource;
  private attaching = false;
  private retry?: ReturnType<typeof setTimeout>;
  private closed = false;

  constructor(
    private readonly api: string,
    private readonly sessionId: string,
    private readonly key: BrowserClientKey | undefined,
    private readonly problem: (message: string) => void,
    private readonly attached: (on: boolean) => void,
  ) {}

  /** Serves `name` from this page until the returned function is called. */
  serve<Args extends JsonObject = JsonObject>(name: string, body: ClientToolBody<Args>): () => void {
    if (!this.key)
      throw new TypeError('serving client tools needs the session client key: connectSession({ clientKey })');
    this.bodies.set(name, body as ClientToolBody);
    if (!this.stream && !this.retry && !this.attaching) void this.attach();
    return () => {
      if (this.bodies.get(name) === body) this.bodies.delete(name);
      if (this.bodies.size === 0) this.detach();
    };
  }

  close(): void {
    this.closed = true;
    this.detach();
    for (const c of this.running.values()) c.abort();
  }

  private detach(): void {
    clearTimeout(this.retry);
    this.retry = undefined;
    this.stream?.close();
    this.stream = undefined;
    this.attached(false);
  }

  /** Proves the key on a fresh challenge, then follows the calls handed to this page. */
  private async attach(): Promise<void> {
    const key = this.key as BrowserClientKey;
    this.retry = undefined;
    this.attaching = true;
    try {
      const r = await fetch(`${this.api}/client/challenge`, { cache: 'no-store' });
      const { challenge, message } = (await r.json()) as { challenge?: string; message?: string };
      if (!challenge) throw new Error(message ?? `the inbox answered ${r.status}`);
      const text = JSON.stringify(['sluice client attach v1', this.sessionId, key.binding.keyId, challenge]);
      const q = new URLSearchParams({ key: key.binding.publicKey.x, challenge, signature: await key.sign(text) });
      if (this.closed || this.bodies.size === 0) return;
      const stream = new EventSource(`${this.api}/client/calls?${q}`);
      this.stream = stream;
      stream.addEventListener('attached', () => this.attached(true));
      stream.addEventListener('call', (e) => void this.run(JSON.parse((e as MessageEvent).data) as HandedCall));
      stream.addEventListener('cancel', (e) => this.running.get(JSON.parse((e as MessageEvent).data).token)?.abort());
      stream.addEventListener('problem', (e) => this.problem(JSON.parse((e as MessageEvent).data).error));
      // The challenge is spent: a dropped stream attaches again with a new one.
      stream.onerror = () => this.again(stream);
    } catch (err) {
      this.problem(`cannot attach as the session's client: ${(err as Error).message}`);
      this.again();
    } finally {
      this.attaching = false;
    }
  }

  private again(stream?: EventSource): void {
    stream?.close();
    if (stream && this.stream !== stream) return;
    this.stream = undefined;
    this.attached(false);
    if (!this.closed && this.bodies.size > 0) this.retry = setTimeout(() => void this.attach(), REATTACH_MS);
  }

  /** Runs a handed call's body and answers with its outcome, signed over this batch and call. */
  private async run(h: HandedCall): Promise<void> {
    const body = this.bodies.get(h.call.name);
    const abort = new AbortController();
    this.running.set(h.token, abort);
    let reply: { token: string; answer?: object; error?: string };
    try {
      if (!body) throw new Error(`this page does not serve ${h.call.name}`);
      const { args, ...call } = h.call;
      const value = await body(args, { ...call, attempt: h.attempt, signal: abort.signal });
      const outcome = JSON.stringify({ candidate: candidateOf(value), contexts: [], events: [] });
      const signed = JSON.stringify(['sluice client tool result v1', h.workflowId, h.call.callId, outcome]);
      const signature = await (this.key as BrowserClientKey).sign(signed);
      reply = { token: h.token, answer: { keyId: this.key?.binding.keyId, outcome, signature } };
    } catch (err) {
      reply = { token: h.token, error: (err as Error)?.message ?? String(err) };
    } finally {
      this.running.delete(h.token);
    }
    if (abort.signal.aborted) return;
    const r = await fetch(`${this.api}/client/answer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(reply),
    }).catch((err: Error) => ({ ok: false, status: err.message }));
    if (!r.ok) this.problem(`the answer to ${h.call.name} was not taken (${r.status})`);
  }
}

/** A body's value as the call's result, as a worker renders a plain value (activities/execute.ts). */
function candidateOf(value: unknown): JsonObject {
  const v = value === undefined ? null : (JSON.parse(JSON.stringify(value)) as JsonObject | string | null);
  const text = v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v, null, 2);
  return { content: [{ type: 'text', text }], value: v, isError: false };
}
