// Where the quick stages run, and which calls they take along. The worker's stage plan says
// whether pre-execute, guards and settle may run as local activities; when they may, one local
// preflight takes the calls after it along (in model order), and one local settle the calls after
// it whose bodies are over. Their results wait here until their own call asks for them. A body
// that changes the session state makes the preflights run ahead on the old state stale.
// The stage code asks the stage runner (stage-runner.ts) for one call's stage at a time and never
// sees the groups; both runners (placement.ts) run the stages through this look-ahead.
//
// Only the batch's own calls group, and a result computed ahead is used only by the very call
// (and admission) it was computed for: a Code Mode sub-call never takes one, so no call can run
// on another call's verdict, whatever its id.
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { StageActivities } from '../activities/stages';
import { reservedCallIdProblem } from '../pipeline/code-mode';
import { DEFAULT_MAX_RESULT_CHARS, normalizeResult, resultFits } from '../pipeline/normalize';
import {
  type CallRef,
  type GuardsResult,
  genericResultCard,
  type PreflightResult,
  type SettleResult,
  type StagePlan,
} from '../pipeline/stages';
import {
  type PreflightReply,
  type SettleRequest,
  unpackPlan,
  unpackPreflightResults,
  withoutOwnDigest,
} from '../codec/stages';
import type { BatchInput, SessionState, ToolCall } from '../pipeline/types';
import type { Admission } from './admission';
import { refAhead } from './call-ref';
import type { PendingSettle, SettleWith } from './stage-runner';

// Pre-execute, guards and settle run extension code that is expected to be quick; a worker dying
// mid-stage is retried, an extension's own throw is turned into a result by the activity itself.
// The stages heartbeat while they run (worker/liveness.ts), so a killed worker's stage is retried
// after the heartbeat timeout rather than the start-to-close timeout.
const stages = proxyActivities<StageActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '10s',
  retry: { maximumAttempts: 5, initialInterval: '500ms', maximumInterval: '10s' },
});

// The same stages as local activities, when the worker's config says their extensions are quick:
// they run in the worker that runs the batch, one marker each in history and no round trip
// through the server. A worker dying mid-stage means the stage runs again, as with activities.
const localStages = proxyLocalActivities<StageActivities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 5, initialInterval: '500ms', maximumInterval: '10s' },
});

/** At most this many calls ride along with one local preflight: it must still finish within seconds. */
const PREFLIGHT_AHEAD = 63;

export class LookAhead {
  /** Learnt from the first preflight; until then, preflight is tried as a local activity. */
  private plan?: StagePlan;
  /** Each call of the batch by its place in model order (sub-calls have none and never group). */
  private readonly order: Map<string, number>;
  private readonly preflightedAhead = new Map<
    string,
    { call: ToolCall; ref: CallRef; result: PreflightResult; stateVersion: number; effects?: number }
  >();
  private readonly awaitingSettle = new Map<string, PendingSettle>();
  private readonly settledAhead = new Map<
    string,
    { admission: Admission } & ({ result: SettleResult } | { error: unknown })
  >();
  /** Bumped by every state patch: a preflight run ahead on older state is run again. */
  private stateVersion = 0;
  /**
   * Bumped when a body that runs alone ends (it may have changed files or remote systems): a
   * preflight run ahead for an ask raised early (asksAfter) is run again after one.
   */
  private effectsVersion = 0;

  private readonly calls: readonly ToolCall[];

  constructor(
    private readonly input: BatchInput,
    /** The batch's session state (the same object bodies patch): a preflight run ahead sees it. */
    private readonly state: SessionState,
  ) {
    this.calls = input.calls;
    this.order = new Map(input.calls.map((c, i) => [c.id, i]));
  }

  /** A call's reference as a preflight would see it; undefined when its arguments do not snapshot. */
  private refOf(call: ToolCall): CallRef | undefined {
    return refAhead(this.input, this.state, call);
  }

  /** Stage 4 (and 6 when nobody is asked) for one call: from a group run earlier if still current. */
  async preflight(ref: CallRef): Promise<PreflightResult> {
    const ahead = this.preflightedAheadFor(ref);
    if (ahead) return ahead;
    const call = this.ownCallOf(ref);
    if (this.plan?.preflight !== 'activity') {
      const followers = call ? this.followersOf(call) : [];
      const refs = [ref, ...followers.map((f) => f.ref)];
      const stateVersion = this.stateVersion;
      const reply = await localStages.preflight(refs.map(withoutOwnDigest));
      this.plan = unpackPlan(reply.plan);
      if (!reply.deferred) {
        const results = unpackPreflightResults(reply, refs);
        this.keepAhead(followers, results.slice(1), stateVersion);
        return results[0];
      }
    }
    return unpackPreflightResults(await stages.preflight([withoutOwnDigest(ref)]), [ref])[0];
  }

