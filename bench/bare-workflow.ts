// The floor on Temporal: one activity per call, at most maxParallel at once, results in model
// order. No stages, no events, no sink: what any Temporal workflow running tool bodies pays.
import { condition, proxyActivities } from '@temporalio/workflow';
import { BODY_DEFAULTS } from '../pipeline/stages';
import type { BareActivities } from './bare-activities';

// The options of a Sluice tool body that sets none: the heartbeat timeout matters, since it is
// what notices an activity task lost on a loaded machine in seconds rather than minutes.
const { runBody } = proxyActivities<BareActivities>({
  startToCloseTimeout: BODY_DEFAULTS.timeoutMs,
  heartbeatTimeout: BODY_DEFAULTS.heartbeatTimeoutMs,
  retry: {
    maximumAttempts: BODY_DEFAULTS.retry.maximumAttempts,
    initialInterval: BODY_DEFAULTS.retry.initialIntervalMs,
    backoffCoefficient: BODY_DEFAULTS.retry.backoffCoefficient,
  },
});

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
