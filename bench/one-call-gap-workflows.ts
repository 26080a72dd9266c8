// The workflows of bench/one-call-gap.ts: bare Temporal's one-call batch (bench/bare-workflow.ts's
// body as one activity), and the same with each of the two things a Sluice one-call batch adds to
// it on the worker: more workflow promises (the SDK's promise hook captures a stack trace for each),
// and a local activity before the body (Sluice's claim and preflight).
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { BareActivities } from './bare-activities';
import { BARE_BODY_OPTIONS } from './bare-workflow';

const { runBody } = proxyActivities<BareActivities>(BARE_BODY_OPTIONS);

const { preflight } = proxyLocalActivities<{ preflight(refs: string[]): Promise<string[]> }>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 5, initialInterval: '500ms', maximumInterval: '10s' },
});

export interface GapInput {
  arguments: string;
  /** Promises to make before the body, two at a time: an async call, and the await of it. */
  promises: number;
  local: boolean;
}

async function next(n: number): Promise<number> {
  return n + 1;
}

export async function gapBatch(input: GapInput): Promise<string> {
  if (input.local) await preflight([input.arguments]);
  let made = 0;
  while (made < input.promises) made = (await next(made)) + 1;
  return runBody(input.arguments);
}