  /**
   * The batch's first call and the calls after it, as one preflight group would take them, for a
   * preflight run together with the seq claim, before anything is recorded. Empty when the first
   * call's arguments do not snapshot (its own admission says why).
   */
  firstGroup(): { call: ToolCall; ref: CallRef }[] {
    const first = this.calls[0];
    if (!first || reservedCallIdProblem(first.id)) return [];
    const ref = this.refOf(first);
    return ref ? [{ call: first, ref }, ...this.followersOf(first)] : [];
  }

  /** The first group's preflight reply: each result waits for its own call, as any look-ahead result. */
  firstGroupPreflighted(group: { call: ToolCall; ref: CallRef }[], reply: PreflightReply): void {
    this.plan = unpackPlan(reply.plan);
    if (reply.deferred) return;
    this.keepAhead(
      group,
      unpackPreflightResults(
        reply,
        group.map((g) => g.ref),
      ),
      this.stateVersion,
    );
  }

  /** Each call's preflight, kept for its own admission with the state (and effects) it was computed on. */
  private keepAhead(
    group: { call: ToolCall; ref: CallRef }[],
    results: PreflightResult[],
    stateVersion: number,
    effects?: number,
  ): void {
    results.forEach((result, k) =>
      this.preflightedAhead.set(group[k].call.id, {
        ...group[k],
        result,
        stateVersion,
        ...(effects !== undefined ? { effects } : {}),
      }),
    );
  }

  /** The call's preflight from a group run earlier, if it still holds; taken, so it serves once. */
  preflightedAheadFor(ref: CallRef): PreflightResult | undefined {
    const call = this.ownCallOf(ref);
    if (!call) return undefined;
    const ahead = this.preflightedAhead.get(call.id);
    this.preflightedAhead.delete(call.id);
    return ahead && ahead.call === call && this.isCurrent(ahead) ? ahead.result : undefined;
  }

  /**
   * The calls after this one whose pre-execute, run ahead on the current session state, asks a
   * person, so their asks can be raised together with this call's. Followers with no current
   * result are preflighted now, in one stage (local or not, as the plan says); their results
   * wait for their own call as any look-ahead result does.
   */
  async asksAfter(own: ToolCall): Promise<{ call: ToolCall; ref: CallRef; result: PreflightResult }[]> {
    if (!this.isOwnCall(own)) return [];
    const current = (call: ToolCall) => {
      const a = this.preflightedAhead.get(call.id);
      return a && a.call === call && this.isCurrent(a) ? a : undefined;
    };
    const followers = this.followersOf(own);
    // A preflight group stops after a call the next must wait for (an ask, an exclusive call), so
    // the followers take as many groups as they have such calls.
    let missing = followers.filter((f) => !current(f.call));
    while (missing.length) {
      const { stateVersion, effectsVersion: effects } = this;
      const refs = missing.map((f) => f.ref);
      let results: PreflightResult[] | undefined;
      if (this.plan?.preflight !== 'activity') {
        const reply = await localStages.preflight(refs.map(withoutOwnDigest));
        this.plan = unpackPlan(reply.plan);
        if (!reply.deferred) results = unpackPreflightResults(reply, refs);
      }
      results ??= unpackPreflightResults(await stages.preflight(refs.map(withoutOwnDigest)), refs);
      if (results.length === 0) break;
      this.keepAhead(missing, results, stateVersion, effects);
      missing = missing.slice(results.length);
    }
    return followers.flatMap((f) => {
      const a = current(f.call);
      return a && a.result.gate.kind === 'ask' ? [{ call: f.call, ref: a.ref, result: a.result }] : [];
    });
  }

  /** Stage 6 after a person said yes: always one call, since the approval came in between. */
  guards(ref: CallRef): Promise<GuardsResult> {
    const sent = withoutOwnDigest(ref);
    return this.plan?.guards === 'local' ? localStages.runGuards(sent) : stages.runGuards(sent);
  }

  /** A body patched the session state. */
  stateChanged(): void {
    this.stateVersion++;
  }

  /** A body that runs alone ended. */
  bodyEnded(): void {
    this.effectsVersion++;
  }

  /** A preflight run ahead still holds: no state patch since, and for one run by asksAfter, no exclusive body. */
  private isCurrent(a: { stateVersion: number; effects?: number }): boolean {
    return a.stateVersion === this.stateVersion && (a.effects === undefined || a.effects === this.effectsVersion);
  }

  /** A call of the batch is ready to settle (its body is over or never ran): a settle group may take it along. */
  readyToSettle(call: ToolCall, pending: PendingSettle): void {
    if (this.isOwnCall(call)) this.awaitingSettle.set(call.id, pending);
  }

