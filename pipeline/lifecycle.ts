// The life of an ask beyond "asked, then decided": who it is assigned to, a reminder before the
// deny timeout, escalation to another approver group after a delay, and reassignment by a
// person; each recorded as an event and sent through the worker's notifiers (the notice is a
// view of the ask: pipeline/ask.ts). Pure types.
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
