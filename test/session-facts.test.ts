// Session facts through a real worker on the dev server (pipeline/facts.ts, workflows/session-facts.ts,
// hooks/cedar-policy.ts): three concurrent 2,000 transfers against a 5,000-an-hour Cedar limit — the
// third is denied while the first two are still running, since calls in flight count — and each
// decision's facts are on record in its policy/decided event. At most 5 emails an hour across a
// session's turns, holding across a worker killed with SIGKILL and a continue-as-new: the facts
// come from what the session carries, never from a worker's memory.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { policyRules } from '../hooks';
import { defineConfig } from '../define/config';
import { startSession } from '../client/session';
import { readSessionLog } from '../stores/sink';
import { eventually } from './eventually';
import { transferTool } from './fixtures/transfer-tool';
import { batch, type ChildWorker, spawnWorker, startHarness, type Harness } from './harness';

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
        transferTool(async ({ amount, to }) => {
          await judged;
          ran.push(`${amount} to ${to}`);
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
        // A session's first batch, as a client that carries the session's calls itself says it:
        // without `reach`, a batch carries only its own calls and the facts' policy denies all three.
        { options: { approvalChannel: false }, reach: 'session' },
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

const EMAIL_SCHEMA = `action "send_email" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { to: String }, session: { emailsLastHour: Long } }
};
`;
const EMAIL_POLICY = `@id("email-limit")
forbid (principal, action == Action::"send_email", resource)
when { context.session.emailsLastHour >= 5 };

permit (principal, action == Action::"send_email", resource);
`;

describe('session facts across a worker kill and a continue-as-new', () => {
  let s: Harness;
  let worker: ChildWorker | undefined;
  const CONFIG = path.join(__dirname, 'fixtures', 'facts-session.config.ts');
  beforeAll(async () => {
    s = await startHarness('session-facts-emails', { tools: [] }, { autoStart: false });
  });
  afterAll(async () => {
    await worker?.kill();
    await s?.close();
  });

  it('at most 5 emails an hour: the sixth is denied by the facts the session carried', async () => {
    const ws = fs.mkdtempSync(path.join(s.stateDir, 'ws-'));
    fs.mkdirSync(path.join(ws, '.cedar'));
    fs.writeFileSync(path.join(ws, '.cedar', 'schema.cedarschema'), EMAIL_SCHEMA);
    fs.writeFileSync(path.join(ws, '.cedar', 'limit.cedar'), EMAIL_POLICY);
    fs.writeFileSync(
      path.join(ws, '.cedar', 'facts.json'),
      JSON.stringify({ emailsLastHour: { count: { tool: 'send_email', window: '1h' } } }),
    );
    const env = { SLUICE_TEST_DIR: s.stateDir, SLUICE_FACTS_WORKSPACE: ws };
    const start = async () => {
      worker = spawnWorker(CONFIG, s.taskQueue, s.stateDir, env);
      await worker.ready;
    };
    await start();
    const session = await startSession(s.client, {
      sessionId: `emails-${process.pid}-${Date.now()}`,
      model: 'scripted',
      continueAsNewAfterEvents: 20,
      sessionFacts: true,
    });
    const texts: string[] = [];
    for (let i = 1; i <= 3; i++) texts.push((await session.send(`email:p${i}`, { id: `m${i}` })).text);
    // The worker dies between turns; a new one takes the session on.
    await worker!.kill('SIGKILL');
    worker = undefined;
    await start();
    for (let i = 4; i <= 5; i++) texts.push((await session.send(`email:p${i}`, { id: `m${i}` })).text);
    // The sixth goes to a later run than the first: the count crossed a continue-as-new.
    await eventually('a second run of the session', async () => (await session.state()).runs > 1);
    texts.push((await session.send('email:p6', { id: 'm6' })).text);
    expect(texts).toEqual(['sent to p1', 'sent to p2', 'sent to p3', 'sent to p4', 'sent to p5', 'not sent to p6']);
    const sent = fs.readFileSync(path.join(s.stateDir, 'sent.log'), 'utf8');
    expect(sent).not.toContain(' p6');
    const decided = (await readSessionLog(s.stateDir, session.sessionId)).filter((e) => e.type === 'policy/decided');
    expect(decided.map((e) => e.data.facts)).toEqual([0, 1, 2, 3, 4, 5].map((n) => ({ emailsLastHour: n })));
    expect(decided.at(-1)?.data).toMatchObject({ decision: 'deny', policyId: 'email-limit', line: 1 });
  });
});
