// A decision by a verified approver: its signed identity is opened and checked in an activity (the
// token is never opened in the workflow), and the decision is taken under the verified subject, in
// the groups the ask requires, or refused. Only decisions that carry an identity (or asks that
// need one) schedule the activity, so histories without them replay unchanged.
import { proxyActivities } from '@temporalio/workflow';
import { definedFields } from '../../pipeline/ask';
import type { IdentityActivities, VerifiedApprover } from '../../pipeline/identity';
import { describeGroupSets, groupsProblem } from '../../pipeline/quorum';
import type { ApprovalDecision, DecisionRefusal, PendingApproval } from '../../pipeline/types';
import type { ApprovalBook, Via } from './book';
import { publish } from './memo';
import { recordRefusal, refusalOf } from './refusals';
import { normalizeDecision } from './shape';
import { take } from './votes';

const identity = proxyActivities<IdentityActivities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 3, initialInterval: '1s' },
});

/** A decision with a signed identity, or for an ask that only a verified approver may decide. */
export function needsVerifying(book: ApprovalBook, d: ApprovalDecision): boolean {
  return !!d.signedIdentity || book.open.get(d.approvalId)?.pending.identityRequired === true;
}

/**
 * Verifies the decision's signed identity, then takes the decision under the verified subject, or
 * records why not. Returns the refusal.
 */
export async function verifyThenTake(
  book: ApprovalBook,
  d: ApprovalDecision,
  via: Via,
): Promise<DecisionRefusal | undefined> {
  const entry = book.open.get(d.approvalId)!;
  const checked = await verify(d, entry.pending);
  // Another decision may have settled the ask while the identity was checked.
  let refusal = checked.refusal ?? refusalOf(book, { ...d, signedIdentity: undefined }, false);
  if (refusal) {
    recordRefusal(book, refusal.by ? { ...d, by: refusal.by } : d, refusal, via);
    publish(book);
    return refusal;
  }
  const verified = checked.verified!;
  refusal = take(book, entry, { ...normalizeDecision(d), by: verified.subject, verified }, via);
  if (refusal) recordRefusal(book, { ...d, by: verified.subject }, refusal, via);
  publish(book);
  return refusal;
}

/** The approver a decision's signed identity names, in the groups the ask requires; or why not. */
async function verify(
  d: ApprovalDecision,
  p: PendingApproval,
): Promise<{ verified?: VerifiedApprover; refusal?: DecisionRefusal }> {
  const groupSets = groupSetsOfAsk(p);
  if (!d.signedIdentity)
    return {
      refusal: {
        code: 'unverified',
        message: `${p.toolName} may only be decided by a verified approver${groupSets.length ? ` in ${describeGroupSets(groupSets)}` : ''}: send the decision with a signed identity (\`npx sluice approve --token-file FILE\`, or the inbox behind your sign-in proxy); a typed name is not enough`,
        callId: p.callId,
      },
    };
  const r = await identity.verifyApprover(
    definedFields({
      sealed: d.signedIdentity,
      approvalId: d.approvalId,
      argsDigest: p.argsDigest,
      // One list as asks always sent it (recorded histories replay); several as groupSets.
      groups: p.approverGroups ?? [],
      groupSets: p.approverGroupSets,
      toolName: p.toolName,
    }),
  );
  if (!r.ok)
    return {
      refusal: definedFields({
        code: r.code,
        message: `${r.problem}; nothing was decided`,
        callId: p.callId,
        by: r.subject || undefined,
      }),
    };
  // Every list must hold, whatever the worker that verified checked (pipeline/quorum.ts).
  const outside = groupsProblem(groupSets, r.groups);
  if (outside)
    return {
      refusal: {
        code: 'wrong-group',
        message: `${r.subject} may not decide ${p.toolName}: it ${outside}; nothing was decided`,
        callId: p.callId,
        by: r.subject,
      },
    };
  return { verified: definedFields({ subject: r.subject, groups: r.groups, issuer: r.issuer || undefined }) };
}

/** The group lists an ask requires of a verified approver: one (`approverGroups`) or several. */
function groupSetsOfAsk(p: PendingApproval): string[][] {
  return p.approverGroupSets ?? (p.approverGroups?.length ? [p.approverGroups] : []);
}
