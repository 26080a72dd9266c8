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
import { NotFoundError } from '../support/errors';
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
import { readSessionLog } from '../stores/sink';

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
  const opened = await openSession(o);
  if ('how' in opened) return opened;
  // What is shown: the log from the current turn on when resuming, all of it for a new session.
  const logged = await (typeof o.events === 'string'
    ? readSessionLog(o.events, o.sessionId)
    : o.events.events(o.sessionId)
  ).catch(() => [] as SessionEvent[]);
  return new Chat(o, opened.session, opened.resumed, logged).run();
}

/**
 * The session to talk to: started (or attached to, if it runs) with `o.start`, else the running
 * one to resume. A resumed session that has closed is reported, and the chat ends there.
 */
async function openSession(o: ChatOptions): Promise<{ session: SessionHandle; resumed: boolean } | ChatResult> {
  if (o.start) {
    const existed = await o.client.temporal.workflow
      .getHandle(sessionHandle(o.client, o.sessionId).workflowId)
      .describe()
      .then(
        (d) => d.status.name === 'RUNNING',
        () => false,
      );
    return { session: await startSession(o.client, o.start), resumed: existed };
  }
  const session = sessionHandle(o.client, o.sessionId);
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
  return { session, resumed: true };
}

/**
 * One conversation at this terminal: a printer follows the session's events (and, with
 * `o.write`, the answer streaming in), while the loop sends what the person types, watches each
 * turn to its end and asks the approvals it waits on.
 */
class Chat {
  private readonly poll: number;
  private readonly stop = new AbortController();
  private printer: Promise<void> = Promise.resolve();
  /** The first seq the printer has not shown. */
  private fromSeq = 0;
  /** Events up to this seq were logged before this terminal came: their "you:" lines are shown. */
  private readonly recapUpTo: number;
  private lastEnded = { turn: 0, seq: -1 };
  private sessionEnded = false;
  private seenAny: boolean;
  /** The answer being streamed: its step and attempt, and what of it is on the screen. */
  private streaming:
    | { turn: number; step: number; attempt: number; run?: string; text: string; lineOpen: boolean }
    | undefined;
  private warnedNoWorker = false;
  private warnedNoLog = false;
  private readonly asked = new Set<string>();
  private lastBatch: string | undefined;
  private leaving = false;

  constructor(
    private readonly o: ChatOptions,
    private readonly session: SessionHandle,
    private readonly resumed: boolean,
    private readonly logged: SessionEvent[],
  ) {
    this.poll = o.pollMs ?? 250;
    this.seenAny = logged.length > 0;
    if (resumed) {
      const lastEnd = [...logged].reverse().find((e) => e.type === 'session/turn-ended');
      this.fromSeq = lastEnd ? lastEnd.seq + 1 : 0;
    }
    this.recapUpTo = logged.length ? Math.max(...logged.map((e) => e.seq)) : -1;
  }

  async run(): Promise<ChatResult> {
    if (this.resumed) {
      const v0 = await this.stateWithin(3_000).catch(() => undefined);
      this.o.out(
        `Resumed session ${this.o.sessionId}${v0 ? `: turn ${v0.turn}, ${v0.status}${v0.queued ? `, ${v0.queued} message(s) queued` : ''}` : ''}.`,
      );
      // The turn so far, from the log already read, before anything is asked: a card still open
      // belongs after the "you:" and "model:" lines that led to it. The follower goes on from the
      // first seq not shown (a gap, a torn line, is left to it).
      const bySeq = new Map(this.logged.map((e) => [e.seq, e]));
      for (let e = bySeq.get(this.fromSeq); e; e = bySeq.get(this.fromSeq)) {
        this.show(e);
        this.fromSeq++;
      }
    }
    this.printer = (async () => {
      const follow = { fromSeq: this.fromSeq, signal: this.stop.signal, live: true };
      for await (const e of followSessionEvents(this.o.events, this.o.sessionId, follow)) this.show(e);
    })();
    try {
      return await this.converse();
    } catch (err) {
      this.stop.abort();
      await this.printer.catch(() => undefined);
      throw err;
    }
  }

