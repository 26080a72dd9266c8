// Stage 5 of a call, a person's approval, and what surrounds it: a session grant that answers
// for a person, the asks of later calls raised together with this one (asks-together), an ask
// raised ahead that its call's re-checked pre-execute no longer needs, and on a yes 6. the guards.
// The approvals themselves (the pending list, decisions, timeouts, the lifecycle's escalations
// and reminders) are approvals.ts's; call-pipeline.ts asks here when pre-execute says `ask`.
import { askTermsOf } from '../pipeline/ask';
import { addGrant, grantFor } from '../pipeline/grants';
import { ErrorCodes } from '../pipeline/errors';
import { approverRule } from '../pipeline/quorum';
import { bodyRunsLocally, type Gate, type ToolProfile } from '../pipeline/stages';
import type { Card, DecidedApproval, PolicyBinding, ToolCall } from '../pipeline/types';
import type { Admission, Lineage } from './admission';
import { approvalDenial, stageFailure } from './failures';
import type { BatchContext } from './batch-context';

const DEFAULT_APPROVAL_TIMEOUT_MS = 10 * 60_000;

export class ApprovalStage {
  /** Asks raised ahead of their call's admission, together with an earlier call's ask. */
  private readonly raised = new Map<ToolCall, RaisedAsk>();

  constructor(private readonly batch: BatchContext) {}

  /** The ask raised ahead for a batch call, taken over by its admission (a sub-call has none). */
  takeRaised(call: ToolCall, lineage: Lineage): RaisedAsk | undefined {
    const raised = lineage.parentCallId ? undefined : this.raised.get(call);
    this.raised.delete(call);
    return raised;
  }

  /**
   * An ask raised ahead, and pre-execute (re-run if a body changed the state since) no longer
   * asks: a person's "no" stands (the gate becomes a denial); otherwise the ask is withdrawn
   * (the promise to await) and pre-execute's verdict holds.
   */
  reconsider(raised: RaisedAsk, pre: { gate: Gate }): Promise<void> | undefined {
    raised.used = true;
    if (raised.ended?.outcome === 'rejected')
      pre.gate = {
        kind: 'denied',
        code: ErrorCodes.DENIED,
        message: approvalDenial('rejected', raised.ended.reason, raised.ended.by),
      };
    else if (!raised.ended)
      return this.withdraw(
        raised,
        `re-checked before it ran: pre-execute now ${pre.gate.kind === 'dispatch' ? 'lets it run without asking' : 'refuses it'}`,
      );
    return undefined;
  }

  /**
   * 5. A person decides; on a yes, 6. the guards run (monotonic: they can still deny). The asks of
   * later calls whose pre-execute (run ahead on the current state) also asks are raised now, so a
   * person sees and decides them together, in any order; each call still waits for its turn.
   */
  async askThenGuard(adm: Admission, ask: Extract<Gate, { kind: 'ask' }>, raised?: RaisedAsk): Promise<Gate> {
    const { call, lineage, ref, profile } = adm;
    this.batch.tracker.stage(call.id, 'awaiting-approval');
    let asked: Promise<DecidedApproval>;
    // A session grant never answers for a quorum: those approvers decide every call.
    const grant =
      raised || ask.approvers || profile?.quorum
        ? undefined
        : profile?.approval !== 'never'
          ? grantFor(this.batch.state, call.name, ref!.args)
          : undefined;
    if (raised) {
      // Raised with an earlier call's ask; its pre-execute, re-checked now, still asks.
      raised.used = true;
      asked = raised.decided;
    } else if (grant) {
      // A person allowed calls like this one for the session: no ask, a reference to the grant.
      this.batch.events.record('approval/grant-used', {
        grantId: grant.id,
        callId: call.id,
        toolName: call.name,
        argsDigest: ref!.argsDigest,
        ...(grant.by ? { grantedBy: grant.by } : {}),
        ...(lineage.parentCallId ? { parentCallId: lineage.parentCallId } : {}),
      });
      this.batch.grantUses.push({
        callId: call.id,
        grantId: grant.id,
        toolName: call.name,
        ...(grant.by ? { by: grant.by } : {}),
      });
      this.batch.approvals.republish();
      asked = Promise.resolve({
        approvalId: grant.approvalId,
        callId: call.id,
        outcome: 'allowed-session',
        grantId: grant.id,
        decidedAt: new Date().toISOString(),
      });
    } else {
      asked = this.batch.approvals.ask(ref!, {
        ...this.askOptions(ask, adm.card, profile),
        ...(lineage.parentCallId ? { abandoned: () => this.batch.ledger.parentEnded(lineage.parentCallId!) } : {}),
      });
    }
    // Only an ask that waits for a person gathers the others (no channel, or `never`, ends at once).
    if (
      !grant &&
      !lineage.parentCallId &&
      this.batch.input.options?.approvalChannel !== false &&
      profile?.approval !== 'never'
    )
      await this.raiseAsksAfter(call);
    const decided = await asked;
    // A new session grant joins the session state, which carries it to the session's later batches.
    if (decided.grant) addGrant(this.batch.state, decided.grant);
    if (decided.outcome !== 'allowed-once' && decided.outcome !== 'allowed-session')
      return {
        kind: 'denied',
        code: ErrorCodes.DENIED,
        message: approvalDenial(decided.outcome, decided.reason, decided.by),
      };
    return this.guard(adm, ask, raised);
  }

