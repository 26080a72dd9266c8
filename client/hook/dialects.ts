// What Claude Code, Codex, Gemini CLI and OpenCode send a hook on stdin, and what they read back, for the
// events `sluice hook` answers (docs/gateway.md). Pure functions: the process is command.ts's.
//
// The shapes come from each harness's hook reference:
//   Claude Code  https://code.claude.com/docs/en/hooks  (PreToolUse, PermissionRequest, PostToolUse,
//                PostToolUseFailure; the `http` hook type posts the same JSON)
//   Codex        https://developers.openai.com/codex/hooks  (PreToolUse, PermissionRequest, PostToolUse)
//   Gemini CLI   https://geminicli.com/docs/hooks/reference  (BeforeTool, AfterTool)
//   OpenCode     its plugins' tool.execute.before / tool.execute.after: Sluice's plugin
//                (opencode-plugin.ts) sends them in Claude Code's shape and reads the answer back
// The hooks Sluice itself runs from settings files read the same dialects the other way round
// (hooks/dialects.ts): there Sluice writes stdin and reads stdout.
import type { Json, JsonObject } from '../../pipeline/types';

export type HarnessDialect = 'claude' | 'codex' | 'gemini' | 'opencode';
const HARNESS_DIALECTS: readonly HarnessDialect[] = ['claude', 'codex', 'gemini', 'opencode'];

type HarnessEvent =
  | 'PreToolUse'
  | 'PermissionRequest'
  | 'PostToolUse'
  | 'PostToolUseFailure'
  | 'BeforeTool'
  | 'AfterTool'
  | 'tool.execute.before'
  | 'tool.execute.after';

/** The events each harness sends that `sluice hook` answers: the first group decides, the rest record. */
export const EVENTS: Record<HarnessDialect, { decide: HarnessEvent[]; record: HarnessEvent[] }> = {
  claude: { decide: ['PreToolUse', 'PermissionRequest'], record: ['PostToolUse', 'PostToolUseFailure'] },
  codex: { decide: ['PreToolUse', 'PermissionRequest'], record: ['PostToolUse'] },
  gemini: { decide: ['BeforeTool'], record: ['AfterTool'] },
  opencode: { decide: ['tool.execute.before'], record: ['tool.execute.after'] },
};

/** One harness tool call as a hook was told about it. */
export interface HarnessRequest {
  dialect: HarnessDialect;
  event: HarnessEvent;
  /** `decide`: answer allow / deny / ask before the tool runs; `record`: the tool ran, keep its result. */
  kind: 'decide' | 'record';
  sessionId: string;
  toolName: string;
  toolInput: JsonObject;
  /** Claude Code and Codex send it on PreToolUse / PostToolUse; PermissionRequest and Gemini CLI do not. */
  toolUseId?: string;
  cwd?: string;
  /** Codex's turn id. */
  turnId?: string;
  /** PostToolUse / AfterTool: what the tool returned. */
  toolResponse?: Json;
  /** PostToolUseFailure: the error; AfterTool: tool_response.error. */
  error?: string;
}

/** A payload `sluice hook` cannot read. It never becomes an allow: the reply blocks (exit 2). */
export class HookInputError extends Error {}

export function parseDialect(name: string | undefined): HarnessDialect {
  if (name && (HARNESS_DIALECTS as readonly string[]).includes(name)) return name as HarnessDialect;
  throw new HookInputError(
    `${name ? `unknown hook dialect ${JSON.stringify(name)}` : 'no hook dialect given'}: run \`sluice hook claude\`, \`sluice hook codex\`, \`sluice hook gemini\` or \`sluice hook opencode\` (the harness whose hook settings run it)`,
  );
}

