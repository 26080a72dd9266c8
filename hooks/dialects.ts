// What a hook is told on stdin, and what its exit code and stdout mean, in the Claude Code and
// Codex dialects. Pure functions: the process itself is run.ts's business.
//
// Exit 0 → stdout may hold a JSON answer (plain text is no answer); exit 2 → block, stderr is the
// reason; anything else (another code, a signal, a timeout, a failed start) → a non-blocking error.
import type { Candidate, ContentBlock, Json, JsonObject } from '../pipeline/types';
import type { HookRun } from './run';
import { BEFORE_EVENTS, type Dialect, type HookEvent } from './settings';

type HookDecision = 'allow' | 'deny' | 'ask' | 'block' | 'none' | 'error';

/** One hook's answer, before it is merged with the answers of the other hooks at the same point. */
export interface HookVerdict {
  /** PreToolUse: allow / deny / ask; post events: block; none: no opinion; error: the hook failed (never blocks). */
  decision: HookDecision;
  /** The deny, ask or block reason. */
  reason?: string;
  /** additionalContext: queued for the model after the batch settles. */
  context?: string;
  /** Why the run counts as a failed hook. */
  error?: string;
  /** Parts of the answer that were ignored, and why. */
  warnings: string[];
  /** The hook's message for the person watching (Claude Code shows it to the user). */
  systemMessage?: string;
}

interface HookInputFields {
  dialect: Dialect;
  event: HookEvent;
  sessionId: string;
  turn: number;
  cwd: string;
  /** The name the model called the tool by. */
  toolName: string;
  toolInput: Readonly<JsonObject>;
  toolUseId: string;
  transcriptPath?: string;
  /** The result so far, for the post events. */
  result?: Readonly<Candidate>;
}

/** The JSON a hook reads on stdin. */
export function hookInput(f: HookInputFields): JsonObject {
  if (f.dialect === 'gemini') return geminiInput(f);
  const input: JsonObject = {
    session_id: f.sessionId,
    transcript_path: f.transcriptPath ?? null,
    cwd: f.cwd,
    permission_mode: 'default',
    hook_event_name: f.event,
    tool_name: f.toolName,
    tool_input: f.toolInput as JsonObject,
    tool_use_id: f.toolUseId,
  };
  if (f.dialect === 'codex') input.turn_id = String(f.turn);
  if (f.result && f.event === 'PostToolUse') input.tool_response = toolResponse(f.result);
  if (f.result && f.event === 'PostToolUseFailure') input.error = f.result.error?.message ?? textOf(f.result.content);
  return input;
}

/** Gemini CLI's BeforeTool / AfterTool input: no permission mode, a timestamp, and its own tool_response. */
function geminiInput(f: HookInputFields): JsonObject {
  const input: JsonObject = {
    session_id: f.sessionId,
    transcript_path: f.transcriptPath ?? null,
    cwd: f.cwd,
    hook_event_name: f.event,
    timestamp: new Date().toISOString(),
    tool_name: f.toolName,
    tool_input: f.toolInput as JsonObject,
    tool_use_id: f.toolUseId,
  };
  if (f.result && f.event === 'AfterTool') {
    const text = textOf(f.result.content);
    input.tool_response = {
      llmContent: text,
      returnDisplay: text,
      ...(f.result.isError ? { error: f.result.error?.message ?? text } : {}),
    };
  }
  return input;
}

/** The tool's structured value when it has one, else the text the model would read. */
function toolResponse(result: Readonly<Candidate>): Json {
  return result.value !== undefined ? (result.value as Json) : textOf(result.content);
}

function textOf(content: readonly ContentBlock[]): string {
  return content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('');
}

