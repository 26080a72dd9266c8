// Property tests (fast-check) of the approval rules, over generated tool profiles, handler asks and
// voters, through the functions the workflow decides by: asks fold as pre-execute answers do
// (pipeline/fold.ts), who may decide is approverRule / groupsProblem (pipeline/quorum.ts), and
// each vote, link and relayed form answer meets pipeline/approval-rules.ts. Adding an ask only
// narrows who may approve and never lowers the quorum; a verified subject counts once; a link
// decides once; an elicitation answer never counts where a quorum or a verified approver is needed.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countVote, elicitedBy, elicitedRefusal, linkRefusal, voteRefusal } from '../../pipeline/approval-rules';
import { foldPreDecision } from '../../pipeline/fold';
import {
  type ApproverRule,
  approverKey,
  approverRule,
  groupsProblem,
  mayDecide,
  type QuorumSettings,
  type QuorumTally,
  type ToolApprovers,
  type Voter,
} from '../../pipeline/quorum';
import type { PreDecision } from '../../pipeline/types';
import { fileStores } from '../../stores/stores';

const RUNS = { numRuns: 400 };
const GROUPS = ['release', 'oncall', 'sre', 'dba', 'ops'];

const groupList = fc.uniqueArray(fc.constantFrom(...GROUPS), { minLength: 1, maxLength: 3 });
const quorumSettings: fc.Arbitrary<QuorumSettings> = fc.record(
  {
    quorum: fc.integer({ min: 1, max: 10 }),
    groups: groupList,
    rejectBy: fc.constantFrom<'first' | 'majority'>('first', 'majority'),
  },
  { requiredKeys: ['quorum'] },
);
const toolProfile: fc.Arbitrary<ToolApprovers> = fc.record(
  { identityRequired: fc.boolean(), approverGroups: groupList, quorum: quorumSettings },
  { requiredKeys: [] },
);
/** A handler's ask: with or without approvers (a quorum, its groups). */
const ask: fc.Arbitrary<PreDecision> = fc.record(
  { kind: fc.constant('ask' as const), reason: fc.string({ maxLength: 8 }), approvers: quorumSettings },
  { requiredKeys: ['kind'] },
);
const voter: fc.Arbitrary<Voter> = fc.record({
  verified: fc.boolean(),
  memberOf: fc.uniqueArray(fc.constantFrom(...GROUPS), { maxLength: 5 }),
});

/** The rule an ask is raised under once every handler's answer folded, as the workflow builds it. */
function ruleOf(tool: ToolApprovers, asks: PreDecision[]): ApproverRule {
  const folded = asks.reduce<PreDecision>((d, next) => foldPreDecision(d, next), { kind: 'allow' });
  return approverRule(tool, folded.kind === 'ask' ? folded.approvers : undefined);
}
const needed = (r: ApproverRule) => r.quorum?.quorum ?? 1;

