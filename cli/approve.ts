// `sluice approve <approvalId>` and `sluice deny <approvalId>`: decide a pending call.
import { WorkflowNotFoundError } from '@temporalio/client';
import { UsageError } from '../support/errors';
import { quorumLine } from '../client/render';
import type { ArgumentPin } from '../pipeline/grants';
import type { DecisionApplied } from '../pipeline/types';
import { type Command, defineCommand, type Values } from './command';
import {
  approverToken,
  CONNECTION_FLAGS,
  CONNECTION_OPTIONS,
  decider,
  waitTimeoutMs,
  withDecidingClient,
} from './shared';

const DECIDE_FLAGS = {
  by: { type: 'string' },
  reason: { type: 'string' },
  digest: { type: 'string' },
  workflow: { type: 'string' },
  signal: { type: 'boolean' },
  'for-session': { type: 'boolean' },
  pin: { type: 'string', multiple: true },
  'token-file': { type: 'string' },
  wait: { type: 'boolean' },
  'wait-timeout': { type: 'string' },
  json: { type: 'boolean' },
  ...CONNECTION_FLAGS,
} as const;

const HELP = `Usage: npx sluice approve <approvalId> [options]   (deny: the same options)

Decides a pending call. By default through an update, so the answer is confirmed: the outcome, or
why it was refused (expired, decided already, unknown id, arguments changed).

Options:
  --by NAME               Who decides (default: SLUICE_APPROVER, then USER)
  --reason TEXT           Why; kept in the history and the audit
  --digest D              The argsDigest you were shown (\`npx sluice approvals --json\`); binds the
                          decision to those arguments
  --workflow ID           The batch's workflow id, when the search attributes cannot find it
  --signal                Send a signal instead: accepted while no worker runs; whether it was
                          applied is reported when a worker answers within a few seconds
  --for-session           Approve this call and later calls of the same tool for the rest of the
                          session (a session grant: recorded, shown in the inbox and the audit)
  --pin PATH^=PREFIX      With --for-session: only calls whose argument PATH starts with PREFIX,
  --pin PATH=VALUE        or equals VALUE (JSON, else text); repeat for more pins. A pin must hold
                          for the call asked about: it narrows the grant, never widens it.
                          e.g. --for-session --pin 'command^=npm test'
  --token-file FILE       Decide as a verified approver: FILE holds your JWT (or set
                          SLUICE_APPROVER_TOKEN). It is sealed to the workers' key (SLUICE_SEAL_KEY)
                          and bound to this approval; the verified subject is recorded, not --by
  --wait                  With no worker up the decision is queued; wait for the batch to apply or refuse it
  --wait-timeout S        How long --wait waits, in seconds (default 600)
  --json                  Print the outcome as JSON
${CONNECTION_OPTIONS}

Exit codes: 0 applied (or signal sent, outcome not yet known), 1 refused or failed, 2 usage.`;

export const approve = defineCommand({
  name: 'approve',
  synopsis: 'approve <approvalId>',
  summary: `Approve a pending call (--by NAME, --reason TEXT, --digest D, --signal,
--wait [--wait-timeout S]: with no worker up the decision is queued;
--wait waits for the batch to apply or refuse it)`,
  flags: DECIDE_FLAGS,
  help: HELP,
  run: ({ values, positionals: [id], out }) => decide(values, 'approve', id, out),
});

export const deny: Command<typeof DECIDE_FLAGS> = {
  ...approve,
  name: 'deny',
  synopsis: 'deny <approvalId>',
  summary: 'Deny a pending call (same options as approve)',
  run: ({ values, positionals: [id], out }) => decide(values, 'deny', id, out),
};

