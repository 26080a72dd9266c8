// Waterfall folding: how the answers of many extensions become one, monotonically.
import { askTermsOf, definedFields, parseAskSeen } from './ask';
import { ErrorCodes } from './errors';
import { snapshotJson } from './json';
import { assertContentBlocks, errorCandidate, renderValue } from './normalize';
import { checkQuorum, stricterQuorum } from './quorum';
import type { Candidate, ContentBlock, PolicyBinding, PreDecision } from './types';

const RANK = { allow: 0, ask: 1, deny: 2 } as const;

/**
 * Folds a pre-execute answer into the decision so far. Only ever tightens: allow < ask < deny,
 * so a later extension can neither turn a deny into an allow nor skip an ask. Ask reasons add up.
 */
export function foldPreDecision(current: PreDecision, next: PreDecision | undefined | void): PreDecision {
  if (!next) return current;
  // The policy binding travels whichever answer wins: an ask raised by the tool's own approval is
  // bound to the policy that had no rule for it as much as one a rule raised.
  const policy = current.policy ?? next.policy;
  const bound = (d: PreDecision): PreDecision => (policy && d.policy !== policy ? { ...d, policy } : d);
  if (RANK[next.kind] < RANK[current.kind]) return bound(current);
  if (next.kind === 'ask' && current.kind === 'ask') {
    const reasons = [current.reason, next.reason].filter(Boolean);
    // A quorum only tightens too: the larger one, and every ask's groups must hold together.
    const approvers = stricterQuorum(current.approvers, next.approvers);
    // Any other term (AskTerms) holds as the first ask gave it, as the policy binding does.
    return bound(
      definedFields({
        kind: 'ask' as const,
        ...askTermsOf(next),
        ...askTermsOf(current),
        reason: reasons.length ? reasons.join('; ') : undefined,
        approvers,
      }),
    );
  }
  return bound(next);
}

/** The files a binding names (its digest covers every file read; these are what a card shows). */
const MAX_BOUND_FILES = 50;

/** A policy binding as an extension returned it, checked: anything else is a bug in the extension. */
function parseBinding(value: unknown, who: string): PolicyBinding | undefined {
  if (value === undefined) return undefined;
  const b = value as Partial<PolicyBinding> | null;
  const r = b?.rule;
  if (
    typeof b?.digest !== 'string' ||
    !['allow', 'ask', 'deny', 'none'].includes(b.decision as string) ||
    (r !== undefined &&
      (typeof r?.source !== 'string' ||
        typeof r.file !== 'string' ||
        typeof r.line !== 'number' ||
        typeof r.text !== 'string'))
  )
    throw new Error(`${who} returned a malformed policy binding: ${describe(value)}`);
  const files = Array.isArray(b.files)
    ? b.files
        .filter((f) => f && typeof f.source === 'string' && typeof f.file === 'string' && typeof f.digest === 'string')
        .slice(0, MAX_BOUND_FILES)
        .map((f) => ({ source: f.source, file: f.file, digest: f.digest }))
    : undefined;
  return {
    digest: b.digest,
    decision: b.decision!,
    ...(r ? { rule: { source: r.source, file: r.file, line: r.line, text: r.text } } : {}),
    ...(files?.length ? { files } : {}),
  };
}

/** Checks that an extension returned a real pre-execute decision; anything else is a bug in it. */
export function parsePreDecision(value: unknown, who: string): PreDecision | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'object') {
    const v = value as { kind?: unknown; reason?: unknown; policy?: unknown };
    const policy = parseBinding(v.policy, who);
    const bound = policy ? { policy } : {};
    if (v.kind === 'allow') return { kind: 'allow', ...bound };
    if (v.kind === 'deny') {
      if (typeof v.reason !== 'string' || !v.reason.trim())
        throw new Error(`${who} denied without a reason: give deny a non-empty reason string`);
      return { kind: 'deny', reason: v.reason, ...bound };
    }
    if (v.kind === 'ask') {
      if (v.reason !== undefined && typeof v.reason !== 'string')
        throw new Error(`${who} returned an ask whose reason is not a string`);
      const approvers = (value as { approvers?: unknown }).approvers;
      return {
        kind: 'ask',
        ...(v.reason ? { reason: v.reason } : {}),
        ...(approvers !== undefined ? { approvers: checkQuorum(`${who}'s ask`, approvers) } : {}),
        ...parseAskSeen(value as { facts?: unknown; shadow?: unknown }, who),
        ...bound,
      };
    }
  }
  throw new Error(
    `${who} returned ${describe(value)}; a pre-execute handler returns {kind:'allow'|'deny'|'ask'} or nothing`,
  );
}

/** A guard's answer: a non-empty string denies, nothing abstains; there is no way to allow. */
export function parseGuardAnswer(value: unknown, who: string): string | undefined {
  if (value === undefined || value === null || value === false) return undefined;
  if (typeof value === 'string' && value.trim()) return value;
  if (typeof value === 'object' && typeof (value as { reason?: unknown }).reason === 'string')
    return (value as { reason: string }).reason;
  throw new Error(`${who} returned ${describe(value)}; a guard returns a denial reason string or nothing`);
}

export type PostVerdict =
  | { action: 'accept'; content?: ContentBlock[]; value?: unknown }
  | { action: 'block'; feedback: string };

/**
 * Applies one post-execute verdict. Accept may replace content OR value (content is then
 * re-rendered from it), never both; block drops the value and turns the result into feedback.
 */
export function applyPostVerdict(
  candidate: Candidate,
  verdict: unknown,
  who: string,
): { candidate: Candidate; blocked: boolean } {
  if (verdict === undefined || verdict === null) return { candidate, blocked: false };
  const v = verdict as { action?: unknown; content?: unknown; value?: unknown; feedback?: unknown };
  if (v.action === 'block') {
    if (typeof v.feedback !== 'string' || !v.feedback.trim())
      throw new Error(`${who} blocked without feedback: give block a non-empty feedback string`);
    const blocked = errorCandidate(v.feedback, ErrorCodes.BLOCKED);
    blocked.content = [{ type: 'text', text: v.feedback }];
    return { candidate: blocked, blocked: true };
  }
  if (v.action !== 'accept')
    throw new Error(`${who} returned ${describe(verdict)}; post-execute returns {action:'accept'|'block'} or nothing`);
  const hasContent = 'content' in v && v.content !== undefined;
  const hasValue = 'value' in v && v.value !== undefined;
  if (hasContent && hasValue) throw new Error(`${who} replaced both content and value; replace one of them`);
  if (hasContent) {
    const content = snapshotJson(v.content, 'content') as unknown as ContentBlock[];
    assertContentBlocks(content, who);
    return { candidate: { ...candidate, content }, blocked: false };
  }
  if (hasValue) {
    const value = snapshotJson(v.value, 'value');
    return { candidate: { ...candidate, value, content: renderValue(value) }, blocked: false };
  }
  return { candidate, blocked: false };
}

function describe(value: unknown): string {
  if (typeof value !== 'object' || value === null) return `${typeof value} ${String(value)}`.slice(0, 80);
  try {
    return JSON.stringify(value).slice(0, 80);
  } catch {
    return 'an unprintable object';
  }
}
