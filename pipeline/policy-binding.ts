// How an approver is told which policy an ask was raised under: one line for a terminal card, a
// chat notice and the inbox card alike (issue 26). Pure, so the CLI, the inbox and the notifiers
// say it the same way.
/**
 * The policy an ask was raised under: a person's approval answers the call as that policy judged
 * it. When the worker that runs the call after the decision reads different policy files, the call
 * is judged again before it runs (hooks/policy.ts `recheck`).
 */
export interface PolicyBinding {
  /** One digest over every policy file read (their labels and digests). */
  digest: string;
  /** What the sources together said; `none` when no rule matched (the tool's own approval asked). */
  decision: 'allow' | 'ask' | 'deny' | 'none';
  /** The rule that decided, when one did. */
  rule?: { source: string; file: string; line: number; text: string };
  /** The files the digest is over (format, label, digest each); bindings recorded before have none. */
  files?: { source: string; file: string; digest: string }[];
}

/** `sha256:` and the first 12 hex digits: enough to tell two policies apart on a card. */
export function shortDigest(digest: string): string {
  return digest.slice(0, 'sha256:'.length + 12);
}

/** Files named on one line; past this many, how many more. */
const FILES_SHOWN = 4;

/**
 * "asked by .claude/settings.json:3 `Bash(git push:*)`; policy sha256:0123456789ab over
 * .claude/settings.json, .codex/rules/default.rules". With no rule (the tool's own approval asked
 * and no policy file had a rule for the call): "no policy rule; the tool asks".
 */
export function policyText(b: PolicyBinding): string {
  const rule = b.rule
    ? `${verb(b.decision)} by ${b.rule.file}:${b.rule.line} \`${b.rule.text}\``
    : 'no policy rule; the tool asks';
  const files = b.files ?? [];
  const over = files.length
    ? ` over ${files
        .slice(0, FILES_SHOWN)
        .map((f) => f.file)
        .join(', ')}${files.length > FILES_SHOWN ? ` and ${files.length - FILES_SHOWN} more` : ''}`
    : '';
  return `${rule}; policy ${shortDigest(b.digest)}${over}`;
}

function verb(decision: PolicyBinding['decision']): string {
  return decision === 'deny' ? 'denied' : decision === 'allow' ? 'allowed' : 'asked';
}
