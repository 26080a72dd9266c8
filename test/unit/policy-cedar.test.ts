// Cedar policies as a policy source (hooks/cedar-policy.ts), evaluated by the official engine:
// forbid wins, `@ask` on a permit asks, Cedar's implicit deny is no opinion; a policy or schema that
// does not validate stops the worker with the file and line; arguments that do not fit the schema,
// and a forbid that errors, deny; the policy id and line go on record; `sluice policy explain` and
// `check` show the Cedar source. A property test checks the outcome against a model of the rules.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { handlerOf, type StageContext } from '../../define/config';
import { cedarPolicy } from '../../hooks/cedar-policy';
import { policyRules } from '../../hooks/policy';
import { PolicyFileError } from '../../hooks/policy-types';
import { shellParserReady } from '../../hooks/shell';
import type { JsonObject } from '../../pipeline/types';
import { runCli } from '../run-cli';

function workspace(files: Record<string, string>): string {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'policy-cedar-'));
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    fs.writeFileSync(path.join(ws, rel), text);
  }
  return ws;
}

const SCHEMA = `action "bash" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { command: String, timeout?: Long } }
};
action "refund" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { amount: Long, order: String }, workspace: String }
};
`;

const TEAM = `// Pushes go through review, never from an agent.
@id("no-push")
@reason("pushes go through review")
forbid (principal, action == Action::"bash", resource)
when { context.args.command like "git push*" };

// Large refunds need a person.
@ask
@id("large-refund")
permit (principal, action == Action::"refund", resource)
when { context.args.amount > 100 };

permit (principal, action == Action::"refund", resource);
permit (principal, action == Action::"bash", resource) when { context.args.command like "git *" };
`;

function source(files: Record<string, string>) {
  return cedarPolicy({ workspace: workspace(files) });
}

function loadError(files: Record<string, string>): PolicyFileError {
  try {
    source(files);
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyFileError);
    return err as PolicyFileError;
  }
  throw new Error('the policies loaded');
}

