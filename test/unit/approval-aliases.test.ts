// SluiceClient's deprecated approval methods (1.0's names) live outside its body, in a class it
// extends: every one of them must still be on a SluiceClient and hand its arguments and its answer
// through to the `sluice.approvals` method it names.
import { describe, expect, it } from 'vitest';
import { DeprecatedApprovalAliases } from '../../client/approval-aliases';
import { ApprovalsClient } from '../../client/approvals';
import { SluiceClient } from '../../client/client';

/** 1.0's name → the ApprovalsClient method it became. */
const ALIASES: Record<string, string> = {
  pendingApprovals: 'list',
  approvalsOverview: 'overview',
  readApprovals: 'read',
  findApproval: 'find',
  decide: 'decide',
  submitDecision: 'submit',
  awaitDecision: 'waitFor',
  reconcile: 'reconcile',
  submitReconcile: 'submitReconcile',
  awaitReconcile: 'waitForReconcile',
  reassign: 'reassign',
  signalDecision: 'signal',
  signalOutcome: 'signalOutcome',
  approve: 'approve',
  deny: 'deny',
};

const own = (proto: object) => Object.getOwnPropertyNames(proto).filter((n) => n !== 'constructor');

describe('the deprecated approval aliases', () => {
  it('are all on SluiceClient, and none is in its own body', () => {
    expect(own(DeprecatedApprovalAliases.prototype).sort()).toEqual(Object.keys(ALIASES).sort());
    for (const name of Object.keys(ALIASES)) {
      expect(typeof (SluiceClient.prototype as unknown as Record<string, unknown>)[name], name).toBe('function');
      expect(own(SluiceClient.prototype), name).not.toContain(name);
    }
  });

  it('each hands its arguments to the approvals method it names and returns its answer', () => {
    const calls: { method: string; args: unknown[] }[] = [];
    const approvals = new Proxy(
      {},
      {
        get:
          (_t, method: string) =>
          (...args: unknown[]) => {
            calls.push({ method, args });
            return `answer of ${method}`;
          },
      },
    ) as ApprovalsClient;
    class Aliased extends DeprecatedApprovalAliases {
      readonly approvals = approvals;
    }
    const client = new Aliased() as unknown as Record<string, (...a: unknown[]) => unknown>;
    for (const [alias, method] of Object.entries(ALIASES)) {
      expect(typeof (ApprovalsClient.prototype as unknown as Record<string, unknown>)[method], method).toBe('function');
      calls.length = 0;
      const args = [{ approvalId: `a-${alias}` }, { by: 'ana' }];
      expect(client[alias](...args)).toBe(`answer of ${method}`);
      expect(calls).toEqual([{ method, args }]);
    }
  });
});