  /** 6. The guards after a yes: in the body's activity where they can be, else as their own stage. */
  private async guard(adm: Admission, ask: Extract<Gate, { kind: 'ask' }>, raised?: RaisedAsk): Promise<Gate> {
    // An ask bound to a policy (hooks/policy.ts): the guards judge the call again under the policy
    // of the worker that runs them. Histories recorded before carry no binding in their preflight
    // results, so their guards' input is as it was (compat.ts, UNMARKED_CHANGES.policyBinding).
    // An ask raised ahead was asked under the policy of the preflight that raised it.
    const askedUnder = raised ? raised.policy : ask.policy;
    // Where the preflight's worker can (compat.ts, UNMARKED_CHANGES.guardsInBody), the guards run
    // in the activity that runs the body, right before it: no stage of their own after the yes.
    // A local body keeps them apart: its retries run in the workflow task, and a guard may be slow.
    if (ask.guardsInBody && !bodyRunsLocally(adm.profile)) {
      adm.guardsFirst = askedUnder ? { askedUnder } : {};
      return { kind: 'dispatch' };
    }
    this.batch.tracker.stage(adm.call.id, 'guards');
    try {
      const guarded = await this.batch.runner.guards(askedUnder ? { ...adm.ref!, askedUnder } : adm.ref!);
      this.batch.events.recordAll(guarded.events);
      adm.preContexts = [...adm.preContexts, ...guarded.contexts];
      return guarded.gate;
    } catch (err) {
      return { kind: 'failed', code: ErrorCodes.PIPELINE_FAILED, message: stageFailure('guards', err).error!.message };
    }
  }

  private askOptions(ask: Extract<Gate, { kind: 'ask' }>, card: Card, profile: ToolProfile | undefined) {
    // The tool's approvers and the ask's hold together: the larger quorum, a voter in a group of
    // every list named (the tool's approverGroups, each quorum's groups), never a union of them.
    const { quorum, groupSets, identityRequired } = approverRule(profile, ask.approvers);
    return {
      terms: askTermsOf(ask),
      card,
      policy: profile?.approval ?? 'auto',
      timeoutMs:
        profile?.approvalTimeoutMs ?? this.batch.input.options?.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS,
      channel: this.batch.input.options?.approvalChannel !== false,
      ...(identityRequired ? { identityRequired: true } : {}),
      ...(groupSets.length ? { approverGroupSets: groupSets } : {}),
      ...(quorum
        ? {
            quorum,
            ...(this.batch.input.options?.sessionUser ? { sessionUser: this.batch.input.options.sessionUser } : {}),
          }
        : {}),
      ...((profile?.lifecycle ?? this.batch.input.options?.approvalLifecycle)
        ? { lifecycle: profile?.lifecycle ?? this.batch.input.options!.approvalLifecycle! }
        : {}),
      ...(profile?.notify ? { notify: true } : {}),
      ...(profile?.notify && this.batch.input.options?.notifiers
        ? { notifyTargets: this.batch.input.options.notifiers }
        : {}),
    };
  }

  /** Raises the asks of the later calls whose pre-execute asks too, each with its own tool/call first. */
  private async raiseAsksAfter(call: ToolCall): Promise<void> {
    let ahead;
    try {
      ahead = await this.batch.runner.asksAfter(call);
    } catch {
      return; // those calls ask on their turn, with their own pre-execute (which reports the failure)
    }
    for (const next of ahead) {
      if (this.batch.ledger.hasStarted(next.call) || this.raised.has(next.call) || this.batch.isCancelled()) continue;
      if (next.result.gate.kind !== 'ask') continue;
      // A call a session grant covers does not ask: it takes the grant on its turn.
      if (
        next.result.profile?.approval !== 'never' &&
        !next.result.profile?.quorum &&
        !next.result.gate.approvers &&
        grantFor(this.batch.state, next.call.name, next.ref.args)
      )
        continue;
      this.batch.ledger.recordStart(next.call, {});
      this.batch.tracker.stage(next.call.id, 'awaiting-approval');
      const entry: RaisedAsk = {
        decided: Promise.resolve(undefined as unknown as DecidedApproval),
        ...(next.result.gate.policy ? { policy: next.result.gate.policy } : {}),
      };
      // The digest people see is the worker's keyed one, as for an ask raised on the call's own
      // turn: the look-ahead's reference carries the workflow's plain sha-256, which would give
      // small arguments away. Decisions recorded before this carried the plain one: still taken.
      const keyed = next.result.argsDigest;
      const ref = keyed ? { ...next.ref, argsDigest: keyed } : next.ref;
      entry.decided = this.batch.approvals.ask(ref, {
        ...this.askOptions(next.result.gate, next.result.card, next.result.profile),
        abandoned: () => entry.withdrawn,
        ...(keyed && keyed !== next.ref.argsDigest ? { alsoAcceptsDigest: next.ref.argsDigest } : {}),
      });
      void entry.decided.then((d) => (entry.ended = d));
      this.raised.set(next.call, entry);
    }
  }

  /** Ends an ask raised ahead that its call no longer needs (re-checked, or settled before asking). */
  async withdraw(raised: RaisedAsk, why: string): Promise<void> {
    raised.withdrawn ??= why;
    await raised.decided;
  }
}

/** An ask raised ahead of its call's admission. */
export interface RaisedAsk {
  decided: Promise<DecidedApproval>;
  /** How it ended, once it has. */
  ended?: DecidedApproval;
  /** Set when its call took it over. */
  used?: boolean;
  /** Why the call no longer needs it: the ask then ends as cancelled with this reason. */
  withdrawn?: string;
  /** The policy the ask was raised under (the call's own turn may run under another). */
  policy?: PolicyBinding;
}
