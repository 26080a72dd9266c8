// Approval lives in the workflow, not in any process: a one-shot wait per ask, answered by a
// signal or an update, with a deny timeout. The first valid decision wins.
import { condition, log, setHandler, upsertSearchAttributes, uuid4, workflowInfo } from '@temporalio/workflow';
import type { ApprovalDecision, ApprovalOutcome, ApprovalPolicy, Card, JsonObject, PendingApproval } from '../pipeline/types';
import type { CallRef } from '../pipeline/stages';
import { AWAITING_APPROVAL, decideSignal, decideUpdate, PENDING_APPROVALS } from './definitions';
import type { EventLog } from './event-log';

export interface Decided {
  approvalId: string;
  callId: string;
  outcome: ApprovalOutcome;
  by?: string;
  reason?: string;
}

interface Entry {
  pending: PendingApproval;
  decision?: ApprovalDecision;
}

export class Approvals {
  private readonly open = new Map<string, Entry>();
  readonly decided: Decided[] = [];

  constructor(
    private readonly events: EventLog,
    private readonly isCancelled: () => boolean,
  ) {
    setHandler(decideSignal, (d) => {
      const problem = this.problemWith(d);
      if (problem) log.warn('approval signal ignored', { problem, approvalId: String((d as ApprovalDecision)?.approvalId) });
      else this.open.get(d.approvalId)!.decision = normalizeDecision(d);
    });
    setHandler(
      decideUpdate,
      async (d) => {
        const entry = this.open.get(d.approvalId)!;
        entry.decision ??= normalizeDecision(d);
        await condition(() => this.decided.some((x) => x.approvalId === d.approvalId));
        return { approvalId: d.approvalId, outcome: this.decided.find((x) => x.approvalId === d.approvalId)!.outcome };
      },
      {
        validator: (d) => {
          const problem = this.problemWith(d);
          if (problem) throw new Error(problem);
        },
      },
    );
  }

  get pending(): PendingApproval[] {
    return [...this.open.values()].filter((e) => !e.decision).map((e) => e.pending);
  }

  /** Why a decision cannot be taken, in words for the person who sent it; undefined if it can. */
  problemWith(d: unknown): string | undefined {
    const x = d as Partial<ApprovalDecision> | null;
    if (!x || typeof x !== 'object' || typeof x.approvalId !== 'string') {
      return 'malformed decision: send {"approvalId": "<id>", "decision": "approve"|"deny", "by"?: "<name>", "reason"?: "<text>"}';
    }
    if (x.decision !== 'approve' && x.decision !== 'deny') return `decision must be "approve" or "deny", not ${JSON.stringify(x.decision)}`;
    const done = this.decided.find((e) => e.approvalId === x.approvalId);
    if (done) return `approval ${x.approvalId} was already decided: ${done.outcome}${done.by ? ` by ${done.by}` : ''}`;
    const entry = this.open.get(x.approvalId);
    if (!entry) return `no approval ${x.approvalId} is pending in this batch; list pending ones with \`sluice approvals\``;
    if (entry.decision) return `approval ${x.approvalId} was already decided by ${entry.decision.by ?? 'someone else'}`;
    if (x.argsDigest !== undefined && x.argsDigest !== entry.pending.argsDigest) {
      return `the arguments you were shown (digest ${x.argsDigest}) are not the ones this call would run with (${entry.pending.argsDigest}); reload and decide again`;
    }
    return undefined;
  }

  /** Asks for a one-shot decision on one call and records the asked/decided pair. */
  async ask(ref: CallRef, opts: { reason?: string; card: Card; policy: ApprovalPolicy; timeoutMs: number; channel: boolean }): Promise<Decided> {
    const approvalId = uuid4();
    const askedAt = new Date();
    const expiresAt = new Date(askedAt.getTime() + opts.timeoutMs);
    const pending: PendingApproval = {
      approvalId,
      workflowId: workflowInfo().workflowId,
      sessionId: ref.sessionId,
      turn: ref.turn,
      step: ref.step,
      callId: ref.callId,
      toolName: ref.name,
      ...(opts.reason ? { reason: opts.reason } : {}),
      card: opts.card,
      arguments: ref.args,
      argsDigest: ref.argsDigest,
      askedAt: askedAt.toISOString(),
      expiresAt: expiresAt.toISOString(),
      ...(ref.parentCallId ? { parentCallId: ref.parentCallId } : {}),
    };
    this.events.record('approval/asked', {
      id: approvalId,
      toolName: ref.name,
      callId: ref.callId,
      ...(opts.reason ? { reason: opts.reason } : {}),
      card: opts.card as unknown as JsonObject,
      argsDigest: ref.argsDigest,
      expiresAt: pending.expiresAt,
      ...(ref.parentCallId ? { parentCallId: ref.parentCallId } : {}),
    });

    let result: Decided;
    if (opts.policy === 'never') {
      result = { approvalId, callId: ref.callId, outcome: 'rejected', by: 'policy', reason: opts.reason ?? `${ref.name} is never approved` };
    } else if (!opts.channel) {
      result = { approvalId, callId: ref.callId, outcome: 'unavailable', reason: opts.reason ?? 'approval required, and no approval channel is configured' };
    } else {
      const entry: Entry = { pending };
      this.open.set(approvalId, entry);
      this.markAwaiting();
      await condition(() => entry.decision !== undefined || this.isCancelled(), opts.timeoutMs);
      const d = entry.decision;
      if (d) {
        result = { approvalId, callId: ref.callId, outcome: d.decision === 'approve' ? 'allowed-once' : 'rejected', ...(d.by ? { by: d.by } : {}), ...(d.reason ? { reason: d.reason } : {}) };
      } else if (this.isCancelled()) {
        result = { approvalId, callId: ref.callId, outcome: 'cancelled' };
      } else {
        result = { approvalId, callId: ref.callId, outcome: 'unavailable', reason: `no decision within ${Math.round(opts.timeoutMs / 1000)}s (deny timeout)` };
      }
      this.open.delete(approvalId);
      this.markAwaiting();
    }
    this.decided.push(result);
    this.events.record('approval/decided', {
      id: approvalId,
      callId: ref.callId,
      outcome: result.outcome,
      ...(result.by ? { by: result.by } : {}),
      ...(result.reason ? { reason: result.reason } : {}),
      latencyMs: Date.now() - askedAt.getTime(),
    });
    return result;
  }

  private markAwaiting(): void {
    const ids = [...this.open.keys()];
    upsertSearchAttributes([
      { key: AWAITING_APPROVAL, value: ids.length > 0 },
      { key: PENDING_APPROVALS, value: ids },
    ]);
  }
}

function normalizeDecision(d: ApprovalDecision): ApprovalDecision {
  return {
    approvalId: d.approvalId,
    decision: d.decision,
    ...(typeof d.by === 'string' && d.by ? { by: d.by.slice(0, 200) } : {}),
    ...(typeof d.reason === 'string' && d.reason ? { reason: d.reason.slice(0, 2000) } : {}),
  };
}
