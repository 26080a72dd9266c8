// The stage activities a Sluice worker registers, one file per stage group: preflight.ts
// (pre-execute and guards), execute.ts (the execute waterfall around the body), settle.ts
// (post-execute to tools/result). Extension throws become results there; only a crash of the
// worker itself makes Temporal retry a stage.
import { Context } from '@temporalio/activity';
import type { GuardsResult, SettleResult, StagePlan } from '../pipeline/stages';
import {
  type PackedBodyResult,
  type PackedCallRef,
  packPreflightReply,
  type PreflightReply,
  type SettleRequest,
  type WireCallRef,
} from '../codec/stages';
import type { ResultStore } from '../stores/claim-check';
import type { FactStore } from '../stores/fact-store';
import { isLongRunning, type SluiceConfig } from '../define/config';
import { clientBodyActivities, type ClientBodyActivities } from './client-tool';
import { executeStage } from './execute';
import { stageKit } from './kit';
import { preflightStages } from './preflight';
import { settleStage } from './settle';

export interface StageActivities extends ClientBodyActivities {
  /**
   * Pre-execute (and guards) for calls in model order, one at a time, stopping after any call
   * that the next must wait for. As a local activity it answers `deferred`, running nothing,
   * when the plan wants preflight as a regular activity.
   */
  preflight(refs: WireCallRef[]): Promise<PreflightReply>;
  runGuards(ref: WireCallRef): Promise<GuardsResult>;
  /** Takes and gives the packed forms (pipeline/stages.ts): they are what its history event keeps. */
  executeBody(ref: PackedCallRef): Promise<PackedBodyResult | string>;
  /**
   * The body of a call a person approved: the guards first, then (when they dispatch) the body,
   * in one activity (BodyResult.guards). A worker of an earlier build has no such activity, so it
   * never runs such a body without its guards.
   */
  guardThenExecuteBody(ref: PackedCallRef): Promise<PackedBodyResult | string>;
  /** Settles calls in model order, one after the other. */
  settle(reqs: SettleRequest[]): Promise<SettleResult[]>;
}

export function createStageActivities(
  config: SluiceConfig,
  deps: { resultStore?: ResultStore; facts?: FactStore } = {},
): StageActivities {
  const kit = stageKit(config, deps);
  const plan = stagePlan(config);
  const preflight = preflightStages(kit);
  const settleOne = settleStage(kit);
  return {
    async preflight(refs) {
      if (Context.current().info.isLocal && plan.preflight === 'activity') return { plan, deferred: true, results: [] };
      return packPreflightReply(plan, await preflight.preflightInOrder(refs), refs);
    },
    runGuards: (ref) => preflight.guards(ref),
    executeBody: executeStage(kit),
    guardThenExecuteBody: executeStage(kit, preflight.guards),
    ...clientBodyActivities(kit),
    async settle(reqs) {
      const results: SettleResult[] = [];
      for (const req of reqs) results.push(await settleOne(req));
      return results;
    },
  };
}

/** Local activities must finish within seconds: a stage qualifies when none of its extensions is long-running. */
function stagePlan(config: SluiceConfig): StagePlan {
  const local = config.localStages !== false;
  const quick = (...exts: unknown[][]) => local && !exts.flat().some((e) => isLongRunning(e as never));
  return {
    preflight: quick(config.preExecute ?? [], config.guards ?? []) ? 'local' : 'activity',
    guards: quick(config.guards ?? []) ? 'local' : 'activity',
    settle: quick(config.postExecute ?? [], config.onResult ?? []) ? 'local' : 'activity',
    settleHooks: (config.postExecute ?? []).length + (config.onResult ?? []).length > 0,
    ...(config.maxResultChars !== undefined ? { maxResultChars: config.maxResultChars } : {}),
  };
}
