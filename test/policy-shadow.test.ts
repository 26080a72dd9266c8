// Shadow mode on a real worker (hooks/policy-shadow.ts): a 3,000-an-hour candidate judged beside
// the enforced 5,000-an-hour Cedar limit on three concurrent 2,000 transfers. The enforced policy
// alone decides (the third is denied, the second runs), every call's history holds both verdicts,
// and `sluice policy diff --since 1h` and `sluice policy replay <candidate> --since 1h` read them
// from the server.
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineConfig } from '../define/config';
import { policyRules, shadowPolicy } from '../hooks';
import type { JsonObject } from '../pipeline/types';
import { eventually } from './eventually';
import { transferTool } from './fixtures/transfer-tool';
import { batch, startHarness, type Harness } from './harness';
import { runCli } from './run-cli';

const FIXTURES = path.join(__dirname, 'fixtures', 'policy-replay');
const CANDIDATE = path.join(FIXTURES, 'candidate');

let h: Harness;
beforeAll(async () => {
  const enforced = policyRules({ workspace: path.join(FIXTURES, 'enforced') });
  const candidate = policyRules({ workspace: CANDIDATE });
  h = await startHarness(
    'policy-shadow',
    defineConfig({
      tools: [transferTool()],
      preExecute: [shadowPolicy({ enforced, candidate }), ...enforced.preExecute],
    }),
  );
});
afterAll(async () => {
  await h?.close();
});

describe('shadow mode on the dev server', () => {
  it('the candidate is recorded on every call and never enforced; diff and replay read it from the server', async () => {
    const req = batch(
      [1, 2, 3].map((i) => ({ id: `t${i}`, name: 'transfer', args: { amount: 2000, to: `acct-${i}` } })),
      // The batch is the session's whole record: said, so the policies' facts are read, not refused.
      { options: { approvalChannel: false }, reach: 'session' },
    );
    const out = await h.client.runBatch(req);
    const failed = out.results.filter((r) => r.result.isError).map((r) => r.callId);
    // The enforced policy decided: the candidate's deny of t2 was not applied.
    expect(failed).toEqual(['t3']);
    const shadow = out.events.filter((e) => e.type === 'policy/shadow').map((e) => e.data);
    expect(
      shadow.map((d) => [d.callId, (d.enforced as JsonObject).decision, (d.candidate as JsonObject).decision]),
    ).toEqual([
      ['t1', 'allow', 'allow'],
      ['t2', 'allow', 'deny'],
      ['t3', 'deny', 'deny'],
    ]);
    const address = inject('temporalAddress');
    const workflowId = `sluice-batch:${req.sessionId}:1:1`;
    // Visibility lists a batch a little after it is written: wait until the listing has it.
    const diff = await eventually('policy diff --since 1h lists the batch', async () => {
      const r = await runCli([
        'policy',
        'diff',
        '--since',
        '1h',
        '--session',
        req.sessionId,
        '--json',
        '--address',
        address,
      ]);
      const d = JSON.parse(r.output) as { differences: { workflowId: string; callId: string }[] };
      const mine = d.differences.filter((x) => x.workflowId === workflowId);
      return r.code === 0 && mine.length ? mine : undefined;
    });
    expect(diff.map((d) => d.callId)).toEqual(['t2']);
    // One replay: --check makes the difference fail the command, and --json still reports it.
    const replay = await runCli([
      'policy',
      'replay',
      CANDIDATE,
      '--since',
      '1h',
      '--session',
      req.sessionId,
      '--json',
      '--check',
      '--address',
      address,
    ]);
    expect(replay.code).toBe(1);
    const report = JSON.parse(replay.output) as {
      changed: { workflowId: string; callId: string; outcome: string; candidate: JsonObject }[];
    };
    const changed = report.changed.filter((c) => c.workflowId === workflowId);
    expect(changed).toMatchObject([
      { callId: 't2', outcome: 'ok', candidate: { decision: 'deny', facts: { transfersLastHour: 2000 } } },
    ]);
  });
});
