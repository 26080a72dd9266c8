// Approval lives in the workflow, not in any process: a one-shot wait per ask, answered by a
// signal or an update, with a deny timeout. The first valid decision wins; every other decision
// is refused, and the refusal is recorded as `approval/refused` so an auditor sees it.
import {
  ApplicationFailure,
  condition,
  log,
  proxyActivities,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type {
  ApprovalDecision,
  ApprovalsMemo,
  MemoRefusal,
  ApprovalOutcome,
  ApprovalPolicy,
  Card,
  DecidedApproval,
  DecisionApplied,
  DecisionRefusal,
  GrantUse,
  PendingApproval,
  PolicyBinding,
} from '../pipeline/types';
import { cleanPins, grantCovers, pinsProblem, type SessionGrant } from '../pipeline/grants';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../pipeline/json';
import type { IdentityActivities, VerifiedApprover } from '../pipeline/identity';
import type { ApprovalLifecycle, NoticeKind, NotifyActivities } from '../pipeline/lifecycle';
import type { CallRef } from '../pipeline/stages';
import { describeGroupSets, groupsProblem, type QuorumSettings } from '../pipeline/quorum';
import { countVote, elicitedBy, elicitedRefusal, linkRefusal, voteRefusal } from '../pipeline/approval-rules';
import {
  APPROVALS_MEMO,
  AWAITING_APPROVAL,
  DECISION_REFUSED,
  decideSignal,
  decideUpdate,
  PENDING_APPROVALS,
  reassignSignal,
} from './definitions';
import type { MemoFeatures } from './compat';
import type { EventLog } from './event-log';

/** Refusals recorded as events per batch; past this only the signal/update history keeps them. */
const MAX_REFUSAL_EVENTS = 50;
/** Outcomes and refusals the memo keeps, newest last: enough for `--wait` to find its own. */
const MEMO_RECENT = 20;
/** Arguments larger than this reach the memo as a preview; the query and the events keep them whole. */
const MEMO_ARGUMENT_CHARS = 8_000;

const MALFORMED =
  'malformed decision: send {"approvalId": "<id>", "decision": "approve"|"deny", "argsDigest": "<digest shown>", "by"?: "<name>", "reason"?: "<text>"}';

interface Entry {
  pending: PendingApproval;
  /**
   * A second digest a decision may be bound to: the plain sha-256 that asks raised ahead showed
   * before they showed the keyed one. Never shown; kept so recorded decisions replay as taken.
   */
  alsoAcceptsDigest?: string;
  notify?: boolean;
  /** The batch's own notifier names (options.notifiers), when it names them. */
  notifyTargets?: string[];
  decision?: ApprovalDecision & { grantId?: string; verified?: VerifiedApprover; approvers?: string[] };
}

// Opens and checks a signed identity on a worker: only decisions that carry one (or asks that
// need one) schedule it, so histories without them replay unchanged.
const notifier = proxyActivities<NotifyActivities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 5, initialInterval: '1s', maximumInterval: '30s' },
});

const identity = proxyActivities<IdentityActivities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 3, initialInterval: '1s' },
});

export class Approvals {
  private readonly open = new Map<string, Entry>();
  readonly decided: DecidedApproval[] = [];
  private refusalsRecorded = 0;
  /** One-time approval links a decision was taken from: each decides once (docs/approvals.md). */
  private readonly linksUsed: string[] = [];
  private recentRefusals: MemoRefusal[] = [];
  constructor(
    private readonly events: EventLog,
    private readonly isCancelled: () => boolean,
    /** The session grants as the batch knows them, and the calls they allowed: shown in the memo. */
    private readonly grantsView: () => { grants: SessionGrant[]; uses: GrantUse[] },
    /**
     * From the memo the batch was started with (workflows/compat.ts MEMO_FLAGS): whether the
     * approvals memo is kept current, and whether a decision by signal writes it once, from the
     * ask it ends, instead of also in the handler.
     */
    private readonly flags: MemoFeatures,
  ) {
    // The signal works with nothing but the stock `temporal` CLI, so the digest is optional there.
    setHandler(decideSignal, (d) => this.decisionSignalled(d));
    // The update is what a page or the CLI sends after showing the card: it must carry the digest.
    setHandler(decideUpdate, (d) => this.decisionUpdated(d), { validator: (d) => decisionUpdateProblem(d) });
    setHandler(reassignSignal, (r) => this.reassigned(r));
  }