  /** Sends what the person types, a turn at a time, until the session ends or they leave. */
  private async converse(): Promise<ChatResult> {
    // A turn that runs already (resume, or a first message given at start) is watched to its end.
    let v = await this.settle();
    if (!v) return this.finish('left');
    if (v.lastTurn) await this.drain(v.lastTurn.turn);
    const scripted = this.o.messages ? [...this.o.messages] : undefined;
    for (;;) {
      if (v.endReason) {
        await this.drain(v.turn);
        return this.finish('ended', v);
      }
      const text = await this.nextMessage(scripted);
      if (text === null) return this.finish('left', v);
      const t = text.trim();
      if (!t) continue;
      if (t === '/quit' || t === '/exit') return this.finish('left', v);
      if (t === '/end') {
        await this.session.cancel();
        const ended = await this.session.result();
        await this.drain(v.turn + 1);
        if (!this.sessionEnded) this.out(`(the session ended: ${ended.endReason})`);
        return this.finish('ended');
      }
      const turnBefore = v.turn;
      const id = await this.session.post(t);
      const after = await this.settle((x) => x.lastTurn?.messageId === id || x.turn > turnBefore);
      if (!after) return this.finish('left');
      v = after;
      await this.drain(v.turn);
      if (v.lastTurn?.messageId === id) reportTurn(v.lastTurn, this.o.out, this.seenAny);
    }
  }

  /** The next user message: the script's, or a line typed (echoed when it came from a pipe). */
  private async nextMessage(scripted: string[] | undefined): Promise<string | null> {
    if (scripted) {
      const text = scripted.shift() ?? null;
      if (text !== null) this.out(`you: ${text}`);
      return text;
    }
    const text = await this.o.input.next('you> ');
    if (text !== null && !this.o.input.tty) this.out(`you: ${text}`);
    return text;
  }

  /** A query waits for a worker to answer it: with none up, give up after a while and say so. */
  private stateWithin(ms: number) {
    return this.o.client.temporal.withDeadline(Date.now() + ms, () => this.session.state());
  }

  /** Ends a streamed line before anything else is printed, so cards keep their own lines. */
  private readonly out = (line: string) => {
    if (this.streaming?.lineOpen && this.o.write) {
      this.o.write('\n');
      this.streaming.lineOpen = false;
    }
    this.o.out(line);
  };

  private show(e: SessionEvent | LiveEvent) {
    if (!('seq' in e)) return this.showLive(e);
    this.seenAny = true;
    if (e.type === 'model/message' && this.finishStreamed(e)) return;
    // What was typed before this terminal came is shown; what it sends, it has echoed itself.
    const line = renderChatEvent(e, { showUser: e.seq <= this.recapUpTo });
    if (line) this.out(line);
    if (isEvent(e, 'session/turn-ended')) this.lastEnded = { turn: Number(e.data.turn), seq: e.seq };
    if (e.type === 'session/ended') this.sessionEnded = true;
  }

  private showLive(e: LiveEvent) {
    const write = this.o.write;
    if (!write) return;
    if (e.type === 'live/delta') {
      if (e.kind !== 'text') return; // tool calls show as cards, reasoning not at all
      let s = this.streaming;
      if (!s || s.turn !== e.turn || s.step !== e.step || s.attempt !== e.attempt || s.run !== e.run) {
        if (s?.lineOpen) write('\n');
        s = this.streaming = { turn: e.turn, step: e.step, attempt: e.attempt, run: e.run, text: '', lineOpen: false };
      }
      if (!s.lineOpen) {
        write(s.text ? '       ' : 'model: ');
        s.lineOpen = true;
      }
      write(terminalSafe(e.text).replace(/\n/g, '\n       '));
      s.text += e.text;
    } else if (
      e.type === 'live/void' &&
      this.streaming?.attempt === e.attempt &&
      this.streaming.step === e.step &&
      this.streaming.run === e.run
    ) {
      this.out(`  (that answer was cut off: ${terminalSafe(clip(e.reason, 200))}; it is asked again)`);
      this.streaming = undefined;
    }
  }

  /** A step's record after its streamed text: the rest of the line, or the whole answer if it differs. */
  private finishStreamed(e: SessionEvent): boolean {
    const write = this.o.write;
    const d = e.data as { turn?: number; step?: number; text?: string };
    const s = this.streaming;
    if (!write || !s || s.turn !== Number(d.turn) || s.step !== Number(d.step)) return false;
    this.streaming = undefined;
    const text = String(d.text ?? '');
    if (!text.startsWith(s.text) || !s.text) {
      if (s.lineOpen) write('\n');
      return false;
    }
    if (!s.lineOpen && text.length > s.text.length) write('       ');
    write(`${terminalSafe(text.slice(s.text.length)).replace(/\n/g, '\n       ')}\n`);
    return true;
  }

