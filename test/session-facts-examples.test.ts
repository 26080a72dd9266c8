// The looking-back examples on the real dev server, each decided by session facts folded from the
// durable record (pipeline/facts.ts, workflows/session-facts.ts): refunds at most 500 a day; pay
// only an account an earlier call created and a person approved; no `git push` after a failed test
// run this turn. One session runs them all on a worker in a child process that is killed with
// SIGKILL between turns and while a person's approval waits, and continues as new on the way.
// Then: every batch's history replays, and re-judging each call from what its history holds (the
// batch's input) reaches the recorded decision with the recorded facts; `sluice audit` shows the
// policy, its file:line and the facts it read; and a session started without `sessionFacts`,
// which carries no calls from one batch to the next, denies a call whose policy reads a fact.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { policyRules } from '../hooks/policy';
import { auditHistories } from '../client/audit';
import { decode, loadHistories } from '../client/history';
import { renderAudit } from '../client/render';
import { type SessionHandle, startSession } from '../client/session';
import type { BatchInput, SessionEvent } from '../pipeline/types';
import { readSessionLog } from '../stores/sink';
import { recordFor } from '../workflows/session-facts';
import { eventually } from './eventually';
import { type ChildWorker, spawnWorker, startHarness, type Harness } from './harness';

const SESSION = '{ refundedToday: Long, accountApproved: Bool, testsFailedThisTurn: Bool }';
const SCHEMA = `action "refund" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { amount: Long, order: String }, session: ${SESSION} }
};
action "pay" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { to: String, amount: Long }, session: ${SESSION} }
};
action "bash" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { command: String }, session: ${SESSION} }
};
`;
const POLICY = `@id("refund-limit")
@reason("refunds total at most 500 a day")
forbid (principal, action == Action::"refund", resource)
when { context.session.refundedToday + context.args.amount > 500 };

@id("pay-approved-accounts")
@reason("pay only an account an earlier call created and a person approved")
forbid (principal, action == Action::"pay", resource)
unless { context.session.accountApproved };

@id("no-push-after-failed-tests")
@reason("the tests failed this turn")
forbid (principal, action == Action::"bash", resource)
when { context.args.command like "git push*" && context.session.testsFailedThisTurn };

@id("refunds")
permit (principal, action == Action::"refund", resource);
@id("payments")
permit (principal, action == Action::"pay", resource);
@id("commands")
permit (principal, action == Action::"bash", resource);
@ask
@id("commits")
@reason("a person reads each commit")
permit (principal, action == Action::"bash", resource)
when { context.args.command like "git commit*" };
`;
const FACTS = {
  refundedToday: { total: { tool: 'refund', arg: 'amount', window: '1d' } },
  accountApproved: {
    exists: { tool: 'create_account', match: { account: 'to' }, decidedBy: 'person', outcome: ['ok'] },
  },
  testsFailedThisTurn: {
    exists: { tool: 'bash', where: { command: { like: 'npm test*' } }, window: 'turn', outcome: ['failed'] },
  },
};

const CONFIG = path.join(__dirname, 'fixtures', 'facts-examples.config.ts');
const step = (name: string, args: Record<string, unknown>) => ({ name, args });

let s: Harness;
let ws: string;
let worker: ChildWorker | undefined;

async function startWorker(): Promise<void> {
  worker = spawnWorker(CONFIG, s.taskQueue, s.stateDir, { SLUICE_TEST_DIR: s.stateDir, SLUICE_FACTS_WORKSPACE: ws });
  await worker.ready;
}

/** The worker dies (no goodbye), and a new one takes the session on. */
async function killWorker(): Promise<void> {
  await worker!.kill('SIGKILL');
  worker = undefined;
  await startWorker();
}

/** Sends a turn whose batch waits for a person; the worker is killed while it waits; then the person decides. */
async function turnDecidedAcrossKill(session: SessionHandle, steps: object[], id: string, approve: boolean) {
  const turn = session.send(JSON.stringify(steps), { id });
  const [pending] = await eventually('the ask', async () => {
    const p = await session.pendingApprovals();
    return p.length ? p : undefined;
  });
  await killWorker();
  await s.client.decide({ approvalId: pending.approvalId, decision: approve ? 'approve' : 'deny', by: 'ana' });
  return (await turn).text;
}

function ranLines(): string[] {
  const file = path.join(s.stateDir, 'ran.log');
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n') : [];
}

