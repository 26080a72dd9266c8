// What a program sees of a settled sub-call: pure code shared by the workflow.
import { describe, expect, it } from 'vitest';
import { codeCallUpdateId, nonDeterminism, programOutcome, subCallId } from '../pipeline/code-mode';
import { normalizeResult, renderValue } from '../pipeline/normalize';

describe('programOutcome', () => {
  it('hands over the structured value while the content is still its rendering', () => {
    const value = { files: ['a', 'b'], n: 2 };
    const result = normalizeResult({ content: renderValue(value), value, isError: false });
    expect(programOutcome('c:code:0', result, value)).toEqual({ subCallId: 'c:code:0', isError: false, value });
  });

  it('hands over the text once something rewrote the content, so no rewrite is bypassed', () => {
    const value = { secret: 'hunter2' };
    const redacted = normalizeResult({ content: [{ type: 'text', text: '[redacted]' }], value, isError: false });
    expect(programOutcome('c:code:1', redacted, value)).toEqual({
      subCallId: 'c:code:1',
      isError: false,
      value: '[redacted]',
    });
    const truncated = normalizeResult(
      { content: renderValue('x'.repeat(50)), value: 'x'.repeat(50), isError: false },
      [],
      { maxResultChars: 10 },
    );
    expect(programOutcome('c:code:2', truncated, 'x'.repeat(50))).toEqual({
      subCallId: 'c:code:2',
      isError: false,
      value: `${'x'.repeat(10)}\n[truncated: showing 10 of 50 characters; the rest is over the result size bound and was dropped]`,
    });
  });

  it('gives an error its message only', () => {
    const result = normalizeResult({
      content: [{ type: 'text', text: 'Error: denied by policy' }],
      isError: true,
      error: { message: 'denied by policy', code: 'DENIED' },
    });
    expect(programOutcome('c:code:3', result, undefined)).toEqual({
      subCallId: 'c:code:3',
      isError: true,
      message: 'denied by policy',
    });
  });
});

describe('sub-call identity', () => {
  it('numbers sub-calls under their parent; the update id names only the place, the outcome the call', () => {
    expect(subCallId('toolu_1', 4)).toBe('toolu_1:code:4');
    const base = {
      token: 'w/toolu_1',
      parentCallId: 'toolu_1',
      index: 4,
      name: 'read',
      arguments: '{}',
      argsDigest: 'sha256:ab',
    };
    expect(codeCallUpdateId(base)).toBe('sluice-code:toolu_1:4');
    expect(nonDeterminism(base, { name: 'read', argsDigest: 'sha256:ab' })).toBeUndefined();
    expect(nonDeterminism(base, { name: 'write', argsDigest: 'sha256:ab' })).toMatch(/is not deterministic/);
    expect(nonDeterminism(base, { name: 'read', argsDigest: 'sha256:cd' })).toMatch(/is not deterministic/);
  });
});
