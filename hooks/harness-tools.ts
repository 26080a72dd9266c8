// The worker's half of `sluice hook` (docs/gateway.md): decision-only tools for the calls of a
// harness (Claude Code, Codex, Gemini CLI) that asks Sluice before it runs a tool itself.
//
// A harness call becomes a one-call Sluice batch named by the harness's own tool name, so the
// config's policy sees it as it sees any call: permission rules (`Bash(npm test:*)`), command
// hooks, pre-execute handlers, guards, the tool's approval and its deny timeout. The harness runs
// the tool, not Sluice: the body of a decision tool runs nothing and only records that every gate
// let the call through. The harness's result comes back later through PostToolUse / AfterTool as a
// second batch of the same session, one `harness_result` call whose result is what the tool returned.
import type { ToolApproval, Json, JsonObject } from '../pipeline/types';
import { defineTool, type ToolDefinition, toolOutput } from '../define/config';

/** The name of the tool that records a harness call's result (PostToolUse, AfterTool). */
export const HARNESS_RESULT_TOOL = 'harness_result';

/**
 * The harnesses' built-in tools, by the name Claude Code's rules and hooks use, with the names
 * Gemini CLI and Codex send for the same tool. A Gemini `run_shell_command` is the `Bash` tool
 * here, so a `Bash(...)` permission rule and a `run_shell_command` Gemini hook both see it.
 */
const BUILTINS: Record<string, string[]> = {
  Bash: ['run_shell_command'],
  Read: ['read_file'],
  Write: ['write_file'],
  Edit: ['replace'],
  MultiEdit: [],
  NotebookEdit: [],
  Glob: ['glob'],
  Grep: ['search_file_content'],
  LS: ['list_directory'],
  WebFetch: ['web_fetch'],
  WebSearch: ['google_web_search'],
  Task: [],
  TodoWrite: ['write_todos'],
  // Codex edits files with apply_patch ({command: "*** Begin Patch ..."}).
  apply_patch: [],
  read_many_files: [],
  save_memory: [],
};

export interface HarnessToolsOptions {
  /**
   * More tool names a harness may send: MCP tools (`mcp__github__create_issue`) and anything else
   * the harness has. A name no tool answers to is UNKNOWN_TOOL, which `sluice hook` denies.
   */
  names?: string[];
  /**
   * A tool's own approval, by the name above (default `auto`: the config's rules, hooks and
   * handlers decide). `ask` asks a person for every call of that tool.
   */
  approval?: Record<string, ToolApproval | ((args: JsonObject) => ToolApproval)>;
  /** The deny timeout of these tools' asks (default: the batch's, 10 minutes). */
  approvalTimeoutMs?: number;
  /** Only verified approvers in one of these groups may decide these tools' asks. */
  approverGroups?: string[];
}

/** Any JSON object: the harness validated the input against its own schema already. */
const ANY_INPUT = { type: 'object', additionalProperties: true } as const;

/**
 * Decision-only tools for `sluice hook`: the built-ins of Claude Code, Codex and Gemini CLI (and
 * `names`), plus `harness_result`, which records what a harness call returned.
 */
export function harnessTools(opts: HarnessToolsOptions = {}): ToolDefinition[] {
  const tools: ToolDefinition[] = [];
  const own = new Set<string>();
  for (const [name, aliases] of Object.entries(BUILTINS)) {
    own.add(name);
    for (const a of aliases) own.add(a);
    tools.push(decisionTool(name, aliases, opts));
  }
  for (const name of opts.names ?? []) {
    if (own.has(name)) continue;
    own.add(name);
    tools.push(decisionTool(name, [], opts));
  }
  tools.push(resultTool());
  return tools;
}

function decisionTool(name: string, aliases: string[], opts: HarnessToolsOptions): ToolDefinition {
  const approval = opts.approval?.[name];
  return defineTool<JsonObject>({
    name,
    description: `${name} as a harness (Claude Code, Codex, Gemini CLI) runs it: Sluice decides, the harness runs it`,
    input: ANY_INPUT,
    ...(aliases.length ? { aliases } : {}),
    approval: approval ?? 'auto',
    ...(opts.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: opts.approvalTimeoutMs } : {}),
    ...(opts.approverGroups ? { approverGroups: opts.approverGroups } : {}),
    // Nothing runs here, so the body is safe to run again and needs no activity of its own.
    localBody: true,
    isConcurrencySafe: () => true,
    presentCall: (args) => ({ title: `${name} (run by the harness)`, summary: summaryOf(args) }),
    execute: () =>
      toolOutput({
        content: [{ type: 'text', text: `allowed: every gate let ${name} through; the harness runs it` }],
        value: { decision: 'allow' },
      }),
  });
}

function resultTool(): ToolDefinition {
  return defineTool<{
    tool_name: string;
    tool_use_id?: string;
    decision_batch?: string;
    tool_response?: Json;
    error?: string;
  }>({
    name: HARNESS_RESULT_TOOL,
    description: 'Records what a harness call returned (PostToolUse / AfterTool); runs nothing',
    input: {
      type: 'object',
      properties: {
        tool_name: { type: 'string' },
        tool_use_id: { type: 'string' },
        decision_batch: { type: 'string' },
        tool_response: {},
        error: { type: 'string' },
        truncated: { type: 'boolean' },
      },
      required: ['tool_name'],
      additionalProperties: true,
    },
    approval: 'auto',
    localBody: true,
    isConcurrencySafe: () => true,
    presentCall: (args) => ({ title: `result of ${args.tool_name}`, summary: args.decision_batch ?? '' }),
    execute: (args) => {
      const failed = typeof args.error === 'string' && args.error !== '';
      const text = failed ? (args.error as string) : textOf(args.tool_response);
      return toolOutput({
        content: [{ type: 'text', text: text || '(empty result)' }],
        isError: failed,
        ...(failed ? { error: { message: args.error as string, code: 'HARNESS_TOOL_FAILED' } } : {}),
      });
    },
  });
}

/** What the model read, as near as the harness told us: a string as is, else its JSON. */
function textOf(response: Json | undefined): string {
  if (response === undefined || response === null) return '';
  if (typeof response === 'string') return response;
  // Gemini CLI's AfterTool: {llmContent, returnDisplay, error?}.
  if (typeof response === 'object' && !Array.isArray(response) && typeof response.llmContent === 'string')
    return response.llmContent;
  return JSON.stringify(response);
}

function summaryOf(args: JsonObject): string {
  for (const k of ['command', 'file_path', 'path', 'url', 'pattern', 'query']) {
    const v = args[k];
    if (typeof v === 'string' && v) return v.length > 200 ? `${v.slice(0, 200)}…` : v;
  }
  const s = JSON.stringify(args);
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}