beforeAll(async () => {
  s = await startHarness('session-facts-examples', { tools: [] }, { autoStart: false });
  ws = fs.mkdtempSync(path.join(s.stateDir, 'ws-'));
  fs.mkdirSync(path.join(ws, '.cedar'));
  fs.writeFileSync(path.join(ws, '.cedar', 'schema.cedarschema'), SCHEMA);
  fs.writeFileSync(path.join(ws, '.cedar', 'examples.cedar'), POLICY);
  fs.writeFileSync(path.join(ws, '.cedar', 'facts.json'), JSON.stringify(FACTS, null, 2));
  await startWorker();
});
afterAll(async () => {
  await worker?.kill();
  await s?.close();
});

describe('the looking-back examples across worker kills and a continue-as-new', () => {
  let session: SessionHandle;
  let decided: SessionEvent[] = [];

  it('refunds at most 500 a day; pay only an approved account; no git push after failed tests this turn', async () => {
    session = await startSession(s.client, {
      sessionId: `examples-${process.pid}-${Date.now()}`,
      model: 'scripted',
      continueAsNewAfterEvents: 20,
      sessionFacts: true,
      // A worker killed while the step's batch activity waits on the ask: the next worker takes the
      // wait up once a beat is missed, 5 s later rather than the default 30 (the test kills three).
      modelCall: { heartbeatTimeoutMs: 5_000 },
    });
    const send = async (steps: object[], id: string) => (await session.send(JSON.stringify(steps), { id })).text;
    const texts: string[] = [];

    // Refunds: 300, then (after a kill and a continue-as-new) 200 more reaches 500, and 1 more is one too many.
    texts.push(await send([step('refund', { amount: 300, order: 'o-1' })], 'r1'));
    await killWorker();
    await eventually('a second run of the session', async () => (await session.state()).runs > 1);
    texts.push(
      await send([step('refund', { amount: 200, order: 'o-2' }), step('refund', { amount: 1, order: 'o-3' })], 'r2'),
    );

    // Accounts: a person approves acct-a and refuses acct-b, each while the worker dies under the ask.
    texts.push(await turnDecidedAcrossKill(session, [step('create_account', { account: 'acct-a' })], 'a1', true));
    texts.push(await turnDecidedAcrossKill(session, [step('create_account', { account: 'acct-b' })], 'a2', false));
    texts.push(
      await send(
        [
          step('pay', { to: 'acct-a', amount: 50 }),
          step('pay', { to: 'acct-b', amount: 50 }),
          step('pay', { to: 'acct-c', amount: 50 }),
        ],
        'p1',
      ),
    );

    // Tests fail, a person approves a commit while the worker dies, and the push in the same turn is refused;
    // the next turn's push goes.
    texts.push(
      await turnDecidedAcrossKill(
        session,
        [
          step('bash', { command: 'npm test' }),
          step('bash', { command: 'git commit -m wip' }),
          step('bash', { command: 'git push origin main' }),
        ],
        'g1',
        true,
      ),
    );
    texts.push(await send([step('bash', { command: 'git push origin main' })], 'g2'));

    expect(texts).toEqual(['ok', 'ok error', 'ok', 'error', 'ok error error', 'error ok error', 'ok']);
    // What ran (the failing test run aside: its attempts are the body's business); nothing denied ran.
    expect(ranLines().filter((l) => !l.startsWith('bash npm test'))).toEqual([
      'refund 300 o-1',
      'refund 200 o-2',
      'create_account acct-a',
      'pay 50 acct-a',
      'bash git commit -m wip',
      'bash git push origin main',
    ]);
    expect((await session.state()).runs).toBeGreaterThan(1);

    decided = (await readSessionLog(s.stateDir, session.sessionId)).filter((e) => e.type === 'policy/decided');
    expect(decided.map((e) => [e.data.decision, e.data.policyId])).toEqual([
      ['allow', 'refunds'],
      ['allow', 'refunds'],
      ['deny', 'refund-limit'],
      ['allow', 'payments'],
      ['deny', 'pay-approved-accounts'],
      ['deny', 'pay-approved-accounts'],
      ['allow', 'commands'],
      ['ask', 'commits'],
      ['deny', 'no-push-after-failed-tests'],
      ['allow', 'commands'],
    ]);
    const facts = decided.map((e) => e.data.facts as Record<string, unknown>);
    expect(facts.map((f) => f.refundedToday)).toEqual([0, 300, 500, 500, 500, 500, 500, 500, 500, 500]);
    expect(facts.slice(3, 6).map((f) => f.accountApproved)).toEqual([true, false, false]);
    expect(facts.slice(6).map((f) => f.testsFailedThisTurn)).toEqual([false, true, true, false]);
    expect(decided[2].data).toMatchObject({ source: 'cedar', file: '.cedar/examples.cedar', line: 1 });
  }, 600_000); // seven turns, four worker starts and several runs of the session: more than the default budget

  it('each batch replays, and its recorded input re-judges every call to the recorded decision and facts', async () => {
    expect(decided.length).toBeGreaterThan(0);
    const histories = (await loadHistories(session.sessionId, s.client.temporal)).filter((h) =>
      h.workflowId.startsWith('sluice-batch:'),
    );
    const policy = policyRules({ workspace: ws });
    let judged = 0;
    for (const h of histories) {
      await Worker.runReplayHistory(
        { workflowBundle: { codePath: inject('workflowBundlePath') } },
        h.history,
        h.workflowId,
      );
      const input = decode(h.history.events?.[0]?.workflowExecutionStartedEventAttributes?.input) as BatchInput;
      for (const call of input.calls) {
        const recorded = decided.find((e) => e.data.callId === call.id);
        if (!recorded) continue;
        const x = policy.explain({
          toolName: call.name,
          args: JSON.parse(call.arguments),
          session: input.sessionId,
          callId: call.id,
          turn: input.turn,
          record: recordFor(input, call),
        });
        expect([call.id, x.decision, x.winner?.facts]).toEqual([call.id, recorded.data.decision, recorded.data.facts]);
        judged++;
      }
    }
    expect(judged).toBe(decided.length);
  });

  it('`sluice audit` shows the policy that decided, its file:line and the facts it read', async () => {
    const audit = auditHistories(await loadHistories(session.sessionId, s.client.temporal));
    const refused = audit.batches
      .flatMap((b) => b.calls)
      .find((c) => c.name === 'refund' && c.policy?.decision === 'deny');
    expect(refused?.policy).toMatchObject({
      source: 'cedar',
      policyId: 'refund-limit',
      file: '.cedar/examples.cedar',
      line: 1,
      facts: { refundedToday: 500 },
    });
    const text = renderAudit(audit);
    const line = text
      .split('\n')
      .findIndex((l) => l.includes('policy deny by .cedar/examples.cedar:1 (cedar refund-limit)'));
    expect(line).toBeGreaterThan(0);
    expect(text.split('\n')[line + 1].trim()).toBe(
      'facts read: refundedToday=500, accountApproved=false, testsFailedThisTurn=false',
    );
  });
});

