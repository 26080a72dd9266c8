// Approval lives in the workflow, not in any process: a one-shot wait per ask, answered by a
// signal or an update, with a deny timeout. The first valid decision wins; every other decision
// is refused, and the refusal is recorded as `approval/refused` so an auditor sees it. This file
// asks and takes decisions; the rest of the folder holds what they are made of: the shared state
// (book.ts), a decision's shape (shape.ts), refusals (refusals.ts), quorum votes (votes.ts),
// verified approvers (identity.ts), the lifecycle (lifecycle.ts), notices (notices.ts), endings
// (endings.ts), the memo (memo.ts) and the pending ask itself (pending.ts).
import { ApplicationFailure, condition, log, setHandler, uuid4 } from '@temporalio/workflow';
import { askedEventOf, definedFields } from '../../pipeline/ask';
import type {
  ApprovalDecision,
  DecidedApproval,
  DecisionApplied,
  DecisionRefusal,
  PendingApproval,
} from '../../pipeline/types';
import type { CallRef } from '../../pipeline/stages';
import { DECISION_REFUSED, decideSignal, decideUpdate, reassignSignal } from '../definitions';
import { ApprovalBook, type AskEnding, type AskOptions, type Entry } from './book';
import { endingOf, recordEnding } from './endings';
import { needsVerifying, verifyThenTake } from './identity';
import { lifecycleWait, reassign } from './lifecycle';
import { publish } from './memo';
import { notify } from './notices';
import { pendingAsk } from './pending';
import { recordRefusal, refusalOf } from './refusals';
import { decisionUpdateProblem, depthProblem, fieldProblem, MALFORMED, malformed, normalizeDecision } from './shape';
import { take } from './votes';

export type { AskOptions } from './book';

export class Approvals {
  private readonly book: ApprovalBook;

  constructor(...state: ConstructorParameters<typeof ApprovalBook>) {
    this.book = new ApprovalBook(...state);
    // The signal works with nothing but the stock `temporal` CLI, so the digest is optional there.
    setHandler(decideSignal, (d) => this.decisionSignalled(d));
    // The update is what a page or the CLI sends after showing the card: it must carry the digest.
    setHandler(decideUpdate, (d) => this.decisionUpdated(d), { validator: (d) => decisionUpdateProblem(d) });
    setHandler(reassignSignal, (r) => reassign(this.book, r));
  }

  /** How the batch's asks ended, in order. */
  get decided(): DecidedApproval[] {
    return this.book.decided;
  }

  get pending(): PendingApproval[] {
    return this.book.pending;
  }

  /** Why a decision cannot be taken, in words for the person who sent it; undefined if it can. */
  refusalOf(d: ApprovalDecision, digestRequired: boolean): DecisionRefusal | undefined {
    return refusalOf(this.book, d, digestRequired);
  }

