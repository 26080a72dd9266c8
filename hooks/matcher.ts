// Which tools a hook's `matcher` selects, the way Claude Code and Codex read it: empty or `*` is
// every tool; only letters, digits, `_` and `|` is a set of exact names; anything else is a
// regular expression tested unanchored (so `^Bash$` pins it, `Bash.*` does not), with JavaScript's
// meaning. A settings file can come with a repository, so its matcher is untrusted text: it runs
// on RE2 (re2js), linear in the name's length whatever the pattern, never on the backtracking
// RegExp, where `(a+)+$` would stall the worker's event loop. What RE2 has no linear way to do
// (back-references, look-arounds) is refused at load, naming the construct; what both engines
// read, they read alike (test/unit/matcher.test.ts checks that against RegExp).
import { RE2JS } from 're2js';

export type Matcher = { kind: 'all' } | { kind: 'names'; names: readonly string[] } | { kind: 'regex'; regex: RE2JS };

const EXACT = /^[A-Za-z0-9_|]+$/;

/**
 * Constructs of JavaScript's RegExp no linear-time engine runs, found by scanning the pattern with
 * its escapes and classes skipped: back-references (`\1`, `\k<name>`) and look-arounds.
 */
function unsupported(pattern: string): string | undefined {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && /[1-9]/.test(next)) return `a back-reference (\\${next})`;
      if (!inClass && next === 'k' && pattern[i + 2] === '<') return 'a named back-reference (\\k<…>)';
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') {
      inClass = true;
      // A `]` first in a class is literal (`[]a]` in RE2; `[]` matches nothing in JavaScript).
      if (pattern[i + 1] === '^') i++;
      if (pattern[i + 1] === ']')
        return 'a `]` first in a character class (its meaning differs between engines; escape it as `\\]`)';
    } else if (c === '(' && pattern[i + 1] === '?') {
      const look = /^\(\?(<?[=!])/.exec(pattern.slice(i));
      if (look) return `a look-around (${look[0]}…)`;
    }
  }
  return undefined;
}

const fix = 'use "*" for every tool, "A|B" for exact names, or a regular expression without them';

/** Compiles a matcher; throws with the reason when it is neither a name list nor a regex both engines read. */
export function compileMatcher(matcher: string | undefined | null): Matcher {
  if (matcher === undefined || matcher === null || matcher === '' || matcher === '*') return { kind: 'all' };
  if (EXACT.test(matcher)) return { kind: 'names', names: matcher.split('|').filter(Boolean) };
  const m = JSON.stringify(matcher);
  try {
    new RegExp(matcher);
  } catch (err) {
    throw new Error(`matcher ${m} is not a valid regular expression (${(err as Error).message}); ${fix}`);
  }
  const refused = unsupported(matcher);
  if (refused)
    throw new Error(
      `matcher ${m} uses ${refused}, which Sluice does not run: matchers run in linear time, so a pattern from a settings file cannot stall the worker; ${fix}`,
    );
  try {
    return { kind: 'regex', regex: RE2JS.compile(matcher) };
  } catch (err) {
    throw new Error(
      `matcher ${m} is a JavaScript regular expression that RE2, the linear-time engine matchers run on, does not accept (${(err as Error).message}); ${fix}`,
    );
  }
}

/** True when any of the names a call goes by (its called name, the tool's name, its aliases) is selected. */
export function matchesAny(matcher: Matcher, names: readonly string[]): boolean {
  switch (matcher.kind) {
    case 'all':
      return true;
    case 'names':
      return names.some((n) => matcher.names.includes(n));
    case 'regex':
      return names.some((n) => matcher.regex.test(n));
  }
}