  /** A decision by signal: taken, refused and recorded, or verified first; it never throws. */
  private decisionSignalled(d: ApprovalDecision): void {
    if (malformed(d)) {
      log.warn('approval signal ignored', { problem: MALFORMED });
      return;
    }
    // A signal cannot be refused before it is in history, so it must never throw here: a throw
    // would fail this workflow task and every one after it, on every replay.
    const badField = depthProblem(d) ?? fieldProblem(d);
    if (badField) {
      this.recordRefusal(d, { code: 'malformed', message: badField }, 'signal');
      this.publish();
      return;
    }
    const refusal = this.refusalOf(d, false);
    if (refusal) this.recordRefusal(d, refusal, 'signal');
    else if (this.needsVerifying(d)) {
      // Verified by an activity: the handler goes on after this signal's workflow task.
      return void this.verifyThenTake(d, 'signal').catch((err) => log.warn('approver check failed', { err }));
    } else {
      const entry = this.open.get(d.approvalId)!;
      const voteRefused = this.take(entry, normalizeDecision(d), 'signal');
      if (voteRefused) this.recordRefusal(d, voteRefused, 'signal');
      // The ask waiting on it ends in this activation and publishes then (compat.ts,
      // MEMO_FLAGS.oneWritePerDecision); a quorum vote that leaves it waiting publishes here.
      else if (this.flags.oneWritePerDecision && entry.decision) return;
    }
    this.publish();
  }

  /** A decision by update: taken (the update returns once its ask ended), or refused with a failure. */
  private async decisionUpdated(d: ApprovalDecision): Promise<DecisionApplied> {
    // Too deep to walk: refused here, where it is recorded, rather than by the validator.
    const tooDeep = depthProblem(d);
    const refusal: DecisionRefusal | undefined = tooDeep
      ? { code: 'malformed', message: tooDeep }
      : this.refusalOf(d, true);
    if (refusal) {
      this.recordRefusal(d, refusal, 'update');
      this.publish();
      throw ApplicationFailure.create({
        message: refusal.message,
        type: DECISION_REFUSED,
        nonRetryable: true,
        details: [refusal],
      });
    }
    const entry = this.open.get(d.approvalId)!;
    let late: DecisionRefusal | undefined;
    if (this.needsVerifying(d)) late = await this.verifyThenTake(d, 'update');
    else {
      late = this.take(entry, normalizeDecision(d), 'update');
      if (late) this.recordRefusal(d, late, 'update');
    }
    if (late)
      throw ApplicationFailure.create({
        message: late.message,
        type: DECISION_REFUSED,
        nonRetryable: true,
        details: [late],
      });
    // A quorum vote that leaves the ask waiting: recorded, and the answer is the tally.
    if (entry.pending.quorum && !entry.decision) {
      this.publish();
      return { approvalId: d.approvalId, outcome: 'pending', quorum: entry.pending.quorum };
    }
    await condition(() => this.decided.some((x) => x.approvalId === d.approvalId));
    const done = this.decided.find((x) => x.approvalId === d.approvalId)!;
    return { approvalId: d.approvalId, outcome: done.outcome, ...(done.by ? { by: done.by } : {}) };
  }

  /** Hands a pending ask to someone else: recorded, published, announced. */
  private reassigned(r: { approvalId: string; to: string; by?: string; reason?: string }): void {
    const entry = r && typeof r.approvalId === 'string' ? this.open.get(r.approvalId) : undefined;
    if (!entry || entry.decision || typeof r.to !== 'string' || !r.to.trim()) {
      log.warn('reassign signal ignored: no such pending approval, or no "to"', {});
      return;
    }
    const from = entry.pending.assignee;
    entry.pending.assignee = r.to.trim().slice(0, 200);
    this.events.record('approval/reassigned', {
      id: entry.pending.approvalId,
      callId: entry.pending.callId,
      ...(from ? { from } : {}),
      to: entry.pending.assignee,
      ...(typeof r.by === 'string' && r.by ? { by: r.by.slice(0, 200) } : {}),
      ...(typeof r.reason === 'string' && r.reason ? { reason: r.reason.slice(0, 2000) } : {}),
    });
    this.publish();
    if (entry.notify)
      this.notify(entry.pending, 'reassigned', from, typeof r.by === 'string' ? r.by : undefined, entry.notifyTargets);
  }

  /** Sends a notice through the worker's notifiers; a failure is the activity's to retry, never the ask's. */
  private notify(p: PendingApproval, kind: NoticeKind, from?: string, by?: string, targets?: string[]): void {
    void notifier
      .notifyApprovers({
        kind,
        approvalId: p.approvalId,
        workflowId: p.workflowId,
        sessionId: p.sessionId,
        callId: p.callId,
        toolName: p.toolName,
        title: p.card.title,
        argsDigest: p.argsDigest,
        expiresAt: p.expiresAt,
        ...(p.assignee ? { assignee: p.assignee } : {}),
        ...(from ? { from } : {}),
        ...(by ? { by } : {}),
        ...(targets ? { targets } : {}),
        ...(p.policy ? { policy: p.policy } : {}),
        at: new Date().toISOString(),
      })
      .catch((err) => log.warn('approval notice not delivered', { kind, err: String(err) }));
  }

