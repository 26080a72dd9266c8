// The name and input a hook is shown for a call. A hook written for Claude Code tests
// `tool_name == "Bash"` and reads `tool_input.command`; one written for Codex tests `Bash` or
// `apply_patch`. Whatever name the model typed (`bash`, `Bash`, a Code Mode sub-call's lower-case
// name), the hook must see what its own agent would send, or a gate written for `Bash` lets every
// `bash` call through. So the hook-facing name comes from the tool the call resolved to, never
// from the string the model sent.
import type { JsonObject } from '../pipeline/types';
import type { Dialect } from './settings';

/** Claude Code's built-in tool names, as its hooks and permission rules spell them. */
const CLAUDE_BUILTINS = [
  'Bash',
  'Read',
  'Write',
  'Edit',
  'MultiEdit',
  'NotebookEdit',
  'Glob',
  'Grep',
  'LS',
  'TodoWrite',
  'WebFetch',
  'WebSearch',
  'Task',
] as const;

/** Tools whose calls change files: Codex's hooks see them as `apply_patch`. */
const FILE_EDITORS = new Set(['Write', 'Edit', 'MultiEdit']);

const byFolded = new Map<string, string>(CLAUDE_BUILTINS.map((n) => [fold(n), n]));

/** `todo_write`, `TODOWRITE`, `TodoWrite` and `todo-write` fold to the same key. */
function fold(name: string): string {
  return name.toLowerCase().replace(/[_-]/g, '');
}

interface ResolvedTool {
  readonly name: string;
  readonly aliases: readonly string[];
}

/**
 * The Claude Code name of a tool: the built-in its name or any alias spells (in any case), an
 * `mcp__server__tool` name as it is, else the tool's own name. `override` (from
 * `commandHooks({ toolNames })`) wins.
 */
export function claudeToolName(tool: ResolvedTool, override?: string): string {
  if (override) return override;
  if (tool.name.startsWith('mcp__')) return tool.name;
  for (const n of [tool.name, ...tool.aliases]) {
    const builtin = byFolded.get(fold(n));
    if (builtin) return builtin;
  }
  return tool.name;
}

interface HookFacingCall {
  /** `tool_name` on stdin. */
  toolName: string;
  /** `tool_input` on stdin. */
  toolInput: JsonObject;
  /** Every name a matcher is tested against: the hook-facing one first, then the others. */
  matchNames: string[];
}

/**
 * What a hook of `dialect` is told about a call, and the names its matcher may select it by.
 * Matchers also see the called name, the tool's own name and its aliases: a hook selected by more
 * names runs more often, which fails closed.
 */
export function hookFacingCall(
  dialect: Dialect,
  calledName: string,
  tool: ResolvedTool | undefined,
  args: Readonly<JsonObject>,
  override?: string,
): HookFacingCall {
  const others = tool ? [calledName, tool.name, ...tool.aliases] : [calledName];
  if (!tool) return { toolName: calledName, toolInput: args as JsonObject, matchNames: unique(others) };
  const claude = claudeToolName(tool, override);
  if (dialect === 'codex' && !override && FILE_EDITORS.has(claude)) {
    // Codex edits files only through apply_patch, whose input is the patch text in `command`.
    return {
      toolName: 'apply_patch',
      toolInput: { command: patchOf(claude, args) },
      matchNames: unique(['apply_patch', claude, ...others]),
    };
  }
  if (dialect === 'gemini') {
    const gemini = GEMINI_NAMES[claude];
    if (gemini && !override) {
      return {
        toolName: gemini.name,
        toolInput: gemini.input(args),
        matchNames: unique([gemini.name, claude, ...others]),
      };
    }
  }
  return { toolName: claude, toolInput: args as JsonObject, matchNames: unique([claude, ...others]) };
}

/** The call as a Codex apply_patch body: Add File for a write, Update File for an edit. */
function patchOf(tool: string, args: Readonly<JsonObject>): string {
  const file = String(args.file_path ?? '');
  const lines = (s: unknown, mark: string) =>
    String(s ?? '')
      .split('\n')
      .map((l) => `${mark}${l}`)
      .join('\n');
  if (tool === 'Write') return `*** Begin Patch\n*** Add File: ${file}\n${lines(args.content, '+')}\n*** End Patch`;
  const edits =
    tool === 'MultiEdit' && Array.isArray(args.edits)
      ? (args.edits as JsonObject[])
      : [{ old_string: args.old_string ?? '', new_string: args.new_string ?? '' } as JsonObject];
  const hunks = edits.map((e) => `@@\n${lines(e.old_string, '-')}\n${lines(e.new_string, '+')}`).join('\n');
  return `*** Begin Patch\n*** Update File: ${file}\n${hunks}\n*** End Patch`;
}

/**
 * Gemini CLI's own tool names and argument names for the built-ins it has. Its hooks test
 * `run_shell_command`, `write_file`, `replace`, `read_file` and read `tool_input.command`,
 * `file_path`, `content`, `old_string`, `new_string`.
 */
const GEMINI_NAMES: Record<string, { name: string; input: (a: Readonly<JsonObject>) => JsonObject }> = {
  Bash: { name: 'run_shell_command', input: (a) => pick(a, { command: 'command', description: 'description' }) },
  Read: { name: 'read_file', input: (a) => pick(a, { file_path: 'file_path', offset: 'offset', limit: 'limit' }) },
  Write: { name: 'write_file', input: (a) => pick(a, { file_path: 'file_path', content: 'content' }) },
  Edit: {
    name: 'replace',
    input: (a) => pick(a, { file_path: 'file_path', old_string: 'old_string', new_string: 'new_string' }),
  },
  Glob: { name: 'glob', input: (a) => pick(a, { pattern: 'pattern', path: 'dir_path' }) },
  Grep: {
    name: 'search_file_content',
    input: (a) => pick(a, { pattern: 'pattern', path: 'dir_path', glob: 'include' }),
  },
  TodoWrite: { name: 'write_todos', input: (a) => pick(a, { todos: 'todos' }) },
  WebFetch: { name: 'web_fetch', input: (a) => ({ ...a }) as JsonObject },
};

function pick(args: Readonly<JsonObject>, map: Record<string, string>): JsonObject {
  const out: JsonObject = {};
  for (const [from, to] of Object.entries(map)) if (args[from] !== undefined) out[to] = args[from];
  return out;
}

function unique(names: string[]): string[] {
  return [...new Set(names)];
}
