// Property-based tests (fast-check) of the pure pipeline code: lossless snapshots, canonical JSON,
// byte accounting, result bounds, and the monotonic folding of decisions.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonBytes, jsonStringBytes, MIN_SHARE_BYTES, resultBytes, sliceToJsonBytes } from '../pipeline/budget';
import { applyPostVerdict, foldPreDecision, parseGuardAnswer, parsePreDecision } from '../pipeline/fold';
import { canonicalJson, NotLosslessJsonError, snapshotArguments, snapshotJson } from '../pipeline/json';
import { fitResult, normalizeResult } from '../pipeline/normalize';
import type { Candidate, Json, PreDecision } from '../pipeline/types';

const RUNS = { numRuns: 300 };
// Any JSON value, -0 excluded (JSON has no -0; snapshotJson refuses it), any UTF-16 in strings.
const json = fc.jsonValue({ stringUnit: 'binary' }).map((v) => JSON.parse(JSON.stringify(v)) as Json);
const jsonObject = fc
  .dictionary(fc.string({ unit: 'binary' }), json)
  .map((v) => JSON.parse(JSON.stringify(v)) as { [k: string]: Json });

function isDeepFrozen(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return true;
  return Object.isFrozen(v) && Object.values(v).every(isDeepFrozen);
}

/** Puts `bad` somewhere inside `v`, returning the new value. */
function plant(v: Json, bad: unknown, pick: number): unknown {
  if (Array.isArray(v) && v.length) {
    const i = pick % v.length;
    return v.map((x, j) => (j === i ? plant(x, bad, Math.floor(pick / 2)) : x));
  }
  if (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length) {
    const keys = Object.keys(v);
    const k = keys[pick % keys.length];
    const out = { ...v };
    Object.defineProperty(out, k, {
      value: plant(v[k], bad, Math.floor(pick / 2)),
      enumerable: true,
      writable: true,
      configurable: true,
    });
    return out;
  }
  return { planted: bad };
}

describe('snapshotJson', () => {
  it('copies any JSON value exactly, deep-frozen, and a second snapshot changes nothing', () => {
    fc.assert(
      fc.property(json, (v) => {
        const s = snapshotJson(v);
        expect(s).toEqual(v);
        expect(JSON.stringify(s)).toBe(JSON.stringify(v));
        expect(isDeepFrozen(s)).toBe(true);
        expect(snapshotJson(s)).toEqual(s);
      }),
      RUNS,
    );
  });

  it('refuses any value holding something JSON would change, wherever it hides', () => {
    class Thing {}
    const bads = fc.constantFrom<unknown>(
      undefined,
      1n,
      NaN,
      Infinity,
      -Infinity,
      -0,
      () => 1,
      Symbol('s'),
      new Thing(),
      new Date(0),
      new Map(),
      [, 1],
    );
    fc.assert(
      fc.property(json, bads, fc.nat(), (v, bad, pick) => {
        expect(() => snapshotJson(plant(v, bad, pick))).toThrow(NotLosslessJsonError);
      }),
      RUNS,
    );
  });

  it('arguments: any JSON object text round-trips, keys like "__proto__" included, and nothing is inherited', () => {
    fc.assert(
      fc.property(jsonObject, (obj) => {
        const raw = JSON.stringify(obj);
        const args = snapshotArguments(raw);
        expect(JSON.stringify(args)).toBe(raw);
        expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
        for (const k of Object.keys(obj)) expect(Object.hasOwn(args, k)).toBe(true);
      }),
      RUNS,
    );
    expect(Object.keys(snapshotArguments('{"__proto__": {"admin": true}}'))).toEqual(['__proto__']);
    expect((snapshotArguments('{"__proto__": {"admin": true}}') as { admin?: unknown }).admin).toBeUndefined();
  });
});

