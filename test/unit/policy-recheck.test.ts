// A policy cannot change under a waiting approval (issue 26 item 5), the pure part: the ask carries
// the digest of the files that judged the call and the rule that asked (hooks/policy.ts), and the
// re-check under other files denies what they deny, lets through what they allow or no longer
// judge, and holds an approval for an ask only when the same rule asks. The run across a worker
// restart is test/policy-recheck.test.ts.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../cli';
import { policyRules } from '../../hooks/policy';
import { foldPreDecision, parsePreDecision } from '../../pipeline/fold';
import type { EventDraft, JsonObject, PolicyBinding, PreDecision } from '../../pipeline/types';
import { handlerOf, policyRecheckOf, type StageContext } from '../../define/config';

function workspace(claude: object): string {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'policy-recheck-'));
  fs.mkdirSync(path.join(ws, '.claude'));
  fs.writeFileSync(path.join(ws, '.claude', 'settings.json'), JSON.stringify({ permissions: claude }, null, 2));
  return ws;
}

function ctxFor(command: string, events: EventDraft[] = []): StageContext {
  return {
    call: { id: 'c1', name: 'bash', args: { command }, argsDigest: 'sha256:x' },
    tool: { name: 'bash', description: 'bash', aliases: ['Bash'] },
    sessionId: 's',
    turn: 1,
    step: 0,
    workflowId: 'w',
    idempotencyKey: 'w/c1',
    state: {} as StageContext['state'],
    addContext() {},
    emit(type, data) {
      events.push({ type, data: data as JsonObject });
    },
  };
}

const OLD = workspace({ ask: ['Bash(touch a.txt)', 'Bash(touch b.txt)', 'Bash(touch c.txt)', 'Bash(touch d.txt)'] });
const NEW = workspace({
  deny: ['Bash(touch a.txt)'],
  allow: ['Bash(touch b.txt)'],
  ask: ['Bash(touch c.txt)', 'Bash(touch d.txt:*)'],
});

async function askedUnderOld(command: string): Promise<PreDecision> {
  const old = policyRules({ workspace: OLD });
  const d = await handlerOf(old.preExecute[0])(ctxFor(command));
  return d as PreDecision;
}

async function recheckNew(askedUnder: PolicyBinding, command: string) {
  const now = policyRules({ workspace: NEW });
  const events: EventDraft[] = [];
  const recheck = policyRecheckOf(now.preExecute)!;
  const denial = await recheck(ctxFor(command, events), askedUnder);
  return { denial, event: events.find((e) => e.type === 'policy/rechecked')?.data, digest: now.digest };
}

describe('an ask bound to the policy that judged it', () => {
  it('carries the digest and the rule, and the reason a person reads names the digest', async () => {
    const d = await askedUnderOld('touch a.txt');
    const old = policyRules({ workspace: OLD });
    expect(d).toMatchObject({
      kind: 'ask',
      policy: {
        digest: old.digest,
        decision: 'ask',
        rule: { source: 'claude', file: '.claude/settings.json', text: 'Bash(touch a.txt)' },
      },
    });
    expect(d.kind === 'ask' && d.reason).toBe(
      `asked by .claude/settings.json: \`Bash(touch a.txt)\` (policy ${old.digest.slice(0, 19)})`,
    );
  });

  it('`sluice policy explain` prints the digest an approval names', async () => {
    const lines: string[] = [];
    await main(['policy', 'explain', 'bash', '{"command":"touch a.txt"}', '--workspace', OLD], (s) => lines.push(s));
    expect(lines.join('\n')).toContain(`policy ${policyRules({ workspace: OLD }).digest} (.claude/settings.json)`);
  });

  it('a call no rule judges is still bound (the tool itself asks), and the binding survives the fold', async () => {
    const d = await askedUnderOld('ls');
    expect(d).toMatchObject({ kind: 'allow', policy: { decision: 'none' } });
    const folded = foldPreDecision({ kind: 'ask', reason: 'bash asks' }, parsePreDecision(d, 'policy'));
    expect(folded).toEqual({ kind: 'ask', reason: 'bash asks', policy: (d as { policy: PolicyBinding }).policy });
  });

  it('a malformed binding from an extension is refused, not carried', () => {
    expect(() => parsePreDecision({ kind: 'ask', policy: { digest: 1 } }, 'x')).toThrow(/malformed policy binding/);
  });
});

describe('the re-check under other files', () => {
  it('the same files: the approval holds and nothing is recorded', async () => {
    const d = await askedUnderOld('touch c.txt');
    const same = policyRules({ workspace: OLD });
    const events: EventDraft[] = [];
    expect(await policyRecheckOf(same.preExecute)!(ctxFor('touch c.txt', events), d.policy!)).toBeUndefined();
    expect(events).toEqual([]);
  });

  it('now denied: denied, the reason naming the change and the rule', async () => {
    const d = await askedUnderOld('touch a.txt');
    const r = await recheckNew(d.policy!, 'touch a.txt');
    expect(r.denial).toMatch(
      /^the policy changed while this call waited for approval \(sha256:\w{12} → sha256:\w{12}\)/,
    );
    expect(r.denial).toContain('it is now denied by .claude/settings.json: `Bash(touch a.txt)`');
    expect(r.event).toMatchObject({ outcome: 'denied', askedUnder: d.policy, now: { digest: r.digest } });
  });

  it('now allowed: runs on the approval, and the record says so', async () => {
    const d = await askedUnderOld('touch b.txt');
    const r = await recheckNew(d.policy!, 'touch b.txt');
    expect(r.denial).toBeUndefined();
    expect(r.event).toMatchObject({ outcome: 'allowed', now: { decision: 'allow' } });
    expect(r.event?.note).toContain('it is now allowed by .claude/settings.json: `Bash(touch b.txt)`');
  });

  it('still asked by the same rule: the approval holds', async () => {
    const d = await askedUnderOld('touch c.txt');
    const r = await recheckNew(d.policy!, 'touch c.txt');
    expect(r.denial).toBeUndefined();
    expect(r.event).toMatchObject({ outcome: 'same-rule' });
  });

  it('asked by another rule now: denied, naming both rules', async () => {
    const d = await askedUnderOld('touch d.txt');
    const r = await recheckNew(d.policy!, 'touch d.txt');
    expect(r.event).toMatchObject({ outcome: 'other-rule' });
    expect(r.denial).toContain(
      'it is now asked by .claude/settings.json: `Bash(touch d.txt:*)`, not by .claude/settings.json: `Bash(touch d.txt)`',
    );
  });

  it('no rule judges it now: runs on the approval', async () => {
    const d = await askedUnderOld('touch a.txt');
    const none = policyRules({ workspace: workspace({}) });
    const events: EventDraft[] = [];
    expect(await policyRecheckOf(none.preExecute)!(ctxFor('touch a.txt', events), d.policy!)).toBeUndefined();
    expect(events[0]?.data).toMatchObject({ outcome: 'no-rule' });
  });
});
