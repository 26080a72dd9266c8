// The floor on Temporal: one activity per call, at most maxParallel at once, results in model
// order. No stages, no events, no sink: what any Temporal workflow running tool bodies pays.
import { condition, proxyActivities } from '@temporalio/workflow';
import type { BareActivities } from './bare-activities';

const { runBody } = proxyActivities<BareActivities>({
  startToCloseTimeout: '5m',
  retry: { maximumAttempts: 3, initialInterval: '500ms', backoffCoefficient: 2 },
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
