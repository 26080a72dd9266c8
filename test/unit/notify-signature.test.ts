// Webhook notices carry a timestamp inside what is signed (activities/notify.ts): a notice
// captured once and sent again later is refused by a receiver that checks the timed signature
// and its window, as docs/approvals.md shows; a timestamp moved forward breaks the signature.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  NOTICE_TOLERANCE_SEC,
  noticeProblem,
  SIGNATURE_HEADER,
  signatureHeaders,
  TIMED_SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
} from '../../activities/notify';

const SECRET = 'webhook-secret';
const T0 = Date.UTC(2026, 11, 5, 12);
const parts = (h: Record<string, string>) => ({ timestamp: h[TIMESTAMP_HEADER], signature: h[TIMED_SIGNATURE_HEADER] });

describe('timed webhook signatures', () => {
  it('a fresh notice holds; the same bytes replayed past the window are refused', () => {
    const body = JSON.stringify({ kind: 'asked', approvalId: 'a1' });
    const h = signatureHeaders(SECRET, body, T0);
    expect(noticeProblem(SECRET, body, parts(h), T0)).toBeUndefined();
    expect(noticeProblem(SECRET, body, parts(h), T0 + NOTICE_TOLERANCE_SEC * 1000)).toBeUndefined();
    expect(noticeProblem(SECRET, body, parts(h), T0 + (NOTICE_TOLERANCE_SEC + 1) * 1000)).toMatch(/timestamp/);
    // The 1.0 header is still sent, for receivers that have not moved to the timed one.
    expect(h[SIGNATURE_HEADER]).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  it('a replay with a fresh timestamp, another body, another secret or no timestamp is refused', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.integer({ min: 1, max: 10_000 }), (body, other, later) => {
        const h = signatureHeaders(SECRET, body, T0);
        const now = T0 + later * 1000;
        const moved = { ...parts(h), timestamp: String(Math.floor(now / 1000)) };
        expect(noticeProblem(SECRET, body, moved, now)).toBe('the signature does not match');
        if (other !== body) expect(noticeProblem(SECRET, other, parts(h), T0)).toBe('the signature does not match');
        expect(noticeProblem('another secret', body, parts(h), T0)).toBe('the signature does not match');
        expect(noticeProblem(SECRET, body, { signature: parts(h).signature }, T0)).toBe('no timestamp');
      }),
    );
  });
});
