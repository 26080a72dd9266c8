// `npx tsx bench/dogwood-decisions.ts`: what one Dogwood decision costs (hooks/dogwood.ts), with
// the reference started for each decision (as every decision paid before it stayed running) and
// with the one long-lived reference a worker keeps, as the session's record grows. Not a test: it
// prints wall time per decision (p50, p99 in ms) and the ratio of the two; the reference runs in
// another process, so this process's CPU would miss most of it.
//
// Needs dogwood-py importable by python3 (or SLUICE_PYTHON): the test setup installs it into
// .sluice/python, so `PYTHONPATH=.sluice/python npx tsx bench/dogwood-decisions.ts` works after a test run.
// Settings (env): BENCH_DOGWOOD_CALLS decisions per point (default 20).
import { type DogwoodScope, decideDogwood, stopDogwood } from '../hooks/dogwood';
import type { CallRecord } from '../pipeline/types';
import { percentile, round } from './stats';

const CALLS = Number(process.env.BENCH_DOGWOOD_CALLS ?? 20);

const SET = {
  policy: `@id("email_hourly_limit")
permit (principal, action == Agent::Action::"SendEmail", resource)
when temporal {
  exists (n: Long). (
    (count for (t: Timepoint). where (formerly within 1h (Agent::Action::"SendEmail"::request{} && tp(t)))) == n
    && n <= 1000000
  )
};`,
  policySchema: `namespace Agent {
  type SendEmailInput = { to: String };
  entity Gateway;
  entity OAuthUser;
  action "SendEmail" appliesTo { principal: [OAuthUser], resource: [Gateway], context: { input: SendEmailInput } };
}`,
  source: 'bench.dw',
};
const SCOPE: DogwoodScope = {
  namespace: 'Agent',
  principal: 'Agent::OAuthUser::"alice"',
  resource: 'Agent::Gateway::"mail"',
  actions: { send_email: 'SendEmail' },
  input: 'arguments',
};
const T0 = Date.parse('2026-12-01T10:00:00Z');

function record(n: number): CallRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    callId: `c${i}`,
    tool: 'send_email',
    args: { to: `p${i}@example.com` },
    at: T0 + i * 1000,
    turn: 1 + Math.floor(i / 5),
    outcome: 'ok' as const,
  }));
}

/** Wall ms per decision over CALLS decisions after `earlier`; `cold` stops the reference before each. */
async function measure(earlier: CallRecord[], cold: boolean): Promise<number[]> {
  const call: CallRecord = { ...record(1)[0], callId: 'now', at: T0 + earlier.length * 1000 + 1000 };
  stopDogwood();
  if (!cold) await decideDogwood(SET, SCOPE, earlier, call); // started once, as a worker's first decision starts it
  const ms: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    if (cold) stopDogwood();
    const t = performance.now();
    const { decision } = await decideDogwood(SET, SCOPE, earlier, call);
    ms.push(performance.now() - t);
    if (decision !== 'allow') throw new Error(`the bench's policy denied a call: ${decision}`);
  }
  return ms;
}

async function main(): Promise<void> {
  console.log('earlier calls  started each p50/p99 ms  long-lived p50/p99 ms  p50 ratio');
  for (const n of [0, 100, 1000]) {
    const cold = await measure(record(n), true);
    const warm = await measure(record(n), false);
    const p = (xs: number[], q: number) => round(percentile(xs, q), 1);
    console.log(
      `${String(n).padStart(13)}  ${`${p(cold, 50)} / ${p(cold, 99)}`.padStart(23)}  ${`${p(warm, 50)} / ${p(warm, 99)}`.padStart(21)}  ${round(percentile(cold, 50) / percentile(warm, 50), 1)}x`,
    );
  }
  stopDogwood();
}

void main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
