// The agent SDKs' approval points answered by Sluice (docs/gateway.md, "Agent SDKs"): an SDK that
// asks "may this tool call run?" gets Sluice's decision. Each call becomes a one-call batch of the
// app's Sluice session, served by a worker whose config has the app's tool names as decision-only
// tools (`harnessTools({ names })` from sluice/hooks): the config's policy decides it, an ask waits
// durably for a person (inbox, CLI, notifiers, verified approvers; the decision bound to the
// arguments' digest) until its deny timeout, and the decision is recorded for `sluice audit`.
// The SDK still runs the tool. This is the same service `sluice hook` uses (client/hook/service.ts):
// the same call asked again in the same session attaches to its batch and its decision.
import type { JsonObject } from '../../pipeline/types';
import type { SluiceClient } from '../client';
import { decide } from '../hook/service';

export interface SluiceApprovalOptions {
  /** A client on the task queue of the worker that serves the decisions. */
  sluice: SluiceClient;
  /** The Sluice session the calls belong to: the app's conversation, thread or run. */
  sessionId: string;
  /**
   * How long to wait for a decision, in ms (default 11 minutes: past the default deny timeout of
   * 10). A call nobody decided by then is denied here; its ask goes on waiting in Sluice, and the
   * decision, when it comes, applies to the same call asked again.
   */
  waitMs?: number;
  /** The deny timeout of an ask when the worker's tool sets none (ms). */
  approvalTimeoutMs?: number;
}

/** Sluice's answer for one tool call. */
export interface SluiceVerdict {
  allowed: boolean;
  /** Why: `allowed by Sluice policy`, `approved in Sluice by alice`, the rule's or the approver's reason. */
  reason: string;
  /** Who decided: `policy`, the approver, or `deny timeout`. */
  by?: string;
  /** The batch that holds the decision (`sluice audit` takes it). */
  workflowId: string;
  /** When nobody decided in time: the approval that still waits. */
  approvalId?: string;
}

const DEFAULT_WAIT_MS = 11 * 60_000;

/** Asks Sluice whether a tool call may run, and waits for the decision. Never throws an allow: a failure denies. */
export async function askSluice(
  opts: SluiceApprovalOptions,
  call: { toolName: string; input: unknown; toolCallId?: string },
): Promise<SluiceVerdict> {
  const waitMs = opts.waitMs ?? DEFAULT_WAIT_MS;
  // A tool's input is an object in every SDK here; anything else is recorded under `input`.
  const toolInput: JsonObject =
    call.input !== null && typeof call.input === 'object' && !Array.isArray(call.input)
      ? (call.input as JsonObject)
      : { input: (call.input ?? null) as JsonObject[string] };
  try {
    const decided = await decide(
      {
        // The hook service reads only the session, the tool, its input and its id from these.
        dialect: 'claude',
        event: 'PreToolUse',
        kind: 'decide',
        sessionId: opts.sessionId,
        toolName: call.toolName,
        toolInput,
        ...(call.toolCallId ? { toolUseId: call.toolCallId } : {}),
      },
      {
        sluice: opts.sluice,
        deadline: Date.now() + waitMs,
        budgetMs: waitMs,
        ...(opts.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: opts.approvalTimeoutMs } : {}),
      },
    );
    return {
      allowed: decided.answer.decision === 'allow',
      reason: decided.answer.reason,
      workflowId: decided.workflowId,
      ...(decided.by ? { by: decided.by } : {}),
      ...(decided.approvalId ? { approvalId: decided.approvalId } : {}),
    };
  } catch (err) {
    return {
      allowed: false,
      reason: `Sluice could not decide this call (${(err as Error).message}); denied, failing closed`,
      workflowId: '',
    };
  }
}
