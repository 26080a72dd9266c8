// Quorum helpers: how approvers are told apart, how two quorum asks combine (only ever tighter),
// what a bad setting says, and the tally every surface shows.
import { describe, expect, it } from 'vitest';
import { foldPreDecision, parsePreDecision } from '../../pipeline/fold';
import { approverKey, checkQuorum, rejectionsToDeny, stricterQuorum, tallyText } from '../../pipeline/quorum';
import { defineTool } from '../../define/config';

describe('quorum', () => {
  it('one person under trivially different names is one approver; different people are not', () => {
    const alice = approverKey('Alice');
    for (const alias of [' alice ', 'ALICE', 'ＡＬＩＣＥ', 'ali\u200bce', 'Alice\u0007'])
      expect(approverKey(alias)).toBe(alice);
    expect(approverKey('Alice Smith')).toBe(approverKey('alice   smith'));
    expect(approverKey('alicia')).not.toBe(alice);
    expect(approverKey('\u200b ')).toBe('');
  });

  it('combines a tool quorum and a rule quorum into the stricter one, every group list holding', () => {
    expect(stricterQuorum({ quorum: 2 }, undefined)).toEqual({ quorum: 2 });
    // Both lists must hold (a voter in sre and in dba), never one list of either.
    expect(
      stricterQuorum({ quorum: 2, groups: ['sre'] }, { quorum: 3, groups: ['dba'], rejectBy: 'majority' }),
    ).toEqual({
      quorum: 3,
      groupSets: [['sre'], ['dba']],
    });
    // A list the other's groups all belong to adds nothing: one list, the shape asks always had.
    expect(stricterQuorum({ quorum: 2, groups: ['sre', 'ops'] }, { quorum: 2, groups: ['sre'] })).toEqual({
      quorum: 2,
      groups: ['sre'],
    });
    expect(stricterQuorum({ quorum: 3, rejectBy: 'majority' }, { quorum: 2, rejectBy: 'majority' })).toEqual({
      quorum: 3,
      rejectBy: 'majority',
    });
    // Two pre-execute asks fold the same way: a later handler cannot lower an earlier quorum.
    const folded = foldPreDecision(
      { kind: 'ask', reason: 'a', approvers: { quorum: 3 } },
      parsePreDecision({ kind: 'ask', reason: 'b', approvers: { quorum: 2 } }, 'rule'),
    );
    expect(folded).toEqual({ kind: 'ask', reason: 'a; b', approvers: { quorum: 3 } });
  });

  it('refuses a quorum it cannot keep, naming the tool or handler', () => {
    expect(() => checkQuorum('tool x', { quorum: 0 })).toThrow(
      'tool x: approvers.quorum must be a whole number from 1 to 10',
    );
    expect(() => checkQuorum('tool x', { quorum: 2, groups: [''] })).toThrow('approvers.groups must be a list');
    expect(() => checkQuorum('tool x', { quorum: 2, rejectBy: 'all' })).toThrow('"first" or "majority"');
    expect(() => parsePreDecision({ kind: 'ask', approvers: { quorum: 1.5 } }, 'handler h')).toThrow(
      "handler h's ask: approvers.quorum",
    );
    expect(() =>
      defineTool({
        name: 't',
        description: 'd',
        input: { type: 'object' },
        approvers: { quorum: 11 },
        execute: () => '',
      }),
    ).toThrow('tool t: approvers.quorum');
  });

  it('shows the tally as "1 of 2: alice approved", and when rejections deny', () => {
    const t = {
      needed: 2,
      rejectBy: 'first' as const,
      approvals: [{ by: 'alice', at: '' }],
      rejections: [] as { by: string; at: string }[],
    };
    expect(tallyText(t)).toBe('1 of 2: alice approved');
    expect(tallyText({ ...t, approvals: [] })).toBe('0 of 2');
    expect(rejectionsToDeny(t)).toBe(1);
    expect(rejectionsToDeny({ needed: 3, rejectBy: 'majority' })).toBe(2);
    expect(rejectionsToDeny({ needed: 4, rejectBy: 'majority' })).toBe(3);
    expect(tallyText({ ...t, needed: 3, rejectBy: 'majority', rejections: [{ by: 'carol', at: '' }] })).toBe(
      '1 of 3: alice approved; carol rejected (2 denies)',
    );
  });
});
