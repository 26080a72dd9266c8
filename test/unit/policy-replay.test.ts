// Shadow mode and policy replay on recorded histories (test/fixtures/policy-replay, recorded by
// scripts/record-policy-replay-histories.ts): three concurrent 2,000 transfers in one batch, and one
// 2,000 transfer a turn for three turns of a session that carries its calls, under the enforced
// 5,000-an-hour Cedar limit (each third denied), with a 3,000-an-hour candidate in shadow beside it.
// Replay judges every recorded call again with the facts as they stood at that call; the candidate
// would have denied a transfer that ran, and `--check` fails on it. Diff reads the shadow verdicts.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditHistories } from '../../client/audit';
import { loadHistories, type LoadedHistory } from '../../client/history';
import { renderAudit } from '../../client/render';
import { type ReadBatch, readBatches, replayPolicy, shadowDiff } from '../../client/policy-replay';
import { handlerOf, type StageContext } from '../../define/config';
import { policyRules } from '../../hooks/policy';
import { shadowPolicy } from '../../hooks/policy-shadow';
import { shellParserReady } from '../../hooks/shell';
import type { JsonObject } from '../../pipeline/types';
import { runCli } from '../run-cli';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'policy-replay');
const HISTORIES = path.join(FIXTURES, 'histories');
const CANDIDATE = path.join(FIXTURES, 'candidate');
const ENFORCED = path.join(FIXTURES, 'enforced');

let histories: LoadedHistory[];
let batches: ReadBatch[];
const scratch: string[] = [];
beforeAll(async () => {
  await shellParserReady();
  histories = await loadHistories(HISTORIES);
  const read = readBatches(histories);
  expect(read.unreadable).toEqual([]);
  batches = read.batches;
});
afterAll(() => {
  for (const d of scratch) fs.rmSync(d, { recursive: true, force: true });
});

function scratchDir(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  scratch.push(d);
  return d;
}

/** A candidate workspace: the fixture's schema and facts, with a transfer limit of `limit` an hour. */
function candidateWithLimit(limit: number): string {
  const ws = scratchDir('policy-replay-');
  fs.mkdirSync(path.join(ws, '.cedar'));
  for (const f of ['schema.cedarschema', 'facts.json'])
    fs.copyFileSync(path.join(ENFORCED, '.cedar', f), path.join(ws, '.cedar', f));
  fs.writeFileSync(
    path.join(ws, '.cedar', 'limits.cedar'),
    `@id("limit")
forbid (principal, action == Action::"transfer", resource)
when { context.session.transfersLastHour + context.args.amount > ${limit} };

permit (principal, action == Action::"transfer", resource);
`,
  );
  return ws;
}

describe('policy replay', () => {
  it('the enforced policy replayed reaches every recorded decision with the recorded facts', () => {
    const report = replayPolicy(batches, policyRules({ workspace: ENFORCED }));
    expect(report.calls.map((c) => [c.callId, c.recorded.decision, c.outcome])).toEqual([
      // The session's turns: the facts of turns 2 and 3 come from the calls its earlier batches carried.
      ['x1', 'allow', 'ok'],
      ['x2', 'allow', 'ok'],
      ['x3', 'deny', 'denied'],
      ['t1', 'allow', 'ok'],
      ['t2', 'allow', 'ok'],
      ['t3', 'deny', 'denied'],
      ['n1', 'none', 'ok'],
    ]);
    expect(report.changed).toEqual([]);
    for (const c of report.calls) expect(c.candidate).toEqual(c.recorded);
  });

  it('a candidate that would have denied a transfer that ran: the call, both rules and the facts at that call', () => {
    const report = replayPolicy(batches, policyRules({ workspace: CANDIDATE }));
    expect(report.changed.map((c) => c.callId)).toEqual(['x2', 't2']);
    // A session's earlier turn, carried across batches, is in the facts as it stood.
    expect(report.changed[0]).toMatchObject({
      workflowId: 'sluice-batch:fixture-policy-replay-session:2:1',
      outcome: 'ok',
      recorded: { decision: 'allow', facts: { transfersLastHour: 2000 } },
      candidate: { decision: 'deny', facts: { transfersLastHour: 2000 } },
    });
    expect(report.changed[1]).toMatchObject({
      callId: 't2',
      tool: 'transfer',
      args: { amount: 2000, to: 'acct-2' },
      outcome: 'ok',
      recorded: { decision: 'allow', policyId: 'transfers', facts: { transfersLastHour: 2000 } },
      candidate: {
        decision: 'deny',
        policyId: 'transfer-limit',
        file: '.cedar/limits.cedar',
        line: 1,
        message: 'at most 3,000 an hour',
        facts: { transfersLastHour: 2000 },
      },
    });
  });

  it('for any limit, exactly the calls whose decision the limit changes are listed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 8000 }), (limit) => {
        const report = replayPolicy(batches, policyRules({ workspace: candidateWithLimit(limit) }));
        // The i-th transfer saw the 2,000 of each one before it: the session's earlier turns, the
        // batch's calls ahead of it in flight.
        const changes = (ids: string[]) =>
          ids.filter((_id, i) => {
            const wouldDeny = 2000 * i + 2000 > limit;
            return wouldDeny !== (i === 2);
          });
        const expected = [...changes(['x1', 'x2', 'x3']), ...changes(['t1', 't2', 't3'])];
        expect(report.changed.map((c) => c.callId)).toEqual(expected);
      }),
      { numRuns: 25 },
    );
  });

  it('sluice policy replay --check exits 1 on a change and prints it; 0 when nothing changes', async () => {
    const changed = await runCli(['policy', 'replay', CANDIDATE, '--histories', HISTORIES, '--check']);
    expect(changed.code).toBe(1);
    expect(changed.output).toMatch(/2 decision\(s\) would change/);
    expect(changed.output).toMatch(/t2 transfer \{"amount":2000,"to":"acct-2"\}\s+\(it ran\)/);
    expect(changed.output).toMatch(/candidate\s+deny\s+\.cedar\/limits\.cedar:1/);
    expect(changed.output).toMatch(/facts \{"transfersLastHour":2000\}/);
    const same = await runCli(['policy', 'replay', ENFORCED, '--histories', HISTORIES, '--check']);
    expect(same.code).toBe(0);
    expect(same.output).toMatch(/7 recorded call\(s\) of 4 batch\(es\).*0 decision\(s\) would change/);
  });

  it('bad usage says what to give and exits 2', async () => {
    const neither = await runCli(['policy', 'replay', CANDIDATE]);
    expect(neither.code).toBe(2);
    expect(neither.output).toMatch(/--since .* or --histories DIR/);
    const badSince = await runCli(['policy', 'diff', '--since', 'turn']);
    expect(badSince.code).toBe(2);
    expect(badSince.output).toMatch(/--since turn is not a duration/);
    const noCandidate = await runCli(['policy', 'replay', '--histories', HISTORIES]);
    expect(noCandidate.code).toBe(2);
    const empty = scratchDir('policy-replay-empty-');
    const noFiles = await runCli(['policy', 'replay', empty, '--histories', HISTORIES]);
    expect(noFiles.code).toBe(2);
    expect(noFiles.output).toMatch(/holds no policy files/);
  });
});