describe('Cedar policies: outcomes', () => {
  const cedar = source({ '.cedar/schema.cedarschema': SCHEMA, '.cedar/team.cedar': TEAM });

  it('a forbid wins over a permit that also matches, with the policy id, line and reason', () => {
    const v = cedar.evaluate({ toolName: 'bash', args: { command: 'git push origin main' } });
    expect(v.decision).toBe('deny');
    expect(v.rule).toMatchObject({
      file: '.cedar/team.cedar',
      line: 2,
      policyId: 'no-push',
      message: 'pushes go through review',
    });
    // Cedar gives a deny's reasons only: the forbids that held.
    expect(v.matched.map((r) => r.line)).toEqual([2]);
    expect(cedar.evaluate({ toolName: 'bash', args: { command: 'git status' } })).toMatchObject({
      decision: 'allow',
      rule: { line: 14 },
    });
  });

  it('a permit annotated @ask asks, over a plain permit that matches too; a plain permit allows', () => {
    const big = cedar.evaluate({ toolName: 'refund', args: { amount: 500, order: 'o-1' } });
    expect(big).toMatchObject({ decision: 'ask', rule: { line: 8, policyId: 'large-refund' } });
    const small = cedar.evaluate({ toolName: 'refund', args: { amount: 50, order: 'o-1' } });
    expect(small).toMatchObject({ decision: 'allow', rule: { line: 13 } });
  });

  it("Cedar's implicit deny is no opinion, and a tool the schema does not declare is not Cedar's to judge", () => {
    expect(cedar.evaluate({ toolName: 'bash', args: { command: 'ls' } }).decision).toBe('none');
    const other = cedar.evaluate({ toolName: 'write', args: { path: 'a' } });
    expect(other.decision).toBe('none');
    expect(other.note).toMatch(/declares no action "write"/);
  });

  it('arguments the schema does not declare, or a fraction, deny and name the action in the schema', () => {
    const extra = cedar.evaluate({ toolName: 'bash', args: { command: 'ls', cwd: '/' } });
    expect(extra).toMatchObject({ decision: 'deny', rule: { file: '.cedar/schema.cedarschema', line: 1 } });
    expect(extra.note).toMatch(/`cwd`/);
    const fraction = cedar.evaluate({ toolName: 'refund', args: { amount: 2.5, order: 'o' } });
    expect(fraction).toMatchObject({ decision: 'deny', rule: { line: 6 } });
    expect(fraction.note).toMatch(/args\.amount is a fraction/);
  });

  it('a forbid that errors while evaluated denies (Cedar alone would skip it)', () => {
    const c = source({
      '.cedar/schema.cedarschema': SCHEMA,
      '.cedar/p.cedar':
        'permit (principal, action, resource);\nforbid (principal, action == Action::"refund", resource) when { context.args.amount * 1000000000 > 5 };\n',
    });
    const v = c.evaluate({ toolName: 'refund', args: { amount: 9_000_000_000_000, order: 'o' } });
    expect(v).toMatchObject({ decision: 'deny', rule: { line: 2 } });
    expect(v.note).toMatch(/could not be evaluated.*overflow/);
    expect(c.evaluate({ toolName: 'refund', args: { amount: 0, order: 'o' } }).decision).toBe('allow');
  });

  it('the session is the principal and the workspace is in the context when the action declares it', () => {
    const ws = workspace({
      '.cedar/schema.cedarschema': SCHEMA,
      '.cedar/p.cedar':
        'forbid (principal == Sluice::Session::"s-bad", action, resource);\n' +
        'permit (principal, action == Action::"refund", resource) when { context.workspace like "*policy-cedar-*" };\n',
    });
    const c = cedarPolicy({ workspace: ws });
    const args = { amount: 1, order: 'o' };
    expect(c.evaluate({ toolName: 'refund', args, session: 's-bad' }).decision).toBe('deny');
    expect(c.evaluate({ toolName: 'refund', args, session: 's-good' }).decision).toBe('allow');
  });

  it('an MCP tool carries its server on the resource', () => {
    const c = source({
      '.cedar/schema.cedarschema':
        'action "mcp__deploy__release" appliesTo { principal: Sluice::Session, resource: Sluice::Tool, context: {} };\n',
      '.cedar/p.cedar':
        'forbid (principal, action, resource) when { resource has server && resource.server == "deploy" };\n',
    });
    expect(c.evaluate({ toolName: 'mcp__deploy__release', args: {} }).decision).toBe('deny');
  });
});

describe('Cedar policies: what stops the worker', () => {
  it('a policy that does not validate, with the file and the line of the attribute', () => {
    const e = loadError({
      '.cedar/schema.cedarschema': SCHEMA,
      '.cedar/team.cedar':
        'permit (principal, action, resource);\n\nforbid (principal, action == Action::"bash", resource)\n  when { context.args.cmd like "rm*" };\n',
    });
    expect(e.file).toBe('.cedar/team.cedar');
    expect(e.line).toBe(4);
    expect(e.message).toMatch(/does not validate.*`args\.cmd`.*did you mean `command`/);
  });

  it('an optional argument read without `has` does not validate', () => {
    const e = loadError({
      '.cedar/schema.cedarschema': SCHEMA,
      '.cedar/t.cedar': 'forbid (principal, action == Action::"bash", resource) when { context.args.timeout > 60 };\n',
    });
    expect(e.message).toMatch(/optional attribute/);
  });

  it('a policy that does not parse, and a schema that does not, with the line', () => {
    const parse = loadError({
      '.cedar/schema.cedarschema': SCHEMA,
      '.cedar/a.cedar': '\n\npermit (principal, action, resource) when { 1 + };\n',
    });
    expect([parse.file, parse.line]).toEqual(['.cedar/a.cedar', 3]);
    const schema = loadError({
      '.cedar/schema.cedarschema': '\naction "bash" appliesTo { principal: ;\n',
      '.cedar/a.cedar': '',
    });
    expect([schema.file, schema.line]).toEqual(['.cedar/schema.cedarschema', 2]);
    const sluice = loadError({
      '.cedar/schema.cedarschema': 'namespace Sluice { entity Other; }\n',
      '.cedar/a.cedar': '',
    });
    expect(sluice.message).toMatch(/declare your actions outside it/);
  });

  it('policies without a schema, and two schemas in one folder', () => {
    expect(loadError({ '.cedar/a.cedar': 'permit (principal, action, resource);' }).message).toMatch(/no Cedar schema/);
    expect(
      loadError({ '.cedar/a.cedarschema': SCHEMA, '.cedar/b.cedarschema': SCHEMA, '.cedar/a.cedar': '' }).message,
    ).toMatch(/a second Cedar schema/);
  });

  it('no .cedar folder: no files, no rules, no opinion', () => {
    const c = source({});
    expect([c.files.length, c.rules.length]).toEqual([0, 0]);
    expect(c.evaluate({ toolName: 'bash', args: { command: 'rm -rf /' } }).decision).toBe('none');
  });
});

