// Policy replay of facts-scope batches (test/fixtures/policy-replay/scope-histories, recorded by
// `scripts/record-policy-replay-histories.ts scope`): three batches of one 2,000 transfer each, each
// its own session, sharing only the facts scope `user:fixture`; the enforced 5,000-an-hour Cedar
// limit denied the third on the first two, read from the worker's fact store. The histories hold
// no other batch's calls: replay judges each call with the facts its decision recorded, so the
// enforced policy reaches every recorded decision and a candidate changes one only by those facts.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHistories } from '../../client/history';
import { type ReadBatch, readBatches, replayPolicy } from '../../client/policy-replay';
import { policyRules } from '../../hooks/policy';
import { shellParserReady } from '../../hooks/shell';
import { runCli } from '../run-cli';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'policy-replay');
const HISTORIES = path.join(FIXTURES, 'scope-histories');
const CANDIDATE = path.join(FIXTURES, 'candidate');
const ENFORCED = path.join(FIXTURES, 'enforced');

let batches: ReadBatch[];
const scratch: string[] = [];
beforeAll(async () => {
  await shellParserReady();
  const read = readBatches(await loadHistories(HISTORIES));
  expect(read.unreadable).toEqual([]);
  batches = read.batches;
});
afterAll(() => {
  for (const d of scratch) fs.rmSync(d, { recursive: true, force: true });
});

/** A candidate workspace: the fixture's schema, `facts`, and a forbid over them. */
function candidate(facts: object, when: string): string {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'policy-replay-scope-'));
  scratch.push(ws);
  fs.mkdirSync(path.join(ws, '.cedar'));
  const schema = fs.readFileSync(path.join(ENFORCED, '.cedar', 'schema.cedarschema'), 'utf8');
  const names = Object.keys(facts)
    .map((n) => `${n}: Long`)
    .join(', ');
  fs.writeFileSync(
    path.join(ws, '.cedar', 'schema.cedarschema'),
    schema.replace(/session: \{[^}]*\}/, `session: { ${names} }`),
  );
  fs.writeFileSync(path.join(ws, '.cedar', 'facts.json'), JSON.stringify(facts));
  fs.writeFileSync(
    path.join(ws, '.cedar', 'limits.cedar'),
    `@id("limit")
forbid (principal, action == Action::"transfer", resource)
when { ${when} };

permit (principal, action == Action::"transfer", resource);
`,
  );
  return ws;
}

const LAST_HOUR = { transfersLastHour: { total: { tool: 'transfer', arg: 'amount', window: '1h' } } };

describe('policy replay of a facts-scope batch', () => {
  it('the enforced policy replayed reaches every recorded decision, with the facts read from the scope', () => {
    const report = replayPolicy(batches, policyRules({ workspace: ENFORCED }));
    expect(report.calls.map((c) => [c.callId, c.recorded.decision, c.candidate.decision, c.outcome])).toEqual([
      ['s1', 'allow', 'allow', 'ok'],
      ['s2', 'allow', 'allow', 'ok'],
      ['s3', 'deny', 'deny', 'denied'],
    ]);
    expect(report.calls.map((c) => c.candidate.facts)).toEqual([
      { transfersLastHour: 0 },
      { transfersLastHour: 2000 },
      { transfersLastHour: 4000 },
    ]);
    expect(report.changed).toEqual([]);
  });

  it('a candidate changes a verdict only by a scope fact: the second batch alone holds one transfer', () => {
    const report = replayPolicy(batches, policyRules({ workspace: CANDIDATE }));
    expect(report.changed.map((c) => c.callId)).toEqual(['s2']);
    expect(report.changed[0]).toMatchObject({
      workflowId: 'sluice-batch:fixture-policy-replay-scope-2:1:1',
      outcome: 'ok',
      recorded: { decision: 'allow', facts: { transfersLastHour: 2000 } },
      candidate: { decision: 'deny', policyId: 'transfer-limit', facts: { transfersLastHour: 2000 } },
    });
  });

  it('for any limit, exactly the calls the scope facts put over it change', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 8000 }), (limit) => {
        const ws = candidate(LAST_HOUR, `context.session.transfersLastHour + context.args.amount > ${limit}`);
        const report = replayPolicy(batches, policyRules({ workspace: ws }));
        // The i-th batch's transfer saw the 2,000 of each batch of the scope before it.
        const expected = ['s1', 's2', 's3'].filter((_id, i) => 2000 * i + 2000 > limit !== (i === 2));
        expect(report.changed.map((c) => c.callId)).toEqual(expected);
      }),
      { numRuns: 15 },
    );
  });

  it('a candidate reading a fact no decision recorded denies, naming it, rather than judging an undercount', () => {
    const ws = candidate(
      { transfersToday: { total: { tool: 'transfer', arg: 'amount', window: '1d' } } },
      'context.session.transfersToday > 100000',
    );
    const report = replayPolicy(batches, policyRules({ workspace: ws }));
    expect(report.calls.map((c) => c.candidate.decision)).toEqual(['deny', 'deny', 'deny']);
    expect(String(report.calls[0].candidate.message)).toMatch(/`transfersToday`/);
  });

  it('sluice policy replay --check over the scope batches: exit 1 on the candidate, 0 on the enforced files', async () => {
    const changed = await runCli(['policy', 'replay', CANDIDATE, '--histories', HISTORIES, '--check']);
    expect(changed.code).toBe(1);
    expect(changed.output).toMatch(/3 recorded call\(s\) of 3 batch\(es\).*1 decision\(s\) would change/);
    expect(changed.output).toMatch(/s2 transfer \{"amount":2000,"to":"acct-2"\}\s+\(it ran\)/);
    const same = await runCli(['policy', 'replay', ENFORCED, '--histories', HISTORIES, '--check']);
    expect(same.code).toBe(0);
  });
});
