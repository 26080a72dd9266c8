// A worker killed mid-stage must be noticed in seconds, not after a stage's start-to-close
// timeout: every stage activity heartbeats while it runs, so the server retries it on another
// worker as soon as the heartbeat timeout passes. Quick stages finish before their first beat.
import { Context } from '@temporalio/activity';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function withHeartbeats<T extends { [K in keyof T]: (...args: any[]) => Promise<unknown> }>(activities: T): T {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    out[name] = async (...args: unknown[]) => {
      const ctx = Context.current();
      const timeout = ctx.info.isLocal ? undefined : ctx.info.heartbeatTimeoutMs;
      if (!timeout) return fn(...args);
      const beat = setInterval(() => ctx.heartbeat(), Math.max(200, Math.floor(timeout / 3)));
      try {
        return await fn(...args);
      } finally {
        clearInterval(beat);
      }
    };
  }
  return out as T;
}
