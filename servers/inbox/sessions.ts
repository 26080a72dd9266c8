// A session in the inbox: its page (`/sessions/<id>`), its events as server-sent events (the
// durable log so far, then the live tail with the model's text as it streams), its state, and the
// two things a person sends it (a message, an interrupt), and the relay of its client tools' calls
// to a page that serves them (client-relay.ts). Every route answers only for a session
// this inbox may show: with a task queue set, one with a workflow on that queue; any other id is
// answered as unknown, so the routes tell nothing of other teams' sessions.
import * as fs from 'node:fs';
import type * as http from 'node:http';
import * as path from 'node:path';
import type { LiveEvent } from '../../pipeline/live';
import type { SessionEvent } from '../../pipeline/types';
import type { LiveReader } from '../../stores/live';
import type { SluiceClient } from '../../client/client';
import { sessionHandle } from '../../client/session';
import { followSessionEvents, type SessionEventSource } from '../../client/session-events';
import type { ClientRelays } from './client-relay';
import type { InboxFeed } from './feed';
import { crossSiteProblem, jsonBody, readPage, send, sendPage } from './http';

const PAGE = path.join(__dirname, 'session.html');
/** Where the session page takes sluice/browser, which the inbox inlines (its policy runs inline scripts only). */
const BROWSER_MARK = '<!--sluice:browser-->';
/** sluice/browser as an ES module, for pages of the inbox's origin (docs/browser.md). */
const BROWSER_ASSET = '/assets/sluice-browser.js';
/** How long the state route waits for a worker to answer the session's query. */
const QUERY_DEADLINE_MS = 3_000;
/** A comment this often keeps proxies from closing a quiet stream, and finds closed ones. */
const BEAT_MS = 15_000;
const MAX_MESSAGE = 32 * 1024;

/** Where the inbox reads a session's events: the workers' store (files or PostgreSQL). */
export interface SessionSource {
  events(sessionId: string, afterSeq?: number): Promise<SessionEvent[]>;
  hasSession(sessionId: string): Promise<boolean>;
  /** The live channel: the model's text while a step runs. Without it, steps arrive whole. */
  live?: LiveReader;
}

export interface SessionDeps {
  client: SluiceClient;
  feed: InboxFeed;
  store?: SessionSource;
  /** Open event streams, ended when the inbox closes. */
  streams: Set<AbortController>;
  /** The session clients' queues polled for pages that serve client tools. */
  relays: ClientRelays;
}

/** Handles the session routes; false when the request is not one of them. */
export async function sessionRoute(
  deps: SessionDeps,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  url: URL,
): Promise<boolean> {
  if (req.method === 'GET' && url.pathname === BROWSER_ASSET) {
    res.writeHead(200, {
      'content-type': 'text/javascript; charset=utf-8',
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
    });
    res.end(await browserBundle('esm'));
    return true;
  }
  if (req.method === 'GET' && url.pathname === '/api/sessions') {
    send(res, 200, { sessions: await deps.feed.sessions() });
    return true;
  }
  const m =
    /^\/(api\/)?sessions\/([^/]+)(?:\/(events|state|message|interrupt|client\/(?:challenge|calls|answer)))?$/.exec(
      url.pathname,
    );
  if (!m || (m[1] ? !m[3] : m[3])) return false;
  const sessionId = decodeURIComponent(m[2]);
  const action = m[1] ? `${req.method} ${m[3]}` : `${req.method} page`;
  const handler = HANDLERS[action];
  if (!handler) return false;
  if (req.method === 'POST') {
    const problem = crossSiteProblem(req);
    if (problem) {
      send(res, 403, { status: 'forbidden', message: problem });
      return true;
    }
  }
  const unseen = await deps.feed.sessionProblem(sessionId);
  if (unseen)
    send(res, unseen.status, { status: unseen.status === 400 ? 'invalid' : 'not-found', message: unseen.message });
  else await handler(deps, req, res, sessionId, url);
  return true;
}

type Handler = (
  deps: SessionDeps,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  sessionId: string,
  url: URL,
) => Promise<void>;

const HANDLERS: Record<string, Handler> = {
  // The page reads its session id from its own address: nothing of the request is written into it.
  'GET page': async (_deps, _req, res) => {
    const script = `<script>${await browserBundle('iife')}</script>`;
    sendPage(
      res,
      readPage(PAGE).replace(BROWSER_MARK, () => script),
    );
  },
  'GET events': streamEvents,
  'GET state': sessionState,
  'POST message': postMessage,
  'POST interrupt': interrupt,
  // Client tools served from a page (client-relay.ts): a challenge to sign, the calls, an answer.
  'GET client/challenge': async (deps, _req, res, sessionId) => {
    const challenge = deps.relays.challenge(sessionId);
    if (challenge) send(res, 200, { challenge });
    else send(res, 429, { status: 'busy', message: 'too many pages are attaching right now: try again in a minute' });
  },
  'GET client/calls': (deps, req, res, sessionId, url) => deps.relays.attach(sessionId, url, req, res),
  'POST client/answer': async (deps, req, res, sessionId) => {
    const body = await jsonBody(req, res);
    if (body !== undefined) deps.relays.answer(sessionId, body, res);
  },
};

