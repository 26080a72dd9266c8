// The Claude Agent SDK's approval points answered by Sluice (client/integrations/approval.ts):
//
//   query({ prompt, options: { canUseTool: sluiceCanUseTool({ sluice, sessionId }) } })
//   query({ prompt, options: { hooks: { PreToolUse: [sluicePreToolUse({ sluice, sessionId })] } } })
//
// `canUseTool` is asked only for calls the SDK's own permission rules left open; a PreToolUse
// hook sees every call before it runs, those rules' allows included, so Sluice decides and
// records all of them. Structural types only: nothing here imports @anthropic-ai/claude-agent-sdk.
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

/** What the SDK passes a PreToolUse hook (the fields Sluice reads). */
export interface PreToolUseInput {
  hook_event_name: string;
  tool_name?: string;
  tool_input?: unknown;
  tool_use_id?: string;
}

/** A PreToolUse hook's answer: Sluice's decision, with its reason for the model and the person. */
export interface PreToolUseOutput {
  hookSpecificOutput?: {
    hookEventName: 'PreToolUse';
    permissionDecision: 'allow' | 'deny';
    permissionDecisionReason: string;
  };
}

/** A hook matcher for the SDK's `hooks.PreToolUse`. */
export interface SluicePreToolUseMatcher {
  /** The SDK's tool-name pattern; absent: every tool. */
  matcher?: string;
  hooks: ((
    input: PreToolUseInput,
    toolUseID: string | undefined,
    options: { signal: AbortSignal },
  ) => Promise<PreToolUseOutput>)[];
}

/**
 * A PreToolUse hook that asks Sluice about every call before it runs: `allow` lets it run without
 * the SDK asking again (Sluice decided, a person included where the policy asks), `deny` stops it
 * and the model reads Sluice's reason. `matcher` narrows it to some tools, as the SDK's own does.
 */
export function sluicePreToolUse(opts: SluiceApprovalOptions & { matcher?: string }): SluicePreToolUseMatcher {
  const { matcher, ...approval } = opts;
  return {
    ...(matcher !== undefined ? { matcher } : {}),
    hooks: [
      async (input, toolUseID) => {
        // Registered under another event by mistake: no opinion, rather than a decision about nothing.
        if (input.hook_event_name !== 'PreToolUse' || !input.tool_name) return {};
        const id = input.tool_use_id ?? toolUseID;
        const verdict = await askSluice(approval, {
          toolName: input.tool_name,
          input: input.tool_input,
          ...(id ? { toolCallId: id } : {}),
        });
        return {
          hookSpecificOutput: {
            hookEventName: 'PreToolUse',
            permissionDecision: verdict.allowed ? 'allow' : 'deny',
            permissionDecisionReason: verdict.reason,
          },
        };
      },
    ],
  };
}
