// What a batch's approvals keep, and what every part of them (decision checks, votes, identity,
// the lifecycle, notices, the memo) reads and writes: the open asks, how the ended ones ended, the
// one-time links already used, the refusals the memo shows. Workflow state only: it replays.
import type { VerifiedApprover } from '../../pipeline/identity';
import type { ApprovalLifecycle } from '../../pipeline/lifecycle';
import type { QuorumSettings } from '../../pipeline/quorum';
import type {
  ApprovalDecision,
  ApprovalPolicy,
  AskTerms,
  Card,
  DecidedApproval,
  GrantUse,
  MemoRefusal,
  PendingApproval,
  SessionGrant,
} from '../../pipeline/types';
import type { MemoFeatures } from '../compat';
import type { EventLog } from '../event-log';

/** How a decision reached the batch. */
export type Via = 'signal' | 'update';

/** A decision as taken for an ask: normalised, with what its taking added. */
export type TakenDecision = ApprovalDecision & { grantId?: string; verified?: VerifiedApprover; approvers?: string[] };

/** An ask open for decisions. */
export interface Entry {
  pending: PendingApproval;
  /**
   * A second digest a decision may be bound to: the plain sha-256 that asks raised ahead showed
   * before they showed the keyed one. Never shown; kept so recorded decisions replay as taken.
   */
  alsoAcceptsDigest?: string;
  notify?: boolean;
  /** The batch's own notifier names (options.notifiers), when it names them. */
  notifyTargets?: string[];
  decision?: TakenDecision;
}

/**
 * How to ask about one call: the asker's terms (reason, policy binding: AskTerms, passed whole)
 * and how the batch asks. `abandoned` names why nobody needs the answer any more (a sub-call
 * whose program ended): the wait then ends as cancelled with that reason.
 */
export interface AskOptions {
  terms: AskTerms;
  card: Card;
  policy: ApprovalPolicy;
  timeoutMs: number;
  channel: boolean;
  abandoned?: () => string | undefined;
  identityRequired?: boolean;
  /** A verified approver must be in a group of each list (pipeline/quorum.ts, approverRule). */
  approverGroupSets?: string[][];
  lifecycle?: ApprovalLifecycle;
  notify?: boolean;
  notifyTargets?: string[];
  /** N distinct approvers, and the session's user who may not be one of them. */
  quorum?: QuorumSettings;
  sessionUser?: string;
  /** See Entry.alsoAcceptsDigest. */
  alsoAcceptsDigest?: string;
}

/** How an ask ended, before it is kept as a DecidedApproval (`link`: the one-time link it was decided by). */
export type AskEnding = Omit<DecidedApproval, 'approvalId' | 'callId' | 'decidedAt'> & { link?: string };

export class ApprovalBook {
  readonly open = new Map<string, Entry>();
  readonly decided: DecidedApproval[] = [];
  /** One-time approval links a decision was taken from: each decides once (docs/approvals.md). */
  readonly linksUsed: string[] = [];
  recentRefusals: MemoRefusal[] = [];
  refusalsRecorded = 0;
  /** The ids last written to the search attributes: written again only when they change. */
  publishedIds?: string[];

  constructor(
    readonly events: EventLog,
    readonly isCancelled: () => boolean,
    /** The session grants as the batch knows them, and the calls they allowed: shown in the memo. */
    readonly grantsView: () => { grants: SessionGrant[]; uses: GrantUse[] },
    /**
     * From the memo the batch was started with (workflows/compat.ts MEMO_FLAGS): whether the
     * approvals memo is kept current, and whether a decision by signal writes it once, from the
     * ask it ends, instead of also in the handler.
     */
    readonly flags: MemoFeatures,
  ) {}

  /** The asks still waiting for a decision. */
  get pending(): PendingApproval[] {
    return [...this.open.values()].filter((e) => !e.decision).map((e) => e.pending);
  }
}
