// `sluice chat` and `npm start`: a person at a terminal talking to a durable agent session. The
// session (workflows/session.ts) owns everything that matters; this process only shows it and
// types for the person, so it can die at any moment and `sluice chat --resume <session>` picks
// the session up where it stands: a turn still running is watched to its end, an approval still
// open is asked again.
//
//   what is shown   the session log (the worker's sink, <state-dir>/sessions/<id>.jsonl), followed live
//   what is asked   pending approvals, read from the running batch (memo or query)
//   what is sent    user messages by signal (accepted with no worker up), decisions by update or,
//                   with no worker, queued by signal
import { NotFoundError } from './errors';
import * as readline from 'node:readline';
import type { Readable } from 'node:stream';
import { type SessionRequest, sessionHandle, startSession, type SessionHandle } from './session';
import { isEvent } from '../pipeline/events';
import type { SessionView, TurnOutcome } from '../pipeline/session';
import type { PendingApproval, SessionEvent, ToolResult } from '../pipeline/types';
import { followSessionEvents, type LiveEvent, type SessionEventSource } from './session-events';
import type { SluiceClient } from './client';
import { clip, renderPendingCard, renderResultCard, terminalSafe } from './render';
import * as fs from 'node:fs';
import { readSessionLog } from '../worker/sink';

/** Lines from a stream, one at a time, whether a terminal or a pipe; null once it has ended. */
export class LineInput {
  private lines: string[] = [];
  private ended = false;
  private waiting: ((line: string | null) => void) | undefined;
  private rl: readline.Interface;

  /** A terminal: prompts are written; from a pipe they are not, and the chat echoes what it read. */
  readonly tty: boolean;

  constructor(
    input: Readable,
    private readonly write: (s: string) => void = (s) => process.stdout.write(s),
  ) {
    this.tty = (input as { isTTY?: boolean }).isTTY === true;
    this.rl = readline.createInterface({ input, terminal: false });
    this.rl.on('line', (l) => this.push(l));
    this.rl.on('close', () => {
      this.ended = true;
      this.push(null);
    });
  }

  private push(line: string | null) {
    const w = this.waiting;
    if (w) {
      this.waiting = undefined;
      w(line);
    } else if (line !== null) this.lines.push(line);
  }

  /** The next line (the prompt written first), or null when the input has ended. */
  next(prompt = ''): Promise<string | null> {
    if (prompt && this.tty) this.write(prompt);
    if (this.lines.length) return Promise.resolve(this.lines.shift()!);
    if (this.ended) return Promise.resolve(null);
    return new Promise((resolve) => (this.waiting = resolve));
  }

  close() {
    this.rl.close();
  }
}

/** One event as the chat shows it; undefined for events a person does not need to see. */
export function renderChatEvent(e: SessionEvent, opts: { showUser?: boolean } = {}): string | undefined {
  // Every field goes through String() and terminalSafe whatever its declared type: a log can hold anything.
  if (isEvent(e, 'session/user'))
    return opts.showUser ? `you: ${terminalSafe(String(e.data.content ?? ''))}` : undefined;
  if (isEvent(e, 'model/message')) {
    const text = String(e.data.text ?? '');
    // continuation lines indented, so no line of the model's can pass for a card or a prompt
    return text ? `model: ${terminalSafe(text).replace(/\n/g, '\n       ')}` : undefined;
  }
  if (isEvent(e, 'tool/result'))
    return `  ${renderResultCard(String(e.data.name), String(e.data.callId), e.data as unknown as ToolResult)}`;
  if (isEvent(e, 'tool/rejected'))
    return `  ✗ ${terminalSafe(String(e.data.name))} (${terminalSafe(String(e.data.callId))}): ${terminalSafe(String(e.data.message))}`;
  if (isEvent(e, 'user/message'))
    return `  + context (${terminalSafe(String(e.data.source ?? 'user'))}): ${terminalSafe(clip(String(e.data.content ?? ''), 300))}`;
  if (isEvent(e, 'approval/decided')) {
    const d = e.data;
    return `  → ${terminalSafe(String(d.outcome))}${d.expired ? ' (no answer in time)' : d.by ? ` by ${terminalSafe(String(d.by))}` : ''}`;
  }
  if (isEvent(e, 'model/failed')) return `model call failed: ${terminalSafe(String(e.data.message ?? ''))}`;
  if (isEvent(e, 'session/turn-ended')) {
    const d = e.data;
    return d.reason === 'done' || d.reason === 'concluded'
      ? undefined
      : `(turn ${terminalSafe(String(d.turn))} ended: ${terminalSafe(String(d.reason))}${d.error ? `: ${terminalSafe(String(d.error))}` : ''})`;
  }
  if (isEvent(e, 'session/ended')) return `(the session ended: ${terminalSafe(String(e.data.reason))})`;
  return undefined;
}

