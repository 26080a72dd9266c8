// Which tools a hook's `matcher` selects, the way Claude Code and Codex read it: empty or `*` is
// every tool; only letters, digits, `_` and `|` is a set of exact names; anything else is a
// JavaScript regular expression tested unanchored (so `^Bash$` pins it, `Bash.*` does not).

export type Matcher = { kind: 'all' } | { kind: 'names'; names: readonly string[] } | { kind: 'regex'; regex: RegExp };

const EXACT = /^[A-Za-z0-9_|]+$/;

/** Compiles a matcher; throws with the reason when it is neither a name list nor a valid regex. */
export function compileMatcher(matcher: string | undefined | null): Matcher {
  if (matcher === undefined || matcher === null || matcher === '' || matcher === '*') return { kind: 'all' };
  if (EXACT.test(matcher)) return { kind: 'names', names: matcher.split('|').filter(Boolean) };
  try {
    return { kind: 'regex', regex: new RegExp(matcher) };
  } catch (err) {
    throw new Error(
      `matcher ${JSON.stringify(matcher)} is not a valid regular expression (${(err as Error).message}); use "*" for every tool, "A|B" for exact names, or a valid regex`,
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
