// The OpenAI Agents SDK's tool approvals (`needsApproval`) answered by Sluice. A run that reaches
// a tool needing approval stops with `result.interruptions`; the app approves or rejects each on
// `result.state` and runs again from that state (which it may serialize and resume later). This
// decides every interruption through Sluice (client/integrations/approval.ts):
//
//   let result = await run(agent, input);
//   while (result.interruptions?.length) {
//     await sluiceDecideInterruptions(result, { sluice, sessionId });
//     result = await run(agent, result.state);
//   }
//
// Structural types only: nothing here imports @openai/agents.
import { askSluice, type SluiceApprovalOptions, type SluiceVerdict } from './approval';

/** What this reads of a RunToolApprovalItem. */
export interface AgentsApprovalItem {
  readonly type: string;
  readonly name?: string;
  readonly arguments?: string;
  readonly rawItem: { callId?: string; id?: string; name?: string; arguments?: string; type?: string };
}

/** What this uses of a run result: its interruptions and the state that approves or rejects them. */
export interface AgentsInterruptedRun<Item extends AgentsApprovalItem = AgentsApprovalItem> {
  readonly interruptions?: Item[];
  readonly state: {
    approve(item: Item, options?: { alwaysApprove?: boolean }): void;
    reject(item: Item, options?: { alwaysReject?: boolean; message?: string }): void;
  };
}

/**
 * Decides each tool-approval interruption of `result` through Sluice and approves or rejects it
 * on `result.state` (a rejection's message, sent to the model, is Sluice's reason). Returns the
 * verdicts in the order of the interruptions.
 */
export async function sluiceDecideInterruptions<Item extends AgentsApprovalItem>(
  result: AgentsInterruptedRun<Item>,
  opts: SluiceApprovalOptions,
): Promise<SluiceVerdict[]> {
  const items = (result.interruptions ?? []).filter((i) => i.type === 'tool_approval_item');
  return Promise.all(
    items.map(async (item) => {
      const name = item.name ?? item.rawItem.name ?? 'unknown_tool';
      const text = item.arguments ?? item.rawItem.arguments;
      let input: unknown = {};
      try {
        input = text ? JSON.parse(text) : {};
      } catch {
        // Arguments the model wrote that are not JSON: decided as the text they are.
        input = { arguments: text };
      }
      const callId = item.rawItem.callId ?? item.rawItem.id;
      const verdict = await askSluice(opts, { toolName: name, input, ...(callId ? { toolCallId: callId } : {}) });
      if (verdict.allowed) result.state.approve(item);
      else result.state.reject(item, { message: verdict.reason });
      return verdict;
    }),
  );
}
