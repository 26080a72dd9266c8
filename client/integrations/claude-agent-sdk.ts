// The Claude Agent SDK's `canUseTool` answered by Sluice: the SDK asks before a tool runs that its
// own permission rules did not settle, and this returns Sluice's decision in the SDK's shape
// (client/integrations/approval.ts):
//
//   query({ prompt, options: { canUseTool: sluiceCanUseTool({ sluice, sessionId }) } })
//
// Structural types only: nothing here imports @anthropic-ai/claude-agent-sdk.
import { askSluice, type SluiceApprovalOptions } from './approval';

/** The SDK's PermissionResult: allow with the input unchanged, or deny with Sluice's reason. */
export type CanUseToolResult =
  | { behavior: 'allow'; updatedInput: Record<string, unknown> }
  | { behavior: 'deny'; message: string };

/** A `canUseTool` callback that asks Sluice; each call's id is its tool_use id when the SDK gives it. */
export function sluiceCanUseTool(
  opts: SluiceApprovalOptions,
): (
  toolName: string,
  input: Record<string, unknown>,
  options: { signal?: AbortSignal; toolUseID?: string },
) => Promise<CanUseToolResult> {
  return async (toolName, input, options) => {
    const verdict = await askSluice(opts, {
      toolName,
      input,
      ...(options?.toolUseID ? { toolCallId: options.toolUseID } : {}),
    });
    // The input goes back unchanged: Sluice decided the call as the SDK sent it.
    return verdict.allowed ? { behavior: 'allow', updatedInput: input } : { behavior: 'deny', message: verdict.reason };
  };
}