  /** A decision with a signed identity, or for an ask that only a verified approver may decide. */
  private needsVerifying(d: ApprovalDecision): boolean {
    return !!d.signedIdentity || this.open.get(d.approvalId)?.pending.identityRequired === true;
  }

  /**
   * Verifies the decision's signed identity in an activity (the token is opened only there), then
   * takes the decision under the verified subject, or records why not. Returns the refusal.
   */
  private async verifyThenTake(d: ApprovalDecision, via: 'signal' | 'update'): Promise<DecisionRefusal | undefined> {
    const entry = this.open.get(d.approvalId)!;
    const p = entry.pending;
    let refusal: DecisionRefusal | undefined;
    let verified: VerifiedApprover | undefined;
    if (!d.signedIdentity) {
      refusal = {
        code: 'unverified',
        message: `${p.toolName} may only be decided by a verified approver${groupSetsOfAsk(p).length ? ` in ${describeGroupSets(groupSetsOfAsk(p))}` : ''}: send the decision with a signed identity (\`npx sluice approve --token-file FILE\`, or the inbox behind your sign-in proxy); a typed name is not enough`,
        callId: p.callId,
      };
    } else {
      const r = await identity.verifyApprover({
        sealed: d.signedIdentity,
        approvalId: d.approvalId,
        argsDigest: p.argsDigest,
        // One list as asks always sent it (recorded histories replay); several as groupSets.
        groups: p.approverGroups ?? [],
        ...(p.approverGroupSets ? { groupSets: p.approverGroupSets } : {}),
        toolName: p.toolName,
      });
      // Every list must hold, whatever the worker that verified checked (pipeline/quorum.ts).
      const outside = r.ok ? groupsProblem(groupSetsOfAsk(p), r.groups) : undefined;
      if (r.ok && outside)
        refusal = {
          code: 'wrong-group',
          message: `${r.subject} may not decide ${p.toolName}: it ${outside}; nothing was decided`,
          callId: p.callId,
          by: r.subject,
        };
      else if (r.ok) verified = { subject: r.subject, groups: r.groups, ...(r.issuer ? { issuer: r.issuer } : {}) };
      else
        refusal = {
          code: r.code,
          message: `${r.problem}; nothing was decided`,
          callId: p.callId,
          ...(r.subject ? { by: r.subject } : {}),
        };
    }
    // Another decision may have settled the ask while the identity was checked.
    refusal ??= this.refusalOf({ ...d, signedIdentity: undefined }, false);
    if (refusal) {
      this.recordRefusal({ ...d, ...(refusal.by ? { by: refusal.by } : {}) }, refusal, via);
      this.publish();
      return refusal;
    }
    refusal = this.take(entry, { ...normalizeDecision(d), by: verified!.subject, verified: verified! }, via);
    if (refusal) this.recordRefusal({ ...d, by: verified!.subject }, refusal, via);
    this.publish();
    return refusal;
  }

  private useLink(d: ApprovalDecision): void {
    if (d.link) this.linksUsed.push(d.link.id);
  }

  /**
   * Takes a decision for its ask: at once, or, for a quorum ask, as one approver's vote (recorded
   * as it comes) that ends the ask when the quorum is met or the rejections deny it. Returns why a
   * vote cannot count: no name, an approver who already voted (names compared normalised,
   * verified approvers by subject), or the session's own user approving (two-person rule).
   */
  private take(entry: Entry, d: NonNullable<Entry['decision']>, via: 'signal' | 'update'): DecisionRefusal | undefined {
    const q = entry.pending.quorum;
    if (!q) {
      entry.decision = d;
      this.useLink(d);
      return undefined;
    }
    const { callId, toolName } = entry.pending;
    const by = d.by ?? '';
    const refused = voteRefusal(
      q,
      { by, decision: d.decision, ...(d.scope ? { scope: d.scope } : {}) },
      toolName,
      callId,
    );
    if (refused) return refused;
    const vote = {
      by,
      at: new Date().toISOString(),
      ...(d.verified ? { verified: true as const } : {}),
      ...(d.reason ? { reason: d.reason } : {}),
      ...(d.requestId ? { requestId: d.requestId } : {}),
    };
    const decided = countVote(q, d.decision, vote);
    this.useLink(d);
    this.events.record('approval/vote', {
      id: entry.pending.approvalId,
      callId,
      decision: d.decision,
      by,
      ...(d.reason ? { reason: d.reason } : {}),
      ...(d.verified ? { verified: d.verified } : {}),
      approvals: q.approvals.length,
      rejections: q.rejections.length,
      quorum: q.needed,
      via,
      ...(d.link ? { link: d.link.id } : {}),
    });
    const voters = (votes: typeof q.approvals) => votes.map((v) => v.by);
    const reasons = (votes: typeof q.approvals) =>
      votes
        .filter((v) => v.reason)
        .map((v) => `${v.by}: ${v.reason}`)
        .join('; ');
    const ending = (votes: typeof q.approvals) => ({
      approvalId: entry.pending.approvalId,
      decision: d.decision,
      by: voters(votes).join(', ').slice(0, 200),
      approvers: voters(votes),
      ...(reasons(votes) ? { reason: reasons(votes).slice(0, 2000) } : {}),
      ...(d.requestId ? { requestId: d.requestId } : {}),
      ...(d.link ? { link: d.link } : {}),
    });
    if (decided) entry.decision = ending(decided === 'approve' ? q.approvals : q.rejections);
    return undefined;
  }