describe('a session started without sessionFacts', () => {
  it('carries no calls from one turn to the next, so a call whose policy reads a session fact is denied, saying why', async () => {
    const session = await startSession(s.client, {
      sessionId: `no-facts-${process.pid}-${Date.now()}`,
      model: 'scripted',
    });
    const texts: string[] = [];
    // Split across turns, or kept in one: a refund of 400 each time, under a 500-a-day limit.
    texts.push(
      (await session.send(JSON.stringify([step('refund', { amount: 400, order: 'n-0' })]), { id: 'n0' })).text,
    );
    texts.push(
      (
        await session.send(
          JSON.stringify([
            step('refund', { amount: 400, order: 'n-1' }),
            step('refund', { amount: 400, order: 'n-2' }),
          ]),
          { id: 'n1' },
        )
      ).text,
    );
    expect(texts).toEqual(['error', 'error error']);
    const log = await readSessionLog(s.stateDir, session.sessionId);
    const decided = log.filter((e) => e.type === 'policy/decided');
    expect(decided).toHaveLength(3);
    for (const e of decided) {
      expect(e.data).toMatchObject({ decision: 'deny', source: 'cedar', file: '.cedar/facts.json' });
      expect(e.data.note).toMatch(
        /counts calls across the session \(fact `refundedToday`\), but this batch carries only its own calls.*start the session with `sessionFacts: true`/,
      );
    }
    // Nothing ran: every refund's result is a denial.
    const results = log.filter((e) => e.type === 'tool/result');
    expect(results.map((e) => (e.data.error as { code?: string } | undefined)?.code)).toEqual([
      'DENIED',
      'DENIED',
      'DENIED',
    ]);
  });
});
