// SluiceClient's approval methods as they were before `sluice.approvals`: thin aliases of
// ApprovalsClient's, kept through 1.x for code written against 1.0 and marked deprecated. They
// live here, in a class SluiceClient extends, so the client's own body holds only what it does.
import type { ApprovalsClient } from './approvals';

/** The deprecated approval aliases every SluiceClient has; each calls `this.approvals`. */
export abstract class DeprecatedApprovalAliases {
  abstract readonly approvals: ApprovalsClient;

  /** @deprecated Use `sluice.approvals.list()`; this alias stays through 1.x. */
  pendingApprovals(...args: Parameters<ApprovalsClient['list']>): ReturnType<ApprovalsClient['list']> {
    return this.approvals.list(...args);
  }

  /** @deprecated Use `sluice.approvals.overview()`; this alias stays through 1.x. */
  approvalsOverview(...args: Parameters<ApprovalsClient['overview']>): ReturnType<ApprovalsClient['overview']> {
    return this.approvals.overview(...args);
  }

  /** @deprecated Use `sluice.approvals.read()`; this alias stays through 1.x. */
  readApprovals(...args: Parameters<ApprovalsClient['read']>): ReturnType<ApprovalsClient['read']> {
    return this.approvals.read(...args);
  }

  /** @deprecated Use `sluice.approvals.find()`; this alias stays through 1.x. */
  findApproval(...args: Parameters<ApprovalsClient['find']>): ReturnType<ApprovalsClient['find']> {
    return this.approvals.find(...args);
  }

  /** @deprecated Use `sluice.approvals.decide()`; this alias stays through 1.x. */
  decide(...args: Parameters<ApprovalsClient['decide']>): ReturnType<ApprovalsClient['decide']> {
    return this.approvals.decide(...args);
  }

  /** @deprecated Use `sluice.approvals.submit()`; this alias stays through 1.x. */
  submitDecision(...args: Parameters<ApprovalsClient['submit']>): ReturnType<ApprovalsClient['submit']> {
    return this.approvals.submit(...args);
  }

  /** @deprecated Use `sluice.approvals.waitFor()`; this alias stays through 1.x. */
  awaitDecision(...args: Parameters<ApprovalsClient['waitFor']>): ReturnType<ApprovalsClient['waitFor']> {
    return this.approvals.waitFor(...args);
  }

  /** @deprecated Use `sluice.approvals.reconcile()`; this alias stays through 1.x. */
  reconcile(...args: Parameters<ApprovalsClient['reconcile']>): ReturnType<ApprovalsClient['reconcile']> {
    return this.approvals.reconcile(...args);
  }

  /** @deprecated Use `sluice.approvals.submitReconcile()`; this alias stays through 1.x. */
  submitReconcile(
    ...args: Parameters<ApprovalsClient['submitReconcile']>
  ): ReturnType<ApprovalsClient['submitReconcile']> {
    return this.approvals.submitReconcile(...args);
  }

  /** @deprecated Use `sluice.approvals.waitForReconcile()`; this alias stays through 1.x. */
  awaitReconcile(
    ...args: Parameters<ApprovalsClient['waitForReconcile']>
  ): ReturnType<ApprovalsClient['waitForReconcile']> {
    return this.approvals.waitForReconcile(...args);
  }

  /** @deprecated Use `sluice.approvals.reassign()`; this alias stays through 1.x. */
  reassign(...args: Parameters<ApprovalsClient['reassign']>): ReturnType<ApprovalsClient['reassign']> {
    return this.approvals.reassign(...args);
  }

  /** @deprecated Use `sluice.approvals.signal()`; this alias stays through 1.x. */
  signalDecision(...args: Parameters<ApprovalsClient['signal']>): ReturnType<ApprovalsClient['signal']> {
    return this.approvals.signal(...args);
  }

  /** @deprecated Use `sluice.approvals.signalOutcome()`; this alias stays through 1.x. */
  signalOutcome(...args: Parameters<ApprovalsClient['signalOutcome']>): ReturnType<ApprovalsClient['signalOutcome']> {
    return this.approvals.signalOutcome(...args);
  }

  /** @deprecated Use `sluice.approvals.approve()`; this alias stays through 1.x. */
  approve(...args: Parameters<ApprovalsClient['approve']>): ReturnType<ApprovalsClient['approve']> {
    return this.approvals.approve(...args);
  }

  /** @deprecated Use `sluice.approvals.deny()`; this alias stays through 1.x. */
  deny(...args: Parameters<ApprovalsClient['deny']>): ReturnType<ApprovalsClient['deny']> {
    return this.approvals.deny(...args);
  }
}