describe('canonicalJson', () => {
  const shuffle = (v: Json, seed: number): Json => {
    if (Array.isArray(v)) return v.map((x, i) => shuffle(x, seed + i));
    if (v && typeof v === 'object') {
      const keys = Object.keys(v);
      const rotated = keys.map((_, i) => keys[(i + seed) % keys.length]);
      const out: { [k: string]: Json } = {};
      for (const k of rotated)
        Object.defineProperty(out, k, {
          value: shuffle(v[k], seed + 1),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      return out;
    }
    return v;
  };

  it('does not depend on key order, and parses back to the same value', () => {
    fc.assert(
      fc.property(json, fc.nat(50), (v, seed) => {
        expect(canonicalJson(shuffle(v, seed))).toBe(canonicalJson(v));
        expect(JSON.parse(canonicalJson(v))).toEqual(v);
      }),
      RUNS,
    );
  });
});

describe('byte accounting', () => {
  it('jsonBytes is exactly the UTF-8 size of JSON.stringify', () => {
    fc.assert(
      fc.property(json, (v) => {
        expect(jsonBytes(v)).toBe(Buffer.byteLength(JSON.stringify(v), 'utf8'));
      }),
      RUNS,
    );
  });

  it('jsonStringBytes is exactly the UTF-8 size of JSON.stringify, lone surrogates and escapes included', () => {
    const unit = fc.oneof(
      fc.constantFrom('"', '\\', '\n', '\u0001', '\u007f', '\u00e9', '\u20ac', '\ud83d', '\ude00', '\ud83d\ude00'),
      fc.string({ unit: 'binary', maxLength: 3 }),
    );
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 40 }), (parts) => {
        const s = parts.join('');
        expect(jsonStringBytes(s)).toBe(Buffer.byteLength(JSON.stringify(s), 'utf8'));
      }),
      RUNS,
    );
  });

  it('sliceToJsonBytes gives the longest prefix that fits, never half a surrogate pair', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), fc.nat(400), (s, max) => {
        const cut = sliceToJsonBytes(s, max);
        expect(s.startsWith(cut)).toBe(true);
        if (cut.length < s.length) {
          expect(jsonStringBytes(cut)).toBeLessThanOrEqual(Math.max(max, 2)); // "" is two bytes of quotes
          const next = s.codePointAt(cut.length)! > 0xffff && s.charCodeAt(cut.length) < 0xdc00 ? 2 : 1;
          expect(jsonStringBytes(s.slice(0, cut.length + next))).toBeGreaterThan(max);
        } else expect(jsonStringBytes(s)).toBeLessThanOrEqual(Math.max(max, 2));
      }),
      RUNS,
    );
  });
});

describe('normalization and bounds', () => {
  const block = fc.oneof(
    fc.record({ type: fc.constant('text' as const), text: fc.string({ unit: 'binary', maxLength: 3000 }) }),
    fc.record({
      type: fc.constant('image' as const),
      data: fc.base64String({ maxLength: 400 }),
      mimeType: fc.constant('image/png'),
    }),
  );
  const candidate = fc
    .record({
      content: fc.array(block, { maxLength: 4 }),
      isError: fc.boolean(),
      error: fc.option(
        fc.record({ message: fc.string({ maxLength: 3000 }), code: fc.constantFrom('TOOL_FAILED', 'DENIED') }),
        { nil: undefined },
      ),
      meta: fc.option(jsonObject, { nil: undefined }),
    })
    .map((c) => JSON.parse(JSON.stringify(c)) as Candidate);
  const contexts = fc.array(
    fc.record({ role: fc.constant('user' as const), content: fc.string({ maxLength: 2000 }) }),
    { maxLength: 3 },
  );

  it('a normalized result is lossless JSON, frozen, and fits the bounds it was given', () => {
    fc.assert(
      fc.property(
        candidate,
        contexts,
        fc.integer({ min: 1, max: 4000 }),
        fc.integer({ min: 0, max: 20_000 }),
        (c, ctx, maxChars, maxBytes) => {
          const r = normalizeResult(c, ctx, { maxResultChars: maxChars, maxResultBytes: maxBytes });
          expect(snapshotJson(r)).toEqual(r);
          expect(isDeepFrozen(r)).toBe(true);
          expect(resultBytes(r)).toBeLessThanOrEqual(Math.max(maxBytes, MIN_SHARE_BYTES) + 64);
          expect(r.isError).toBe(c.isError);
        },
      ),
      RUNS,
    );
  });

  it('a result that did not fit keeps a prefix of its text as the preview, and says so', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 5000 }),
        fc.integer({ min: 0, max: 6000 }),
        (t, maxBytes) => {
          const full = { content: [{ type: 'text' as const, text: t }], isError: false };
          const r = fitResult(full, { maxChars: Infinity, maxBytes });
          if (r === full) return;
          const preview = r.content.length === 2 ? (r.content[0] as { text: string }).text : '';
          expect(t.startsWith(preview)).toBe(true);
          expect(r.meta).toMatchObject({ truncated: true, originalChars: t.length });
          expect((r.content[r.content.length - 1] as { text: string }).text).toMatch(
            /truncated: showing \d+ of \d+ characters/,
          );
        },
      ),
      RUNS,
    );
  });
});