describe('Cedar policies: session facts', () => {
  const schema = `action "refund" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { amount: Long, order: String }, session: { refundedToday: Long } }
};
`;
  const policy =
    'forbid (principal, action, resource) when { context.session.refundedToday + context.args.amount > 500 };\npermit (principal, action, resource);\n';
  const facts = JSON.stringify({ refundedToday: { total: { tool: 'refund', arg: 'amount', window: '1d' } } });

  it('facts.json beside the schema: the facts fold the record given with the call and come back with the verdict', () => {
    const c = source({ '.cedar/s.cedarschema': schema, '.cedar/p.cedar': policy, '.cedar/facts.json': facts });
    expect(c.files.map((f) => f.label)).toContain('.cedar/facts.json');
    const now = Date.parse('2026-12-01T10:00:00Z');
    const earlier = (amount: number, ago: number) => ({
      callId: `r${amount}-${ago}`,
      tool: 'refund',
      args: { amount, order: 'o' },
      at: now - ago,
      turn: 1,
      outcome: 'ok' as const,
    });
    const record = { calls: [earlier(300, 1000), earlier(400, 2 * 86_400_000)], now, reach: 'session' as const };
    const call = { toolName: 'refund', callId: 'c', turn: 1, record };
    const fits = c.evaluate({ ...call, args: { amount: 200, order: 'o' } });
    expect(fits).toMatchObject({ decision: 'allow', facts: { refundedToday: 300 } });
    expect(c.evaluate({ ...call, args: { amount: 201, order: 'o' } })).toMatchObject({
      decision: 'deny',
      rule: { line: 1 },
    });
    // A session that carries its calls and has none yet: nothing done.
    const first = {
      toolName: 'refund',
      args: { amount: 500, order: 'o' },
      record: { calls: [], now, reach: 'session' as const },
    };
    expect(c.evaluate(first)).toMatchObject({ decision: 'allow', facts: { refundedToday: 0 } });
  });

  it('a record that reaches only its batch (or none at all) denies a call whose policy reads a fact, naming it and what to do', () => {
    const c = source({ '.cedar/s.cedarschema': schema, '.cedar/p.cedar': policy, '.cedar/facts.json': facts });
    for (const record of [undefined, { calls: [], now: 0, reach: 'batch' as const }]) {
      const v = c.evaluate({ toolName: 'refund', args: { amount: 1, order: 'o' }, ...(record ? { record } : {}) });
      expect(v).toMatchObject({ decision: 'deny', rule: { file: '.cedar/facts.json', line: 1 } });
      expect(v.note).toMatch(
        /counts calls across the session \(fact `refundedToday`\), but this batch carries only its own calls.*start the session with `sessionFacts: true`/,
      );
    }
  });

  it('on a batch-only record, only the facts a policy that may apply to the action reads deny; its scope, not its condition, says so', () => {
    const two = `action "refund" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { amount: Long, order: String }, session: { refundedToday: Long, paidToday: Long } }
};
action "pay" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { amount: Long, order: String }, session: { refundedToday: Long, paidToday: Long } }
};
`;
    const both = JSON.stringify({
      refundedToday: { total: { tool: 'refund', arg: 'amount', window: '1d' } },
      paidToday: { total: { tool: 'pay', arg: 'amount', window: '1d' } },
    });
    const scoped = `forbid (principal, action == Action::"pay", resource) when { context.session.paidToday > 900 };
permit (principal, action, resource);
`;
    const c = source({ '.cedar/s.cedarschema': two, '.cedar/p.cedar': scoped, '.cedar/facts.json': both });
    expect(c.evaluate({ toolName: 'refund', args: { amount: 1, order: 'o' } }).decision).toBe('allow');
    const pay = c.evaluate({ toolName: 'pay', args: { amount: 1, order: 'o' } });
    expect(pay).toMatchObject({ decision: 'deny', rule: { file: '.cedar/facts.json', line: 1 } });
    expect(pay.note).toMatch(/\(fact `paidToday`\)/);
    // An action named in a condition does not scope the policy: it may apply, and it denies.
    const inWhen = `forbid (principal, action, resource) when { action == Action::"pay" && context.session.paidToday > 900 };
permit (principal, action, resource);
`;
    const w = source({ '.cedar/s.cedarschema': two, '.cedar/p.cedar': inWhen, '.cedar/facts.json': both });
    expect(w.evaluate({ toolName: 'refund', args: { amount: 1, order: 'o' } }).note).toMatch(/\(fact `paidToday`\)/);
  });

  // For any declared fact (any kind, any window: a time, `turn`, the session) that a policy reads,
  // and any record that reaches only the batch, whatever calls it holds: the answer is deny.
  const kinds = ['count', 'total', 'exists'] as const;
  const windows = fc.oneof(
    fc.constant<string | undefined>(undefined),
    fc.constantFrom('turn', 'session'),
    fc.tuple(fc.integer({ min: 1, max: 999 }), fc.constantFrom('s', 'm', 'h', 'd')).map(([n, u]) => `${n}${u}`),
  );
  const heldCalls = fc.array(
    fc.record({
      callId: fc.string({ minLength: 1, maxLength: 4 }),
      tool: fc.constantFrom('refund', 'send_email'),
      args: fc.record({ amount: fc.integer({ min: 0, max: 900 }), order: fc.constant('o') }),
      at: fc.integer({ min: 0, max: 10_000 }),
      turn: fc.nat(3),
      outcome: fc.constantFrom('ok' as const, 'failed' as const, 'pending' as const),
    }),
    { maxLength: 5 },
  );
  it('any fact read with any window, on any batch-only record: deny', () => {
    fc.assert(
      fc.property(fc.constantFrom(...kinds), windows, heldCalls, fc.boolean(), (kind, window, calls, lacking) => {
        const sel = { tool: 'refund', ...(window ? { window } : {}) };
        const spec = { seen: kind === 'total' ? { total: { ...sel, arg: 'amount' } } : { [kind]: sel } };
        const type = kind === 'exists' ? 'Bool' : 'Long';
        const read = kind === 'exists' ? 'context.session.seen' : 'context.session.seen > 1000000';
        const c = source({
          '.cedar/s.cedarschema': schema.replace('refundedToday: Long', `seen: ${type}`),
          '.cedar/p.cedar': `forbid (principal, action, resource) when { ${read} };\npermit (principal, action, resource);\n`,
          '.cedar/facts.json': JSON.stringify(spec),
        });
        const record = lacking ? undefined : { calls, now: 10_000, reach: 'batch' as const };
        const v = c.evaluate({
          toolName: 'refund',
          args: { amount: 1, order: 'o' },
          callId: 'x',
          turn: 1,
          ...(record ? { record } : {}),
        });
        expect(v.decision).toBe('deny');
        expect(v.note).toMatch(/fact `seen`/);
        // The same call on a record that reaches the session is judged by the policy itself.
        const whole = c.evaluate({
          toolName: 'refund',
          args: { amount: 1, order: 'o' },
          callId: 'x',
          turn: 1,
          record: { calls: [], now: 10_000, reach: 'session' },
        });
        expect(whole.decision).toBe('allow');
      }),
      { numRuns: 40 },
    );
  });

  it('`sluice policy explain --history` explains a call as the next one of a recorded session, with the facts', async () => {
    const ws = workspace({ '.cedar/s.cedarschema': schema, '.cedar/p.cedar': policy, '.cedar/facts.json': facts });
    const t = '2026-12-01T10:00:00.000Z';
    const events = [
      {
        type: 'tool/call',
        seq: 0,
        time: t,
        data: { turn: 1, step: 1, callId: 'r1', name: 'refund', arguments: '{"amount":450,"order":"a"}' },
      },
      {
        type: 'tool/result',
        seq: 1,
        time: t,
        data: { turn: 1, step: 1, callId: 'r1', name: 'refund', isError: false, content: [] },
      },
    ];
    const history = path.join(ws, 'session.jsonl');
    fs.writeFileSync(history, events.map((e) => JSON.stringify(e)).join('\n'));
    const args = '{"amount":100,"order":"b"}';
    const after = await runCli(['policy', 'explain', 'refund', args, '--history', history, '--workspace', ws]);
    expect(after.output).toMatch(/facts \{"refundedToday":450\}/);
    expect(after.output).toMatch(/→ deny, decided by \.cedar\/p\.cedar:1/);
    const fresh = await runCli(['policy', 'explain', 'refund', args, '--workspace', ws]);
    expect(fresh.output).toMatch(/→ allow/);
    const bad = await runCli([
      'policy',
      'explain',
      'refund',
      args,
      '--history',
      path.join(ws, 'none.json'),
      '--workspace',
      ws,
    ]);
    expect(bad.code).toBe(2);
    expect(bad.output).toMatch(/cannot read the history/);
  });

  it('a facts file that cannot be read stops the worker naming it', () => {
    const bad = JSON.stringify({ refundedToday: { total: { tool: 'refund', arg: 'amount', window: 'a day' } } });
    const e = loadError({ '.cedar/s.cedarschema': schema, '.cedar/p.cedar': policy, '.cedar/facts.json': bad });
    expect(e.file).toBe('.cedar/facts.json');
    expect(e.message).toMatch(/session facts cannot be read.*1h, 1d/);
  });
});

