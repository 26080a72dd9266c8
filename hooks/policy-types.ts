// What every policy format (Claude Code permission rules, Codex `.rules`, Gemini CLI policy TOML,
// OpenCode `permission`) answers about one call, in one shape: the decision and the rule that
// made it, with the file, its digest and the line, so the answer can be put on record.
import type { Facts, SessionRecord } from '../pipeline/facts';
import type { JsonObject } from '../pipeline/types';

export type PolicyFormat = 'claude' | 'codex' | 'gemini' | 'opencode' | 'cedar' | 'dogwood';
export type PolicyDecision = 'allow' | 'ask' | 'deny';

/** Strictest first: a deny from any source beats an ask, an ask beats an allow. */
export const STRICTNESS: Record<PolicyDecision, number> = { deny: 3, ask: 2, allow: 1 };

/** A policy file as read at start. */
export interface PolicyFile {
  format: PolicyFormat;
  /** Relative to the workspace when inside it. */
  label: string;
  /** Absolute. */
  path: string;
  /** sha256 of the bytes read. */
  digest: string;
}

/** One rule of one file, as it can be shown to a person. */
export interface PolicyRuleRef {
  /** Stable while the file is: `<file>:<line>` plus an index when a line holds several rules. */
  id: string;
  format: PolicyFormat;
  file: string;
  digest: string;
  /** 1-based line where the rule starts. */
  line: number;
  /** The rule as written (compacted to one line where the format spans several). */
  text: string;
  decision: PolicyDecision;
  /** The rule's own words for the person or the model (Codex justification, Gemini denyMessage, Cedar `@reason`). */
  message?: string;
  /** The id the rule's author gave it (Cedar `@id`). */
  policyId?: string;
}

/** The call as every format sees it: the resolved tool, its other names and the frozen arguments. */
export interface PolicyCall {
  /** The tool's Sluice name (`bash`, `write`, `mcp__deploy__release`). */
  toolName: string;
  aliases?: readonly string[];
  args: Readonly<JsonObject>;
  /** The session the call belongs to (Cedar's principal); absent when explained outside one. */
  session?: string;
  callId?: string;
  turn?: number;
  /** The calls recorded before this one (session facts fold them); none when absent. */
  record?: Readonly<SessionRecord>;
}

/** One source's answer: its winning rule, and every rule that matched (for `sluice policy check`). */
export interface SourceVerdict {
  decision: PolicyDecision | 'none';
  rule?: PolicyRuleRef;
  matched: PolicyRuleRef[];
  /** Why the source's own logic changed a rule's decision (e.g. a redirection turns a Gemini allow into an ask). */
  note?: string;
  /** The session facts the source read (Cedar `context.session`), recorded with the decision. */
  facts?: Facts;
}

/** An embedded example that did not hold (a Codex `match` that does not match, ...). */
export interface ExampleFailure {
  rule: PolicyRuleRef;
  example: string;
  expected: string;
  got: string;
}

export interface PolicySource {
  format: PolicyFormat;
  files: readonly PolicyFile[];
  rules: readonly PolicyRuleRef[];
  /** What the files hold that Sluice reads past; worth logging at start. */
  warnings: readonly string[];
  evaluate(call: PolicyCall): SourceVerdict;
  /** Whether a rule that may apply to a call of `toolName` reads session facts; absent: none does. */
  readsFacts?(toolName: string): boolean;
  /** Runs the examples the files carry (Codex `match` / `not_match`); none for formats without. */
  examples(): { ran: number; failures: ExampleFailure[]; matched: Set<string> };
}

/** A rule file Sluice cannot read: names the file, the line and what was not understood. */
export class PolicyFileError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    what: string,
  ) {
    super(
      `${file}:${line}: ${what}. Sluice does not start with a policy file it cannot read, since skipping it would let the calls it restricts through`,
    );
    this.name = 'PolicyFileError';
  }
}

/** The 1-based line of a character offset. */
export function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}