describe('shadow mode', () => {
  it('the recorded shadow verdicts: policy diff lists the transfer the candidate would have denied', async () => {
    const { shadowed, differences } = shadowDiff(batches);
    expect(shadowed).toBe(7);
    expect(differences.map((d) => d.callId)).toEqual(['t2', 'x2']);
    expect(differences[0]).toMatchObject({
      callId: 't2',
      tool: 'transfer',
      enforced: { decision: 'allow', policyId: 'transfers' },
      candidate: { decision: 'deny', policyId: 'transfer-limit', facts: { transfersLastHour: 2000 } },
    });
    const cli = await runCli(['policy', 'diff', '--histories', HISTORIES, '--check']);
    expect(cli.code).toBe(1);
    expect(cli.output).toMatch(/7 call\(s\) judged in shadow, 2 where/);
    expect(cli.output).toMatch(/enforced\s+allow/);
  });

  it('sluice audit shows both verdicts of a shadowed call', () => {
    const text = renderAudit(auditHistories(histories.filter((h) => h.workflowId.endsWith('policy-replay:1:1'))));
    expect(text).toContain(
      'policy shadow: enforced allow by .cedar/limits.cedar:6 facts {"transfersLastHour":2000}, candidate deny by .cedar/limits.cedar:1 facts {"transfersLastHour":2000} — they differ',
    );
  });

  it('records both verdicts and never decides, even where the candidate denies', async () => {
    const handler = handlerOf(
      shadowPolicy({
        enforced: policyRules({ workspace: ENFORCED }),
        candidate: policyRules({ workspace: candidateWithLimit(0) }),
      }),
    );
    const events: { type: string; data: JsonObject }[] = [];
    const ctx: StageContext = {
      call: { id: 'c1', name: 'transfer', args: { amount: 10, to: 'a' }, argsDigest: 'sha256:x' },
      tool: { name: 'transfer', description: 'moves money', aliases: [] },
      sessionId: 's',
      turn: 1,
      step: 0,
      workflowId: 'w',
      idempotencyKey: 'w/c1',
      state: {},
      record: { calls: [], now: 0, reach: 'session' },
      addContext() {},
      emit: (type, data) => events.push({ type, data }),
    };
    expect(await handler(ctx)).toBeUndefined();
    expect(events).toEqual([
      {
        type: 'policy/shadow',
        data: expect.objectContaining({
          callId: 'c1',
          differs: true,
          enforced: expect.objectContaining({ decision: 'allow', policyId: 'transfers' }),
          candidate: expect.objectContaining({ decision: 'deny', policyId: 'limit', facts: { transfersLastHour: 0 } }),
        }),
      },
    ]);
  });
});
