// The stage runner (stage-runner.ts): where the quick stages run is the look-ahead's (look-ahead.ts:
// local or regular activities, groups of calls). Whether a stage's result is at hand or waited for
// is decided here and nowhere else: a preflight or settle done ahead with an earlier call, or a
// settle with nothing worker-side to run, returns without a wait, so without a promise (the SDK
// captures a stack for each, which was half of a batch's workflow CPU, docs/performance.md) and
// without the microtask that could reorder concurrent calls' commands (stage-runner.ts).
import type { CallRef, GuardsResult, PreflightResult, SettleResult } from '../pipeline/stages';
import type { PreflightReply } from '../codec/stages';
import type { BatchInput, SessionState, ToolCall } from '../pipeline/types';
import { LookAhead } from './look-ahead';
import { type PendingSettle, type SettleWith, type Stage, type StageRunner, waitFor } from './stage-runner';

/** Every stage through the one look-ahead; batch.ts also runs the first group. */
export class Placement implements StageRunner {
  private readonly ahead: LookAhead;

  constructor(input: BatchInput, state: SessionState) {
    this.ahead = new LookAhead(input, state);
  }

  /** The first preflight group, to run with the seq claim (look-ahead.ts). */
  firstGroup(): { call: ToolCall; ref: CallRef }[] {
    return this.ahead.firstGroup();
  }

  firstGroupPreflighted(group: { call: ToolCall; ref: CallRef }[], reply: PreflightReply): void {
    this.ahead.firstGroupPreflighted(group, reply);
  }

  *preflight(ref: CallRef): Stage<PreflightResult> {
    return this.ahead.preflightedAheadFor(ref) ?? (yield* waitFor(this.ahead.preflight(ref)));
  }

  asksAfter(call: ToolCall): Promise<{ call: ToolCall; ref: CallRef; result: PreflightResult }[]> {
    return this.ahead.asksAfter(call);
  }

  guards(ref: CallRef): Promise<GuardsResult> {
    return this.ahead.guards(ref);
  }

  readyToSettle(call: ToolCall, pending: PendingSettle): void {
    this.ahead.readyToSettle(call, pending);
  }

  *settle(call: ToolCall, pending: SettleWith, share: number): Stage<SettleResult> {
    return (
      this.ahead.settledWithoutWaiting(call, pending, share) ??
      (yield* waitFor(this.ahead.settle(call, pending, share)))
    );
  }

  stateChanged(): void {
    this.ahead.stateChanged();
  }

  bodyEnded(): void {
    this.ahead.bodyEnded();
  }
}