  private async view(): Promise<SessionView | undefined> {
    try {
      const v = await this.stateWithin(5_000);
      this.warnedNoWorker = false;
      return v;
    } catch (err) {
      if (!this.warnedNoWorker) {
        this.out(
          `(no answer from the session: ${(err as Error).message.split('\n')[0]}; waiting for a worker — start one with \`npx sluice dev\` or \`npx sluice worker\`)`,
        );
        this.warnedNoWorker = true;
      }
      return undefined;
    }
  }

  /** Shows and asks the approvals the session's running batch waits on. */
  private async approvals(v: SessionView | undefined) {
    const batch = v?.activeBatch ?? (v ? undefined : this.lastBatch);
    this.lastBatch = batch;
    if (!batch) return;
    const pending: PendingApproval[] = await this.o.client.approvals.read(batch).then(
      (r) => r.pending,
      () => [],
    );
    for (const p of pending) {
      if (this.asked.has(p.approvalId) || this.leaving) continue;
      this.asked.add(p.approvalId);
      this.out(renderPendingCard(p));
      if (this.o.askApprovals === false) {
        this.out(notAskedHere(p));
        continue;
      }
      if (!(await this.ask(p, batch))) return;
    }
  }

  /** Asks y/n for one approval and sends the answer; false when the input has ended. */
  private async ask(p: PendingApproval, batch: string): Promise<boolean> {
    const input = this.o.input;
    if (!input.tty) this.out('Approve this call? [y/N]');
    const answer = await input.next('Approve this call? [y/N] ');
    if (answer === null) {
      this.out(
        `\n(input ended; the call still waits: npx sluice approve ${p.approvalId} | npx sluice deny ${p.approvalId})`,
      );
      this.leaving = true;
      return false;
    }
    if (!input.tty) this.out(`  ← ${answer}`);
    const yes = /^\s*y(es)?\s*$/i.test(answer);
    try {
      const r = await this.o.client.approvals.submit({
        approvalId: p.approvalId,
        decision: yes ? 'approve' : 'deny',
        by: this.o.approver,
        workflowId: batch,
        argsDigest: p.argsDigest,
        ...(yes ? {} : { reason: 'denied at the terminal' }),
      });
      if (r.status === 'queued') this.out(`  → ${yes ? 'approval' : 'denial'} queued: ${r.message}`);
    } catch (err) {
      this.out(`  → the decision was not taken: ${(err as Error).message}`);
    }
    return true;
  }

  /** Watches until no turn runs and none is queued (or the session ends); asks approvals meanwhile. */
  private async settle(until?: (v: SessionView) => boolean): Promise<SessionView | undefined> {
    for (;;) {
      const v = await this.view();
      if (v && (v.status === 'ended' || v.endReason)) return v;
      if (v && v.status === 'idle' && v.queued === 0 && (!until || until(v))) return v;
      await this.approvals(v);
      if (this.leaving) return undefined;
      await sleep(this.poll);
    }
  }

  /** Lets the printer catch up with the end of `turn` (its session/turn-ended event), briefly. */
  private async drain(turn: number) {
    for (let i = 0; i < 40 && this.lastEnded.turn < turn && !this.sessionEnded; i++) await sleep(50);
    if (this.lastEnded.turn < turn && !this.seenAny && !this.warnedNoLog && (this.warnedNoLog = true)) {
      const o = this.o;
      this.out(
        `(no events of this session in ${o.eventsWhere ?? (typeof o.events === 'string' ? o.events : 'the session store')}: give the workers' --state-dir (or SLUICE_DATABASE_URL) to see tool cards)`,
      );
    }
  }

  private async finish(how: ChatResult['how'], v?: SessionView): Promise<ChatResult> {
    this.stop.abort();
    await this.printer;
    if (how === 'left' && !v?.endReason)
      this.out(
        `\nThe session goes on without this terminal. Resume it with: npx sluice chat --resume ${this.o.sessionId}`,
      );
    return { how: v?.endReason ? 'ended' : how, ...(v ? { view: v } : {}) };
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

/**
 * Where y/n is not asked (no terminal): how else the ask is decided, and when it ends by itself,
 * so a chat that waits says what it waits for.
 */
function notAskedHere(p: PendingApproval): string {
  const ends = Number.isFinite(Date.parse(p.expiresAt)) && !p.expiresAt.startsWith('9999');
  return `  (waiting for a decision, not asked here: \`npx sluice approve ${p.approvalId}\` or \`deny\` from another shell${ends ? `; denied at ${p.expiresAt} when its deny timeout ends` : ''})`;
}
