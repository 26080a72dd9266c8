// Misspelt keys in the harness settings Sluice reads. A key Sluice does not know is usually
// another tool's setting and is read past; but a misspelling of a key that holds rules or hooks
// (`"Deny"`, `"Permissions"`, `"preToolUse"`) would drop them without a sound, and a worker that
// starts without its deny list lets through what the file was written to stop. So such a key
// stops the worker, naming the file, the key and the key it was probably meant to be.

/** The keys of Claude Code's `permissions` object (settings.json); Sluice applies allow, ask and deny. */
export const CLAUDE_PERMISSION_KEYS = [
  'allow',
  'ask',
  'deny',
  'additionalDirectories',
  'defaultMode',
  'disableBypassPermissionsMode',
] as const;

/** A key found where a known one was expected: what stops the worker. */
class MisspeltKeyError extends Error {
  constructor(label: string, where: string, key: string, known: readonly string[]) {
    const nearest = nearestKey(key, known);
    super(
      `${label}: ${where} has the key ${JSON.stringify(key)}, which Sluice does not know${nearest ? ` (did you mean ${nearest}?)` : ''}; the keys there are ${known.join(', ')}. Fix the key, since what it holds would otherwise be ignored and its rules would not apply`,
    );
    this.name = 'MisspeltKeyError';
  }
}

/** Throws MisspeltKeyError when `key` is not one of `known`. */
export function refuseUnknownKey(label: string, where: string, key: string, known: readonly string[]): void {
  if (!known.includes(key)) throw new MisspeltKeyError(label, where, key, known);
}

/**
 * Throws when `key` is not one of `targets` but looks like one (another case, `_` or `-` added, a
 * letter or two off): keys that are simply others' settings pass.
 */
export function refuseNearMiss(label: string, where: string, key: string, targets: readonly string[]): void {
  if (targets.includes(key)) return;
  const meant = targets.find((t) => looksLike(key, t));
  if (meant) throw new MisspeltKeyError(label, where, key, [meant]);
}

/** refuseNearMiss for every key of `obj`. */
export function refuseNearMisses(label: string, where: string, obj: object, targets: readonly string[]): void {
  for (const key of Object.keys(obj)) refuseNearMiss(label, where, key, targets);
}

/** The known key closest to `key` in edits, when it is close enough to be what was meant. */
export function nearestKey(key: string, known: readonly string[]): string | undefined {
  let best: { k: string; d: number } | undefined;
  for (const k of known) {
    const d = editDistance(fold(key), fold(k));
    if (!best || d < best.d) best = { k, d };
  }
  return best && best.d <= Math.max(2, Math.floor(best.k.length / 3)) ? best.k : undefined;
}

function looksLike(key: string, target: string): boolean {
  const d = editDistance(fold(key), fold(target));
  return d === 0 || d <= (target.length >= 8 ? 2 : 1);
}

/** Case, `_`, `-` and spaces do not tell keys apart to a reader. */
function fold(s: string): string {
  return s.toLowerCase().replace(/[-_\s]/g, '');
}

/** Levenshtein distance, in one row. */
function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length];
}
