// A Dogwood set among the policy files (policyRules' `dogwood`, read from a workspace's `.dogwood`
// folder with its `scope.json`): its files are in the digest an ask is bound to, so an approval
// given under one text of the set is judged again under another, and a set that now denies the
// call denies it; the same text lets the approval stand. Judged by the real reference (dogwood-py,
// which the test setup installs).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { StageContext } from '../define/config';
import { stopDogwood } from '../hooks/dogwood';
import { policyRules } from '../hooks/policy';
import type { PolicyBinding } from '../pipeline/types';
import { runCli } from './run-cli';

const SCHEMA = `namespace Agent {
  type SendEmailInput = { to: String };
  entity Gateway;
  entity OAuthUser;
  action "SendEmail" appliesTo { principal: [OAuthUser], resource: [Gateway], context: { input: SendEmailInput } };
}
`;
const limit = (n: number) => `@id("email_limit")
permit (principal, action == Agent::Action::"SendEmail", resource)
when temporal {
  exists (n: Long). (
    (count for (t: Timepoint). where (formerly within 1h (Agent::Action::"SendEmail"::request{} && tp(t)))) == n
    && n <= ${n}
  )
};
`;
const SCOPE = {
  namespace: 'Agent',
  principal: 'Agent::OAuthUser::"alice"',
  resource: 'Agent::Gateway::"mail"',
  actions: { send_email: 'SendEmail' },
  input: 'arguments',
};

let ws: string;
beforeAll(() => {
  ws = fs.realpathSync(fs.mkdtempSync(path.join(inject('runDir'), 'dogwood-binding-')));
  fs.mkdirSync(path.join(ws, '.dogwood'));
  fs.writeFileSync(path.join(ws, '.dogwood', 'schema.cedarschema'), SCHEMA);
  fs.writeFileSync(path.join(ws, '.dogwood', 'scope.json'), JSON.stringify(SCOPE));
  fs.writeFileSync(path.join(ws, '.dogwood', 'limits.dw'), limit(3));
});
afterAll(() => stopDogwood());

/** The stage's view of one send_email call, first of its session; what it put on record. */
function stage(id: string) {
  const events: { type: string; data: Record<string, unknown> }[] = [];
  const ctx: StageContext = {
    call: { id, name: 'send_email', args: { to: 'z' }, argsDigest: '' },
    tool: { name: 'send_email', description: '', aliases: [] },
    sessionId: 's',
    turn: 1,
    step: 1,
    workflowId: 'w',
    idempotencyKey: 'k',
    state: {},
    record: { calls: [], now: Date.parse('2026-12-01T10:00:00Z'), reach: 'session' },
    addContext: () => {},
    emit: (type, data) => events.push({ type, data }),
  };
  return { ctx, events };
}