  get pending(): PendingApproval[] {
    return [...this.open.values()].filter((e) => !e.decision).map((e) => e.pending);
  }

  /** Why a decision cannot be taken, in words for the person who sent it; undefined if it can. */
  refusalOf(d: ApprovalDecision, digestRequired: boolean): DecisionRefusal | undefined {
    const linkRefused = d.link ? this.linkRefusal(d, d.link) : undefined;
    if (linkRefused) return linkRefused;
    const done = this.decided.find((e) => e.approvalId === d.approvalId);
    if (done) {
      const ended = { callId: done.callId, outcome: done.outcome, ...(done.by ? { by: done.by } : {}) };
      if (done.expired) {
        return {
          code: 'expired',
          message: `approval ${d.approvalId} expired at ${done.decidedAt}: nobody decided before the deny timeout, so the call was denied`,
          ...ended,
        };
      }
      return {
        code: 'decided',
        message: `approval ${d.approvalId} was already decided: ${done.outcome}${done.by ? ` by ${done.by}` : ''}`,
        ...ended,
      };
    }
    const entry = this.open.get(d.approvalId);
    if (!entry)
      return {
        code: 'unknown',
        message: `no approval ${d.approvalId} is pending in this batch; list pending ones with \`npx sluice approvals\``,
      };
    const callId = entry.pending.callId;
    if (entry.decision) {
      return {
        code: 'decided',
        message: `approval ${d.approvalId} was already decided by ${entry.decision.by ?? 'someone else'}`,
        callId,
        ...(entry.decision.by ? { by: entry.decision.by } : {}),
      };
    }
    const elicited = elicitedRefusal(d, entry.pending);
    if (elicited) return elicited;
    if (d.argsDigest === undefined || d.argsDigest === null || d.argsDigest === '') {
      if (!digestRequired) return this.grantRefusal(d, entry);
      return {
        code: 'digest-missing',
        message: `a decision sent as an update must carry the argsDigest of the arguments you were shown (${entry.pending.toolName} call ${callId}); read it from \`npx sluice approvals --json\` or the sluice.state query`,
        callId,
      };
    }
    if (d.argsDigest !== entry.pending.argsDigest && d.argsDigest !== entry.alsoAcceptsDigest) {
      return {
        code: 'digest-mismatch',
        message: `the arguments you were shown (digest ${String(d.argsDigest).slice(0, 80)}) are not the ones this call would run with (${entry.pending.argsDigest}); reload and decide again`,
        callId,
      };
    }
    return this.grantRefusal(d, entry);
  }

  /**
   * A decision through a one-time link: checked here, by the batch, so a restart of the inbox or a
   * second inbox cannot use a link twice (pipeline/approval-rules.ts).
   */
  private linkRefusal(d: ApprovalDecision, link: NonNullable<ApprovalDecision['link']>): DecisionRefusal | undefined {
    return linkRefusal(this.linksUsed, link, d.approvalId, Date.now());
  }

  /** A session grant whose pins would not hold for the call asked about (they may only narrow). */
  private grantRefusal(d: ApprovalDecision, entry: Entry): DecisionRefusal | undefined {
    if (d.decision !== 'approve' || d.scope !== 'session') return undefined;
    const problem = pinsProblem(d.pins, entry.pending.arguments);
    if (!problem) return undefined;
    return {
      code: 'bad-pins',
      message: `cannot allow ${entry.pending.toolName} for this session: ${problem}`,
      callId: entry.pending.callId,
    };
  }

  private recordRefusal(d: ApprovalDecision, refusal: DecisionRefusal, via: 'signal' | 'update'): void {
    log.info(`approval ${via} refused`, { approvalId: d.approvalId.slice(0, 200), code: refusal.code });
    this.recentRefusals = [
      ...this.recentRefusals,
      {
        approvalId: d.approvalId.slice(0, 200),
        code: refusal.code,
        message: refusal.message,
        via,
        at: new Date().toISOString(),
        ...(typeof d.by === 'string' && d.by ? { by: d.by.slice(0, 200) } : {}),
        ...(typeof d.requestId === 'string' && d.requestId ? { requestId: d.requestId.slice(0, 100) } : {}),
      },
    ].slice(-MEMO_RECENT);
    if (this.events.isClosed || this.refusalsRecorded >= MAX_REFUSAL_EVENTS) return;
    this.refusalsRecorded++;
    this.events.record('approval/refused', {
      id: d.approvalId.slice(0, 200),
      ...(refusal.callId ? { callId: refusal.callId } : {}),
      decision: d.decision,
      ...(typeof d.by === 'string' && d.by ? { by: d.by.slice(0, 200) } : {}),
      ...(typeof d.argsDigest === 'string' && d.argsDigest ? { argsDigest: d.argsDigest.slice(0, 200) } : {}),
      code: refusal.code,
      problem: refusal.message,
      via,
    });
  }

