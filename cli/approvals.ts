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

Lists the calls waiting for a person (and the unknown outcomes waiting to be reconciled), and the
client tools' calls waiting for the user's device, from the server alone: no worker needs to run. A batch whose approvals cannot be read is named, with why,
and the exit code is 1: it may be waiting.

Options:
  --task-queue NAME       Only the batches of this task queue
  --session ID            Only the batches of this session
  --json                  Print the cards as JSON
${CONNECTION_OPTIONS}`,
  async run({ values: v, out }) {
    const { sluice, close } = await client(v);
    try {
      const scope = {
        ...(v['task-queue'] ? { taskQueue: v['task-queue'] } : {}),
        ...(v.session ? { sessionId: v.session } : {}),
      };
      const [{ pending, unreadable }, clientWaits] = await Promise.all([
        sluice.approvals.overview(scope),
        sluice.approvals.clientWaits(scope),
      ]);
      if (v.json) {
        // The plain array stays the answer when only approvals wait, as before client tools.
        const more = unreadable.length || clientWaits.length;
        out(JSON.stringify(more ? { pending, clientWaits, unreadable } : pending, null, 2));
      } else {
        for (const p of pending) out(`${renderPendingCard(p)}\n`);
        for (const w of clientWaits)
          out(
            `waiting for the user's device: ${w.name} (call ${w.callId}, session ${w.sessionId}, batch ${w.workflowId}) since ${w.since}; a client of the session runs it, else it ends CLIENT_UNAVAILABLE at ${w.expiresAt}\n`,
          );
        for (const u of unreadable) out(`cannot tell whether batch ${u.workflowId} waits for approval: ${u.problem}`);
        if (pending.length === 0 && unreadable.length === 0 && clientWaits.length === 0)
          out('no calls are waiting for approval');
      }
      // A batch that could not be read may be waiting: never report "nothing" with a clean exit then.
      return unreadable.length ? 1 : 0;
    } finally {
      await close();
    }
  },
});
