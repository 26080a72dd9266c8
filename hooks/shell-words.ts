// Shell words for the policy formats that match commands token by token (Codex `.rules` patterns,
// OpenCode's command wrappers). The command is split into its simple commands by the same
// splitting Sluice uses for Claude Code's Bash rules (permission-rules.ts), then each simple
// command into words the way POSIX shlex does: quotes removed, backslash escapes applied.
import { splitCompound } from './permission-rules';

export { splitCompound };

/** POSIX-style word splitting of one simple command. Unbalanced quotes keep the rest as one word. */
export function shellWords(command: string): string[] {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else cur += c;
    } else if (quote === '"') {
      if (c === '"') quote = undefined;
      else if (c === '\\' && i + 1 < command.length && '"\\$`\n'.includes(command[i + 1])) cur += command[++i];
      else cur += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < command.length) {
      cur += command[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (inWord) words.push(cur);
  return words;
}

/**
 * True when the command uses what makes its words depend on run time, outside single quotes:
 * substitution (`$(…)`, backquotes, `<(…)`), variables (`$X`), redirection (`>`, `<`) or
 * globbing (`*`, `?`, `[`). A rule that allows a command by its words cannot vouch for these.
 */
export function hasShellExpansion(command: string): boolean {
  let quote: string | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote === "'") {
      if (c === "'") quote = undefined;
      continue;
    }
    if (c === '\\') {
      i++;
      continue;
    }
    if (quote === '"') {
      if (c === '"') quote = undefined;
      else if (c === '$' || c === '`') return true;
      continue;
    }
    if (c === "'" || c === '"') quote = c;
    else if ('$`<>*?['.includes(c)) return true;
  }
  return false;
}

/** True when the command redirects input or output (`>`, `>>`, `<`, `<<`, `<<<`) outside quotes. */
export function hasRedirection(command: string): boolean {
  let quote: string | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"') i++;
      continue;
    }
    if (c === '\\') i++;
    else if (c === "'" || c === '"') quote = c;
    else if (c === '>' || c === '<') return true;
  }
  return false;
}