/** Reads a hook's stdin (or an http hook's body) in `dialect`; throws HookInputError with what is wrong. */
export function parseHookPayload(dialect: HarnessDialect, text: string): HarnessRequest {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new HookInputError(
      `the hook payload is not JSON (${(err as Error).message}); ${text.trim() ? 'the harness sends one JSON object on stdin' : 'stdin was empty'}`,
    );
  }
  if (!isObject(doc)) throw new HookInputError('the hook payload must be a JSON object');
  const event = doc.hook_event_name;
  const { decide, record } = EVENTS[dialect];
  if (typeof event !== 'string' || !event)
    throw new HookInputError('the hook payload has no hook_event_name; is this a hook of the harness?');
  const kind = (decide as string[]).includes(event)
    ? 'decide'
    : (record as string[]).includes(event)
      ? 'record'
      : undefined;
  if (!kind)
    throw new HookInputError(
      `sluice hook ${dialect} answers ${[...decide, ...record].join(', ')}, not ${JSON.stringify(event)}: remove it from the ${event} hooks in your settings`,
    );
  const need = (field: string): string => {
    const v = doc[field];
    if (typeof v !== 'string' || !v)
      throw new HookInputError(`the ${event} payload has no ${field} (a non-empty string)`);
    return v;
  };
  const sessionId = need('session_id');
  const toolName = need('tool_name');
  const input = doc.tool_input;
  if (!isObject(input)) throw new HookInputError(`the ${event} payload's tool_input must be a JSON object`);
  const named = dialect === 'opencode' ? opencodeCall(toolName, input as JsonObject) : undefined;
  const req: HarnessRequest = {
    dialect,
    event: event as HarnessEvent,
    kind,
    sessionId,
    toolName: named?.toolName ?? toolName,
    toolInput: named?.toolInput ?? callInput(dialect, toolName, input as JsonObject),
  };
  if (doc.tool_use_id !== undefined && doc.tool_use_id !== null) {
    if (typeof doc.tool_use_id !== 'string' || !doc.tool_use_id)
      throw new HookInputError(`the ${event} payload's tool_use_id must be a non-empty string`);
    req.toolUseId = doc.tool_use_id;
  }
  if (typeof doc.cwd === 'string') req.cwd = doc.cwd;
  if (typeof doc.turn_id === 'string') req.turnId = doc.turn_id;
  if (event === 'PostToolUse' || event === 'AfterTool' || event === 'tool.execute.after') {
    if (doc.tool_response !== undefined) req.toolResponse = doc.tool_response as Json;
    const error = isObject(doc.tool_response) ? doc.tool_response.error : undefined;
    if (event === 'AfterTool' && typeof error === 'string' && error) req.error = error;
  }
  if (event === 'PostToolUseFailure')
    req.error = typeof doc.error === 'string' && doc.error ? doc.error : 'the tool failed';
  return req;
}

/**
 * The tool input that identifies a call and that the policy judges. Codex's PermissionRequest for
 * its shell adds `description` (the model's justification, shown in Codex's prompt), which its
 * PreToolUse and PostToolUse for the same call never carry: kept, the approval's question would
 * make it another call, asked a second time. It changes nothing the command does, so it is left
 * out; only for Codex's `Bash`, where it is known to be prose (an MCP tool's `description`
 * argument is what the tool acts on).
 */
export function callInput(dialect: HarnessDialect, toolName: string, input: JsonObject): JsonObject {
  if (dialect !== 'codex' || toolName !== 'Bash' || !('description' in input)) return input;
  const { description: _justification, ...rest } = input;
  return rest;
}

/** OpenCode's built-in tools by the name Claude Code's rules and hooks use (hooks/harness-tools.ts). */
const OPENCODE_TOOLS: Record<string, string> = {
  bash: 'Bash',
  read: 'Read',
  write: 'Write',
  edit: 'Edit',
  glob: 'Glob',
  grep: 'Grep',
  list: 'LS',
  webfetch: 'WebFetch',
  websearch: 'WebSearch',
  task: 'Task',
  todowrite: 'TodoWrite',
};

/** OpenCode's argument names that Claude Code spells otherwise: a `Read(./secrets/**)` rule reads file_path. */
const OPENCODE_ARGS: Record<string, string> = {
  filePath: 'file_path',
  oldString: 'old_string',
  newString: 'new_string',
  replaceAll: 'replace_all',
};