describe('decision folding', () => {
  const RANK = { allow: 0, ask: 1, deny: 2 } as const;
  const decision: fc.Arbitrary<PreDecision> = fc.oneof(
    fc.constant({ kind: 'allow' as const }),
    fc
      .option(fc.string({ minLength: 1, maxLength: 8 }), { nil: undefined })
      .map((reason) => (reason ? { kind: 'ask' as const, reason } : { kind: 'ask' as const })),
    fc.string({ minLength: 1, maxLength: 8 }).map((reason) => ({ kind: 'deny' as const, reason })),
  );
  const answers = fc.array(fc.option(decision, { nil: undefined }), { maxLength: 8 });
  const fold = (start: PreDecision, xs: (PreDecision | undefined)[]) => xs.reduce(foldPreDecision, start);

  it('is monotonic: each step only tightens, so no later answer turns a deny or an ask into an allow', () => {
    fc.assert(
      fc.property(decision, answers, (start, xs) => {
        let cur = start;
        for (const x of xs) {
          const next = foldPreDecision(cur, x);
          expect(RANK[next.kind]).toBeGreaterThanOrEqual(RANK[cur.kind]);
          if (x) expect(RANK[next.kind]).toBeGreaterThanOrEqual(RANK[x.kind]);
          cur = next;
        }
      }),
      RUNS,
    );
  });

  it('the outcome kind is the strictest answer whatever the order; ask reasons keep their order', () => {
    fc.assert(
      fc.property(answers, fc.nat(), (xs, seed) => {
        const start: PreDecision = { kind: 'allow' };
        const shuffled = xs
          .map((x, i) => ({ x, k: (i * 7919 + seed) % 101 }))
          .sort((a, b) => a.k - b.k)
          .map((e) => e.x);
        const strictest = xs.reduce((m, x) => (x && RANK[x.kind] > m ? RANK[x.kind] : m), 0);
        expect(RANK[fold(start, xs).kind]).toBe(strictest);
        expect(RANK[fold(start, shuffled).kind]).toBe(strictest);
        const out = fold(start, xs);
        if (out.kind === 'ask') {
          const reasons = xs
            .filter((x): x is PreDecision & { kind: 'ask' } => x?.kind === 'ask' && !!x.reason)
            .map((x) => x.reason);
          expect(out.reason).toBe(reasons.length ? reasons.join('; ') : undefined);
        }
      }),
      RUNS,
    );
  });

  it('the stage loop stops at the first deny, so the first denial reason is the one given', () => {
    fc.assert(
      fc.property(answers, (xs) => {
        let cur: PreDecision = { kind: 'allow' };
        for (const x of xs) {
          cur = foldPreDecision(cur, x);
          if (cur.kind === 'deny') break;
        }
        const firstDeny = xs.find((x) => x?.kind === 'deny');
        if (firstDeny) expect(cur).toEqual(firstDeny);
      }),
      RUNS,
    );
  });

  it('parsing any extension answer yields a real decision or a throw, never a silent allow from garbage', () => {
    fc.assert(
      fc.property(fc.anything(), (v) => {
        let parsed: PreDecision | undefined;
        try {
          parsed = parsePreDecision(v, 'h');
        } catch {
          return;
        }
        if (parsed?.kind === 'allow') expect((v as { kind?: unknown }).kind).toBe('allow');
        if (parsed === undefined) expect(v === undefined || v === null).toBe(true);
        try {
          const g = parseGuardAnswer(v, 'g');
          expect(g === undefined || (typeof g === 'string' && g.trim().length > 0)).toBe(true);
        } catch {
          // a broken guard: the stage turns it into a failure, the call does not run
        }
      }),
      RUNS,
    );
  });

  it('post-execute never replaces both content and value, and a block drops the value', () => {
    const base: Candidate = { content: [{ type: 'text', text: 'orig' }], value: { v: 1 }, isError: false };
    fc.assert(
      fc.property(fc.anything(), (verdict) => {
        let applied;
        try {
          applied = applyPostVerdict(base, verdict, 'p');
        } catch {
          return;
        }
        const v = verdict as { content?: unknown; value?: unknown } | null;
        if (applied.blocked) expect(applied.candidate.value).toBeUndefined();
        else if (v && typeof v === 'object' && v.content !== undefined)
          expect(applied.candidate.value).toEqual(base.value);
        else if (v && typeof v === 'object' && v.value !== undefined)
          expect(applied.candidate.content).toEqual([
            {
              type: 'text',
              text:
                typeof applied.candidate.value === 'string'
                  ? applied.candidate.value
                  : JSON.stringify(applied.candidate.value, null, 2),
            },
          ]);
        else expect(applied.candidate).toBe(base);
      }),
      RUNS,
    );
  });
});
