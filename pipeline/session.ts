// The vocabulary of a durable agent session (workflows/session.ts), shared by workflow code,
// model adapters and converters. Pure types and pure functions only.
import type { CallRecord } from './facts';
import { jsonStringBytes, MAX_ARGUMENT_CHARS, MAX_INPUT_BYTES } from './budget';
import { ErrorCodes } from './errors';
import type { ClientBinding, ContentBlock, Json, ModelMessage, SessionState, ToolCall, ToolError } from './types';

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

/** What is kept of arguments that were not sent: as a batch keeps them (pipeline/batch-input.ts). */
const ARGUMENT_PREVIEW_CHARS = 1000;

/**
 * A model step's tool calls within the limits a batch has wherever it comes from: the client's
 * (pipeline/batch-input.ts) for one call's arguments, MAX_ARGUMENT_CHARS, and for a whole batch,
 * MAX_INPUT_BYTES. Arguments over either keep a preview and their length in `argumentsChars`,
 * and the session's intake gives the call an INVALID_ARGS result (intakeCalls); the largest go
 * first until the rest fit. So a model cannot make its own step's reply, the batch it starts, or
 * the session's continue-as-new carry more than Temporal takes.
 */
export function boundStepCalls<T extends { arguments: string; argumentsChars?: number }>(
  calls: T[],
): (T & { argumentsChars?: number })[] {
  const clip = (c: T): T => ({
    ...c,
    arguments: c.arguments.slice(0, ARGUMENT_PREVIEW_CHARS),
    argumentsChars: c.argumentsChars ?? c.arguments.length,
  });
  const out = calls.map((c) =>
    c.argumentsChars === undefined && c.arguments.length <= MAX_ARGUMENT_CHARS ? c : clip(c),
  );
  const bytes = out.map((c) => jsonStringBytes(c.arguments));
  let total = bytes.reduce((a, b) => a + b, 0);
  const largestFirst = out.map((_, i) => i).sort((a, b) => bytes[b] - bytes[a]);
  for (const i of largestFirst) {
    if (total <= MAX_INPUT_BYTES) break;
    out[i] = clip(out[i]);
    const now = jsonStringBytes(out[i].arguments);
    total -= bytes[i] - now;
    bytes[i] = now;
  }
  return out;
}

/** Why a call that boundStepCalls kept a preview of did not run, in words for the model. */
function oversizedProblem(chars: number): string {
  if (chars > MAX_ARGUMENT_CHARS)
    return `the arguments were ${chars} characters, over the ${MAX_ARGUMENT_CHARS}-character limit for one call, so they were not sent and the call did not run. Split the work into smaller calls (e.g. write a large file in parts).`;
  return `the tool calls of this message carried more than ${MAX_INPUT_BYTES} bytes of arguments in all, the limit for one batch; this call's ${chars} characters were among the largest, so it was not sent and did not run. Send fewer or smaller calls per message.`;
}

/**
 * Splits a model's tool calls into those that run and those that get an error result at once: an
 * empty or missing id, an id an earlier call of the same message already used, or arguments over
 * the limits (boundStepCalls kept only their preview).
 */