  /**
   * Asks for a one-shot decision on one call and records the asked/decided pair: the ask is
   * recorded, then ended at once (a tool never approved, no approval channel) or waited out, and
   * its ending recorded. The steps below issue their commands in the order this one function did
   * before it was split (recorded histories replay).
   */
  async ask(ref: CallRef, opts: AskOptions): Promise<DecidedApproval> {
    const approvalId = uuid4();
    // A quorum only for an ask that waits for people (UNMARKED_CHANGES.approvalQuorum).
    const quorum = opts.quorum && opts.channel && opts.policy !== 'never' ? opts.quorum : undefined;
    // Shown with the ask: data only, no marker (compat.ts, UNMARKED_CHANGES.pendingApprovalPolicy).
    const boundTo = opts.boundTo;
    const askedAt = new Date();
    const pending = pendingAsk(ref, opts, approvalId, askedAt, quorum, boundTo);
    this.events.record('approval/asked', {
      id: approvalId,
      toolName: ref.name,
      callId: ref.callId,
      ...(opts.reason ? { reason: opts.reason } : {}),
      card: opts.card,
      argsDigest: ref.argsDigest,
      expiresAt: pending.expiresAt,
      ...(ref.parentCallId ? { parentCallId: ref.parentCallId } : {}),
      ...(quorum ? { quorum: quorum.quorum } : {}),
      ...(boundTo ? { policy: boundTo } : {}),
    });
    let ended: AskEnding;
    if (opts.policy === 'never') {
      ended = { outcome: 'rejected', by: 'policy', reason: opts.reason ?? `${ref.name} is never approved` };
    } else if (!opts.channel) {
      ended = {
        outcome: 'unavailable',
        reason: opts.reason ?? 'approval required, and no approval channel is configured',
      };
    } else ended = await this.awaitDecision(pending, opts);
    return this.recordEnding(pending, ended, opts);
  }

  /** Opens the ask for decisions, waits for one (or the deny timeout, a cancel, an abandon), closes it. */
  private async awaitDecision(pending: PendingApproval, opts: AskOptions): Promise<AskEnding> {
    const entry: Entry = {
      pending,
      ...(opts.notify ? { notify: true } : {}),
      ...(opts.notifyTargets ? { notifyTargets: opts.notifyTargets } : {}),
      ...(opts.alsoAcceptsDigest ? { alsoAcceptsDigest: opts.alsoAcceptsDigest } : {}),
    };
    this.open.set(pending.approvalId, entry);
    this.publish();
    const settled = () => entry.decision !== undefined || this.isCancelled() || opts.abandoned?.() !== undefined;
    const lc = opts.lifecycle;
    if (!opts.notify && !lc?.escalateAfterMs && !lc?.remindBeforeMs) {
      await condition(settled, opts.timeoutMs);
    } else {
      // Lifecycle: notices and timers only for asks that have them, so other histories replay unchanged.
      if (opts.notify) this.notify(pending, 'asked', undefined, undefined, opts.notifyTargets);
      await this.lifecycleWait(pending, opts, settled);
    }
    const ended = this.endingOf(entry, opts);
    this.open.delete(pending.approvalId);
    return ended;
  }