export interface ChatOptions {
  client: SluiceClient;
  sessionId: string;
  /** Start the session (or attach to it if it runs); absent: resume one that must exist. */
  start?: SessionRequest;
  /** Where the workers' session log is: their state folder, or their store (files or PostgreSQL). */
  events: SessionEventSource;
  /** That place, for a person (a folder, a redacted database URL). */
  eventsWhere?: string;
  input: LineInput;
  out: (s: string) => void;
  /** Who approves (recorded with each decision). */
  approver: string;
  /** Ask y/n for approvals (default true); false: show the card and let the deny timeout or another approver decide. */
  askApprovals?: boolean;
  /** Send these messages, one per turn, instead of reading them from the input; then stop. */
  messages?: string[];
  /** How often the session is looked at. */
  pollMs?: number;
  /**
   * Writes without ending the line: given, the model's text is printed as it streams (the step's
   * record then only ends the line); absent, each answer is printed whole when its step ends.
   */
  write?: (s: string) => void;
}

export interface ChatResult {
  /** 'ended': the session ended; 'left': the person left (or input ended) and the session waits. */
  how: 'ended' | 'left';
  view?: SessionView;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the conversation until the session ends or the person leaves. */
export async function runChat(o: ChatOptions): Promise<ChatResult> {
  const poll = o.pollMs ?? 250;
  let session: SessionHandle;
  let resumed = !o.start;
  if (o.start) {
    const existed = await o.client.temporal.workflow
      .getHandle(sessionHandle(o.client, o.sessionId).workflowId)
      .describe()
      .then(
        (d) => d.status.name === 'RUNNING',
        () => false,
      );
    session = await startSession(o.client, o.start);
    resumed = existed;
  } else {
    session = sessionHandle(o.client, o.sessionId);
    const desc = await session.workflow.describe().catch(() => undefined);
    if (!desc)
      throw new NotFoundError(
        `there is no session ${o.sessionId} on this server; start one with \`npx sluice chat --script <file>\` or --model <provider:model>`,
      );
    if (desc.status.name !== 'RUNNING') {
      const outcome = await session.result().catch((err: Error) => err);
      o.out(
        outcome instanceof Error
          ? `session ${o.sessionId} is closed (${desc.status.name.toLowerCase()}): ${outcome.message}`
          : `session ${o.sessionId} has ended (${outcome.endReason}) after ${outcome.turns} turn(s); start a new one`,
      );
      return { how: 'ended' };
    }
  }

  // A query waits for a worker to answer it: with none up, give up after a while and say so.
  const stateWithin = (ms: number) => o.client.temporal.withDeadline(Date.now() + ms, () => session.state());

  // What is shown: the log from the current turn on when resuming, all of it for a new session.
  const logged = await (typeof o.events === 'string'
    ? readSessionLog(o.events, o.sessionId)
    : o.events.events(o.sessionId)
  ).catch(() => [] as SessionEvent[]);
  let fromSeq = 0;
  if (resumed) {
    const lastEnd = [...logged].reverse().find((e) => e.type === 'session/turn-ended');
    fromSeq = lastEnd ? lastEnd.seq + 1 : 0;
  }
  const recapUpTo = logged.length ? Math.max(...logged.map((e) => e.seq)) : -1;
  if (resumed) {
    const v0 = await stateWithin(3_000).catch(() => undefined);
    o.out(
      `Resumed session ${o.sessionId}${v0 ? `: turn ${v0.turn}, ${v0.status}${v0.queued ? `, ${v0.queued} message(s) queued` : ''}` : ''}.`,
    );
  }
  const stop = new AbortController();
  let lastEnded = { turn: 0, seq: -1 };
  let sessionEnded = false;
  let seenAny = logged.length > 0;
  // The answer being streamed: its step and attempt, and what of it is on the screen.
  let streaming: { turn: number; step: number; attempt: number; text: string; lineOpen: boolean } | undefined;
  const write = o.write;
  /** Ends a streamed line before anything else is printed, so cards keep their own lines. */
  const out = (line: string) => {
    if (streaming?.lineOpen && write) {
      write('\n');
      streaming.lineOpen = false;
    }
    o.out(line);
  };
  const showLive = (e: LiveEvent) => {
    if (!write) return;
    if (e.type === 'live/delta') {
      if (e.kind !== 'text') return; // tool calls show as cards, reasoning not at all
      if (!streaming || streaming.turn !== e.turn || streaming.step !== e.step || streaming.attempt !== e.attempt) {
        if (streaming?.lineOpen) write('\n');
        streaming = { turn: e.turn, step: e.step, attempt: e.attempt, text: '', lineOpen: false };
      }
      if (!streaming.lineOpen) {
        write(streaming.text ? '       ' : 'model: ');
        streaming.lineOpen = true;
      }
      write(terminalSafe(e.text).replace(/\n/g, '\n       '));
      streaming.text += e.text;
    } else if (e.type === 'live/void' && streaming?.attempt === e.attempt && streaming.step === e.step) {
      out(`  (that answer was cut off: ${terminalSafe(clip(e.reason, 200))}; it is asked again)`);
      streaming = undefined;
    }
  };
  /** A step's record after its streamed text: the rest of the line, or the whole answer if it differs. */
  const finishStreamed = (e: SessionEvent): boolean => {
    const d = e.data as { turn?: number; step?: number; text?: string };
    const s = streaming;
    if (!write || !s || s.turn !== Number(d.turn) || s.step !== Number(d.step)) return false;
    streaming = undefined;
    const text = String(d.text ?? '');
    if (!text.startsWith(s.text) || !s.text) {
      if (s.lineOpen) write('\n');
      return false;
    }
    if (!s.lineOpen && text.length > s.text.length) write('       ');
    write(`${terminalSafe(text.slice(s.text.length)).replace(/\n/g, '\n       ')}\n`);
    return true;
  };
  const show = (e: SessionEvent | LiveEvent) => {
    if (!('seq' in e)) return showLive(e);
    seenAny = true;
    if (e.type === 'model/message' && finishStreamed(e)) return;
    // What was typed before this terminal came is shown; what it sends, it has echoed itself.
    const line = renderChatEvent(e, { showUser: e.seq <= recapUpTo });
    if (line) out(line);
    if (isEvent(e, 'session/turn-ended')) lastEnded = { turn: Number(e.data.turn), seq: e.seq };
    if (e.type === 'session/ended') sessionEnded = true;
  };
  if (resumed) {
    // The turn so far, from the log already read, before anything is asked: a card still open
    // belongs after the "you:" and "model:" lines that led to it. The follower goes on from the
    // first seq not shown (a gap, a torn line, is left to it).
    const bySeq = new Map(logged.map((e) => [e.seq, e]));
    for (let e = bySeq.get(fromSeq); e; e = bySeq.get(fromSeq)) {
      show(e);
      fromSeq++;
    }
  }
  const printer = (async () => {
    for await (const e of followSessionEvents(o.events, o.sessionId, { fromSeq, signal: stop.signal, live: true }))
      show(e);
  })();

  let warnedNoWorker = false;
  let warnedNoLog = false;
  const view = async (): Promise<SessionView | undefined> => {
    try {
      const v = await stateWithin(5_000);
      warnedNoWorker = false;
      return v;
    } catch (err) {
      if (!warnedNoWorker) {
        out(
          `(no answer from the session: ${(err as Error).message.split('\n')[0]}; waiting for a worker — start one with \`npx sluice dev\` or \`npx sluice worker\`)`,
        );
        warnedNoWorker = true;
      }
      return undefined;
    }
  };

  const asked = new Set<string>();
  let lastBatch: string | undefined;
  let leaving = false;
  /** Shows and asks the approvals the session's running batch waits on. */
  const approvals = async (v: SessionView | undefined) => {
    const batch = v?.activeBatch ?? (v ? undefined : lastBatch);
    lastBatch = batch;
    if (!batch) return;
    const pending: PendingApproval[] = await o.client.readApprovals(batch).then(
      (r) => r.pending,
      () => [],
    );
    for (const p of pending) {
      if (asked.has(p.approvalId) || leaving) continue;
      asked.add(p.approvalId);
      out(renderPendingCard(p));
      if (o.askApprovals === false) {
        out('  (waiting for a decision: y/n is not asked here)');
        continue;
      }
      if (!o.input.tty) out('Approve this call? [y/N]');
      const answer = await o.input.next('Approve this call? [y/N] ');
      if (answer === null) {
        out(
          `\n(input ended; the call still waits: npx sluice approve ${p.approvalId} | npx sluice deny ${p.approvalId})`,
        );
        leaving = true;
        return;
      }
      if (!o.input.tty) out(`  ← ${answer}`);
      const yes = /^\s*y(es)?\s*$/i.test(answer);
      try {
        const r = await o.client.submitDecision({
          approvalId: p.approvalId,
          decision: yes ? 'approve' : 'deny',
          by: o.approver,
          workflowId: batch,
          argsDigest: p.argsDigest,
          ...(yes ? {} : { reason: 'denied at the terminal' }),
        });
        if (r.status === 'queued') out(`  → ${yes ? 'approval' : 'denial'} queued: ${r.message}`);
      } catch (err) {
        out(`  → the decision was not taken: ${(err as Error).message}`);
      }
    }
  };

  /** Watches until no turn runs and none is queued (or the session ends); asks approvals meanwhile. */
  const settle = async (until?: (v: SessionView) => boolean): Promise<SessionView | undefined> => {
    for (;;) {
      const v = await view();
      if (v && (v.status === 'ended' || v.endReason)) return v;
      if (v && v.status === 'idle' && v.queued === 0 && (!until || until(v))) return v;
      await approvals(v);
      if (leaving) return undefined;
      await sleep(poll);
    }
  };

  /** Lets the printer catch up with the end of `turn` (its session/turn-ended event), briefly. */
  const drain = async (turn: number) => {
    for (let i = 0; i < 40 && lastEnded.turn < turn && !sessionEnded; i++) await sleep(50);
    if (lastEnded.turn < turn && !seenAny && !warnedNoLog && (warnedNoLog = true))
      out(
        `(no events of this session in ${o.eventsWhere ?? (typeof o.events === 'string' ? o.events : 'the session store')}: give the workers' --state-dir (or SLUICE_DATABASE_URL) to see tool cards)`,
      );
  };

  const finish = async (how: ChatResult['how'], v?: SessionView): Promise<ChatResult> => {
    stop.abort();
    await printer;
    if (how === 'left' && !v?.endReason)
      out(`\nThe session goes on without this terminal. Resume it with: npx sluice chat --resume ${o.sessionId}`);
    return { how: v?.endReason ? 'ended' : how, ...(v ? { view: v } : {}) };
  };

  try {
    // A turn that runs already (resume, or a first message given at start) is watched to its end.
    let v = await settle();
    if (!v) return await finish('left');
    if (v.lastTurn) await drain(v.lastTurn.turn);
    const scripted = o.messages ? [...o.messages] : undefined;
    for (;;) {
      if (v.endReason) {
        await drain(v.turn);
        return await finish('ended', v);
      }
      let text: string | null;
      if (scripted) {
        text = scripted.shift() ?? null;
        if (text !== null) out(`you: ${text}`);
      } else {
        text = await o.input.next('you> ');
        if (text !== null && !o.input.tty) out(`you: ${text}`);
      }
      if (text === null) return await finish('left', v);
      const t = text.trim();
      if (!t) continue;
      if (t === '/quit' || t === '/exit') return await finish('left', v);
      if (t === '/end') {
        await session.cancel();
        const ended = await session.result();
        await drain(v.turn + 1);
        if (!sessionEnded) out(`(the session ended: ${ended.endReason})`);
        return await finish('ended');
      }
      const turnBefore = v.turn;
      const id = await session.post(t);
      const after = await settle((x) => x.lastTurn?.messageId === id || x.turn > turnBefore);
      if (!after) return await finish('left');
      v = after;
      await drain(v.turn);
      if (v.lastTurn?.messageId === id) reportTurn(v.lastTurn, o.out, seenAny);
    }
  } catch (err) {
    stop.abort();
    await printer.catch(() => undefined);
    throw err;
  }
}

/** When no log is readable, the turn's outcome is all the person gets to see. */
function reportTurn(t: TurnOutcome, out: (s: string) => void, logShown: boolean) {
  if (!logShown && t.text) out(`model: ${terminalSafe(t.text)}`);
}

/** The default id of a new chat session: chat-<UTC date and time>. */
export function newChatSessionId(now = new Date()): string {
  return `chat-${now
    .toISOString()
    .replace(/[-:.TZ]/g, '')
    .slice(0, 14)}`;
}

/** A script file's user messages (`turns[].user`), for `npm start` and `sluice chat --script --play`. */
export function scriptMessages(file: string): string[] {
  const script = JSON.parse(fs.readFileSync(file, 'utf8')) as { turns?: { user?: string }[] };
  return (script.turns ?? []).map((t) => t.user).filter((u): u is string => typeof u === 'string' && !!u.trim());
}
