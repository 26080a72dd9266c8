// `sluice policy replay` and `sluice policy diff`: a candidate policy against past traffic. Replay
// judges every recorded call again under the candidate's files, with the session facts as they
// stood at each call; diff reads what shadow mode (hooks/policy-shadow.ts) recorded beside each
// enforced decision. Both read the batches' workflow histories — started within --since on the
// server, or exported files under --histories — and run nothing; --check makes a difference fail,
// so CI can test a policy change against last week's real traffic.
import * as path from 'node:path';
import {
  type PolicyReplayReport,
  type ReadBatch,
  readBatches,
  recentBatchHistories,
  replayPolicy,
  type ReplayedCall,
  shadowDiff,
  type ShadowDifference,
} from '../client/policy-replay';
import { codecFromEnv, decryptHistory } from '../codec/payload';
import { policyRules } from '../hooks/policy';
import type { RecordedVerdict } from '../hooks/policy-shadow';
import { windowOf } from '../pipeline/facts';
import { UsageError } from '../support/errors';
import type { Values } from './command';
import { client, type CONNECTION_FLAGS, withHistories } from './shared';

interface ReplayValues extends Values<typeof CONNECTION_FLAGS> {
  since?: string;
  histories?: string;
  session?: string;
  check?: boolean;
  json?: boolean;
}

/** The batches to look at: those started within --since on the server, or the files under --histories. */
async function withBatches<T>(v: ReplayValues, use: (b: ReadBatch[]) => Promise<T>): Promise<T> {
  if (!!v.since === !!v.histories)
    throw new UsageError(
      'give either --since (e.g. --since 7d: the batches started on the server since then) or --histories DIR (exported histories)',
    );
  const read = (histories: Parameters<typeof readBatches>[0]) => {
    const { batches, unreadable } = readBatches(histories);
    for (const u of unreadable)
      process.stderr.write(
        `sluice policy: skipped ${u.workflowId}: its history cannot be read (${u.why}); set SLUICE_CODEC_KEYS if it is encrypted\n`,
      );
    return use(batches);
  };
  if (v.histories) return withHistories(v, [v.histories], read);
  const ms = sinceMs(v.since!);
  const c = await client(v);
  try {
    const histories = await recentBatchHistories(c.sluice.temporal, Date.now() - ms, v.session);
    const codec = codecFromEnv();
    if (codec) for (const h of histories) await decryptHistory(h.history, codec);
    return await read(histories);
  } finally {
    await c.close();
  }
}

function sinceMs(since: string): number {
  let w: ReturnType<typeof windowOf>;
  try {
    w = windowOf(since);
  } catch {
    w = undefined;
  }
  if (typeof w !== 'number') throw new UsageError(`--since ${since} is not a duration: write 30m, 12h, 1d or 7d`);
  return w;
}

/** `policy replay <candidate>`: every recorded call judged again under the candidate workspace's files. */
export async function replayCommand(rest: string[], v: ReplayValues, out: (s: string) => void): Promise<number> {
  const [candidateDir, ...extra] = rest;
  if (!candidateDir || extra.length)
    throw new UsageError(
      'name the candidate: a folder holding the policy files to try, e.g. sluice policy replay policies/next --since 7d',
    );
  const candidate = policyRules({ workspace: path.resolve(candidateDir), examples: 'report' });
  if (!candidate.files.length) throw new UsageError(`${candidateDir} holds no policy files: nothing to replay`);
  return withBatches(v, async (batches) => {
    const report = replayPolicy(batches, candidate);
    if (v.json) out(JSON.stringify({ policyDigest: candidate.digest, ...report }, null, 2));
    else renderReplay(report, `${candidateDir} (policy ${candidate.digest})`, out);
    return v.check && report.changed.length ? 1 : 0;
  });
}

function renderReplay(report: PolicyReplayReport, what: string, out: (s: string) => void): void {
  out(
    `${report.calls.length} recorded call(s) of ${report.batches} batch(es) judged again under ${what}: ${report.changed.length} decision(s) would change`,
  );
  for (const c of report.changed) {
    out(`${c.workflowId} ${c.callId} ${c.tool} ${JSON.stringify(c.args)}  (${outcomeText(c.outcome)})`);
    out(verdictLine('recorded', c.recorded));
    out(verdictLine('candidate', c.candidate));
  }
}

/** `policy diff`: the calls where shadow mode's candidate and the enforced policy decided differently. */
export async function diffCommand(rest: string[], v: ReplayValues, out: (s: string) => void): Promise<number> {
  if (rest.length) throw new UsageError('policy diff takes no arguments: --since 1d or --histories DIR');
  return withBatches(v, async (batches) => {
    const { shadowed, differences } = shadowDiff(batches);
    if (v.json) out(JSON.stringify({ shadowed, differences }, null, 2));
    else renderDiff(shadowed, differences, out);
    return v.check && differences.length ? 1 : 0;
  });
}

function renderDiff(shadowed: number, differences: ShadowDifference[], out: (s: string) => void): void {
  out(`${shadowed} call(s) judged in shadow, ${differences.length} where the candidate and the enforced policy differ`);
  if (!shadowed)
    out("no policy/shadow events: put shadowPolicy({ enforced, candidate }) first in the worker config's preExecute");
  for (const d of differences) {
    out(`${d.time} ${d.workflowId} ${d.callId} ${d.tool} ${d.args}`);
    out(verdictLine('enforced', d.enforced));
    out(verdictLine(`candidate`, d.candidate));
  }
}

function verdictLine(label: string, x: RecordedVerdict): string {
  const rule = x.file ? `  ${String(x.file)}:${String(x.line)}  ${String(x.rule)}` : '  (no rule decides)';
  const why = x.message ? `  — ${String(x.message)}` : '';
  const facts = x.facts ? `\n  ${''.padEnd(10)} facts ${JSON.stringify(x.facts)}` : '';
  return `  ${label.padEnd(10)} ${x.decision.padEnd(5)}${rule}${why}${facts}`;
}

function outcomeText(o: ReplayedCall['outcome']): string {
  return {
    ok: 'it ran',
    failed: 'it ran and failed',
    denied: 'it was denied',
    'not-run': 'it did not run',
    pending: 'no result on record',
  }[o];
}
