// The one way tests wait for something another process does: poll a probe until it answers, and
// fail the test, naming what was awaited, when it does not within the timeout. Nothing here ever
// gives up silently or waits forever. `poll` is the same thing in matcher form (vitest's
// expect.poll with this file's timeout, not vitest's one second).
import { expect } from 'vitest';
import type { SluiceClient } from '../client/client';
import type { PendingApproval } from '../pipeline/types';

export interface EventuallyOptions {
  timeoutMs?: number;
  /**
   * The pause between probes. Given, it holds for the whole wait; left out, the pause starts at
   * 50 ms and grows by half each probe up to half a second: what comes at once is seen at once,
   * and a wait of minutes (a harness CLI starting at load 16, a worker's restart) costs a probe
   * every half second, not twenty a second, each a query the dev server and the worker answer
   * on the two cores the suite shares.
   */
  intervalMs?: number;
}

const FIRST_PAUSE_MS = 50;
const LONGEST_PAUSE_MS = 500;

/**
 * Resolves to the probe's first truthy answer. A probe that throws counts as "not yet" (a query
 * to a batch that is not started yet, a file not written yet).
 */
export async function eventually<T>(
  what: string,
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  { timeoutMs = 30_000, intervalMs }: EventuallyOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let pause = intervalMs ?? FIRST_PAUSE_MS;
  let last: unknown;
  for (;;) {
    // A probe that hangs fails the wait at the deadline like one that keeps answering "not yet".
    const answer = await within(what, Math.max(deadline - Date.now(), 0), Promise.resolve().then(probe)).then(
      (v) => {
        last = undefined;
        return { v };
      },
      (err: unknown) => {
        last = err;
        return undefined;
      },
    );
    if (answer?.v) return answer.v;
    const rest = deadline - Date.now();
    if (rest <= 0) break;
    await new Promise((r) => setTimeout(r, Math.min(pause, rest)));
    if (intervalMs === undefined) pause = Math.min(Math.round(pause * 1.5), LONGEST_PAUSE_MS);
  }
  const why =
    last instanceof Error && !/did not settle within/.test(last.message) ? ` (last probe threw: ${last.message})` : '';
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
}

/**
 * A value that changes, asserted by matcher once it matches: `await poll(() => x()).toBe(3)`.
 * The failure shows the last value seen. Its pause is fixed (expect.poll's), 50 ms unless given.
 */
export function poll<T>(probe: () => T | Promise<T>, { timeoutMs = 30_000, intervalMs = 50 }: EventuallyOptions = {}) {
  return expect.poll(probe, { timeout: timeoutMs, interval: intervalMs });
}

/** The first pending approval of a batch (that matches), once the batch shows it. */
export function pendingApproval(
  client: SluiceClient,
  workflowId: string,
  match: (p: PendingApproval) => boolean = () => true,
  opts?: EventuallyOptions,
): Promise<PendingApproval> {
  return eventually(
    `a pending approval in ${workflowId}`,
    async () => (await client.batchState(workflowId)).pending.find(match),
    opts,
  );
}

/** A batch's pending approvals, once it shows at least `n` of them (read through its approvals query). */
export function pendingApprovals(client: SluiceClient, workflowId: string, n: number): Promise<PendingApproval[]> {
  return eventually(`${n} pending approval(s) in ${workflowId}`, async () => {
    const { pending } = await client.readApprovals(workflowId);
    return pending.length >= n && pending;
  });
}

/**
 * A promise that must settle within `ms`: the test fails naming what it waited for, instead of
 * running into the test's own timeout with no word of which await hung.
 */
export async function within<T>(what: string, ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, limit]);
  } finally {
    clearTimeout(timer);
  }
}
