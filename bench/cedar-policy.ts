// `npx tsx bench/cedar-policy.ts`: worker CPU for one Cedar decision with session facts, as the
// policy set and the session's record grow — up to 1,000 Cedar policies and 10,000 earlier calls
// (docs/policies.md, "How fast"). Not a test: it prints figures (p50 and p99 per decision, in ms,
// CPU time of this process, so a loaded machine's waiting does not count).
//
// Settings (env): BENCH_CEDAR_CALLS decisions per point (default 200).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cedarPolicy } from '../hooks/cedar-policy';
import type { CallRecord } from '../pipeline/facts';
import { percentile, round } from './stats';

const CALLS = Number(process.env.BENCH_CEDAR_CALLS ?? 200);
const TOOLS = ['transfer', 'refund', 'send_email', 'create_account', 'pay'];

const SCHEMA = TOOLS.map(
  (t) => `action "${t}" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { amount: Long, to: String }, session: { total: Long, count: Long, approved: Bool } }
};`,
).join('\n');

/** `n` policies over the tools, arguments and facts, a tenth of them forbids. */
function policies(n: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const tool = TOOLS[i % TOOLS.length];
    const effect = i % 10 === 0 ? 'forbid' : 'permit';
    out.push(
      `${i % 7 === 0 ? '@ask\n' : ''}${effect} (principal, action == Action::"${tool}", resource)\nwhen { context.args.to == "acct-${i}" && context.session.total + context.args.amount > ${1000 + i} || context.session.count > ${100 + i} };`,
    );
  }
  return out.join('\n\n');
}

function record(n: number, now: number): CallRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    callId: `c${i}`,
    tool: TOOLS[i % TOOLS.length],
    args: { amount: i % 500, to: `acct-${i % 50}` },
    at: now - (i % 48) * 3_600_000,
    turn: 1 + Math.floor(i / 20),
    outcome: i % 13 === 0 ? 'failed' : 'ok',
    ...(i % 3 === 0 ? { decider: { kind: 'person' as const, who: 'ana' } } : {}),
  }));
}

function point(nPolicies: number, nCalls: number): { p50: number; p99: number } {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-cedar-'));
  fs.mkdirSync(path.join(ws, '.cedar'));
  fs.writeFileSync(path.join(ws, '.cedar', 'schema.cedarschema'), SCHEMA);
  fs.writeFileSync(path.join(ws, '.cedar', 'policies.cedar'), policies(nPolicies));
  const facts = {
    total: { total: { tool: 'transfer', arg: 'amount', window: '1h' } },
    count: { count: { tool: 'transfer', window: '1d', match: { to: 'to' } } },
    approved: { exists: { tool: 'create_account', match: { to: 'to' }, decidedBy: 'person', outcome: ['ok'] } },
  };
  fs.writeFileSync(path.join(ws, '.cedar', 'facts.json'), JSON.stringify(facts));
  const source = cedarPolicy({ workspace: ws });
  const now = Date.parse('2026-12-01T10:00:00Z');
  const calls = record(nCalls, now);
  const ms: number[] = [];
  for (let i = 0; i < CALLS + 20; i++) {
    const start = process.cpuUsage();
    source.evaluate({
      toolName: 'transfer',
      args: { amount: 100 + (i % 900), to: `acct-${i % 60}` },
      callId: `x${i}`,
      turn: 9,
      session: 's',
      record: { calls, now, reach: 'session' },
    });
    const used = process.cpuUsage(start);
    if (i >= 20) ms.push((used.user + used.system) / 1000);
  }
  fs.rmSync(ws, { recursive: true, force: true });
  return { p50: round(percentile(ms, 50), 3), p99: round(percentile(ms, 99), 3) };
}

console.log('policies  earlier calls  p50 ms  p99 ms  (CPU per decision: facts folded, then Cedar)');
for (const [p, c] of [
  [10, 0],
  [100, 1_000],
  [1_000, 0],
  [1_000, 1_000],
  [1_000, 10_000],
] as const) {
  const { p50, p99 } = point(p, c);
  console.log(
    `${String(p).padStart(8)}  ${String(c).padStart(13)}  ${String(p50).padStart(6)}  ${String(p99).padStart(6)}`,
  );
}
