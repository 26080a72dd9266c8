// The stage runner (stage-runner.ts): where the quick stages run is the look-ahead's (look-ahead.ts:
// local or regular activities, groups of calls); a result already at hand (a preflight or settle
// done ahead) is taken without an await. The SDK captures a stack for every promise a workflow
// makes, which was half of a batch's workflow CPU (docs/performance.md).
import type { CallRef, GuardsResult, PreflightResult, SettleResult } from '../pipeline/stages';
import type { PreflightReply } from '../codec/stages';
import type { BatchInput, SessionState, ToolCall } from '../pipeline/types';
import { LookAhead } from './look-ahead';
import type { PendingSettle, SettleWith, StageRunner } from './stage-runner';

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

  preflightNow(ref: CallRef): PreflightResult | undefined {
    return this.ahead.preflightedAheadFor(ref);
  }

  preflight(ref: CallRef): Promise<PreflightResult> {
    return this.ahead.preflight(ref);
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

  settleNow(call: ToolCall, pending: SettleWith, share: number): SettleResult | undefined {
    return this.ahead.settledWithoutWaiting(call, pending, share);
  }

  settle(call: ToolCall, pending: SettleWith, share: number): Promise<SettleResult> {
    return this.ahead.settle(call, pending, share);
  }

  stateChanged(): void {
    this.ahead.stateChanged();
  }

  bodyEnded(): void {
    this.ahead.bodyEnded();
  }
}
