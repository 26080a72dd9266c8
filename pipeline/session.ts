// The vocabulary of a durable agent session (workflows/session.ts), shared by workflow code,
// model adapters and converters. Pure types and pure functions only.
import { ErrorCodes } from './errors';
import type { ContentBlock, Json, ModelMessage, SessionState, ToolCall, ToolError } from './types';

/** What the session's user (a person, a script, an integration) says. */
export interface UserTurnMessage {
  role: 'user';
  content: string | ContentBlock[];
  /** Set on contexts a stage injected after a batch (`tool:<name>`, `post-execute:<handler>`, ...). */
  source?: string;
}

/** One model step's answer: its text and the tool calls it asks for, in the model's order. */
export interface AssistantMessage {
  role: 'assistant';
  text: string;
  toolCalls: ToolCall[];
}

/**
 * A tool result as the model reads it. `error` and `value` are carried when the batch gives them
 * (a denial is `error.code === 'DENIED'`; `value` is the body's structured value).
 */
export type ToolMessage = Extract<ModelMessage, { role: 'tool' }> & { error?: ToolError; value?: Json };

export interface SystemMessage {
  role: 'system';
  content: string;
}

/** One entry of a session's transcript. */
export type AgentMessage = SystemMessage | UserTurnMessage | AssistantMessage | ToolMessage;

/** A tool as a model is offered it: the worker derives these from its tool definitions. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  parameters: { [key: string]: Json };
}

export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
}

/** Ids a model sent that cannot identify a call: refused per call, never the whole batch. */
export interface CallIntake {
  /** The calls that can run, in model order, each with a unique non-empty id. */
  calls: ToolCall[];
  /** Error results for the calls that cannot, with the index each had in the model's message. */
  rejected: { index: number; message: ToolMessage }[];
  /** The model's order: for each call, its id in `calls`, or the index into `rejected`. */
  order: ({ run: string } | { rejected: number })[];
}

/** A call id the model left out: stable, so the same message gives the same ids on every replay. */
export function missingCallId(index: number): string {
  return `missing-id-${index + 1}`;
}

/**
 * Splits a model's tool calls into those that run and those that get an error result at once: an
 * empty or missing id, or an id an earlier call of the same message already used.
 */
export function intakeCalls(raw: { id?: string | null; name: string; arguments: string }[]): CallIntake {
  const seen = new Set<string>();
  const intake: CallIntake = { calls: [], rejected: [], order: [] };
  raw.forEach((c, index) => {
    const id = typeof c.id === 'string' ? c.id : '';
    let problem: string | undefined;
    if (!id) problem = 'this tool call has no id, so its result could not be matched to it; it was not run';
    else if (seen.has(id))
      problem = `call id ${JSON.stringify(id)} was already used by an earlier call in the same message; this call was not run. Call the tool again in a new message if it is still needed.`;
    if (problem) {
      const message: ToolMessage = {
        role: 'tool',
        toolCallId: id || missingCallId(index),
        toolName: c.name,
        content: [{ type: 'text', text: `Error: ${problem}` }],
        isError: true,
        error: { message: problem, code: ErrorCodes.INVALID_CALL_ID },
      };
      intake.order.push({ rejected: intake.rejected.length });
      intake.rejected.push({ index, message });
      return;
    }
    seen.add(id);
    intake.calls.push({ id, name: c.name, arguments: c.arguments });
    intake.order.push({ run: id });
  });
  return intake;
}

/**
 * The tool messages of one model message in the model's order (rejected calls in their places),
 * then the contexts the batch injected: the order DESIGN.md §3 gives.
 */
export function mergeToolMessages(
  intake: CallIntake,
  batchMessages: (ModelMessage | ToolMessage)[],
): (ToolMessage | UserTurnMessage)[] {
  const byId = new Map<string, ToolMessage>();
  const contexts: UserTurnMessage[] = [];
  for (const m of batchMessages) {
    if (m.role === 'tool') byId.set(m.toolCallId, m);
    else contexts.push({ role: 'user', content: m.content, ...(m.source ? { source: m.source } : {}) });
  }
  const out: (ToolMessage | UserTurnMessage)[] = [];
  for (const o of intake.order) {
    if ('rejected' in o) out.push(intake.rejected[o.rejected].message);
    else {
      const m = byId.get(o.run);
      if (m) out.push(m);
    }
  }
  return [...out, ...contexts];
}

/** The text of a message's content, images as a short marker. */
export function contentText(content: string | ContentBlock[]): string {
  if (typeof content === 'string') return content;
  return content.map((b) => (b.type === 'text' ? b.text : `[image ${b.mimeType}]`)).join('');
}

