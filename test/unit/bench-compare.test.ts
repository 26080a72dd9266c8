// The bench's comparison with an earlier run (BENCH_BEFORE): a change is read against the noise
// band of the rounds, so a move within how far a run's own rounds differ is not called a change.
import { describe, expect, it } from 'vitest';
import { combinedBand, roundBand, verdict } from '../../bench/report';

describe('bench comparison', () => {
  it('takes half the spread of the rounds over their mean as the band', () => {
    expect(roundBand([0.9, 1.1])).toBeCloseTo(0.1);
    expect(roundBand([1])).toBeUndefined();
    expect(roundBand(undefined)).toBeUndefined();
    expect(roundBand([1, Number.NaN])).toBeUndefined();
  });

  it("adds both runs' bands, and lets this run's stand for a run that has none", () => {
    expect(combinedBand({ bandAfter: 0.1, bandBefore: 0.05 })).toBeCloseTo(0.15);
    expect(combinedBand({ bandAfter: 0.1 })).toBeCloseTo(0.2);
    expect(combinedBand({ bandBefore: 0.1 })).toBeCloseTo(0.2);
    expect(combinedBand({})).toBeUndefined();
  });

  it('calls a change better or worse only outside the band, by which way is better', () => {
    const base = { name: 'x', bandAfter: 0.05, bandBefore: 0.05 };
    expect(verdict({ ...base, before: 1, after: 1.05, better: 'lower' })).toBe('within noise');
    expect(verdict({ ...base, before: 1, after: 0.8, better: 'lower' })).toBe('better');
    expect(verdict({ ...base, before: 1, after: 1.2, better: 'lower' })).toBe('**worse**');
    expect(verdict({ ...base, before: 1, after: 1.2, better: 'higher' })).toBe('better');
    expect(verdict({ name: 'e', before: 5, after: 5, better: 'lower', bandAfter: 0, bandBefore: 0 })).toBe('same');
    expect(verdict({ name: 'e', before: 5, after: 4, better: 'lower', bandAfter: 0, bandBefore: 0 })).toBe('better');
    expect(verdict({ name: 'y', before: 1, after: 2, better: 'lower' })).toBe('no band');
    expect(verdict({ name: 'z', after: 2, better: 'lower' })).toBe('–');
  });
});