async function decide(
  v: Values<typeof DECIDE_FLAGS>,
  command: 'approve' | 'deny',
  approvalId: string | undefined,
  out: (s: string) => void,
): Promise<number> {
  if (!approvalId) throw new UsageError(`${command} needs an approval id; list them with \`npx sluice approvals\``);
  const waitMs = waitTimeoutMs(v);
  if (v.pin?.length && !v['for-session'])
    throw new UsageError('--pin narrows a session grant: add --for-session (or drop --pin to approve once)');
  if (v['for-session'] && command === 'deny') throw new UsageError('--for-session goes with approve, not deny');
  // A signed identity (JWT): sealed to the workers' key (SLUICE_SEAL_KEY) before it is sent.
  const token = approverToken(v);
  const decision = {
    approvalId,
    decision: command === 'approve' ? ('approve' as const) : ('deny' as const),
    by: decider(v, 'cli'),
    ...(v.reason ? { reason: v.reason } : {}),
    ...(v.digest ? { argsDigest: v.digest } : {}),
    ...(v.workflow ? { workflowId: v.workflow } : {}),
    ...(v['for-session'] ? { scope: 'session' as const, pins: (v.pin ?? []).map(parsePin) } : {}),
    ...(token ? { identityToken: token } : {}),
  };
  return withDecidingClient(v, out, async (sluice) => {
    if (v.signal) {
      const workflowId = decision.workflowId ?? (await sluice.approvals.find(approvalId));
      try {
        await sluice.approvals.signal({ ...decision, workflowId });
      } catch (err) {
        // A batch that has finished takes no signal; its result still says how the ask ended.
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
      const { workflowId: _omit, ...sent } = decision;
      const fate = await sluice.approvals.signalOutcome(sent, workflowId);
      if (v.json) out(JSON.stringify({ approvalId, workflowId, ...fate }));
      else if (fate.status === 'applied') out(`${approvalId}: ${fate.outcome} (signal applied)`);
      else if (fate.status === 'refused')
        out(`${approvalId}: signal refused (${fate.refusal.code}): ${fate.refusal.message}`);
      else out(`sent: ${command} ${approvalId} as a signal; not applied yet: ${fate.message}`);
      return fate.status === 'refused' ? 1 : 0;
    }
    const r = await sluice.approvals.submit(decision);
    if (r.status === 'applied') {
      out(v.json ? JSON.stringify(r) : appliedLine(approvalId, r));
      return 0;
    }
    if (v.digest && r.pending && r.pending.argsDigest !== v.digest)
      out(
        `warning: the digest you gave is not the one batch ${r.workflowId} shows for this call (${r.pending.argsDigest}); the batch will refuse the decision and record the refusal`,
      );
    if (!v.wait) {
      out(v.json ? JSON.stringify(r) : `queued: ${r.message}. Add --wait to wait for the outcome.`);
      return 0;
    }
    if (!v.json) out(`queued: ${r.message}. Waiting up to ${Math.round(waitMs / 1000)}s for the outcome ...`);
    const applied = await sluice.approvals.waitFor(r, { timeoutMs: waitMs });
    out(
      v.json
        ? JSON.stringify({ status: 'applied', workflowId: r.workflowId, ...applied })
        : appliedLine(approvalId, applied),
    );
    return 0;
  });
}

/** What became of a decision; a quorum vote that left the ask waiting says so, with the tally. */
function appliedLine(approvalId: string, r: DecisionApplied): string {
  if (r.outcome === 'pending' && r.quorum)
    return `${approvalId}: vote recorded, still waiting (quorum ${quorumLine(r.quorum)})`;
  return `${approvalId}: ${r.outcome}${r.by ? ` by ${r.by}` : ''}`;
}

/** `path^=prefix` or `path=value` (value as JSON when it parses, else the text). */
function parsePin(text: string): ArgumentPin {
  const prefix = /^([^=^]+)\^=(.+)$/s.exec(text);
  if (prefix) return { path: prefix[1].trim(), prefix: prefix[2] };
  const equals = /^([^=^]+)=(.*)$/s.exec(text);
  if (!equals) throw new UsageError(`--pin takes PATH^=PREFIX or PATH=VALUE, not ${JSON.stringify(text)}`);
  let value: ArgumentPin['equals'];
  try {
    value = JSON.parse(equals[2]);
  } catch {
    value = equals[2];
  }
  return { path: equals[1].trim(), equals: value };
}