/** Parsed arguments for formats that carry an object; arguments that are not a JSON object go as `{}`. */
export function argumentsObject(raw: string): { [key: string]: Json } {
  try {
    const v = JSON.parse(raw);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

export type SessionEndReason = 'max-turns' | 'budget' | 'cancelled' | 'idle' | 'model-error';
export type TurnEndReason =
  | 'done'
  | 'concluded'
  | 'max-steps'
  | 'budget'
  | 'interrupted'
  | 'cancelled'
  | 'model-error'
  | 'batch-failed';

/** Retry and timeout of each model call (an activity). */
export interface ModelCallOptions {
  timeoutMs?: number;
  heartbeatTimeoutMs?: number;
  maxAttempts?: number;
  initialIntervalMs?: number;
}

export interface SessionInput {
  sessionId: string;
  /**
   * The model: a name from the worker config's `models`, or `<provider>:<model>` with provider
   * `openai` (chat completions), `openai-responses`, `anthropic`, or `script` (a script file).
   */
  model: string;
  system?: string;
  /** The tools offered to the model (names); default every tool the worker serves. */
  tools?: string[];
  /** A first user message, so a session can start with its first turn. */
  message?: string;
  /** The session ends after this many turns (user messages answered). */
  maxTurns?: number;
  /** A turn ends after this many model steps. Default 50. */
  maxStepsPerTurn?: number;
  /** The session ends once this many tokens (input + output, all steps) were used. */
  tokenBudget?: number;
  /** End the session when a turn ends and no message waits (scripts, `npm start`). */
  endWhenIdle?: boolean;
  /** Continue-as-new once the run's history has this many events. Default 5,000. */
  continueAsNewAfterEvents?: number;
  modelCall?: ModelCallOptions;
  /** Options for each tool batch (maxParallel, approval timeout, channel). */
  batch?: { maxParallel?: number; approvalTimeoutMs?: number; approvalChannel?: boolean };
  /** Everything a previous run carried over (continue-as-new); never set by a caller. */
  carried?: SessionCarry;
}

export interface SessionUsage {
  inputTokens: number;
  outputTokens: number;
  steps: number;
}

export interface TurnOutcome {
  messageId: string;
  turn: number;
  steps: number;
  reason: TurnEndReason;
  /** The model's last text of the turn. */
  text: string;
  error?: string;
}

export interface QueuedMessage {
  id: string;
  content: string | ContentBlock[];
}

/** The session's whole state, carried across continue-as-new. */
export interface SessionCarry {
  turn: number;
  step: number;
  seq: number;
  state: SessionState;
  /** Reference of the stored transcript's last node; null before the first model step. */
  head: string | null;
  /** Messages not yet stored (they go with the next model step). */
  unstored: AgentMessage[];
  /** The last messages, for the status query. */
  tail: AgentMessage[];
  messageCount: number;
  usage: SessionUsage;
  inbox: QueuedMessage[];
  /** A turn in progress at continue-as-new. */
  activeTurn?: { messageId: string; turn: number; text: string };
  turnsCompleted: number;
  /** The last turns' outcomes: a message sent twice is answered once, from here. */
  recentTurns: TurnOutcome[];
  /** Set once the session ends (budget, turn limit): it takes no more messages. */
  endReason?: SessionEndReason;
  /** Runs of this session so far (continue-as-new starts the next). */
  runs: number;
}

export type SessionStatus = 'idle' | 'model' | 'tools' | 'ended';

export interface SessionView {
  sessionId: string;
  status: SessionStatus;
  turn: number;
  step: number;
  nextSeq: number;
  usage: SessionUsage;
  /** The batch running now (its workflow id): its pending approvals are there. */
  activeBatch?: string;
  messageCount: number;
  tail: AgentMessage[];
  head: string | null;
  unstored: AgentMessage[];
  lastTurn?: TurnOutcome;
  endReason?: SessionEndReason;
  queued: number;
  runs: number;
}

export interface SessionOutput {
  sessionId: string;
  endReason: SessionEndReason;
  turns: number;
  usage: SessionUsage;
  head: string | null;
  unstored: AgentMessage[];
  messageCount: number;
  nextSeq: number;
  state: SessionState;
  lastTurn?: TurnOutcome;
}

/** What a model step activity gets: the stored transcript's head plus what is new since. */
export interface ModelStepInput {
  sessionId: string;
  turn: number;
  step: number;
  model: string;
  system?: string;
  tools?: string[];
  head: string | null;
  append: AgentMessage[];
}

export interface ModelStepOutput {
  head: string;
  assistant: AssistantMessage;
  usage: ModelUsage;
  finishReason: string;
}

/** The activity the session workflow calls (activities/model-step.ts implements it). */
export interface ModelActivities {
  modelStep(input: ModelStepInput): Promise<ModelStepOutput>;
}
