// The two stage runners (stage-runner.ts): where the quick stages run is the look-ahead's in both
// (look-ahead.ts: local or regular activities, groups of calls); they differ only in whether a
// value already at hand is awaited.
//
//   LegacyRunner  every stage result is awaited, every wait is entered: byte for byte the path of
//                 batches recorded before sluice-lean-awaits, which replay on it.
//   LeanRunner    a result at hand (a preflight or settle done ahead, a free slot, an outcome
//                 already there) is taken without an await. The SDK captures a stack for every
//                 promise a workflow makes, which was half of a batch's workflow CPU
//                 (docs/performance.md); fewer awaits change the order in which concurrent calls'
//                 commands can come out, hence a patch (compat.ts, leanAwaits).
//
// test/stage-runners.test.ts runs the same batches through both and compares what they record.
import type { CallRef, GuardsResult, PreflightReply, PreflightResult, SettleResult } from '../pipeline/stages';
import type { BatchInput, SessionState, ToolCall } from '../pipeline/types';
import type { Admission, Settlement } from './admission';
import { LookAhead } from './look-ahead';
import type { PendingSettle, SettleWith, StageRunner } from './stage-runner';

/** What both runners share: every stage through the one look-ahead; batch.ts also runs the first group. */
abstract class Placement implements StageRunner {
  protected readonly ahead: LookAhead;

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

  settle(call: ToolCall, pending: SettleWith, share: number): Promise<SettleResult> {
    return this.ahead.settle(call, pending, share);
  }

  stateChanged(): void {
    this.ahead.stateChanged();
  }

  bodyEnded(): void {
    this.ahead.bodyEnded();
  }

  abstract preflightNow(ref: CallRef): PreflightResult | undefined;
  abstract admitted(admission: Promise<Admission>): Promise<Admission>;
  abstract afterBody(body: Promise<Settlement>, ready: (s: Settlement) => Settlement): Promise<Settlement>;
  abstract settleNow(call: ToolCall, pending: SettleWith, share: number): SettleResult | undefined;
  abstract waits(notYet: boolean): boolean;
}

export class LegacyRunner extends Placement {
  preflightNow(): undefined {
    return undefined;
  }

  async admitted(admission: Promise<Admission>): Promise<Admission> {
    const adm = await admission;
    return adm;
  }

  async afterBody(body: Promise<Settlement>, ready: (s: Settlement) => Settlement): Promise<Settlement> {
    return ready(await body);
  }

  settleNow(): undefined {
    return undefined;
  }

  waits(): boolean {
    return true;
  }
}

export class LeanRunner extends Placement {
  preflightNow(ref: CallRef): PreflightResult | undefined {
    return this.ahead.preflightedAheadFor(ref);
  }

  admitted(admission: Promise<Admission>): Promise<Admission> {
    return admission;
  }

  afterBody(body: Promise<Settlement>, ready: (s: Settlement) => Settlement): Promise<Settlement> {
    return body.then(ready);
  }

  settleNow(call: ToolCall, pending: SettleWith, share: number): SettleResult | undefined {
    return this.ahead.settledWithoutWaiting(call, pending, share);
  }

  waits(notYet: boolean): boolean {
    return notYet;
  }
}

export type BatchRunner = LeanRunner | LegacyRunner;

export function stageRunner(lean: boolean, input: BatchInput, state: SessionState): BatchRunner {
  return lean ? new LeanRunner(input, state) : new LegacyRunner(input, state);
}