  /**
   * Waits out an ask with a lifecycle: escalates and reminds at their times (each recorded and
   * announced) while nobody decides, then waits for the deny timeout.
   */
  private async lifecycleWait(pending: PendingApproval, opts: AskOptions, settled: () => boolean): Promise<void> {
    const lc = opts.lifecycle;
    const askedAt = Date.parse(pending.askedAt);
    const expiresAt = Date.parse(pending.expiresAt);
    const steps: { at: number; kind: 'escalate' | 'remind' }[] = [];
    if (lc?.escalateAfterMs && lc.escalateTo && lc.escalateAfterMs < opts.timeoutMs)
      steps.push({ at: askedAt + lc.escalateAfterMs, kind: 'escalate' });
    if (lc?.remindBeforeMs && lc.remindBeforeMs < opts.timeoutMs)
      steps.push({ at: expiresAt - lc.remindBeforeMs, kind: 'remind' });
    steps.sort((a, b) => a.at - b.at);
    for (const step of steps) {
      if (await condition(settled, Math.max(1, step.at - Date.now()))) return;
      if (step.kind === 'escalate') {
        const from = pending.assignee;
        pending.assignee = lc!.escalateTo!;
        this.events.record('approval/escalated', {
          id: pending.approvalId,
          callId: pending.callId,
          ...(from ? { from } : {}),
          to: pending.assignee,
          afterMs: lc!.escalateAfterMs!,
        });
        this.publish();
        if (opts.notify) this.notify(pending, 'escalated', from, undefined, opts.notifyTargets);
      } else {
        this.events.record('approval/reminded', {
          id: pending.approvalId,
          callId: pending.callId,
          expiresAt: pending.expiresAt,
          ...(pending.assignee ? { assignee: pending.assignee } : {}),
        });
        if (opts.notify) this.notify(pending, 'reminder', undefined, undefined, opts.notifyTargets);
      }
    }
    await condition(settled, Math.max(1, expiresAt - Date.now()));
  }

  /**
   * How a waited-out ask ended: by its decision (an approval for the session makes a grant, which
   * answers the other open asks it covers), by a cancel, by being abandoned, or at the deny timeout.
   */
  private endingOf(entry: Entry, opts: AskOptions): AskEnding {
    const { pending } = entry;
    const d = entry.decision;
    const abandoned = opts.abandoned?.();
    if (d) {
      const approved = d.decision === 'approve';
      const session = approved && (d.scope === 'session' || d.grantId !== undefined);
      const ended: AskEnding = {
        outcome: approved ? (session ? 'allowed-session' : 'allowed-once') : 'rejected',
        ...(d.by ? { by: d.by } : {}),
        ...(d.reason ? { reason: d.reason } : {}),
        ...(d.requestId ? { requestId: d.requestId } : {}),
        ...(d.grantId ? { grantId: d.grantId } : {}),
        ...(d.verified ? { verified: d.verified } : {}),
        ...(d.approvers ? { approvers: d.approvers } : {}),
        ...(d.link ? { link: d.link.id } : {}),
      };
      if (session && !d.grantId) {
        ended.grant = {
          id: `grant-${uuid4()}`,
          toolName: pending.toolName,
          pins: cleanPins(d.pins),
          ...(d.by ? { by: d.by } : {}),
          ...(d.reason ? { reason: d.reason } : {}),
          approvalId: pending.approvalId,
          callId: pending.callId,
          workflowId: pending.workflowId,
          grantedAt: new Date().toISOString(),
        };
        ended.grantId = ended.grant.id;
        this.coverOpenAsks(ended.grant);
      }
      return ended;
    }
    if (this.isCancelled()) return { outcome: 'cancelled' };
    if (abandoned !== undefined) return { outcome: 'cancelled', reason: abandoned };
    return {
      outcome: 'unavailable',
      reason: `no decision within ${Math.round(opts.timeoutMs / 1000)}s (deny timeout)`,
      expired: true,
    };
  }

  /** Keeps how the ask ended (the memo shows it) and records `approval/decided`. */
  private recordEnding(pending: PendingApproval, ended: AskEnding, opts: AskOptions): DecidedApproval {
    const decidedAt = new Date();
    const { link, ...outcome } = ended;
    const result: DecidedApproval = {
      approvalId: pending.approvalId,
      callId: pending.callId,
      ...outcome,
      decidedAt: decidedAt.toISOString(),
    };
    this.decided.push(result);
    if (opts.channel && opts.policy !== 'never') this.publish();
    this.events.record('approval/decided', {
      id: pending.approvalId,
      callId: pending.callId,
      outcome: result.outcome,
      ...(result.by ? { by: result.by } : {}),
      ...(result.reason ? { reason: result.reason } : {}),
      ...(result.expired ? { expired: true } : {}),
      ...(result.grant ? { grant: result.grant } : {}),
      ...(result.grantId && !result.grant ? { grantId: result.grantId } : {}),
      ...(result.verified ? { verified: result.verified } : {}),
      ...(result.approvers ? { approvers: result.approvers } : {}),
      ...(link ? { link } : {}),
      latencyMs: decidedAt.getTime() - Date.parse(pending.askedAt),
    });
    return result;
  }

  /** A new session grant also answers the asks already open in this batch that it covers. */
  private coverOpenAsks(grant: SessionGrant): void {
    for (const [approvalId, entry] of this.open) {
      // A quorum ask is never answered by a grant: its approvers decide each call.
      if (
        entry.decision ||
        entry.pending.quorum ||
        !grantCovers(grant, entry.pending.toolName, entry.pending.arguments)
      )
        continue;
      entry.decision = {
        approvalId,
        decision: 'approve',
        ...(grant.by ? { by: grant.by } : {}),
        reason: `covered by session grant ${grant.id}`,
        grantId: grant.id,
      };
    }
  }