describe('Cedar among the other formats', () => {
  it('the pre-execute extension records the policy id, file and line, and denies with the reason', async () => {
    await shellParserReady();
    const ws = workspace({ '.cedar/schema.cedarschema': SCHEMA, '.cedar/team.cedar': TEAM });
    const p = policyRules({ workspace: ws });
    const events: { type: string; data: JsonObject }[] = [];
    const ctx: StageContext = {
      call: { id: 'c1', name: 'bash', args: { command: 'git push' }, argsDigest: 'sha256:x' },
      tool: { name: 'bash', description: 'bash', aliases: ['Bash'] },
      sessionId: 's',
      turn: 1,
      step: 0,
      workflowId: 'w',
      idempotencyKey: 'w/c1',
      state: {},
      addContext() {},
      emit: (type, data) => events.push({ type, data }),
    };
    const d = await handlerOf(p.preExecute[0])(ctx);
    expect(d).toMatchObject({
      kind: 'deny',
      reason: expect.stringMatching(/\.cedar\/team\.cedar.*pushes go through review/),
    });
    expect(events[0]).toMatchObject({
      type: 'policy/decided',
      data: { decision: 'deny', source: 'cedar', file: '.cedar/team.cedar', line: 2, policyId: 'no-push' },
    });
  });

  it('a Claude Code ask and a Cedar forbid: the forbid wins across sources', async () => {
    await shellParserReady();
    const ws = workspace({
      '.claude/settings.json': JSON.stringify({ permissions: { ask: ['Bash(git push:*)'] } }),
      '.cedar/schema.cedarschema': SCHEMA,
      '.cedar/team.cedar': TEAM,
    });
    const x = policyRules({ workspace: ws }).explain({ toolName: 'bash', args: { command: 'git push' } });
    expect(x.decision).toBe('deny');
    expect(x.winner?.format).toBe('cedar');
  });

  it('`sluice policy explain` and `policy check` show the Cedar source and run tests against it', async () => {
    const ws = workspace({
      '.cedar/schema.cedarschema': SCHEMA,
      '.cedar/team.cedar': TEAM,
      'policy-tests.json': JSON.stringify({
        tests: [
          { tool: 'refund', args: { amount: 500, order: 'o' }, expect: 'ask', source: 'cedar' },
          { tool: 'refund', args: { amount: 5, order: 'o' }, expect: 'deny' },
        ],
      }),
    });
    const explain = await runCli(['policy', 'explain', 'bash', '{"command":"git push"}', '--workspace', ws]);
    expect(explain.code).toBe(0);
    expect(explain.output).toMatch(/cedar\s+deny\s+\.cedar\/team\.cedar:2/);
    expect(explain.output).toMatch(/→ deny, decided by \.cedar\/team\.cedar:2/);
    const check = await runCli(['policy', 'check', '--workspace', ws]);
    expect(check.code).toBe(1);
    expect(check.output).toMatch(/FAIL tests\[1\] refund .*expected deny, got allow/);
    expect(check.output).not.toMatch(/FAIL tests\[0\]/);
  });
});

