// Wildcard patterns (`*` any text, optionally `?` one character) matched without backtracking.
// Policy files write them (OpenCode's `git * push *`, Gemini's `mcp_*_tool`, Claude Code's
// `Bash(git * main)`) and the model writes the text they are matched against, so a RegExp built
// from a pattern would let a command of a few thousand characters take seconds or minutes
// (`.*a.*a.*a…` backtracks). Here the parts between stars are found left to right, each at its
// first place: a star never has to give text back, so one match costs at most the text's length
// times the pattern's.

export interface Wildcard {
  test(text: string): boolean;
}

/**
 * A pattern split at its stars into literal parts; with `anyChar`, `?` in a part is one
 * character of any kind. A pattern without a star must match the whole text.
 */
export function wildcardOf(parts: readonly string[], anyChar: boolean): Wildcard {
  const at = (text: string, part: string, i: number) => {
    if (i + part.length > text.length) return false;
    for (let k = 0; k < part.length; k++) if (part[k] !== text[i + k] && !(anyChar && part[k] === '?')) return false;
    return true;
  };
  const find = (text: string, part: string, from: number, to: number) => {
    for (let i = from; i + part.length <= to; i++) if (at(text, part, i)) return i;
    return -1;
  };
  return {
    test(text: string): boolean {
      if (parts.length === 1) return parts[0].length === text.length && at(text, parts[0], 0);
      const first = parts[0];
      const last = parts[parts.length - 1];
      const end = text.length - last.length;
      if (end < first.length || !at(text, first, 0) || !at(text, last, end)) return false;
      let from = first.length;
      for (const part of parts.slice(1, -1)) {
        const i = find(text, part, from, end);
        if (i < 0) return false;
        from = i + part.length;
      }
      return true;
    },
  };
}

/** A pattern written as text, `*` any run of characters (and `?` one, with `anyChar`). */
export function wildcard(pattern: string, anyChar = true): Wildcard {
  return wildcardOf(pattern.split('*'), anyChar);
}

/** Either of several patterns. */
export function anyOf(patterns: readonly Wildcard[]): Wildcard {
  return { test: (text) => patterns.some((p) => p.test(text)) };
}