  /** Something the memo shows changed outside an ask (a call ran on a session grant). */
  republish(): void {
    this.publish();
  }

  /**
   * What a person needs to decide, kept where the server answers without a worker: the search
   * attributes find the batch, the memo holds the cards, digests and expiries, and how recent
   * decisions ended (for `sluice approve --wait`). Both are written when the workflow task
   * completes, so they are current whenever no worker runs.
   */
  private publish(): void {
    const ids = [...this.open.keys()].filter((id) => !this.open.get(id)!.decision);
    const waiting = [...this.open.keys()];
    if (this.publishedIds === undefined || this.publishedIds.join(',') !== waiting.join(',')) {
      upsertSearchAttributes([
        { key: AWAITING_APPROVAL, value: waiting.length > 0 },
        { key: PENDING_APPROVALS, value: waiting },
      ]);
      this.publishedIds = waiting;
    }
    if (!this.flags.approvalsMemo) return;
    const memo: ApprovalsMemo = {
      v: 1,
      pending: ids.map((id) => memoPending(this.open.get(id)!.pending)),
      decided: this.decided.slice(-MEMO_RECENT).map((d) => ({
        approvalId: d.approvalId,
        callId: d.callId,
        outcome: d.outcome,
        decidedAt: d.decidedAt,
        ...(d.by ? { by: d.by } : {}),
        ...(d.reason ? { reason: d.reason.slice(0, 500) } : {}),
        ...(d.expired ? { expired: true as const } : {}),
        ...(d.requestId ? { requestId: d.requestId } : {}),
        ...(d.verified ? { verified: d.verified } : {}),
        ...(d.approvers ? { approvers: d.approvers } : {}),
      })),
      refused: this.recentRefusals,
    };
    const { grants, uses } = this.grantsView();
    const given = this.decided.flatMap((d) => (d.grant ? [d.grant] : []));
    const all = [...grants, ...given.filter((g) => !grants.some((x) => x.id === g.id))];
    if (all.length) memo.grants = all.slice(-MEMO_RECENT);
    if (uses.length) memo.grantUses = uses.slice(-MEMO_RECENT);
    if (this.linksUsed.length) memo.linksUsed = this.linksUsed.slice(-50);
    upsertMemo({ [APPROVALS_MEMO]: memo });
  }
  private publishedIds?: string[];
}

/**
 * How to ask about one call. `abandoned` names why nobody needs the answer any more (a sub-call
 * whose program ended): the wait then ends as cancelled with that reason.
 */
export interface AskOptions {
  reason?: string;
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
  /** The policy the ask was raised under (PendingApproval.policy). */
  boundTo?: PolicyBinding;
}

/** How an ask ended, before it is kept as a DecidedApproval (`link`: the one-time link it was decided by). */
interface AskEnding {
  outcome: ApprovalOutcome;
  by?: string;
  reason?: string;
  expired?: true;
  requestId?: string;
  grant?: SessionGrant;
  grantId?: string;
  verified?: VerifiedApprover;
  approvers?: string[];
  link?: string;
}

/** The pending approval an ask shows: the call, its card and digest, who may decide, and until when. */
function pendingAsk(
  ref: CallRef,
  opts: AskOptions,
  approvalId: string,
  askedAt: Date,
  quorum: QuorumSettings | undefined,
  boundTo: PolicyBinding | undefined,
): PendingApproval {
  return {
    approvalId,
    workflowId: workflowInfo().workflowId,
    sessionId: ref.sessionId,
    turn: ref.turn,
    step: ref.step,
    callId: ref.callId,
    toolName: ref.name,
    ...(opts.reason ? { reason: opts.reason } : {}),
    card: opts.card,
    arguments: ref.args,
    argsDigest: ref.argsDigest,
    askedAt: askedAt.toISOString(),
    expiresAt: new Date(askedAt.getTime() + opts.timeoutMs).toISOString(),
    ...(ref.parentCallId ? { parentCallId: ref.parentCallId } : {}),
    ...(opts.identityRequired ? { identityRequired: true as const } : {}),
    // One list keeps the shape every reader knows; several are kept apart (each must hold).
    ...(opts.approverGroupSets?.length === 1 ? { approverGroups: opts.approverGroupSets[0] } : {}),
    ...(opts.approverGroupSets && opts.approverGroupSets.length > 1
      ? { approverGroupSets: opts.approverGroupSets }
      : {}),
    ...(opts.lifecycle?.assignee ? { assignee: opts.lifecycle.assignee } : {}),
    ...(quorum
      ? {
          quorum: {
            needed: quorum.quorum,
            rejectBy: quorum.rejectBy ?? 'first',
            ...(quorum.groups?.length ? { groups: quorum.groups } : {}),
            ...(quorum.groupSets?.length ? { groupSets: quorum.groupSets } : {}),
            ...(opts.sessionUser ? { sessionUser: opts.sessionUser.slice(0, 200) } : {}),
            approvals: [],
            rejections: [],
          },
        }
      : {}),
    ...(boundTo ? { policy: boundTo } : {}),
  };
}

