// A worker killed mid-stage must be noticed in seconds, not after a stage's start-to-close
// timeout: every stage activity heartbeats while it runs, so the server retries it on another
// worker as soon as the heartbeat timeout passes.
//
// The server counts the heartbeat timeout from the moment it hands the task out, not from when
// the function starts. On a loaded machine a trivial body can wait seconds for its turn in the
// worker's event loop (a hundred activity slots share one thread), and the first beat used to
// come a third of the timeout after that. So the first beat goes out one second into the run (a
// body that ends sooner sends none, as before), then every third of the timeout. The SDK throttles
// what reaches the server to one beat per 80% of the timeout unless the worker's
// maxHeartbeatThrottleInterval is lower: SluicePlugin lowers it (HEARTBEAT_THROTTLE below), or the
// 10 s default left a 2 s margin, which a starved dev server overran (issue 22 item 14).
import { Context } from '@temporalio/activity';

/** How soon into a run the first beat goes out. */
const FIRST_BEAT_MS = 1_000;

/**
 * The worker's maxHeartbeatThrottleInterval when the user sets none: beats sent every third of
 * the timeout reach the server at that pace (2 s is below a third of the 10 s default).
 */
export const HEARTBEAT_THROTTLE = '2s';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function withHeartbeats<T extends { [K in keyof T]: (...args: any[]) => Promise<unknown> }>(activities: T): T {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    out[name] = async (...args: unknown[]) => {
      const ctx = Context.current();
      const timeout = ctx.info.isLocal ? undefined : ctx.info.heartbeatTimeoutMs;
      if (!timeout) return fn(...args);
      const every = Math.max(200, Math.floor(timeout / 3));
      let beat: NodeJS.Timeout | undefined;
      const first = setTimeout(
        () => {
          ctx.heartbeat();
          beat = setInterval(() => ctx.heartbeat(), every);
        },
        Math.min(FIRST_BEAT_MS, every),
      );
      try {
        return await fn(...args);
      } finally {
        clearTimeout(first);
        clearInterval(beat);
      }
    };
  }
  return out as T;
}