  /** Something the memo shows changed outside an ask (a call ran on a session grant). */
  republish(): void {
    publish(this.book);
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
      recordRefusal(this.book, d, { code: 'malformed', message: badField }, 'signal');
      publish(this.book);
      return;
    }
    const refusal = refusalOf(this.book, d, false);
    if (refusal) recordRefusal(this.book, d, refusal, 'signal');
    else if (needsVerifying(this.book, d)) {
      // Verified by an activity: the handler goes on after this signal's workflow task.
      return void verifyThenTake(this.book, d, 'signal').catch((err) => log.warn('approver check failed', { err }));
    } else {
      const entry = this.book.open.get(d.approvalId)!;
      const voteRefused = take(this.book, entry, normalizeDecision(d), 'signal');
      if (voteRefused) recordRefusal(this.book, d, voteRefused, 'signal');
      // The ask waiting on it ends in this activation and publishes then (compat.ts,
      // MEMO_FLAGS.oneWritePerDecision); a quorum vote that leaves it waiting publishes here.
      else if (this.book.flags.oneWritePerDecision && entry.decision) return;
    }
    publish(this.book);
  }

  /** A decision by update: taken (the update returns once its ask ended), or refused with a failure. */
  private async decisionUpdated(d: ApprovalDecision): Promise<DecisionApplied> {
    // Too deep to walk: refused here, where it is recorded, rather than by the validator.
    const tooDeep = depthProblem(d);
    const refusal: DecisionRefusal | undefined = tooDeep
      ? { code: 'malformed', message: tooDeep }
      : refusalOf(this.book, d, true);
    if (refusal) {
      recordRefusal(this.book, d, refusal, 'update');
      publish(this.book);
      throw refused(refusal);
    }
    const entry = this.book.open.get(d.approvalId)!;
    let late: DecisionRefusal | undefined;
    if (needsVerifying(this.book, d)) late = await verifyThenTake(this.book, d, 'update');
    else {
      late = take(this.book, entry, normalizeDecision(d), 'update');
      if (late) recordRefusal(this.book, d, late, 'update');
    }
    if (late) throw refused(late);
    // A quorum vote that leaves the ask waiting: recorded, and the answer is the tally.
    if (entry.pending.quorum && !entry.decision) {
      publish(this.book);
      return { approvalId: d.approvalId, outcome: 'pending', quorum: entry.pending.quorum };
    }
    await condition(() => this.book.decided.some((x) => x.approvalId === d.approvalId));
    const done = this.book.decided.find((x) => x.approvalId === d.approvalId)!;
    return definedFields({ approvalId: d.approvalId, outcome: done.outcome, by: done.by || undefined });
  }

  /**
   * Asks for a one-shot decision on one call and records the asked/decided pair: the ask is
   * recorded, then ended at once (a tool never approved, no approval channel) or waited out, and
   * its ending recorded. The steps below issue their commands in the order this one function did
   * before it was split (recorded histories replay).
   */
  async ask(ref: CallRef, opts: AskOptions): Promise<DecidedApproval> {
    const approvalId = uuid4();
    const pending = pendingAsk(ref, opts, approvalId, new Date());
    this.book.events.record('approval/asked', askedEventOf(pending));
    const { reason } = opts.terms;
    let ended: AskEnding;
    if (opts.policy === 'never') {
      ended = { outcome: 'rejected', by: 'policy', reason: reason ?? `${ref.name} is never approved` };
    } else if (!opts.channel) {
      ended = {
        outcome: 'unavailable',
        reason: reason ?? 'approval required, and no approval channel is configured',
      };
    } else ended = await this.awaitDecision(pending, opts);
    return recordEnding(this.book, pending, ended, opts);
  }

  /** Opens the ask for decisions, waits for one (or the deny timeout, a cancel, an abandon), closes it. */
  private async awaitDecision(pending: PendingApproval, opts: AskOptions): Promise<AskEnding> {
    const entry: Entry = definedFields({
      pending,
      notify: opts.notify || undefined,
      notifyTargets: opts.notifyTargets,
      alsoAcceptsDigest: opts.alsoAcceptsDigest || undefined,
    });
    this.book.open.set(pending.approvalId, entry);
    publish(this.book);
    const settled = () => entry.decision !== undefined || this.book.isCancelled() || opts.abandoned?.() !== undefined;
    const lc = opts.lifecycle;
    if (!opts.notify && !lc?.escalateAfterMs && !lc?.remindBeforeMs) {
      await condition(settled, opts.timeoutMs);
    } else {
      // Lifecycle: notices and timers only for asks that have them, so other histories replay unchanged.
      if (opts.notify) notify(pending, 'asked', { targets: opts.notifyTargets });
      await lifecycleWait(this.book, pending, opts, settled);
    }
    const ended = endingOf(this.book, entry, opts);
    this.book.open.delete(pending.approvalId);
    return ended;
  }
}

/** A refused decision as the update's failure: the sender gets the refusal as its details. */
function refused(refusal: DecisionRefusal): ApplicationFailure {
  return ApplicationFailure.create({
    message: refusal.message,
    type: DECISION_REFUSED,
    nonRetryable: true,
    details: [refusal],
  });
}
