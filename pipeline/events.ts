// The session events the workflows record, by type, with the payload each carries. One map for
// the writers (workflows/event-log.ts for a batch, workflows/session.ts for an agent session) and
// every reader (client/audit.ts, the inbox, the CLI, sluice chat), so a field renamed on one side
// fails to compile on the other. Extensions add their own
// types through ctx.emit (hook/invoked, fs/observed, todo/write...): those stay untyped here.
import type { AskedEvent } from './ask';
import type { VerifiedApprover } from './identity';
import type { ModelUsage, SessionEndReason, SessionUsage, TurnOutcome } from './session';
import type { ApprovalOutcome, Card, ContentBlock, JsonObject, RefusalCode, SessionEvent, SessionGrant } from './types';

/** A call's model-facing outcome, as tool/result and tool/code-dispatch carry it. */
export type OutcomeFields = {
  content: ContentBlock[];
  isError: boolean;
  error?: { message: string; code?: string };
  meta?: JsonObject;
  /** The completed card (presentResult, or the generic one), so any UI draws it from the event. */
  card: Card;
};

/** A Code Mode sub-call, named within its program's run_code call. */
export type SubCallFields = {
  rootCallId: string;
  parentCallId: string;
  subCallId: string;
  name: string;
  /** The arguments as the program sent them: a JSON string. */
  arguments: string;
};

export type EventPayloads = {
  /** Stage 1: a model's call, before anything else happens to it. */
  'tool/call': {
    turn: number;
    step: number;
    callId: string;
    name: string;
    /** The arguments as the model sent them: a JSON string (empty when they were too long to send). */
    arguments: string;
    argumentsChars?: number;
  };
  /** Stage 13: the single model-facing outcome of a model's call. */
  'tool/result': { turn: number; step: number; callId: string; name: string } & OutcomeFields;
  /** A run_code program's sub-call starts (its stage 1). */
  'tool/code-dispatch-start': SubCallFields;
  /** A sub-call's outcome, which belongs to its program, not to the model. */
  'tool/code-dispatch': SubCallFields & OutcomeFields;
  /** A view of the ask (pipeline/ask.ts): its terms, and its facts as 1.0 recorded them. */
  'approval/asked': AskedEvent;
  'approval/decided': {
    id: string;
    callId: string;
    outcome: ApprovalOutcome;
    by?: string;
    reason?: string;
    /** Set when the deny timeout, not a person, ended the ask. */
    expired?: true;
    /** `allowed-session`: the session grant this decision gave... */
    grant?: SessionGrant;
    /** ...or the earlier grant (given in this batch) that answered this ask. */
    grantId?: string;
    /** The approver's verified identity (subject, groups, issuer), when the decision carried one. */
    verified?: VerifiedApprover;
    /** A quorum ask: every approver whose vote counted. */
    approvers?: string[];
    /** The one-time approval link the deciding decision came through. */
    link?: string;
    latencyMs: number;
  };
  /** A quorum ask: one approver's vote, recorded as it comes, with the tally after it. */
  'approval/vote': {
    id: string;
    callId: string;
    decision: 'approve' | 'deny';
    by: string;
    reason?: string;
    verified?: VerifiedApprover;
    approvals: number;
    rejections: number;
    quorum: number;
    via: 'signal' | 'update';
    /** The one-time approval link the vote came through. */
    link?: string;
  };
  /** Lifecycle: nobody decided within escalateAfterMs, so the ask went to another group. */
  'approval/escalated': { id: string; callId: string; from?: string; to: string; afterMs: number };
  /** Lifecycle: the reminder before the deny timeout. */
  'approval/reminded': { id: string; callId: string; expiresAt: string; assignee?: string };
  /** A person handed the ask to someone else. */
  'approval/reassigned': { id: string; callId: string; from?: string; to: string; by?: string; reason?: string };
  /** A call that a session grant allowed: it was not asked. */
  'approval/grant-used': {
    grantId: string;
    callId: string;
    toolName: string;
    argsDigest: string;
    grantedBy?: string;
    parentCallId?: string;
  };
  /** A decision the batch did not take; the ask it was meant for is unchanged. */
  'approval/refused': {
    id: string;
    callId?: string;
    decision: string;
    by?: string;
    argsDigest?: string;
    code: RefusalCode;
    problem: string;
    via: 'signal' | 'update';
  };
  /** A queued context, injected after the whole batch settled. */
  'user/message': { id: string; role: 'user'; content: string; source: string };

  // An agent session's own events (workflows/session.ts), between its batches' events.
  /** A person's message starts a turn. */
  'session/user': { turn: number; messageId: string; content: string };
  /** One model step's answer. */
  'model/message': {
    turn: number;
    step: number;
    text: string;
    toolCalls: { id: string; name: string }[];
    usage: ModelUsage;
    finishReason: string;
    /**
     * The run's history so far, for anyone checking that a step's cost stays flat. Read from the
     * run, not from a recorded result: a replay may see other figures (stores/sink.ts allows it).
     */
    historyEvents: number;
    historyBytes: number;
    run: number;
  };
  /** The model call failed for good. */
  'model/failed': { turn: number; step: number; message: string };
  /** A client tool's body was handed to the session's client: waiting for the user's device until it takes it. */
  'client/waiting': { callId: string; name: string; clientTimeoutMs: number };
  /** A model's tool call refused before its batch (no id, or an id used twice): it did not run. */
  'tool/rejected': { turn: number; step: number; callId: string; name: string; message: string };
  'session/turn-ended': TurnOutcome;
  'session/ended': { reason: SessionEndReason; turns: number; usage: SessionUsage };
};

export type EventType = keyof EventPayloads;

/** A session event whose payload is known from its type. */
export type TypedEvent<T extends EventType> = Omit<SessionEvent, 'type' | 'data'> & { type: T; data: EventPayloads[T] };

/** Narrows an event to its typed form. Events come from logs and histories: readers still check what they rely on. */
export function isEvent<T extends EventType>(e: SessionEvent, type: T): e is SessionEvent & TypedEvent<T> {
  return e.type === type;
}
