// Hook settings and the scripts they run are pinned at worker start. Settings are read once and
// their digest recorded, so an auditor sees which settings gated a call. A script file a hook
// command names (e.g. "$CLAUDE_PROJECT_DIR/.claude/hooks/guard.sh") is hashed at start and again
// before every run: a script that changed since start is not run, and the call is refused (a
// gate whose code was swapped at run time, e.g. by the agent's own write tool, must not pass).
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export function digestOf(bytes: Buffer | string): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** The digest of a file's bytes now, or `missing` when it cannot be read. */
export function fileDigest(file: string): string {
  try {
    return digestOf(fs.readFileSync(file));
  } catch {
    return 'missing';
  }
}

export interface PinnedScript {
  /** The file as the command names it, after variable expansion (absolute). */
  path: string;
  digest: string;
}

/**
 * The script files a hook command names: every shell word that, with `$CLAUDE_PROJECT_DIR`
 * (`$GEMINI_PROJECT_DIR`, `~`) expanded and relative paths taken from the workspace, is an
 * existing regular file. Interpreters found on PATH (`node`, `python3`) are not files named by
 * the command and are not pinned.
 */
export function scriptsOf(command: string, workspace: string): PinnedScript[] {
  const out = new Map<string, PinnedScript>();
  for (const word of shellWords(command)) {
    const expanded = word
      .replace(/\$\{?(CLAUDE_PROJECT_DIR|GEMINI_PROJECT_DIR)\}?/g, workspace)
      .replace(/^~(?=\/|$)/, os.homedir());
    if (!expanded || /[$`*?]/.test(expanded)) continue;
    const file = path.resolve(workspace, expanded);
    if (!fs.statSync(file, { throwIfNoEntry: false })?.isFile()) continue;
    out.set(file, { path: file, digest: fileDigest(file) });
  }
  return [...out.values()];
}

/** The scripts whose bytes differ from their pinned digest, with what they are now. */
export function changedScripts(scripts: readonly PinnedScript[]): { path: string; pinned: string; now: string }[] {
  return scripts
    .map((s) => ({ path: s.path, pinned: s.digest, now: fileDigest(s.path) }))
    .filter((s) => s.now !== s.pinned);
}

/** Splits a command into words the way a shell would for plain quoting (no expansion). */
function shellWords(command: string): string[] {
  const words: string[] = [];
  let cur = '';
  let has = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < command.length) cur += command[++i];
      else cur += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      has = true;
    } else if (c === '\\' && i + 1 < command.length) {
      cur += command[++i];
      has = true;
    } else if (/[\s;&|<>()]/.test(c)) {
      if (has || cur) words.push(cur);
      cur = '';
      has = false;
    } else {
      cur += c;
      has = true;
    }
  }
  if (has || cur) words.push(cur);
  return words;
}
