// The life of an ask beyond "asked, then decided": who it is assigned to, a reminder before the
// deny timeout, escalation to another approver group after a delay, and reassignment by a
// person; each recorded as an event and sent through the worker's notifiers. Pure types.
import type { PolicyBinding } from './policy-binding';

/** Per tool (`approvalLifecycle` on the tool) or per batch (`options.approvalLifecycle`). */
export interface ApprovalLifecycle {
  /** Who the ask is assigned to first (a person or a group name). */
  assignee?: string;
  /** Remind this long before the deny timeout, if nobody decided. */
  remindBeforeMs?: number;
  /** Escalate after this long without a decision... */
  escalateAfterMs?: number;
  /** ...to this approver group (becomes the assignee). */
  escalateTo?: string;
}

export type NoticeKind = 'asked' | 'reminder' | 'escalated' | 'reassigned';

/** What a notifier sends: the ask as a person needs it to decide, and what happened. */
export interface ApprovalNotice {
  kind: NoticeKind;
  approvalId: string;
  workflowId: string;
  sessionId: string;
  callId: string;
  toolName: string;
  title: string;
  argsDigest: string;
  expiresAt: string;
  assignee?: string;
  /** For escalated/reassigned: who had it before. */
  from?: string;
  by?: string;
  at: string;
  /** Only these of the worker's notifiers (by name): the batch's `options.notifiers`. */
  targets?: string[];
  /** The policy the ask was raised under: digest, files, the rule that asked (PendingApproval.policy). */
  policy?: PolicyBinding;
  /** A one-time approval link (the worker's `approvalLinks`): opens the inbox's confirm page for this approval. */
  link?: string;
}

export interface NotifyActivities {
  notifyApprovers(notice: ApprovalNotice): Promise<{ sent: number }>;
}