const bundles = new Map<string, Promise<string>>();

/**
 * sluice/browser as `npm run build` wrote it beside the compiled inbox (dist/browser), read once.
 * Run from the sources (tsx, the tests), there is none: it is built then, by the same script.
 */
function browserBundle(format: 'esm' | 'iife'): Promise<string> {
  let code = bundles.get(format);
  if (!code) {
    const dir = path.join(__dirname, '..', '..', 'browser');
    const built = path.join(dir, format === 'esm' ? 'sluice-browser.mjs' : 'sluice-browser.iife.js');
    code = fs.promises.readFile(built, 'utf8').catch(async (err) => {
      if (!fs.existsSync(path.join(dir, 'index.ts')))
        throw new Error(
          `sluice/browser is missing (${(err as Error).message}): build the package with \`npm run build\``,
        );
      // A computed path: the compiled package never reaches here, nor takes the build script in.
      const script = path.join(__dirname, '..', '..', 'scripts', 'build-browser');
      const { bundleBrowser } = (await import(script)) as { bundleBrowser(f: string): Promise<string> };
      return bundleBrowser(format);
    });
    code.catch(() => bundles.delete(format));
    bundles.set(format, code);
  }
  return code;
}

/**
 * Where a stream resumes: the next durable seq, and the last live piece sent of the step under way
 * (`next/turn/step/attempt/n`, then `/run` when the piece names its run), which is each event's
 * SSE id. A browser sends the last one back in Last-Event-ID when it reconnects (or a page gives
 * it as `?after=`).
 */
interface Resume {
  next: number;
  at?: { turn: number; step: number; attempt: number; n: number; run?: string };
}

export function parseResume(id: string | undefined | null): Resume {
  const all = (id ?? '').split('/');
  // A run is a token the step picked (hex); anything else in its place makes the id unreadable.
  const run = all.length === 6 && /^[0-9a-f]{1,64}$/.test(all[5]) ? all.pop() : undefined;
  const parts = all.map(Number);
  if (!id || parts.some((p) => !Number.isSafeInteger(p) || p < 0)) return { next: 0 };
  if (parts.length === 1) return { next: parts[0] };
  if (parts.length !== 5) return { next: 0 };
  const [next, turn, step, attempt, n] = parts;
  return { next, at: { turn, step, attempt, n, ...(run !== undefined ? { run } : {}) } };
}

export function resumeId(r: Resume): string {
  if (!r.at) return String(r.next);
  const { turn, step, attempt, n, run } = r.at;
  return `${r.next}/${turn}/${step}/${attempt}/${n}${run !== undefined ? `/${run}` : ''}`;
}

/**
 * Whether a live event was sent before the resume point (a piece the page has shown). `state` is
 * the stream's own, kept across its events: pieces of the resume point's step from another run
 * than the resume point's come before that run's (a run lost with its worker, voided; the page has
 * had them) until that run's pieces have passed, and after it (the run that replaced it: new).
 */
export function sentBefore(e: LiveEvent, r: Resume, state: { runSeen?: boolean } = {}): boolean {
  const at = r.at;
  // Markers the follower makes itself (n = -1) carry no place: a second void or drop is harmless.
  if (!at || e.n < 0) return false;
  if (e.turn !== at.turn) return e.turn < at.turn;
  if (e.step !== at.step) return e.step < at.step;
  if (e.run !== at.run) return !state.runSeen;
  state.runSeen = true;
  if (e.attempt !== at.attempt) return e.attempt < at.attempt;
  return e.n <= at.n;
}

/**
 * The session's events as server-sent events: `record` for each event of the log (in seq order,
 * each once), `live` for the pieces of the model step under way (`live/delta`; `live/void`: drop
 * what that attempt showed; `live/dropped`: wait for the step's record). A page that joins late
 * gets the log so far, then the step under way from its start, then the tail.
 */
