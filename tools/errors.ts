// How a built-in tool reports a failure the model should act on: an error result, not a throw.
// A throw would make Temporal retry the body; these failures are answers, and retrying them
// would only repeat the same answer (and lose the events the body recorded).
import { ErrorCodes } from '../pipeline/errors';
import type { JsonObject } from '../pipeline/types';
import { toolOutput, type ToolOutput } from '../define/config';
import { ToolFailure } from '../define/tool-failure';

export { ToolFailure } from '../define/tool-failure';

/**
 * Codes of the built-in tools' own error results. The pipeline's codes (pipeline/errors.ts) stay
 * apart; the three a tool may also answer with are repeated here so a tool needs one table.
 */
export const ToolErrorCodes = {
  /** write/edit: the file was never read in this session (or changed since), so it is not overwritten blind. */
  FS_NOT_OBSERVED: 'FS_NOT_OBSERVED',
  FS_NOT_FOUND: 'FS_NOT_FOUND',
  /** write/edit: the file changed since it was last read. */
  FS_STALE_VERSION: 'FS_STALE_VERSION',
  /** run_code: the program threw, timed out or ran out of memory. */
  CODE_RUN_FAILED: 'CODE_RUN_FAILED',
  INVALID_ARGS: ErrorCodes.INVALID_ARGS,
  PIPELINE_FAILED: ErrorCodes.PIPELINE_FAILED,
  TOOL_FAILED: ErrorCodes.TOOL_FAILED,
  /** The path is outside the workspace root (`..`, an absolute path elsewhere, a symlink out). */
  FS_OUTSIDE_WORKSPACE: 'FS_OUTSIDE_WORKSPACE',
  /** A protected path: hook settings or scripts, Sluice's state folder, or one configured (tools/fs/protect.ts). */
  FS_PROTECTED_PATH: 'FS_PROTECTED_PATH',
  /** A file with more than one hard link: another name for it may lie outside the workspace. */
  FS_HARD_LINK: 'FS_HARD_LINK',
  /** A path changed (a symbolic link swapped in) between its check and its use. */
  FS_RACE: 'FS_RACE',
  /** A directory where a file was expected, or the other way round. */
  FS_NOT_A_FILE: 'FS_NOT_A_FILE',
  FS_BINARY_FILE: 'FS_BINARY_FILE',
  FS_TOO_LARGE: 'FS_TOO_LARGE',
  /** edit: old_string does not occur in the file. */
  FS_NO_MATCH: 'FS_NO_MATCH',
  /** edit: old_string occurs more than once and replace_all was not set. */
  FS_AMBIGUOUS_MATCH: 'FS_AMBIGUOUS_MATCH',
  /** bash: the command ran past its timeout and its process group was killed. */
  COMMAND_TIMEOUT: 'COMMAND_TIMEOUT',
  /** bash: bubblewrap could not set the sandbox up (tried again first); the command did not run. */
  SANDBOX_FAILED: 'SANDBOX_FAILED',
  /** An MCP tool answered with isError: the server's own message is the error message. */
  MCP_TOOL_ERROR: 'MCP_TOOL_ERROR',
} as const;

/** An error result with `Error: <message>` as its content, as every denial and failure reads. */
export function toolError(message: string, code: string, meta?: JsonObject): ToolOutput {
  return toolOutput({
    isError: true,
    error: { message, code },
    content: [{ type: 'text', text: `Error: ${message}` }],
    ...(meta ? { meta } : {}),
  });
}

/** Runs a body, turning a ToolFailure into an error result; any other throw stays a throw. */
export async function answering<T>(body: () => Promise<T>): Promise<T | ToolOutput> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof ToolFailure) return toolError(err.message, err.code);
    throw err;
  }
}