describe('who may approve only narrows', () => {
  it('adding any ask lets in no voter who was not allowed before, never lowers the quorum, never drops the need for a verified approver', () => {
    fc.assert(
      fc.property(
        toolProfile,
        fc.array(ask, { maxLength: 4 }),
        ask,
        fc.array(voter, { maxLength: 12 }),
        (tool, asks, extra, voters) => {
          const before = ruleOf(tool, asks);
          const after = ruleOf(tool, [...asks, extra]);
          expect(needed(after)).toBeGreaterThanOrEqual(needed(before));
          if (before.identityRequired) expect(after.identityRequired).toBe(true);
          for (const v of voters) if (mayDecide(after, v)) expect(mayDecide(before, v)).toBe(true);
        },
      ),
      RUNS,
    );
  });

  it("a voter outside the tool's approverGroups may never decide, whatever groups the asks name", () => {
    fc.assert(
      fc.property(toolProfile, fc.array(ask, { maxLength: 4 }), voter, (tool, asks, v) => {
        fc.pre(!!tool.approverGroups?.length && !tool.approverGroups.some((g) => v.memberOf.includes(g)));
        expect(mayDecide(ruleOf(tool, asks), v)).toBe(false);
      }),
      RUNS,
    );
  });

  it("a voter outside any one ask's groups may never decide; a verified voter in a group of every list may", () => {
    fc.assert(
      fc.property(toolProfile, fc.array(ask, { minLength: 1, maxLength: 4 }), voter, (tool, asks, v) => {
        const rule = ruleOf(tool, asks);
        const lists = [
          tool.approverGroups,
          tool.quorum?.groups,
          ...asks.map((a) => (a.kind === 'ask' ? a.approvers?.groups : undefined)),
        ].filter((l): l is string[] => !!l?.length);
        const inEvery = lists.every((l) => l.some((g) => v.memberOf.includes(g)));
        if (!inEvery) expect(mayDecide(rule, v)).toBe(false);
        if (inEvery && v.verified) expect(mayDecide(rule, v)).toBe(true);
        expect(groupsProblem(rule.groupSets, v.memberOf) === undefined).toBe(inEvery);
      }),
      RUNS,
    );
  });

  it('the order handlers answer in changes nothing: the same voters, the same quorum', () => {
    fc.assert(
      fc.property(
        toolProfile,
        fc.array(ask, { maxLength: 4 }),
        fc.array(voter, { maxLength: 12 }),
        (tool, asks, voters) => {
          const a = ruleOf(tool, asks);
          const b = ruleOf(tool, [...asks].reverse());
          expect(needed(a)).toBe(needed(b));
          expect(a.identityRequired).toBe(b.identityRequired);
          for (const v of voters) expect(mayDecide(a, v)).toBe(mayDecide(b, v));
        },
      ),
      RUNS,
    );
  });

  it('the two cases of the report: release + an on-call hotfix ask, deploy_sre + a dba ask', () => {
    const hotfix: PreDecision = { kind: 'ask', approvers: { quorum: 2, groups: ['oncall'] } };
    const release = ruleOf({ identityRequired: true, approverGroups: ['release'] }, [hotfix]);
    expect(release.quorum?.quorum).toBe(2);
    expect(mayDecide(release, { verified: true, memberOf: ['oncall'] })).toBe(false);
    expect(mayDecide(release, { verified: true, memberOf: ['release'] })).toBe(false);
    expect(mayDecide(release, { verified: true, memberOf: ['release', 'oncall'] })).toBe(true);
    const dba: PreDecision = { kind: 'ask', approvers: { quorum: 2, groups: ['dba'] } };
    const sre = ruleOf({ quorum: { quorum: 2, groups: ['sre'] } }, [dba]);
    expect(mayDecide(sre, { verified: true, memberOf: ['dba'] })).toBe(false);
    expect(mayDecide(sre, { verified: true, memberOf: ['sre', 'dba'] })).toBe(true);
  });
});

/** A name as people type it: the same approver in another case or spacing. */
const spelled = (name: string, how: number) =>
  [name, name.toUpperCase(), ` ${name} `, name.replace('@', ' @')][how % 4].replace(' @', '@');
const vote = fc.record({
  who: fc.constantFrom('ada@example.com', 'bob@example.com', 'cy@example.com', 'sam@example.com', ''),
  how: fc.nat(3),
  decision: fc.constantFrom<'approve' | 'deny'>('approve', 'deny'),
  session: fc.boolean(),
});

describe('a quorum counts each approver once', () => {
  it('however many times and however spelled a subject votes, it counts once; the session user never approves; the ask is approved only with N distinct approvers', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.constantFrom<'first' | 'majority'>('first', 'majority'),
        fc.option(fc.constant('sam@example.com'), { nil: undefined }),
        fc.array(vote, { maxLength: 20 }),
        (n, rejectBy, sessionUser, votes) => {
          const q: QuorumTally = {
            needed: n,
            rejectBy,
            ...(sessionUser ? { sessionUser } : {}),
            approvals: [],
            rejections: [],
          };
          let ended: 'approve' | 'deny' | undefined;
          for (const v of votes) {
            if (ended) break;
            const by = spelled(v.who, v.how);
            const scope = v.session ? ('session' as const) : undefined;
            if (voteRefusal(q, { by, decision: v.decision, ...(scope ? { scope } : {}) }, 'deploy', 'c1')) continue;
            ended = countVote(q, v.decision, { by, at: '', verified: true });
          }
          const keys = [...q.approvals, ...q.rejections].map((x) => approverKey(x.by));
          expect(new Set(keys).size).toBe(keys.length);
          expect(keys).not.toContain('');
          if (sessionUser) expect(q.approvals.map((x) => approverKey(x.by))).not.toContain(approverKey(sessionUser));
          if (ended === 'approve') expect(q.approvals.length).toBe(n);
          else expect(q.approvals.length).toBeLessThan(n);
        },
      ),
      RUNS,
    );
  });
});

