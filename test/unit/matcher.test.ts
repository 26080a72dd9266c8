// A hook's matcher runs in linear time (hooks/matcher.ts): on RE2, with JavaScript's meaning. A
// property test compares it with RegExp over generated patterns both accept and generated names;
// known catastrophic-backtracking patterns answer at once on long names; back-references and
// look-arounds are refused at load, naming the construct.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileMatcher, matchesAny } from '../../hooks/matcher';

const ALPHABET = ['a', 'b', 'A', 'B', '_', '-', '.', '0', '1', ' ', '/'];

/** Regular expressions over the alphabet: atoms, classes, anchors, groups, alternation, every quantifier. */
const pattern: fc.Arbitrary<string> = fc.letrec<{ re: string; atom: string }>((tie) => ({
  atom: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...ALPHABET.filter((c) => c !== '.')) },
    fc.constantFrom('.', '\\.', '\\-', '\\/', '\\d', '\\D', '\\w', '\\W', '\\s', '\\S', '\\_'),
    fc.constantFrom('[ab]', '[^a]', '[a-c]', '[\\d_]', '[a-]', '[-_]', '[^\\w]', '[.]', '[A-Za-z]', '[0-9a]'),
    fc.constantFrom('^', '$', '\\b', '\\B'),
    tie('re').map((r) => `(${r})`),
    tie('re').map((r) => `(?:${r})`),
  ),
  re: fc.oneof(
    { weight: 3, arbitrary: tie('atom') },
    fc
      .tuple(tie('atom'), fc.constantFrom('*', '+', '?', '{2}', '{0,}', '{1,3}', '{0,2}'), fc.constantFrom('', '', '?'))
      .map(([a, q, lazy]) => a + q + lazy),
    fc.array(tie('re'), { minLength: 2, maxLength: 4 }).map((rs) => rs.join('')),
    fc.tuple(tie('re'), tie('re')).map(([a, b]) => `${a}|${b}`),
  ),
})).re;

const name = fc.oneof(
  fc.array(fc.constantFrom(...ALPHABET), { maxLength: 10 }).map((cs) => cs.join('')),
  fc.constantFrom('Bash', 'BashOutput', 'Write', 'TodoWrite', 'mcp__fs__write_file', 'run_shell_command', ''),
);

/** The compiled matcher, or undefined when it is refused (checked separately below). */
function regexOf(p: string) {
  try {
    const m = compileMatcher(p);
    return m.kind === 'regex' ? m : undefined;
  } catch {
    return undefined;
  }
}

describe('a hook matcher on the linear-time engine', () => {
  it('selects exactly the names RegExp selects, for every pattern both accept', () => {
    let compared = 0;
    fc.assert(
      fc.property(pattern, fc.array(name, { minLength: 1, maxLength: 6 }), (p, names) => {
        let js: RegExp;
        try {
          js = new RegExp(p);
        } catch {
          return; // not a regex JavaScript reads; compileMatcher refuses it (tested below)
        }
        const m = regexOf(p);
        if (!m) return;
        compared++;
        for (const n of names)
          expect(matchesAny(m, [n]), `${JSON.stringify(p)} on ${JSON.stringify(n)}`).toBe(js.test(n));
      }),
      { numRuns: 3000 },
    );
    // The generator makes mostly valid patterns; a run that compared nothing proves nothing.
    expect(compared).toBeGreaterThan(1000);
  });

  it('refuses only what it says: every pattern of the grammar without ] first in a class compiles', () => {
    fc.assert(
      fc.property(pattern, (p) => {
        try {
          new RegExp(p);
        } catch {
          return;
        }
        expect(() => compileMatcher(p)).not.toThrow();
      }),
      { numRuns: 1000 },
    );
  });

  it.each([
    ['(a+)+$', `${'a'.repeat(20_000)}!`],
    ['(a|aa)*c', 'a'.repeat(20_000)],
    ['^(\\w+\\s?)*$', `${'word '.repeat(4000)}!`],
    ['^(([a-z])+.)+[A-Z]([a-z])+$', 'a'.repeat(20_000)],
    ['(.*a){12}', `${'a'.repeat(11)}${'b'.repeat(5000)}`],
  ])('answers %s at once on a long name that it does not select, where RegExp would backtrack for ages', (p, n) => {
    // Under RegExp each of these takes exponential (or high-polynomial) time on this name: the test
    // would not end. None of them selects it (each needs a character or a count the name lacks).
    expect(matchesAny(compileMatcher(p), [n])).toBe(false);
    expect(matchesAny(compileMatcher(p), [n.slice(0, 8)])).toBe(new RegExp(p).test(n.slice(0, 8)));
  });

  it.each([
    ['(a)\\1', /back-reference \(\\1\)/],
    ['(?<x>a)\\k<x>', /named back-reference/],
    ['Bash(?=Output)', /look-around \(\(\?=…\)/],
    ['(?!Bash)\\w+', /look-around \(\(\?!…\)/],
    ['(?<=mcp__)fs', /look-around \(\(\?<=…\)/],
    ['(?<!x)y', /look-around \(\(\?<!…\)/],
    ['[]a]', /first in a character class/],
  ])('refuses %s at load, saying what and why', (p, reason) => {
    expect(() => compileMatcher(p)).toThrow(reason);
    expect(() => compileMatcher(p)).toThrow(/linear time|differs between engines/);
  });

  it('still reads escapes and classes that only look like the refused constructs', () => {
    expect(matchesAny(compileMatcher('a\\\\1'), ['a\\1'])).toBe(true);
    expect(matchesAny(compileMatcher('[(?=]x'), ['=x'])).toBe(true);
    expect(matchesAny(compileMatcher('(?:Bash)$'), ['Bash', 'BashOutput'])).toBe(true);
    expect(matchesAny(compileMatcher('^(?:Bash)$'), ['BashOutput'])).toBe(false);
  });
});
