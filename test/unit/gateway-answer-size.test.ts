// The gateway's finished-answers cache weighs each answer without serializing it (answerChars):
// the weight must not fall below the answer's JSON, or the cache would hold more than its bound.
import { describe, expect, it } from 'vitest';
import { answerChars } from '../../servers/gateway';

const answers = [
  { content: [] },
  {
    content: [{ type: 'text' as const, text: 'echo: hello' }],
    _meta: { 'sluice/batch': 'sluice-batch:gateway-x-0-1' },
  },
  {
    content: [{ type: 'text' as const, text: 'x'.repeat(100_000) }],
    structuredContent: {
      rows: Array.from({ length: 1000 }, (_, i) => ({ id: i, name: `row ${i}`, ok: i % 2 === 0, n: null })),
    },
  },
  {
    content: [{ type: 'image' as const, data: 'A'.repeat(50_000), mimeType: 'image/png' }],
    isError: true,
    structuredContent: { nested: { deeper: [1.5e300, -0.000001, 'text', [[], {}]] } },
  },
];

describe('answerChars', () => {
  it.each(answers.map((a, i) => [i, a] as const))('answer %i: at least its JSON, at most a few times it', (_, a) => {
    const json = JSON.stringify(a).length;
    expect(answerChars(a)).toBeGreaterThanOrEqual(json);
    expect(answerChars(a)).toBeLessThan(json * 3 + 200);
  });
});