async function streamEvents(
  deps: SessionDeps,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  sessionId: string,
  url: URL,
): Promise<void> {
  const header = req.headers['last-event-id'];
  let at = parseResume((Array.isArray(header) ? header[0] : header) ?? url.searchParams.get('after'));
  const stop = new AbortController();
  deps.streams.add(stop);
  req.on('close', () => stop.abort());
  res.on('close', () => stop.abort());
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'x-accel-buffering': 'no',
  });
  res.write('retry: 2000\n\n');
  const beat = setInterval(() => res.write(': beat\n\n'), BEAT_MS);
  const resumedFrom = at;
  const resuming = {};
  try {
    for await (const e of followSessionEvents(deps.store ?? fromTemporal(deps.feed), sessionId, {
      fromSeq: at.next,
      live: true,
      signal: stop.signal,
      // Without the workers' store, finished batches are read from Temporal: not ten times a second.
      ...(deps.store ? {} : { intervalMs: 2_000 }),
    })) {
      let kind: 'record' | 'live';
      if ('seq' in e) {
        kind = 'record';
        at = { next: e.seq + 1, ...(at.at ? { at: at.at } : {}) };
      } else {
        if (sentBefore(e, resumedFrom, resuming)) continue;
        kind = 'live';
        if (e.n >= 0)
          at = {
            next: at.next,
            at: {
              turn: e.turn,
              step: e.step,
              attempt: e.attempt,
              n: e.n,
              ...(e.run !== undefined ? { run: e.run } : {}),
            },
          };
      }
      if (!res.write(`id: ${resumeId(at)}\nevent: ${kind}\ndata: ${JSON.stringify(e)}\n\n`))
        await drained(res, stop.signal);
    }
  } catch (err) {
    if (!stop.signal.aborted)
      res.write(`event: problem\ndata: ${JSON.stringify({ error: (err as Error).message })}\n\n`);
  } finally {
    clearInterval(beat);
    deps.streams.delete(stop);
    res.end();
  }
}

/**
 * A session's events as Temporal alone has them, for an inbox without the workers' store: those
 * of its finished batches (what a session records outside batches, and the live text, need the store).
 */
function fromTemporal(feed: InboxFeed): SessionEventSource {
  return {
    async events(sessionId, afterSeq = -1) {
      return (await feed.session(sessionId)).events.filter((e) => e.seq > afterSeq);
    },
  };
}

/** Waits until a full socket buffer drains (a slow page slows only its own stream). */
function drained(res: http.ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.once('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** The session's state (turn, step, usage, why it ended), from its workflow; whether a worker runs it. */
async function sessionState(
  deps: SessionDeps,
  _req: http.IncomingMessage,
  res: http.ServerResponse,
  sessionId: string,
) {
  const handle = sessionHandle(deps.client, sessionId);
  const info = await handle.workflow.describe().catch(() => undefined);
  if (!info)
    return send(res, 200, {
      sessionId,
      workflow: 'none',
      problem:
        'this session has no workflow on the server (its batches were started on their own, or it has not started)',
    });
  const workflow = info.status.name;
  try {
    const view = await deps.client.temporal.withDeadline(Date.now() + QUERY_DEADLINE_MS, () => handle.state());
    const { tail: _tail, unstored: _unstored, ...rest } = view;
    send(res, 200, { ...rest, workflow, worker: true });
  } catch (err) {
    send(res, 200, {
      sessionId,
      workflow,
      ...(workflow === 'RUNNING'
        ? {
            worker: false,
            problem: `no worker answers this session right now (${(err as Error).message}): what you send is queued and answered when one runs (\`npx sluice worker\`)`,
          }
        : {}),
    });
  }
}

/** A user message, queued by signal: accepted with no worker up, answered in its turn. */
async function postMessage(deps: SessionDeps, req: http.IncomingMessage, res: http.ServerResponse, sessionId: string) {
  const body = await jsonBody(req, res);
  if (body === undefined) return;
  const text = typeof body.text === 'string' ? body.text.trim() : '';
  if (!text || text.length > MAX_MESSAGE)
    return send(res, 400, {
      status: 'invalid',
      message: `send {"text": "<your message>"} with 1 to ${MAX_MESSAGE} characters`,
    });
  await signalSession(deps, res, sessionId, async (h) => ({ status: 'queued', id: await h.post(text) }));
}

async function interrupt(deps: SessionDeps, _req: http.IncomingMessage, res: http.ServerResponse, sessionId: string) {
  await signalSession(deps, res, sessionId, async (h) => {
    await h.interrupt();
    return { status: 'sent' };
  });
}

async function signalSession(
  deps: SessionDeps,
  res: http.ServerResponse,
  sessionId: string,
  act: (h: ReturnType<typeof sessionHandle>) => Promise<object>,
) {
  const handle = sessionHandle(deps.client, sessionId);
  const info = await handle.workflow.describe().catch(() => undefined);
  if (info?.status.name !== 'RUNNING')
    return send(res, 409, {
      status: 'ended',
      message: info
        ? `the session ${sessionId} has ended (${info.status.name.toLowerCase()}); start a new one`
        : `the session ${sessionId} has no workflow on the server; start it with \`sluice chat\` or startSession`,
    });
  try {
    send(res, 202, await act(handle));
  } catch (err) {
    send(res, 502, { status: 'error', message: `could not reach the session: ${(err as Error).message}` });
  }
}