describe('a Dogwood set among the policy files', () => {
  it('binds an ask to its text: the same text lets the approval stand, a text that now denies denies it', async () => {
    const before = policyRules({ workspace: ws }).preExecute[0];
    expect(before.longRunning).toBe(true);
    const asked = stage('c1');
    const answer = (await before.handler(asked.ctx)) as { kind: string; policy: PolicyBinding };
    // No file has a rule for the tool: its own approval asks, bound to this policy.
    expect(answer.kind).toBe('allow');
    expect(answer.policy.files).toEqual(
      expect.arrayContaining([
        { source: 'dogwood', file: '.dogwood/limits.dw', digest: expect.stringMatching(/^sha256:/) },
        { source: 'dogwood', file: '.dogwood/schema.cedarschema', digest: expect.stringMatching(/^sha256:/) },
      ]),
    );
    expect(asked.events).toEqual([
      {
        type: 'policy/decided',
        data: expect.objectContaining({ decision: 'allow', source: 'dogwood', policyId: 'email_limit' }),
      },
    ]);

    // Read again with the same text: the same digest, and the approval stands without a second look.
    const same = policyRules({ workspace: ws }).preExecute[0];
    const again = stage('c1');
    expect(await same.recheck(again.ctx, answer.policy)).toBeUndefined();
    expect(again.events).toEqual([]);

    // The set edited while the call waited: none an hour.
    fs.writeFileSync(path.join(ws, '.dogwood', 'limits.dw'), limit(0));
    const after = policyRules({ workspace: ws }).preExecute[0];
    const late = stage('c1');
    const denial = await after.recheck(late.ctx, answer.policy);
    expect(denial).toMatch(/^the policy changed while this call waited for approval \(sha256:\w{12} → sha256:\w{12}\)/);
    expect(denial).toContain('it is now denied by .dogwood/limits.dw (email_limit)');
    expect(late.events.find((e) => e.type === 'policy/rechecked')?.data).toMatchObject({
      outcome: 'denied',
      askedUnder: { digest: answer.policy.digest },
    });
    // And a new call under it is denied by the set.
    expect(await after.handler(stage('c2').ctx)).toMatchObject({
      kind: 'deny',
      reason: expect.stringMatching(/email_limit/),
    });
    fs.writeFileSync(path.join(ws, '.dogwood', 'limits.dw'), limit(3));
  });

  it('a scope.json that is not a scope stops the policy from loading, naming the file', () => {
    const bad = fs.realpathSync(fs.mkdtempSync(path.join(inject('runDir'), 'dogwood-scope-')));
    fs.mkdirSync(path.join(bad, '.dogwood'));
    fs.writeFileSync(path.join(bad, '.dogwood', 'scope.json'), JSON.stringify({ namespace: 'Agent' }));
    expect(() => policyRules({ workspace: bad })).toThrow(/scope\.json: "principal" must be a string/);
  });

  it('`sluice policy explain` asks the reference, as the next call of a recorded session; `policy check` validates the set and runs its tests', async () => {
    const t = '2026-12-01T10:00:00.000Z';
    const sent = (i: number) => [
      {
        type: 'tool/call',
        seq: 2 * i,
        time: t,
        data: { turn: 1, step: i, callId: `e${i}`, name: 'send_email', arguments: '{"to":"a"}' },
      },
      {
        type: 'tool/result',
        seq: 2 * i + 1,
        time: t,
        data: { turn: 1, step: i, callId: `e${i}`, name: 'send_email', isError: false, content: [] },
      },
    ];
    const history = path.join(ws, 'session.jsonl');
    fs.writeFileSync(
      history,
      [0, 1, 2]
        .flatMap(sent)
        .map((e) => JSON.stringify(e))
        .join('\n'),
    );
    const fresh = await runCli(['policy', 'explain', 'send_email', '{"to":"b"}', '--workspace', ws]);
    expect(fresh.output).toMatch(/policy sha256:\w+ \(.*\.dogwood\/limits\.dw/);
    expect(fresh.output).toMatch(/dogwood +allow +\.dogwood\/limits\.dw:1 +@id\("email_limit"\) permit/);
    expect(fresh.output).toContain('→ allow, decided by .dogwood/limits.dw:1');
    // Three sent within the hour: the fourth is over the limit.
    const fourth = await runCli([
      'policy',
      'explain',
      'send_email',
      '{"to":"b"}',
      '--history',
      history,
      '--workspace',
      ws,
    ]);
    expect(fourth.output).toContain('→ deny, decided by .dogwood/limits.dw:1');

    const tests = path.join(ws, 'policy-tests.json');
    const test = (expect: string) => ({
      tool: 'send_email',
      args: { to: 'b' },
      expect,
      source: 'dogwood',
      rule: 'email_limit',
    });
    fs.writeFileSync(tests, JSON.stringify({ tests: [test('allow')] }));
    const ok = await runCli(['policy', 'check', '--workspace', ws]);
    expect(ok.output).toContain('dogwood: .dogwood validated by the reference; 1 test(s) run, 0 failed');
    expect(ok.code).toBe(0);
    fs.writeFileSync(tests, JSON.stringify({ tests: [test('allow'), test('deny')] }));
    const failed = await runCli(['policy', 'check', '--workspace', ws]);
    expect(failed.output).toContain('FAIL tests[1] send_email {"to":"b"}: expected deny, the Dogwood set says allow');
    expect(failed.code).toBe(1);
    fs.rmSync(tests);
    fs.writeFileSync(
      path.join(ws, '.dogwood', 'typo.dw'),
      'permit(principal, action == Agent::Action::"SendMail", resource);',
    );
    const invalid = await runCli(['policy', 'check', '--workspace', ws]);
    expect(invalid.output).toMatch(/dogwood: FAIL \.dogwood\/typo\.dw does not validate: .*unrecognized action/);
    expect(invalid.code).toBe(1);
    fs.rmSync(path.join(ws, '.dogwood', 'typo.dw'));
  });

  it("a denial carries the policy's @hint; the scope is in the digest as much as the policies", async () => {
    const shop = fs.realpathSync(fs.mkdtempSync(path.join(inject('runDir'), 'dogwood-shop-')));
    const fix = path.join(__dirname, 'fixtures', 'dogwood', 'shopping');
    fs.mkdirSync(path.join(shop, '.dogwood'));
    for (const f of ['schema.cedarschema', 'event.dwschema', 'approval_gate.dw'])
      fs.copyFileSync(path.join(fix, f), path.join(shop, '.dogwood', f));
    const scope = { ...SCOPE, resource: 'Agent::Gateway::"shop"', actions: { checkout_cart: 'CheckoutCart' } };
    fs.writeFileSync(path.join(shop, '.dogwood', 'scope.json'), JSON.stringify(scope));
    const p = policyRules({ workspace: shop });
    const { ctx, events } = stage('k1');
    const args = {
      user: 'alice',
      session_id: 's',
      cart_id: 'c',
      item_id: 'i',
      category: 'b',
      amount: 1,
      quantity: 1,
      risk: 1,
      status: 'requested',
    };
    const checkout = {
      ...ctx,
      call: { ...ctx.call, name: 'checkout_cart', args },
      tool: { name: 'checkout_cart', description: '', aliases: [] },
    };
    // No approval of the cart before it: denied, in the policy's own words.
    expect(await p.preExecute[0].handler(checkout)).toMatchObject({
      kind: 'deny',
      reason: expect.stringMatching(
        /\(shopping_checkout_requires_recent_approval\): .* — run approve before checkout$/,
      ),
    });
    expect(events[0].data).toMatchObject({ source: 'dogwood', message: 'run approve before checkout' });
    fs.writeFileSync(
      path.join(shop, '.dogwood', 'scope.json'),
      JSON.stringify({ ...scope, principal: 'Agent::OAuthUser::"bob"' }),
    );
    expect(policyRules({ workspace: shop }).digest).not.toBe(p.digest);
    expect(p.files.map((f) => f.label)).toContain('.dogwood/scope.json');
  });

  it('an @ask policy that lets the call through asks a person, its hint on the card, bound to the set', async () => {
    const review = fs.realpathSync(fs.mkdtempSync(path.join(inject('runDir'), 'dogwood-ask-')));
    fs.mkdirSync(path.join(review, '.dogwood'));
    fs.writeFileSync(path.join(review, '.dogwood', 'schema.cedarschema'), SCHEMA);
    fs.writeFileSync(path.join(review, '.dogwood', 'scope.json'), JSON.stringify(SCOPE));
    fs.writeFileSync(
      path.join(review, '.dogwood', 'review.dw'),
      limit(1).replace('@id("email_limit")', '@id("email_review")\n@ask\n@hint("a person reads each email first")'),
    );
    const p = policyRules({ workspace: review }).preExecute[0];
    const first = stage('r1');
    const asked = (await p.handler(first.ctx)) as { kind: string; reason: string; policy: PolicyBinding };
    expect(asked).toMatchObject({
      kind: 'ask',
      reason: expect.stringMatching(
        /^asked by \.dogwood\/review\.dw \(email_review\): `.*` — a person reads each email first \(policy sha256:\w{12}\)$/,
      ),
    });
    expect(asked.policy.files).toEqual(
      expect.arrayContaining([
        { source: 'dogwood', file: '.dogwood/review.dw', digest: expect.stringMatching(/^sha256:/) },
      ]),
    );
    expect(first.events[0].data).toMatchObject({ decision: 'ask', source: 'dogwood', policyId: 'email_review' });
    // Past the limit the set denies: nothing permits it, so there is nothing to ask about.
    const second = stage('r2');
    const record = {
      ...second.ctx.record!,
      calls: [
        {
          callId: 'r1',
          tool: 'send_email',
          args: { to: 'z' },
          at: second.ctx.record!.now,
          turn: 1,
          outcome: 'ok' as const,
        },
      ],
    };
    expect(await p.handler({ ...second.ctx, record })).toMatchObject({
      kind: 'deny',
      reason: expect.stringMatching(/^denied by/),
    });
  });
});
