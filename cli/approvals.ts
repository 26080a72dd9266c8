// `sluice approvals`: the calls waiting for a person, across all batches.
import { renderPendingCard } from '../client/render';
import { defineCommand } from './command';
import { client, CONNECTION_FLAGS, CONNECTION_OPTIONS } from './shared';

export const approvals = defineCommand({
  name: 'approvals',
  synopsis: 'approvals',
  summary: `List calls waiting for approval, across all batches (--task-queue Q or
--session S to narrow, --json for machines)`,
  flags: { session: { type: 'string' }, json: { type: 'boolean' }, ...CONNECTION_FLAGS },
  help: `Usage: npx sluice approvals [options]

Lists the calls waiting for a person (and the unknown outcomes waiting to be reconciled), from the
server alone: no worker needs to run. A batch whose approvals cannot be read is named, with why,
and the exit code is 1: it may be waiting.

Options:
  --task-queue NAME       Only the batches of this task queue
  --session ID            Only the batches of this session
  --json                  Print the cards as JSON
${CONNECTION_OPTIONS}`,
  async run({ values: v, out }) {
    const { sluice, close } = await client(v);
    try {
      const { pending, unreadable } = await sluice.approvals.overview({
        ...(v['task-queue'] ? { taskQueue: v['task-queue'] } : {}),
        ...(v.session ? { sessionId: v.session } : {}),
      });
      if (v.json) out(JSON.stringify(unreadable.length ? { pending, unreadable } : pending, null, 2));
      else {
        for (const p of pending) out(`${renderPendingCard(p)}\n`);
        for (const u of unreadable) out(`cannot tell whether batch ${u.workflowId} waits for approval: ${u.problem}`);
        if (pending.length === 0 && unreadable.length === 0) out('no calls are waiting for approval');
      }
      // A batch that could not be read may be waiting: never report "nothing" with a clean exit then.
      return unreadable.length ? 1 : 0;
    } finally {
      await close();
    }
  },
});
