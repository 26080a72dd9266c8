// The AI SDK's tool approval (`needsApproval`, AI SDK 6 and 7) answered by Sluice. A tool with
// `needsApproval` makes generateText / streamText stop with `tool-approval-request` parts; the app
// answers with a `tool` message of `tool-approval-response` parts and calls again. This builds that
// message from Sluice's decisions (client/integrations/approval.ts):
//
//   const result = await generateText({ model, tools, messages });
//   const answer = await sluiceApprovalResponses(result.content, { sluice, sessionId });
//   if (answer) messages.push(...result.response.messages, answer);  // then generateText again
//
// Plain objects only: nothing here imports the AI SDK, so any version with these parts works.
import { askSluice, type SluiceApprovalOptions, type SluiceVerdict } from './approval';

/** The part of an AI SDK `tool-approval-request` this reads. */
export interface AiSdkApprovalRequest {
  type: 'tool-approval-request';
  approvalId: string;
  toolCall: { toolCallId: string; toolName: string; input: unknown };
}

export interface AiSdkApprovalResponse {
  type: 'tool-approval-response';
  approvalId: string;
  approved: boolean;
  reason: string;
}

/**
 * Sluice's decision for every `tool-approval-request` among `parts` (a result's `content`, or a
 * step's), as the `tool` message to send back; undefined when nothing asks. The calls are decided
 * at once, each waiting for its own decision; `onVerdict` hears each (for logs or UI).
 */
export async function sluiceApprovalResponses(
  parts: ReadonlyArray<{ type: string }>,
  opts: SluiceApprovalOptions & { onVerdict?: (request: AiSdkApprovalRequest, verdict: SluiceVerdict) => void },
): Promise<{ role: 'tool'; content: AiSdkApprovalResponse[] } | undefined> {
  const requests = parts.filter((p): p is AiSdkApprovalRequest => p.type === 'tool-approval-request');
  if (!requests.length) return undefined;
  const content = await Promise.all(
    requests.map(async (r) => {
      const verdict = await askSluice(opts, {
        toolName: r.toolCall.toolName,
        input: r.toolCall.input,
        toolCallId: r.toolCall.toolCallId,
      });
      opts.onVerdict?.(r, verdict);
      return {
        type: 'tool-approval-response' as const,
        approvalId: r.approvalId,
        approved: verdict.allowed,
        reason: verdict.reason,
      };
    }),
  );
  return { role: 'tool', content };
}