/**
 * An OpenCode call as the worker's tools and the config's rules know it: `bash` is `Bash` and its
 * `filePath` is `file_path`, so one `Bash(rm:*)` or `Read(./.env)` rule judges every harness. A
 * name OpenCode has that Claude Code has not (an MCP tool, `patch`, `skill`) is kept: the worker
 * denies a name none of its tools answers to, unless harnessTools({ names }) lists it.
 */
function opencodeCall(toolName: string, input: JsonObject): { toolName: string; toolInput: JsonObject } {
  const claude = OPENCODE_TOOLS[toolName];
  if (!claude) return { toolName, toolInput: input };
  const toolInput: JsonObject = {};
  for (const [k, v] of Object.entries(input)) toolInput[OPENCODE_ARGS[k] ?? k] = v;
  return { toolName: claude, toolInput };
}

/** What Sluice decided for a call, before it is put in the harness's words. */
export interface HookAnswer {
  decision: 'allow' | 'deny' | 'ask';
  reason: string;
}

/** What the hook process does: its exit code, stdout (the JSON answer) and stderr. */
export interface HookReply {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Whether the harness has an "ask the person here" answer at this event. Where it has none, an ask
 * Sluice cannot settle in time becomes a deny: Codex treats PreToolUse `ask` as unsupported and
 * runs the call, Gemini CLI's BeforeTool knows only allow and deny, and OpenCode's plugin lets a
 * call run unless it throws.
 */
function canAsk(dialect: HarnessDialect, event: HarnessEvent): boolean {
  if (event === 'PermissionRequest') return true; // no answer = the harness shows its own prompt
  return dialect === 'claude' && event === 'PreToolUse';
}

/** The answer in the harness's words, as a command hook gives it (exit 0 + JSON on stdout). */
export function renderAnswer(dialect: HarnessDialect, event: HarnessEvent, answer: HookAnswer): HookReply {
  const body = answerBody(dialect, event, answer);
  return { exitCode: 0, stdout: body === undefined ? '' : JSON.stringify(body), stderr: '' };
}

/**
 * The JSON a harness reads for `answer`, or undefined for "no opinion" (empty stdout; an http
 * hook's empty 2xx body). An ask where the harness has none is turned into a deny here, so no
 * path through this function lets a call run that Sluice did not allow.
 */
export function answerBody(dialect: HarnessDialect, event: HarnessEvent, answer: HookAnswer): JsonObject | undefined {
  const a: HookAnswer = answer.decision === 'ask' && !canAsk(dialect, event) ? { ...answer, decision: 'deny' } : answer;
  if (event === 'PermissionRequest') {
    // Claude Code and Codex: decision.behavior allow / deny; nothing at all shows the usual prompt.
    if (a.decision === 'ask') return undefined;
    return {
      hookSpecificOutput: {
        hookEventName: 'PermissionRequest',
        decision: a.decision === 'allow' ? { behavior: 'allow' } : { behavior: 'deny', message: a.reason },
      },
    };
  }
  if (dialect === 'gemini' || dialect === 'opencode')
    return a.decision === 'allow' ? { decision: 'allow' } : { decision: 'deny', reason: a.reason };
  // PreToolUse. Codex parses permissionDecision allow but does not support it yet: its "no
  // objection" is an empty stdout, after which its own approval policy applies.
  if (dialect === 'codex' && a.decision === 'allow') return undefined;
  return {
    hookSpecificOutput: {
      hookEventName: 'PreToolUse',
      permissionDecision: a.decision,
      permissionDecisionReason: a.reason,
    },
  };
}

/**
 * Bad input, a failure before any decision: exit 2 with the reason on stderr, which every harness
 * reads as "block this call" (never as an allow; Sluice's OpenCode plugin refuses on any exit but 0). After the tool ran there is nothing to
 * block, so a record event that fails exits 1, a non-blocking error the harness shows and moves past.
 */
export function renderFailure(kind: 'decide' | 'record', message: string): HookReply {
  return { exitCode: kind === 'decide' ? 2 : 1, stdout: '', stderr: `sluice hook: ${message}\n` };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
