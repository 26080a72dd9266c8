// Shell words for the policy formats that match commands token by token (Codex `.rules` patterns,
// OpenCode's command wrappers). The command is split into its simple commands on the shell's
// separators, then each simple command into words the way POSIX shlex does: quotes removed,
// backslash escapes applied.
//
// This is hand-written splitting, which reads some text differently from bash (comments, $'…',
// here-documents) and does not look inside $( … ) or bash -c. Claude Code's Bash rules no longer
// use it: they read commands with the shell parser in shell.ts (SECURITY.md lists the gap).

/** Splits on the shell's command separators outside quotes: `&&`, `||`, `;`, `|`, `&`, newlines. */
export function splitCompound(command: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quote: string | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote) {
      cur += c;
      if (c === '\\' && quote === '"' && i + 1 < command.length) cur += command[++i];
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") {
      quote = c;
      cur += c;
    } else if (c === '\\' && i + 1 < command.length) {
      cur += c + command[++i];
    } else if (c === ';' || c === '\n' || c === '|' || c === '&') {
      if (command[i + 1] === c && (c === '|' || c === '&')) i++;
      out.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  out.push(cur);
  return out.map((s) => s.trim()).filter(Boolean);
}

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
