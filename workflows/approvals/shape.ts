// A decision's shape, checked before anything reads it: garbage is dropped (the update rejected),
// a decision nested too deep or with a field of the wrong type is refused and recorded, and a
// well-formed one is normalised (names and reasons cut to size, a relayed form answer recorded as
// its client's). Pure functions: nothing here touches the batch.
import { cleanPins } from '../../pipeline/grants';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../pipeline/json';
import { elicitedBy } from '../../pipeline/approval-rules';
import { definedFields } from '../../pipeline/ask';
import type { ApprovalDecision } from '../../pipeline/types';

export const MALFORMED =
  'malformed decision: send {"approvalId": "<id>", "decision": "approve"|"deny", "argsDigest": "<digest shown>", "by"?: "<name>", "reason"?: "<text>"}';

/** Only garbage is dropped without a trace (the update is rejected); every well-formed refusal is recorded. */
export function decisionUpdateProblem(d: ApprovalDecision): void {
  if (malformed(d)) throw new Error(MALFORMED);
  // The handler records it as a refusal; fieldProblem would walk it.
  if (depthProblem(d)) return;
  const badField = fieldProblem(d);
  if (badField) throw new Error(badField);
}

export function malformed(d: unknown): boolean {
  const x = d as Partial<ApprovalDecision> | null;
  return (
    !x ||
    typeof x !== 'object' ||
    typeof x.approvalId !== 'string' ||
    !x.approvalId ||
    (x.decision !== 'approve' && x.decision !== 'deny')
  );
}

/**
 * How deep a decision may nest: a pin's value sits three levels down (decision, pins, pin) and
 * matches an argument value, which nests at most MAX_JSON_DEPTH deep from the arguments' root.
 */
const MAX_DECISION_DEPTH = MAX_JSON_DEPTH + 3;

/**
 * A decision nested too deep for the walks after it (the pin shape check, the field check, the
 * payload converter): checked first, without recursion, over the whole decision. A stack overflow
 * in a handler fails the workflow task on every replay, and with it the deny timeout and every
 * later decision.
 */
export function depthProblem(d: ApprovalDecision): string | undefined {
  if (!nestsDeeperThan(d, MAX_DECISION_DEPTH)) return undefined;
  return `malformed decision: it nests arrays/objects more than ${MAX_DECISION_DEPTH} levels deep (in "pins", "scope" or another field); nothing was decided. ${MALFORMED.slice('malformed decision: '.length)}`;
}

/** Why an otherwise well-formed decision carries an optional field of the wrong type. */
export function fieldProblem(d: ApprovalDecision): string | undefined {
  for (const key of ['argsDigest', 'by', 'reason', 'requestId', 'signedIdentity', 'mcpClient'] as const) {
    const v: unknown = d[key];
    if (v !== undefined && v !== null && typeof v !== 'string')
      return `malformed decision: "${key}" must be a string (got ${Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`}); ${MALFORMED.slice('malformed decision: '.length)}`;
  }
  const link = d.link as unknown;
  if (
    link !== undefined &&
    link !== null &&
    (typeof link !== 'object' ||
      ['id', 'approvalId', 'expiresAt'].some((k) => typeof (link as Record<string, unknown>)[k] !== 'string'))
  )
    return 'malformed decision: "link" must be {"id", "approvalId", "expiresAt"} (strings), as the inbox sends it';
  if (d.scope !== undefined && d.scope !== null && d.scope !== 'once' && d.scope !== 'session')
    return `malformed decision: "scope" must be "once" or "session" (got ${JSON.stringify(d.scope).slice(0, 40)})`;
  return undefined;
}

/** A non-empty string cut to `max` characters; undefined for anything else. */
export function text(v: unknown, max: number): string | undefined {
  return typeof v === 'string' && v ? v.slice(0, max) : undefined;
}

/** A well-formed decision as the batch takes it: its fields cut to size, anything else left out. */
export function normalizeDecision(d: ApprovalDecision): ApprovalDecision {
  const session = d.decision === 'approve' && d.scope === 'session';
  return definedFields({
    approvalId: d.approvalId,
    decision: d.decision,
    // A relayed form answer is recorded as the client's, unverified, whatever name it carried.
    by: typeof d.mcpClient === 'string' ? elicitedBy(d.mcpClient) : text(d.by, 200),
    reason: text(d.reason, 2000),
    requestId: text(d.requestId, 100),
    link: d.link
      ? {
          id: d.link.id.slice(0, 100),
          approvalId: d.link.approvalId.slice(0, 200),
          expiresAt: d.link.expiresAt.slice(0, 40),
        }
      : undefined,
    scope: session ? ('session' as const) : undefined,
    pins: session ? cleanPins(d.pins) : undefined,
  });
}
