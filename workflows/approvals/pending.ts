// The ask as the batch keeps it, lists it and shows it (PendingApproval, the one ask type of
// pipeline/types.ts): made once per ask, from the call and the ask options; every other view of it
// (the approval/asked event, the notices, the memo's copy) is taken from this one.
import { workflowInfo } from '@temporalio/workflow';
import { definedFields } from '../../pipeline/ask';
import type { CallRef } from '../../pipeline/stages';
import type { PendingApproval } from '../../pipeline/types';
import type { AskOptions } from './book';

/**
 * The ask as the batch keeps it: the call, the asker's terms (passed whole), its card and digest,
 * who may decide, and until when. A quorum only for an ask that waits for people
 * (UNMARKED_CHANGES.approvalQuorum); the policy binding is data only, no marker
 * (compat.ts, UNMARKED_CHANGES.pendingApprovalPolicy).
 */
export function pendingAsk(ref: CallRef, opts: AskOptions, approvalId: string, askedAt: Date): PendingApproval {
  const quorum = opts.quorum && opts.channel && opts.policy !== 'never' ? opts.quorum : undefined;
  const groupSets = opts.approverGroupSets ?? [];
  return definedFields({
    approvalId,
    workflowId: workflowInfo().workflowId,
    sessionId: ref.sessionId,
    turn: ref.turn,
    step: ref.step,
    callId: ref.callId,
    toolName: ref.name,
    ...opts.terms,
    card: opts.card,
    arguments: ref.args,
    argsDigest: ref.argsDigest,
    askedAt: askedAt.toISOString(),
    expiresAt: new Date(askedAt.getTime() + opts.timeoutMs).toISOString(),
    parentCallId: ref.parentCallId || undefined,
    identityRequired: opts.identityRequired ? (true as const) : undefined,
    // One list keeps the shape every reader knows; several are kept apart (each must hold).
    approverGroups: groupSets.length === 1 ? groupSets[0] : undefined,
    approverGroupSets: groupSets.length > 1 ? groupSets : undefined,
    assignee: opts.lifecycle?.assignee || undefined,
    quorum: quorum
      ? definedFields({
          needed: quorum.quorum,
          rejectBy: quorum.rejectBy ?? 'first',
          groups: quorum.groups?.length ? quorum.groups : undefined,
          groupSets: quorum.groupSets?.length ? quorum.groupSets : undefined,
          sessionUser: opts.sessionUser ? opts.sessionUser.slice(0, 200) : undefined,
          approvals: [],
          rejections: [],
        })
      : undefined,
  });
}
