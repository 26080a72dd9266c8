// Where and how cheaply the quick stages run, as the stage code sees it (implemented by
// workflows/placement.ts). The stage code (call-pipeline.ts, approval-stage.ts) asks for a stage
// here and never sees the look-ahead groups or local and regular activities.
//
// Each quick stage has an await variant and, where a result can be at hand, a ready-now variant
// that returns it without an await (or undefined): `runner.preflightNow(ref) ?? await
// runner.preflight(ref)` is the whole fast path.
import type { CallRef, GuardsResult, PreflightResult, SettleResult, ToolProfile } from '../pipeline/stages';
import type { SettleRequest } from '../codec/stages';
import type { ToolCall } from '../pipeline/types';
import type { Admission } from './admission';

/** A call waiting for its settle (stages 9–12), as the runner needs to know it. */
export interface PendingSettle {
  /** The admission the settle is for: a result settled ahead serves that admission only. */
  admission: Admission;
  /** Undefined when a preflight never ran for the call. */
  profile?: ToolProfile;
  /** The settle request at a given share; undefined for a call that never got as far as a reference. */
  request?: (share: number) => SettleRequest;
}

export type SettleWith = PendingSettle & { request: (share: number) => SettleRequest };

export interface StageRunner {
  /** 4 (and 6 when nobody is asked): a preflight run ahead for this very call, if at hand now. */
  preflightNow(ref: CallRef): PreflightResult | undefined;
  preflight(ref: CallRef): Promise<PreflightResult>;
  /** The later calls whose pre-execute, run ahead on the current state, asks a person too. */
  asksAfter(call: ToolCall): Promise<{ call: ToolCall; ref: CallRef; result: PreflightResult }[]>;
  /** 6 after a person said yes: one call, since the approval came in between. */
  guards(ref: CallRef): Promise<GuardsResult>;
  /** A call is ready to settle (its body is over or never ran): a settle group may take it along. */
  readyToSettle(call: ToolCall, pending: PendingSettle): void;
  /** 9–12 when no stage must run: settled ahead with an earlier call, or here in the workflow. */
  settleNow(call: ToolCall, pending: SettleWith, share: number): SettleResult | undefined;
  settle(call: ToolCall, pending: SettleWith, share: number): Promise<SettleResult>;
  /** A body patched the session state: preflights run ahead on the old state are stale. */
  stateChanged(): void;
  /** A body that runs alone ended: asks raised ahead are re-checked. */
  bodyEnded(): void;
}
