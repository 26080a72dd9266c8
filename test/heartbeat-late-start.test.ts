// A body whose task waits for the worker's event loop (issue 22 item 14). The server counts the
// heartbeat timeout from the moment it hands a task out, not from when the function starts; on a
// loaded worker a body can wait seconds for its turn. Here a sibling body holds the event loop for
// most of the heartbeat timeout while the other call's task is handed out; the late body must send
// its first beat soon after it starts (worker/liveness.ts), not a third of the timeout later, or
// the server times its attempt out while it runs and runs it again. The sibling blocks the thread
// (Atomics.wait) rather than spinning on it: the event loop is held just the same, without two
// dozen CPU-seconds of a suite that is bound by CPU.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineConfig, defineTool } from '../define/config';
import { batch, type Harness, startHarness, text } from './harness';

const HEARTBEAT_MS = 30_000;
/** Most of the timeout: the late body starts with 8 s left, less than a third of the timeout. */
const HOLD_MS = 22_000;
/** The late body then runs past the timeout counted from its hand-out. */
const LATE_RUN_MS = 12_000;

let runs = 0;
let h: Harness;

beforeAll(async () => {
  h = await startHarness(
    'heartbeat-late-start',
    defineConfig({
      tools: [
        defineTool({
          name: 'hold_loop',
          description: 'holds the event loop, as a busy neighbour would',
          input: z.object({}),
          approval: 'auto',
          isConcurrencySafe: () => true,
          // Its own beats cannot go out while it holds the loop: a timeout it cannot miss.
          heartbeatTimeoutMs: 120_000,
          timeoutMs: 120_000,
          execute: () => {
            Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, HOLD_MS);
            return 'held';
          },
        }),
        defineTool({
          name: 'late_body',
          description: 'starts late, then works past the timeout counted from its hand-out',
          input: z.object({}),
          approval: 'auto',
          isConcurrencySafe: () => true,
          heartbeatTimeoutMs: HEARTBEAT_MS,
          timeoutMs: 120_000,
          execute: async () => {
            runs++;
            await new Promise((r) => setTimeout(r, LATE_RUN_MS));
            return `ran ${runs}`;
          },
        }),
      ],
    }),
  );
});
afterAll(() => h?.close());

it('a body that starts late in its heartbeat window beats in time and runs once', async () => {
  const started = Date.now();
  const result = await h.client.runBatch(batch([{ name: 'hold_loop' }, { name: 'late_body' }]));
  // The event loop really was held while the late body waited (else this test proves nothing).
  expect(Date.now() - started).toBeGreaterThanOrEqual(HOLD_MS);
  const late = result.results.find((r) => r.callId === 'call-2');
  expect(late && text(late.result), JSON.stringify(result.results)).toBe('ran 1');
  expect(runs).toBe(1);
}, 240_000);
