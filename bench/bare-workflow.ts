// The floor on Temporal: one activity per call, at most maxParallel at once, results in model
// order. No stages, no events, no sink: what any Temporal workflow running tool bodies pays.
import { condition, defineQuery, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';
import { BODY_DEFAULTS } from '../pipeline/stages';
import type { BareActivities } from './bare-activities';

// The options of a Sluice tool body that sets none: the heartbeat timeout matters, since it is
// what notices an activity task lost on a loaded machine in seconds rather than minutes.
export const BARE_BODY_OPTIONS = {
  startToCloseTimeout: BODY_DEFAULTS.timeoutMs,
  heartbeatTimeout: BODY_DEFAULTS.heartbeatTimeoutMs,
  retry: {
    maximumAttempts: BODY_DEFAULTS.retry.maximumAttempts,
    initialInterval: BODY_DEFAULTS.retry.initialIntervalMs,
    backoffCoefficient: BODY_DEFAULTS.retry.backoffCoefficient,
  },
};
const { runBody } = proxyActivities<BareActivities>(BARE_BODY_OPTIONS);

export interface BareInput {
  calls: { id: string; arguments: string }[];
  maxParallel: number;
}

export async function bareBatch(input: BareInput): Promise<{ callId: string; content: string }[]> {
  let running = 0;
  return Promise.all(
    input.calls.map(async (call) => {
      while (running >= input.maxParallel) await condition(() => running < input.maxParallel);
      running++;
      try {
        return { callId: call.id, content: await runBody(call.arguments) };
      } finally {
        running--;
      }
    }),
  );
}

/** The decision a person sends a bare approval workflow. */
export const bareDecisionSignal = defineSignal<[{ approve: boolean }]>('bareDecision');
/** True once the workflow waits for its decision (its first workflow task is done). */
export const bareWaitingQuery = defineQuery<boolean>('bareWaiting');

/**
 * The floor for the approval path: a hand-written workflow that waits on a signal with a deny
 * timeout, then runs the same body as one activity and returns. No card, no audit events, no
 * guards, no memo or search attributes for an inbox: what a decision costs on Temporal alone.
 */
export async function bareApproval(input: { arguments: string; timeoutMs: number }): Promise<{ content?: string }> {
  let approve: boolean | undefined;
  setHandler(bareDecisionSignal, (d) => {
    approve ??= d?.approve === true;
  });
  setHandler(bareWaitingQuery, () => approve === undefined);
  await condition(() => approve !== undefined, input.timeoutMs);
  return approve ? { content: await runBody(input.arguments) } : {};
}
