// Session facts through a real worker on the dev server (pipeline/facts.ts, workflows/session-facts.ts,
// hooks/cedar-policy.ts): three concurrent 2,000 transfers against a 5,000-an-hour Cedar limit — the
// third is denied while the first two are still running, since calls in flight count — and each
// decision's facts are on record in its policy/decided event.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { policyRules } from '../hooks';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, type Harness } from './harness';

const SCHEMA = `action "transfer" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { amount: Long, to: String }, session: { transfersLastHour: Long } }
};
`;
const POLICY = `@id("transfer-limit")
@reason("at most 5,000 an hour")
forbid (principal, action == Action::"transfer", resource)
when { context.session.transfersLastHour + context.args.amount > 5000 };

permit (principal, action == Action::"transfer", resource);
`;
const FACTS = { transfersLastHour: { total: { tool: 'transfer', arg: 'amount', window: '1h' } } };

let h: Harness;
const ran: string[] = [];
// The meeting point: the transfers' bodies end only once the third call has been judged.
let thirdJudged!: () => void;
const judged = new Promise<void>((resolve) => {
  thirdJudged = resolve;
});

beforeAll(async () => {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(inject('runDir'), 'session-facts-')));
  fs.mkdirSync(path.join(ws, '.cedar'));
  fs.writeFileSync(path.join(ws, '.cedar', 'schema.cedarschema'), SCHEMA);
  fs.writeFileSync(path.join(ws, '.cedar', 'limits.cedar'), POLICY);
  fs.writeFileSync(path.join(ws, '.cedar', 'facts.json'), JSON.stringify(FACTS, null, 2));
  const policy = policyRules({ workspace: ws });
  h = await startHarness(
    'session-facts',
    defineConfig({
      tools: [
        defineTool({
          name: 'transfer',
          description: 'moves money',
          input: z.object({ amount: z.number().int(), to: z.string() }),
          isConcurrencySafe: () => true,
          execute: async ({ amount, to }) => {
            await judged;
            ran.push(`${amount} to ${to}`);
            return `sent ${amount} to ${to}`;
          },
        }),
      ],
      preExecute: [
        {
          name: 'sees the third call judged',
          handler: (ctx) => {
            if (ctx.call.id === 't3') thirdJudged();
            return undefined;
          },
        },
        ...policy.preExecute,
      ],
    }),
  );
});
afterAll(async () => {
  await h?.close();
});

describe('session facts', () => {
  it('three concurrent 2,000 transfers against 5,000 an hour: the third is denied while the first two run', async () => {
    const out = await h.client.runBatch(
      batch(
        [1, 2, 3].map((i) => ({ id: `t${i}`, name: 'transfer', args: { amount: 2000, to: `acct-${i}` } })),
        { options: { approvalChannel: false } },
      ),
    );
    const result = Object.fromEntries(out.results.map((r) => [r.callId, r.result]));
    expect(result.t1.isError).toBe(false);
    expect(result.t2.isError).toBe(false);
    expect(result.t3.error?.code).toBe('DENIED');
    expect(ran.sort()).toEqual(['2000 to acct-1', '2000 to acct-2']);
    const decided = Object.fromEntries(
      out.events.filter((e) => e.type === 'policy/decided').map((e) => [e.data.callId as string, e.data]),
    );
    // The facts each decision read are on record with it: the calls before it, still in flight.
    expect(decided.t1).toMatchObject({ decision: 'allow', source: 'cedar', facts: { transfersLastHour: 0 } });
    expect(decided.t2).toMatchObject({ decision: 'allow', facts: { transfersLastHour: 2000 } });
    expect(decided.t3).toMatchObject({
      decision: 'deny',
      source: 'cedar',
      file: '.cedar/limits.cedar',
      line: 1,
      policyId: 'transfer-limit',
      facts: { transfersLastHour: 4000 },
    });
  });
});