describe('a one-time link decides once', () => {
  it('of any sequence of uses, each link is taken at most once, only for its own approval and before its expiry', () => {
    const NOW = Date.parse('2026-01-01T00:00:00Z');
    const use = fc.record({
      id: fc.constantFrom('l1', 'l2', 'l3'),
      approvalId: fc.constantFrom('a1', 'a2'),
      linkFor: fc.constantFrom('a1', 'a2'),
      expiresIn: fc.integer({ min: -60_000, max: 60_000 }),
    });
    fc.assert(
      fc.property(fc.array(use, { maxLength: 30 }), (uses) => {
        const used: string[] = [];
        for (const u of uses) {
          const link = { id: u.id, approvalId: u.linkFor, expiresAt: new Date(NOW + u.expiresIn).toISOString() };
          const refused = linkRefusal(used, link, u.approvalId, NOW);
          if (refused) continue;
          expect(u.linkFor).toBe(u.approvalId);
          expect(u.expiresIn).toBeGreaterThan(0);
          expect(used).not.toContain(u.id);
          used.push(u.id); // the workflow records the link with the decision it took
        }
        expect(new Set(used).size).toBe(used.length);
      }),
      RUNS,
    );
  });
});

describe('an elicitation answer is unverified', () => {
  it('never counts toward a quorum nor where a verified approver is required; decides a plain ask, recorded as the client', () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
        fc.boolean(),
        fc.string({ maxLength: 40 }),
        (quorum, identityRequired, client) => {
          const pending = {
            toolName: 'deploy',
            callId: 'c1',
            ...(identityRequired ? { identityRequired: true as const } : {}),
            ...(quorum
              ? { quorum: { needed: quorum, rejectBy: 'first' as const, approvals: [], rejections: [] } }
              : {}),
          };
          const refused = elicitedRefusal({ mcpClient: client }, pending);
          expect(refused !== undefined).toBe(!!quorum || identityRequired);
          if (refused) expect(refused.code).toBe('unverified');
          // Where it may decide, it is recorded as the client's answer, marked unverified.
          expect(elicitedBy(client)).toMatch(/^MCP client ".*" \(unverified elicitation answer\)$/s);
          // An unverified voter, whatever groups it claims, never decides where identity is required.
          const rule = { groupSets: [], identityRequired: true };
          expect(mayDecide(rule, { verified: false, memberOf: GROUPS })).toBe(false);
        },
      ),
      RUNS,
    );
  });
});

describe('a one-time token is claimed once', () => {
  it('of many claims of a few keys by several holders, at once, each key has exactly one holder, and that holder finds its claim again', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-claims-'));
    try {
      let round = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ key: fc.constantFrom('k1', 'k2', 'k3'), holder: fc.constantFrom('h1', 'h2', 'h3') }), {
            minLength: 1,
            maxLength: 12,
          }),
          async (claims) => {
            const stores = fileStores(path.join(dir, String(round++)));
            const got = await Promise.all(claims.map((c) => stores.claimOnce!(c.key, c.holder)));
            const holderOf = new Map<string, string>();
            claims.forEach((c, i) => {
              const held = got[i];
              expect(claims.some((o) => o.key === c.key && o.holder === held)).toBe(true);
              if (holderOf.has(c.key)) expect(held).toBe(holderOf.get(c.key));
              holderOf.set(c.key, held);
            });
            for (const [key, holder] of holderOf) expect(await stores.claimOnce!(key, holder)).toBe(holder);
          },
        ),
        { numRuns: 60 },
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
