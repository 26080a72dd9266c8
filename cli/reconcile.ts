// `sluice reconcile <id>`: settle an unknown outcome (a call that may or may not have run).
import { UsageError } from '../support/errors';
import { defineCommand, type Values } from './command';
import {
  approverToken,
  CONNECTION_FLAGS,
  CONNECTION_OPTIONS,
  decider,
  waitTimeoutMs,
  withDecidingClient,
} from './shared';

const RECONCILE_FLAGS = {
  done: { type: 'boolean' },
  'not-done': { type: 'boolean' },
  'run-again': { type: 'boolean' },
  evidence: { type: 'string' },
  by: { type: 'string' },
  reason: { type: 'string' },
  workflow: { type: 'string' },
  'token-file': { type: 'string' },
  wait: { type: 'boolean' },
  'wait-timeout': { type: 'string' },
  json: { type: 'boolean' },
  ...CONNECTION_FLAGS,
} as const;

export const reconcileCommand = defineCommand({
  name: 'reconcile',
  synopsis: 'reconcile <id>',
  summary: `Settle an unknown outcome listed by approvals: --done --evidence TEXT,
--not-done or --run-again (--by NAME, --reason TEXT; queued with no worker up)`,
  flags: RECONCILE_FLAGS,
  help: `Usage: npx sluice reconcile <id> (--done --evidence TEXT | --not-done | --run-again) [options]

Settles an unknown outcome: a call whose body must not run twice (bash, anything that sends or
pays) lost its attempt after it may have started, so nobody knows whether it ran. \`npx sluice
approvals\` lists these cards (OUTCOME UNKNOWN) with their ids. Check the effect first, then:

  --done                  It ran: give the evidence (a log line, an id, a receipt) with --evidence
  --not-done              It did not run (or its effect was undone); the call stays failed
  --run-again             Run the body once more with the same arguments (never retried); prints
                          its result. If that attempt is lost too, the card comes back

Options:
  --evidence TEXT         What shows it ran (required with --done)
  --by NAME               Who reconciles (default: SLUICE_APPROVER, then USER); recorded
  --reason TEXT           Why; recorded and shown in the audit
  --workflow ID           The reconcile workflow's id, when the search attributes cannot find it
  --token-file FILE       Your signed identity (a JWT; or SLUICE_APPROVER_TOKEN), sealed with
                          SLUICE_SEAL_KEY: needed to run again a tool with approverGroups
  --wait                  With no worker up the decision is queued; wait for it to be applied or refused
  --wait-timeout S        How long --wait waits, in seconds (default 600)
  --json                  Print the reconciliation as JSON
${CONNECTION_OPTIONS}

Exit codes: 0 reconciled (or queued), 1 refused (already reconciled, missing evidence) or failed, 2 usage.`,
  run: ({ values, positionals: [id], out }) => reconcile(values, id, out),
});

async function reconcile(
  v: Values<typeof RECONCILE_FLAGS>,
  reconcileId: string | undefined,
  out: (s: string) => void,
): Promise<number> {
  if (!reconcileId)
    throw new UsageError('reconcile needs the id of an unknown outcome; list them with `npx sluice approvals`');
  const chosen = (['done', 'not-done', 'run-again'] as const).filter((c) => v[c]);
  if (chosen.length !== 1)
    throw new UsageError(
      'say what happened with exactly one of --done (with --evidence TEXT), --not-done or --run-again',
    );
  const decision = chosen[0];
  if (decision === 'done' && !v.evidence?.trim())
    throw new UsageError('--done needs --evidence TEXT: what shows the call ran (a log line, an id, a receipt)');
  // A tool only verified approvers may decide is run again only with a signed identity.
  const token = approverToken(v);
  return withDecidingClient(v, out, async (sluice) => {
    const submitted = await sluice.approvals.submitReconcile({
      reconcileId,
      decision,
      ...(token ? { identityToken: token } : {}),
      by: decider(v, 'cli'),
      ...(v.reason ? { reason: v.reason } : {}),
      ...(v.evidence ? { evidence: v.evidence } : {}),
      ...(v.workflow ? { workflowId: v.workflow } : {}),
    });
    // No worker runs the card's workflow: the decision waits on the server, as approvals do.
    if (submitted.status === 'queued') {
      if (!v.wait) {
        out(v.json ? JSON.stringify(submitted) : `queued: ${submitted.message}. Add --wait to wait for the outcome.`);
        return 0;
      }
      const waitMs = waitTimeoutMs(v);
      if (!v.json) out(`queued: ${submitted.message}. Waiting up to ${Math.round(waitMs / 1000)}s for the outcome ...`);
    }
    const r =
      submitted.status === 'queued'
        ? await sluice.approvals.waitForReconcile(submitted, {
            timeoutMs: waitTimeoutMs(v),
          })
        : submitted;
    if (v.json) out(JSON.stringify(r));
    else
      out(
        `${reconcileId}: ${r.toolName} ${r.callId} reconciled ${r.outcome} by ${r.by}${r.reason ? ` (${r.reason})` : ''}${
          r.rerun ? `\n${r.rerun.isError ? '✗' : '✓'} ${r.rerun.text}` : ''
        }`,
      );
    return 0;
  });
}