  /**
   * Stages 9–12 for one call with a reference: settled ahead with an earlier call, here in the
   * workflow when no worker code would run, or by the worker (with the calls ready after it).
   */
  async settle(call: ToolCall, pending: SettleWith, share: number): Promise<SettleResult> {
    const own = this.isOwnCall(call);
    const ahead = this.takeSettledAhead(call, own, pending);
    if (ahead) return ahead;
    if (own) this.awaitingSettle.delete(call.id);
    const req = pending.request(share);
    const here = this.settlesHere(pending) ? this.settleHere(req) : undefined;
    if (here) return here;
    if (this.plan?.settle !== 'local') return (await stages.settle([req]))[0];
    // Calls settled ahead use this call's share: never more than their own turn would give them
    // (shares only grow as results within their share commit), so the output stays in budget.
    const along = own ? this.readyAfter(call.id) : [];
    const group = [req, ...along.map((p) => p.request!(share))];
    let results: SettleResult[];
    try {
      results = await localStages.settle(group);
    } catch (err) {
      for (const [k, p] of along.entries())
        this.settledAhead.set(group[k + 1].ref.callId, { admission: p.admission, error: err });
      throw err;
    }
    along.forEach((p, k) =>
      this.settledAhead.set(group[k + 1].ref.callId, { admission: p.admission, result: results[k + 1] }),
    );
    return results[0];
  }

  /**
   * Stages 9–12 when they need no wait: settled ahead with an earlier call, or here in the
   * workflow. Undefined when a stage must run (then `settle`, which finds everything as it was;
   * `pending.request` must give the same request for the same share).
   */
  settledWithoutWaiting(call: ToolCall, pending: SettleWith, share: number): SettleResult | undefined {
    const own = this.isOwnCall(call);
    const ahead = this.takeSettledAhead(call, own, pending);
    if (ahead || !this.settlesHere(pending)) return ahead;
    const here = this.settleHere(pending.request(share));
    if (here && own) this.awaitingSettle.delete(call.id);
    return here;
  }

  /** The result a group settled ahead for this very admission, taken (it serves once); the group's failure is thrown. */
  private takeSettledAhead(call: ToolCall, own: boolean, pending: PendingSettle): SettleResult | undefined {
    const ahead = own ? this.settledAhead.get(call.id) : undefined;
    if (ahead?.admission !== pending.admission) return undefined;
    this.settledAhead.delete(call.id);
    if ('error' in ahead) throw ahead.error;
    return ahead.result;
  }

  /** True for the batch's own calls (the model's), false for a program's sub-calls. */
  private isOwnCall(call: ToolCall): boolean {
    const at = this.order.get(call.id);
    return at !== undefined && this.calls[at] === call;
  }

  /** The batch's own call a ref was made for; undefined for a program's sub-call. */
  private ownCallOf(ref: CallRef): ToolCall | undefined {
    const at = this.order.get(ref.callId);
    return ref.parentCallId || at === undefined ? undefined : this.calls[at];
  }

  /**
   * The calls after this one whose arguments snapshot, up to PREFLIGHT_AHEAD. Those that wait for
   * a free slot first are run again if a body changed the state meanwhile (see preflight).
   */
  private followersOf(own: ToolCall): { call: ToolCall; ref: CallRef }[] {
    const at = this.order.get(own.id)!;
    const out: { call: ToolCall; ref: CallRef }[] = [];
    for (const call of this.calls.slice(at + 1, at + 1 + PREFLIGHT_AHEAD)) {
      if (reservedCallIdProblem(call.id)) continue;
      const ref = this.refOf(call);
      if (!ref) break;
      out.push({ call, ref });
    }
    return out;
  }

  /** No post-execute, no observers, no finalizeContent or presentResult: nothing for a worker to run. */
  private settlesHere(pending: PendingSettle): boolean {
    return this.plan?.settleHooks === false && pending.profile?.finalizes === false;
  }

  /**
   * The worker's settle when it has no code to run: the same normalization, and the generic card.
   * Undefined when the result needs the worker after all: a body result stored aside, or one over
   * its bounds, which the claim check stores aside.
   */
  private settleHere(req: SettleRequest): SettleResult | undefined {
    if (req.candidate.stashed) return undefined;
    const queued = [...req.contexts.pre, ...req.contexts.body, ...req.contexts.wrapper];
    const result = normalizeResult(req.candidate, queued, { maxResultChars: Infinity });
    if (!resultFits(result, this.plan?.maxResultChars ?? DEFAULT_MAX_RESULT_CHARS, req.ref.inlineBytes ?? Infinity))
      return undefined;
    return { callId: req.ref.callId, result, card: genericResultCard(req.ref.name, result.isError), events: [] };
  }

  /** The calls right after this one that are ready to settle (those with no stages to run are passed over). */
  private readyAfter(callId: string): PendingSettle[] {
    const at = this.order.get(callId);
    const out: PendingSettle[] = [];
    if (at === undefined) return out;
    for (const call of this.calls.slice(at + 1)) {
      const p = this.awaitingSettle.get(call.id);
      if (!p) break;
      this.awaitingSettle.delete(call.id);
      if (p.request && !this.settlesHere(p)) out.push(p);
    }
    return out;
  }
}
