// The views of an ask. The ask is declared once (pipeline/types.ts: PendingApproval, and AskTerms,
// what the one who asks says of it); what the `approval/asked` event records and what a notice
// tells approvers are picked from it here, each with all of its terms, so a field added to
// AskTerms reaches every view without a copy per field (test/unit/ask-views.test.ts).
import type { NoticeKind } from './lifecycle';
import type { AskTerms, PendingApproval, ShadowVerdict } from './types';

/**
 * An object without its undefined fields: an optional field is absent, never present as
 * `undefined`, so what is recorded or sent is what a field-by-field copy gave.
 */
export function definedFields<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** The fields `keys` names of `o`, the undefined ones left out. */
function pick<T extends object, K extends keyof T>(o: T, keys: readonly K[]): Pick<T, K> {
  const picked: Partial<Pick<T, K>> = {};
  for (const k of keys) if (o[k] !== undefined) picked[k] = o[k];
  return picked as Pick<T, K>;
}

/**
 * Every field of AskTerms, once: the compiler holds this list to the interface (a field missing
 * here fails to compile below), and the views take the terms through it.
 */
export const ASK_TERMS = ['reason', 'policy', 'facts', 'shadow'] as const satisfies readonly (keyof AskTerms)[];
type Missing = Exclude<keyof AskTerms, (typeof ASK_TERMS)[number]>;
const everyTerm: [Missing] extends [never] ? true : Missing = true;
void everyTerm;

/** The terms an ask carries: out of a pre-execute answer, a gate or a pending approval. */
export function askTermsOf(x: AskTerms): AskTerms {
  return pick(x, ASK_TERMS);
}

/** At most this many facts go with an ask: a card shows them all. */
const MAX_ASK_FACTS = 50;

/**
 * What a policy saw, as an extension's ask gives it (`facts`, `shadow`), checked: facts are named
 * whole numbers or booleans, a shadow verdict a decision with its rule. Anything else is a bug in
 * the extension, said with its name.
 */
export function parseAskSeen(
  value: { facts?: unknown; shadow?: unknown },
  who: string,
): Pick<AskTerms, 'facts' | 'shadow'> {
  const out: Pick<AskTerms, 'facts' | 'shadow'> = {};
  if (value.facts !== undefined) {
    const f = value.facts;
    const ok =
      f !== null &&
      typeof f === 'object' &&
      !Array.isArray(f) &&
      Object.keys(f).length <= MAX_ASK_FACTS &&
      Object.values(f).every((v) => typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)));
    if (!ok)
      throw new Error(`${who} returned an ask whose facts are not {name: number | boolean} (at most ${MAX_ASK_FACTS})`);
    out.facts = { ...(f as Record<string, number | boolean>) };
  }
  if (value.shadow !== undefined) {
    const v = value.shadow as Partial<ShadowVerdict> | null;
    if (!v || !['allow', 'ask', 'deny', 'none'].includes(v.decision as string))
      throw new Error(`${who} returned an ask whose shadow verdict has no decision (allow, ask, deny or none)`);
    out.shadow = shadowVerdictOf(v as ShadowVerdict);
  }
  return out;
}

/** A recorded shadow verdict (policy/shadow's `candidate`) as an ask carries it: its known fields only. */
export function shadowVerdictOf(v: ShadowVerdict): ShadowVerdict {
  return definedFields({
    decision: v.decision,
    file: typeof v.file === 'string' ? v.file : undefined,
    line: typeof v.line === 'number' ? v.line : undefined,
    rule: typeof v.rule === 'string' ? v.rule : undefined,
    policyId: typeof v.policyId === 'string' ? v.policyId : undefined,
    message: typeof v.message === 'string' ? v.message : undefined,
    facts: v.facts && typeof v.facts === 'object' ? v.facts : undefined,
  });
}

/** The facts a policy saw, for a person: `emailsLastHour = 4, accountApproved = true`. */
export function factsText(facts: Record<string, number | boolean>): string {
  return Object.entries(facts)
    .map(([k, v]) => `${k} = ${v}`)
    .join(', ');
}

/** A shadow candidate's verdict, for a person: what it would do, by which rule, and what it read. */
export function shadowVerdictText(v: ShadowVerdict): string {
  if (v.decision === 'none') return 'the candidate policy has no rule for this call';
  const by = v.file ? ` by ${v.file}:${v.line}${v.policyId ? ` (${v.policyId})` : ''}` : '';
  const facts = v.facts ? `; it read ${factsText(v.facts)}` : '';
  return `the candidate policy would ${v.decision}${by}${v.message ? `: ${v.message}` : ''}${facts}`;
}

/** The facts of the ask (besides its id and quorum) the `approval/asked` event records. */
const ASKED_FACTS = ['toolName', 'callId', 'card', 'argsDigest', 'expiresAt', 'parentCallId'] as const;

/**
 * The `approval/asked` event's data: the ask's terms and its facts as 1.0 recorded them (the id
 * as `id`, a quorum as the count of approvers it needs), which `sluice audit` and `export` read.
 */
export type AskedEvent = Pick<PendingApproval, (typeof ASKED_FACTS)[number] | keyof AskTerms> & {
  id: string;
  /** A quorum ask: distinct approvers needed. */
  quorum?: number;
};

export function askedEventOf(p: PendingApproval): AskedEvent {
  return definedFields({ id: p.approvalId, ...pick(p, ASKED_FACTS), ...askTermsOf(p), quorum: p.quorum?.needed });
}

/** The facts of the ask a notice carries: enough to find it, decide it, and say who has it. */
const NOTICE_FACTS = [
  'approvalId',
  'workflowId',
  'sessionId',
  'callId',
  'toolName',
  'argsDigest',
  'expiresAt',
  'assignee',
] as const;

/** What a notifier sends: the ask as a person needs it to decide, and what happened. */
export type ApprovalNotice = Pick<PendingApproval, (typeof NOTICE_FACTS)[number] | keyof AskTerms> & {
  kind: NoticeKind;
  /** The card's title. */
  title: string;
  /** For escalated/reassigned: who had it before. */
  from?: string;
  by?: string;
  at: string;
  /** Only these of the worker's notifiers (by name): the batch's `options.notifiers`. */
  targets?: string[];
  /** A one-time approval link (the worker's `approvalLinks`): opens the inbox's confirm page for this approval. */
  link?: string;
};

/** What happened to an ask, for its notice: who had it before and who moved it, where that applies. */
export interface NoticeEvent {
  kind: NoticeKind;
  from?: string;
  by?: string;
  targets?: string[];
  at: string;
}

export function noticeOf(p: PendingApproval, e: NoticeEvent): ApprovalNotice {
  const { kind, ...happened } = e;
  return definedFields({ kind, ...pick(p, NOTICE_FACTS), ...askTermsOf(p), title: p.card.title, ...happened });
}

export interface NotifyActivities {
  notifyApprovers(notice: ApprovalNotice): Promise<{ sent: number }>;
}