/** What one finished run means, from its exit status first and its stdout second. */
export function interpretRun(run: HookRun, hook: { id: string; event: HookEvent; timeoutSec: number }): HookVerdict {
  if (run.spawnError) return failed(`the hook could not be started: ${run.spawnError}`);
  if (run.timedOut)
    return failed(`the hook did not finish within its ${hook.timeoutSec}s timeout; its process group was killed`);
  if (run.exitCode === null) return failed(`the hook was killed by ${run.signal ?? 'a signal'}`);
  if (run.exitCode === 2) {
    const reason =
      run.stderr.trim() ||
      `the ${hook.event} hook ${hook.id} blocked the call (exit 2) without giving a reason on stderr`;
    return { decision: BEFORE_EVENTS.includes(hook.event) ? 'deny' : 'block', reason, warnings: [] };
  }
  if (run.exitCode !== 0)
    return failed(`the hook exited with code ${run.exitCode}; it does not block (only exit 2 does)`);
  return parseHookStdout(run.stdout, hook.event, hook.id);
}

/** The JSON answer on stdout of a hook that exited 0. */
export function parseHookStdout(stdout: string, event: HookEvent, id = 'the hook'): HookVerdict {
  const text = stdout.trim();
  if (!text) return { decision: 'none', warnings: [] };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    if (/^[[{]/.test(text))
      return failed(`stdout looks like JSON but does not parse (${(err as Error).message}); no decision was taken`);
    return { decision: 'none', warnings: [`stdout is not JSON and was ignored: ${preview(text)}`] };
  }
  if (!isObject(doc))
    return { decision: 'none', warnings: [`stdout is JSON but not an object and was ignored: ${preview(text)}`] };

  const v: HookVerdict = { decision: 'none', warnings: [] };
  if (typeof doc.systemMessage === 'string' && doc.systemMessage) v.systemMessage = doc.systemMessage;

  let specific: Record<string, unknown> | undefined;
  if (isObject(doc.hookSpecificOutput)) specific = doc.hookSpecificOutput;
  else if (doc.hookSpecificOutput !== undefined) v.warnings.push('hookSpecificOutput is not an object and was ignored');
  if (specific && specific.hookEventName !== undefined && specific.hookEventName !== event) {
    v.warnings.push(
      `hookSpecificOutput is for ${JSON.stringify(specific.hookEventName)}, but the hook ran for ${event}; its fields were ignored`,
    );
    specific = undefined;
  }
  if (specific?.additionalContext !== undefined) {
    if (typeof specific.additionalContext === 'string') {
      if (specific.additionalContext.trim()) v.context = specific.additionalContext;
    } else {
      v.warnings.push('additionalContext is not a string and was ignored');
    }
  }

  if (event === 'BeforeTool') readGeminiBefore(doc, specific, v, id);
  else if (event === 'AfterTool') readGeminiAfter(doc, specific, v, id);
  else if (event === 'PreToolUse') readPreAnswer(doc, specific, v, id);
  else readPostAnswer(doc, specific, v, id, event);
  return v;
}

function readPreAnswer(
  doc: Record<string, unknown>,
  specific: Record<string, unknown> | undefined,
  v: HookVerdict,
  id: string,
): void {
  if (specific?.updatedInput !== undefined) {
    v.warnings.push(
      "updatedInput was ignored: a call's arguments are frozen before any hook runs and nothing may change them",
    );
  }
  const decision = specific?.permissionDecision;
  if (decision !== undefined) {
    if (decision === 'allow' || decision === 'deny' || decision === 'ask') {
      v.decision = decision;
      const reason = specific?.permissionDecisionReason;
      if (typeof reason === 'string' && reason.trim()) v.reason = reason;
    } else {
      v.warnings.push(`permissionDecision ${JSON.stringify(decision)} is not allow, deny or ask and was ignored`);
    }
  } else if (doc.decision !== undefined) {
    // The legacy top-level form: approve = allow, block = deny.
    if (doc.decision === 'approve') v.decision = 'allow';
    else if (doc.decision === 'block') v.decision = 'deny';
    else v.warnings.push(`decision ${JSON.stringify(doc.decision)} is not approve or block and was ignored`);
    if (v.decision !== 'none' && typeof doc.reason === 'string' && doc.reason.trim()) v.reason = doc.reason;
  }
  if (doc.continue === false) {
    // Sluice cannot stop the agent from inside a batch; not running the call is the closest safe answer.
    v.warnings.push('continue:false cannot stop the agent from inside Sluice; the call was denied instead');
    v.decision = 'deny';
    if (typeof doc.stopReason === 'string' && doc.stopReason.trim()) v.reason = doc.stopReason;
  }
  if (v.decision === 'deny' && !v.reason) v.reason = `the PreToolUse hook ${id} denied the call`;
}

function readPostAnswer(
  doc: Record<string, unknown>,
  specific: Record<string, unknown> | undefined,
  v: HookVerdict,
  id: string,
  event: HookEvent,
): void {
  for (const field of ['updatedMCPToolOutput', 'updatedToolOutput']) {
    if (specific?.[field] !== undefined)
      v.warnings.push(`${field} was ignored: Sluice hooks can block a result or add context, not rewrite it`);
  }
  if (doc.decision === 'block') {
    v.decision = 'block';
    v.reason =
      typeof doc.reason === 'string' && doc.reason.trim() ? doc.reason : `the ${event} hook ${id} blocked the result`;
  } else if (doc.decision !== undefined) {
    v.warnings.push(`decision ${JSON.stringify(doc.decision)} is not block and was ignored`);
  }
  if (doc.continue === false)
    v.warnings.push('continue:false cannot stop the agent from inside Sluice and was ignored');
}

/** Gemini CLI's BeforeTool answer: `decision` allow / deny (alias block) / ask, with `reason`. */
function readGeminiBefore(
  doc: Record<string, unknown>,
  specific: Record<string, unknown> | undefined,
  v: HookVerdict,
  id: string,
): void {
  if (specific?.tool_input !== undefined) {
    v.warnings.push(
      "hookSpecificOutput.tool_input was ignored: a call's arguments are frozen before any hook runs and nothing may change them",
    );
  }
  const d = doc.decision;
  if (d === 'deny' || d === 'block') v.decision = 'deny';
  else if (d === 'allow' || d === 'approve') v.decision = 'allow';
  else if (d === 'ask') v.decision = 'ask';
  else if (d !== undefined) v.warnings.push(`decision ${JSON.stringify(d)} is not allow, deny or ask and was ignored`);
  if (v.decision !== 'none' && typeof doc.reason === 'string' && doc.reason.trim()) v.reason = doc.reason;
  if (doc.continue === false) {
    v.warnings.push('continue:false cannot stop the agent from inside Sluice; the call was denied instead');
    v.decision = 'deny';
    if (typeof doc.stopReason === 'string' && doc.stopReason.trim()) v.reason = doc.stopReason;
  }
  if (v.decision === 'deny' && !v.reason) v.reason = `the BeforeTool hook ${id} denied the call`;
}

/** Gemini CLI's AfterTool answer: `decision: "deny"` (or block) hides the result behind `reason`. */
function readGeminiAfter(
  doc: Record<string, unknown>,
  specific: Record<string, unknown> | undefined,
  v: HookVerdict,
  id: string,
): void {
  if (specific?.tool_output !== undefined)
    v.warnings.push(
      'hookSpecificOutput.tool_output was ignored: Sluice hooks can block a result or add context, not rewrite it',
    );
  if (doc.decision === 'deny' || doc.decision === 'block') {
    v.decision = 'block';
    v.reason =
      typeof doc.reason === 'string' && doc.reason.trim() ? doc.reason : `the AfterTool hook ${id} blocked the result`;
  } else if (doc.decision !== undefined && doc.decision !== 'allow') {
    v.warnings.push(`decision ${JSON.stringify(doc.decision)} is not allow or deny and was ignored`);
  }
  if (doc.continue === false)
    v.warnings.push('continue:false cannot stop the agent from inside Sluice and was ignored');
}

function failed(error: string): HookVerdict {
  return { decision: 'error', error, warnings: [] };
}

function preview(text: string): string {
  return JSON.stringify(text.length > 120 ? `${text.slice(0, 120)}…` : text);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
