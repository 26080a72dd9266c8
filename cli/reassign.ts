// `sluice reassign <approvalId> --to NAME`: hand a pending approval to someone else.
import { UsageError } from '../support/errors';
import { defineCommand } from './command';
import { CONNECTION_FLAGS, CONNECTION_OPTIONS, decider, withDecidingClient } from './shared';

export const reassign = defineCommand({
  name: 'reassign',
  synopsis: 'reassign <approvalId>',
  summary: 'Hand a pending approval to someone else: --to NAME (--by, --reason)',
  flags: {
    to: { type: 'string' },
    by: { type: 'string' },
    reason: { type: 'string' },
    workflow: { type: 'string' },
    ...CONNECTION_FLAGS,
  },
  help: `Usage: npx sluice reassign <approvalId> --to NAME [--by NAME] [--reason TEXT]

Hands a pending approval to someone else (a person or a group): the batch records
approval/reassigned, shows the new assignee on the card and notifies. Works with no worker up
(the batch takes it when one runs).

  --to NAME               The new assignee
  --by NAME               Who reassigns (default: SLUICE_APPROVER, then USER); recorded
  --reason TEXT           Why; recorded
  --workflow ID           The batch's workflow id, when the search attributes cannot find it
${CONNECTION_OPTIONS}

Exit codes: 0 sent, 1 refused (no such pending approval), 2 usage.`,
  async run({ values: v, positionals: [approvalId], out }) {
    if (!approvalId) throw new UsageError('reassign needs an approval id; list them with `npx sluice approvals`');
    if (!v.to?.trim()) throw new UsageError('reassign needs --to NAME: who the approval goes to');
    return withDecidingClient(v, out, async (sluice) => {
      const { workflowId } = await sluice.approvals.reassign({
        approvalId,
        to: v.to!.trim(),
        by: decider(v, 'cli'),
        ...(v.reason ? { reason: v.reason } : {}),
        ...(v.workflow ? { workflowId: v.workflow } : {}),
      });
      out(
        `${approvalId}: reassigned to ${v.to!.trim()} (sent to ${workflowId}; recorded when a worker runs the batch)`,
      );
      return 0;
    });
  },
});