/** The group lists an ask requires of a verified approver: one (`approverGroups`) or several. */
function groupSetsOfAsk(p: PendingApproval): string[][] {
  return p.approverGroupSets ?? (p.approverGroups?.length ? [p.approverGroups] : []);
}

/** Only garbage is dropped without a trace (the update is rejected); every well-formed refusal is recorded. */
function decisionUpdateProblem(d: ApprovalDecision): void {
  if (malformed(d)) throw new Error(MALFORMED);
  // The handler records it as a refusal; fieldProblem would walk it.
  if (depthProblem(d)) return;
  const badField = fieldProblem(d);
  if (badField) throw new Error(badField);
}

function malformed(d: unknown): boolean {
  const x = d as Partial<ApprovalDecision> | null;
  return (
    !x ||
    typeof x !== 'object' ||
    typeof x.approvalId !== 'string' ||
    !x.approvalId ||
    (x.decision !== 'approve' && x.decision !== 'deny')
  );
}

/**
 * How deep a decision may nest: a pin's value sits three levels down (decision, pins, pin) and
 * matches an argument value, which nests at most MAX_JSON_DEPTH deep from the arguments' root.
 */
const MAX_DECISION_DEPTH = MAX_JSON_DEPTH + 3;

/**
 * A decision nested too deep for the walks after it (the pin shape check, the field check, the
 * payload converter): checked first, without recursion, over the whole decision. A stack overflow
 * in a handler fails the workflow task on every replay, and with it the deny timeout and every
 * later decision.
 */
function depthProblem(d: ApprovalDecision): string | undefined {
  if (!nestsDeeperThan(d, MAX_DECISION_DEPTH)) return undefined;
  return `malformed decision: it nests arrays/objects more than ${MAX_DECISION_DEPTH} levels deep (in "pins", "scope" or another field); nothing was decided. ${MALFORMED.slice('malformed decision: '.length)}`;
}

/** Why an otherwise well-formed decision carries an optional field of the wrong type. */
function fieldProblem(d: ApprovalDecision): string | undefined {
  for (const key of ['argsDigest', 'by', 'reason', 'requestId', 'signedIdentity', 'mcpClient'] as const) {
    const v: unknown = d[key];
    if (v !== undefined && v !== null && typeof v !== 'string')
      return `malformed decision: "${key}" must be a string (got ${Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`}); ${MALFORMED.slice('malformed decision: '.length)}`;
  }
  const link = d.link as unknown;
  if (
    link !== undefined &&
    link !== null &&
    (typeof link !== 'object' ||
      ['id', 'approvalId', 'expiresAt'].some((k) => typeof (link as Record<string, unknown>)[k] !== 'string'))
  )
    return 'malformed decision: "link" must be {"id", "approvalId", "expiresAt"} (strings), as the inbox sends it';
  if (d.scope !== undefined && d.scope !== null && d.scope !== 'once' && d.scope !== 'session')
    return `malformed decision: "scope" must be "once" or "session" (got ${JSON.stringify(d.scope).slice(0, 40)})`;
  return undefined;
}

/** The memo's copy of a pending ask: whole, except arguments too large for a memo. */
function memoPending(p: PendingApproval): PendingApproval {
  const args = JSON.stringify(p.arguments);
  if (args.length <= MEMO_ARGUMENT_CHARS) return p;
  return { ...p, arguments: `${args.slice(0, MEMO_ARGUMENT_CHARS)}…`, argumentsTruncated: true };
}

function normalizeDecision(d: ApprovalDecision): ApprovalDecision {
  return {
    approvalId: d.approvalId,
    decision: d.decision,
    // A relayed form answer is recorded as the client's, unverified, whatever name it carried.
    ...(typeof d.mcpClient === 'string'
      ? { by: elicitedBy(d.mcpClient) }
      : typeof d.by === 'string' && d.by
        ? { by: d.by.slice(0, 200) }
        : {}),
    ...(typeof d.reason === 'string' && d.reason ? { reason: d.reason.slice(0, 2000) } : {}),
    ...(typeof d.requestId === 'string' && d.requestId ? { requestId: d.requestId.slice(0, 100) } : {}),
    ...(d.link
      ? {
          link: {
            id: d.link.id.slice(0, 100),
            approvalId: d.link.approvalId.slice(0, 200),
            expiresAt: d.link.expiresAt.slice(0, 40),
          },
        }
      : {}),
    ...(d.decision === 'approve' && d.scope === 'session'
      ? { scope: 'session' as const, pins: cleanPins(d.pins) }
      : {}),
  };
}