describe('Cedar outcomes against a model of the rules', () => {
  // Each generated policy is `permit` / `@ask permit` / `forbid` when { context.args.amount >= k }:
  // the engine's answer must be the model's (any forbid that holds > any @ask > any permit > none).
  const policy = fc.record({ kind: fc.constantFrom('permit', 'ask', 'forbid'), k: fc.integer({ min: -5, max: 5 }) });
  it('forbid > @ask > permit > no opinion, for any set of rules and any amount', () => {
    fc.assert(
      fc.property(
        fc.array(policy, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: -6, max: 6 }),
        (rules, amount) => {
          const text = rules
            .map(
              (r) =>
                `${r.kind === 'ask' ? '@ask\n' : ''}${r.kind === 'forbid' ? 'forbid' : 'permit'} (principal, action == Action::"refund", resource) when { context.args.amount >= ${r.k} };`,
            )
            .join('\n');
          const c = source({ '.cedar/schema.cedarschema': SCHEMA, '.cedar/p.cedar': text });
          const holds = rules.filter((r) => amount >= r.k).map((r) => r.kind);
          const want = holds.includes('forbid')
            ? 'deny'
            : holds.includes('ask')
              ? 'ask'
              : holds.length
                ? 'allow'
                : 'none';
          const v = c.evaluate({ toolName: 'refund', args: { amount, order: 'o' } });
          expect(v.decision).toBe(want);
          // The first such rule in the file decides: its line counts the `@ask` lines above it.
          const first = rules.findIndex(
            (r) => amount >= r.k && r.kind === { deny: 'forbid', ask: 'ask', allow: 'permit' }[want as 'deny'],
          );
          if (want !== 'none')
            expect(v.rule?.line).toBe(first + 1 + rules.slice(0, first).filter((r) => r.kind === 'ask').length);
        },
      ),
      { numRuns: 60 },
    );
  });
});
