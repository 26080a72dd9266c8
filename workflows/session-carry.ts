// The carry of an agent session: what continue-as-new hands to the next run (the transcript's
// stored head and unstored messages, the seq, the session state, the counters), and every change
// to it. The session's own events are recorded here, through the EventLog, at the seq the carry
// holds; a batch's events take the seqs its output says.
import type {
  AgentMessage,
  ModelStepOutput,
  QueuedMessage,
  SessionCarry,
  SessionEndReason,
  SessionInput,
  SessionOutput,
  SessionStatus,
  SessionView,
  TurnEndReason,
  TurnOutcome,
} from '../pipeline/session';
import { contentText, tailCopy } from '../pipeline/session';
import type { EventPayloads, EventType } from '../pipeline/events';
import type { BatchOutputWire } from '../codec/output';
import { EventLog } from './event-log';
import { carriedCalls } from './session-facts';

/** The last messages the status query shows. */
const TAIL = 20;
/** Turn outcomes kept, so a message sent twice is answered once. */
const RECENT_TURNS = 20;

export class Carry {
  readonly c: SessionCarry;
  private readonly log: EventLog;

  constructor(private readonly input: SessionInput) {
    this.c = input.carried ?? {
      turn: 0,
      step: 0,
      seq: 0,
      state: {},
      head: null,
      unstored: [],
      tail: [],
      messageCount: 0,
      usage: { inputTokens: 0, outputTokens: 0, steps: 0 },
      inbox: input.message ? [{ id: `${input.sessionId}:first`, content: input.message }] : [],
      turnsCompleted: 0,
      recentTurns: [],
      runs: 0,
    };
    this.c.runs++;
    this.log = new EventLog(input.sessionId, this.c.seq, false);
  }

  /** Records one of the session's own events at the next seq. */
  record<T extends EventType>(type: T, data: EventPayloads[T]): void {
    this.log.record(type, data);
    this.c.seq = this.log.nextSeq;
  }

  /** Whether a message with this id was queued, is being answered, or was answered lately. */
  known(id: string): boolean {
    const c = this.c;
    return (
      c.inbox.some((m) => m.id === id) ||
      c.activeTurn?.messageId === id ||
      c.recentTurns.some((t) => t.messageId === id)
    );
  }

  /** Queues a message unless it is a resend. */
  accept(m: QueuedMessage): void {
    if (!this.known(m.id)) this.c.inbox.push(m);
  }

  /** The turn a message answers, once it has ended. */
  outcomeOf(messageId: string): TurnOutcome | undefined {
    return this.c.recentTurns.find((t) => t.messageId === messageId);
  }

  /** The next queued message starts a turn: recorded, and the first of the turn's messages. */
  startTurn(): void {
    const c = this.c;
    const m = c.inbox.shift()!;
    c.turn++;
    c.step = 0;
    c.activeTurn = { messageId: m.id, turn: c.turn, text: '' };
    const user: AgentMessage = { role: 'user', content: m.content };
    c.unstored.push(user);
    this.remember(user);
    this.record('session/user', {
      turn: c.turn,
      messageId: m.id,
      content: typeof m.content === 'string' ? m.content : contentText(m.content),
    });
  }

  /** The active turn ends, for this reason; its outcome answers its message. */
  endTurn(reason: TurnEndReason, error?: string): void {
    const c = this.c;
    const t = c.activeTurn!;
    const outcome: TurnOutcome = { messageId: t.messageId, turn: t.turn, steps: c.step, reason, text: t.text };
    if (error) outcome.error = error;
    c.recentTurns.push(outcome);
    if (c.recentTurns.length > RECENT_TURNS) c.recentTurns.shift();
    c.turnsCompleted++;
    c.activeTurn = undefined;
    this.record('session/turn-ended', outcome);
  }

  /** The model's reply to a step: the stored transcript's new head, its message, the usage. */
  modelReplied(reply: ModelStepOutput): void {
    const c = this.c;
    c.head = reply.head;
    c.unstored = [];
    this.remember(reply.assistant);
    c.usage = {
      inputTokens: c.usage.inputTokens + reply.usage.inputTokens,
      outputTokens: c.usage.outputTokens + reply.usage.outputTokens,
      steps: c.usage.steps + 1,
    };
    if (reply.assistant.text) c.activeTurn!.text = reply.assistant.text;
  }

  /** A batch's output: its events took the seqs up to its nextSeq, and its state is the session's now. */
  batchDone(output: BatchOutputWire): void {
    this.c.seq = output.nextSeq;
    this.c.state = output.state;
    if (this.input.sessionFacts) this.c.calls = carriedCalls(this.c.calls, output);
    this.log.skipTo(output.nextSeq);
  }

  /** Messages that joined the transcript (not stored yet): they go with the next model step. */
  appendUnstored(messages: AgentMessage[]): void {
    this.c.unstored.push(...messages);
    this.remember(...messages);
  }

  budgetSpent(): boolean {
    const { tokenBudget } = this.input;
    return tokenBudget !== undefined && this.c.usage.inputTokens + this.c.usage.outputTokens >= tokenBudget;
  }

  /** The session ends for good, for this reason: recorded, and its output. */
  finish(reason: SessionEndReason): SessionOutput {
    const c = this.c;
    c.endReason = reason;
    this.record('session/ended', { reason, turns: c.turnsCompleted, usage: { ...c.usage } });
    return {
      sessionId: this.input.sessionId,
      endReason: reason,
      turns: c.turnsCompleted,
      usage: c.usage,
      head: c.head,
      unstored: c.unstored,
      messageCount: c.messageCount,
      nextSeq: c.seq,
      state: c.state,
      ...(c.recentTurns.length ? { lastTurn: c.recentTurns[c.recentTurns.length - 1] } : {}),
    };
  }

  /** What the status query shows. */
  view(status: SessionStatus, activeBatch: string | undefined): SessionView {
    const c = this.c;
    return {
      sessionId: this.input.sessionId,
      status: c.endReason ? 'ended' : status,
      turn: c.turn,
      step: c.step,
      nextSeq: c.seq,
      usage: c.usage,
      ...(activeBatch ? { activeBatch } : {}),
      messageCount: c.messageCount,
      tail: c.tail,
      head: c.head,
      unstored: c.unstored,
      ...(c.recentTurns.length ? { lastTurn: c.recentTurns[c.recentTurns.length - 1] } : {}),
      ...(c.endReason ? { endReason: c.endReason } : {}),
      queued: c.inbox.length,
      runs: c.runs,
    };
  }

  private remember(...messages: AgentMessage[]): void {
    const c = this.c;
    // Previews only: the tail rides in every continue-as-new (the transcript keeps the messages).
    c.tail.push(...messages.map(tailCopy));
    if (c.tail.length > TAIL) c.tail.splice(0, c.tail.length - TAIL);
    c.messageCount += messages.length;
  }
}