export function intakeCalls(
  raw: { id?: string | null; name: string; arguments: string; argumentsChars?: number }[],
): CallIntake {
  const seen = new Set<string>();
  const intake: CallIntake = { calls: [], rejected: [], order: [] };
  raw.forEach((c, index) => {
    const id = typeof c.id === 'string' ? c.id : '';
    let problem: string | undefined;
    let code: string = ErrorCodes.INVALID_CALL_ID;
    if (!id) problem = 'this tool call has no id, so its result could not be matched to it; it was not run';
    else if (seen.has(id))
      problem = `call id ${JSON.stringify(id)} was already used by an earlier call in the same message; this call was not run. Call the tool again in a new message if it is still needed.`;
    else if (c.argumentsChars !== undefined) {
      problem = oversizedProblem(c.argumentsChars);
      code = ErrorCodes.INVALID_ARGS;
    }
    if (problem) {
      const message: ToolMessage = {
        role: 'tool',
        toolCallId: id || missingCallId(index),
        toolName: c.name,
        content: [{ type: 'text', text: `Error: ${problem}` }],
        isError: true,
        error: { message: problem, code },
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
  /**
   * Run the model step as a local activity, in the worker that runs the session: no activity task
   * and one workflow task fewer per step (docs/performance.md, "Sessions"). For models that answer
   * within a few seconds (a local model, a scripted one, a cache): while it runs the session's
   * workflow task stays open, so an interrupt, a cancel or a message reaches the session only when
   * the step ends or the open task is next heartbeated (about every 8 s with the default 10 s task
   * timeout); retries run in the worker (attempt 2, 3, … voiding the failed attempt's streamed
   * pieces as an activity's do), but a step whose worker is lost starts again at attempt 1 on the
   * next one. `heartbeatTimeoutMs` does not apply; `timeoutMs` bounds each attempt.
   * Default false: a regular activity, dispatched eagerly to the worker that scheduled it.
   */
  local?: boolean;
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
  /**
   * Keep the session's calls (7 days, at most 10,000) and send them with each batch, for the
   * session facts its policies read (docs/policies.md). Off by default: they make every step's
   * history larger as the session grows.
   */
  sessionFacts?: boolean;
  /**
   * The facts scope every batch of the session names (BatchInput.factsScope): its policies' facts
   * count the calls of every batch and session of that scope, from the shared fact store.
   */
  factsScope?: string;
  modelCall?: ModelCallOptions;
  /** Options for each tool batch (maxParallel, approval timeout, channel). */
  batch?: { maxParallel?: number; approvalTimeoutMs?: number; approvalChannel?: boolean; client?: ClientBinding };
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
  /** The session's calls, for the facts its policies read (workflows/session-facts.ts); absent before the first batch. */
  calls?: CallRecord[];
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
  /**
   * A local step only: whether the session's history was full (time to continue-as-new) when it
   * scheduled the step. The step hands it back, so the session decides from the value recorded
   * with the step's result, the same on replay (workflows/session-turn.ts, `historyFull`).
   */
  historyFull?: boolean;
}

export interface ModelStepOutput {
  head: string;
  assistant: AssistantMessage;
  usage: ModelUsage;
  finishReason: string;
  /** ModelStepInput.historyFull, handed back. */
  historyFull?: boolean;
}

/** The activity the session workflow calls (activities/model-step.ts implements it). */
export interface ModelActivities {
  modelStep(input: ModelStepInput): Promise<ModelStepOutput>;
}

/** A string kept in the session's tail (the status query's last messages) beyond this is a preview. */
const TAIL_STRING_CHARS = 4_000;
/** The last turn's text a new run carries beyond this is a preview; older turns' text, TAIL_STRING_CHARS. */
const CARRIED_LAST_TEXT_CHARS = 64 * 1024;

const clipText = (s: string, max: number) =>
  s.length > max ? `${s.slice(0, max)}… [${s.length - max} more characters not kept here]` : s;

/**
 * The tail's copy of a message: the shape the query shows, each long string as a preview, a tool
 * message's structured value left out (the transcript keeps everything). The tail rides in every
 * continue-as-new; whole messages (a 1.5 MB result, a model's long arguments) would not fit.
 */
export function tailCopy(m: AgentMessage): AgentMessage {
  switch (m.role) {
    case 'system':
      return { role: 'system', content: clipText(m.content, TAIL_STRING_CHARS) };
    case 'user':
      return {
        ...m,
        content:
          typeof m.content === 'string'
            ? clipText(m.content, TAIL_STRING_CHARS)
            : clipBlocks(m.content, TAIL_STRING_CHARS),
      };
    case 'assistant':
      return {
        role: 'assistant',
        text: clipText(m.text, TAIL_STRING_CHARS),
        toolCalls: m.toolCalls.map((c) =>
          c.arguments.length > TAIL_STRING_CHARS ? { ...c, arguments: clipText(c.arguments, TAIL_STRING_CHARS) } : c,
        ),
      };
    case 'tool': {
      const { value: _value, ...rest } = m;
      return {
        ...rest,
        content: clipBlocks(m.content, TAIL_STRING_CHARS),
        ...(m.error ? { error: { ...m.error, message: clipText(m.error.message, TAIL_STRING_CHARS) } } : {}),
      };
    }
  }
}

/** Content blocks a tail message keeps: a result of thousands of small blocks is a preview too. */
const TAIL_BLOCKS = 8;

function clipBlocks(blocks: ContentBlock[], max: number): ContentBlock[] {
  const kept = blocks.length > TAIL_BLOCKS ? blocks.slice(0, TAIL_BLOCKS) : blocks;
  const more: ContentBlock[] =
    blocks.length > TAIL_BLOCKS
      ? [{ type: 'text', text: `[${blocks.length - TAIL_BLOCKS} more blocks not kept here]` }]
      : [];
  return [...clipEach(kept, max), ...more];
}

function clipEach(blocks: ContentBlock[], max: number): ContentBlock[] {
  return blocks.map((b) =>
    b.type === 'text'
      ? { type: 'text', text: clipText(b.text, max) }
      : b.data.length > max
        ? { type: 'text', text: `[image ${b.mimeType}, ${b.data.length} characters of data not kept here]` }
        : b,
  );
}

/**
 * What continue-as-new carries: the session as it is, with the turns' outcomes (kept so a message
 * sent again is answered from them) clipped: the last turn's text to CARRIED_LAST_TEXT_CHARS,
 * earlier ones' to a preview. The tail is clipped as it grows (tailCopy); the transcript itself
 * is in the result store.
 */
export function carryOf(c: SessionCarry): SessionCarry {
  const last = c.recentTurns.length - 1;
  return {
    ...c,
    tail: c.tail.map(tailCopy),
    recentTurns: c.recentTurns.map((t, i) => {
      const max = i === last ? CARRIED_LAST_TEXT_CHARS : TAIL_STRING_CHARS;
      return {
        ...t,
        text: clipText(t.text, max),
        ...(t.error !== undefined ? { error: clipText(t.error, TAIL_STRING_CHARS) } : {}),
      };
    }),
  };
}
