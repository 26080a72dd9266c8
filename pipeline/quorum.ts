// Quorum approvals: an ask that needs N distinct approvers (optionally verified, in named groups)
// and never the session's own user (the two-person rule). Pure: the workflow keeps the tally in
// the pending ask (and so in the memo), the client and the inbox only show it.

/** What a tool (`approvers` on defineTool) or a pre-execute verdict (`{kind: 'ask', approvers}`) asks for. */
export interface QuorumSettings {
  /** Distinct approvers needed before the call runs (1 to 10). */
  quorum: number;
  /** Only verified approvers in one of these groups count (a signed identity is then required). */
  groups?: string[];
  /**
   * When the ask is denied: at the first rejection (`first`, the default), or once rejections are
   * a majority of the quorum (`majority`: more than half of N).
   */
  rejectBy?: 'first' | 'majority';
}

/** One approver's vote as the tally keeps it. */
export interface QuorumVote {
  /** Who: the verified subject, or the typed name as sent (shown; compared normalised). */
  by: string;
  at: string;
  /** The vote carried a signed identity a worker verified. */
  verified?: true;
  reason?: string;
  /** The sender's requestId: how `sluice approve --wait` finds its own vote. */
  requestId?: string;
}

/** The tally a pending quorum ask carries: in the memo, the query, the inbox card and the CLI. */
export interface QuorumTally {
  needed: number;
  rejectBy: 'first' | 'majority';
  groups?: string[];
  /** The session's user, who may not approve (BatchOptions.sessionUser), when the batch names one. */
  sessionUser?: string;
  approvals: QuorumVote[];
  rejections: QuorumVote[];
}

export const MAX_QUORUM = 10;

/**
 * The settings as a worker records them in a tool's profile: a quorum outside 1..MAX_QUORUM or a
 * group that is not a non-empty string is a configuration error, named with what to do.
 */
export function checkQuorum(where: string, q: unknown): QuorumSettings {
  const x = q as Partial<QuorumSettings> | null;
  if (!x || typeof x !== 'object' || !Number.isInteger(x.quorum) || x.quorum! < 1 || x.quorum! > MAX_QUORUM)
    throw new Error(`${where}: approvers.quorum must be a whole number from 1 to ${MAX_QUORUM}`);
  if (x.groups !== undefined && (!Array.isArray(x.groups) || x.groups.some((g) => typeof g !== 'string' || !g)))
    throw new Error(`${where}: approvers.groups must be a list of group names`);
  if (x.rejectBy !== undefined && x.rejectBy !== 'first' && x.rejectBy !== 'majority')
    throw new Error(`${where}: approvers.rejectBy must be "first" or "majority"`);
  return {
    quorum: x.quorum!,
    ...(x.groups?.length ? { groups: [...x.groups] } : {}),
    ...(x.rejectBy ? { rejectBy: x.rejectBy } : {}),
  };
}

/** The stricter of two quorum asks (a tool's and a policy rule's): the larger quorum, every group named. */
export function stricterQuorum(a?: QuorumSettings, b?: QuorumSettings): QuorumSettings | undefined {
  if (!a || !b) return a ?? b;
  const groups = [...new Set([...(a.groups ?? []), ...(b.groups ?? [])])];
  const rejectBy =
    a.rejectBy === 'first' || b.rejectBy === 'first' || !a.rejectBy || !b.rejectBy ? 'first' : 'majority';
  return {
    quorum: Math.max(a.quorum, b.quorum),
    ...(groups.length ? { groups } : {}),
    ...(rejectBy === 'majority' ? { rejectBy } : {}),
  };
}

/**
 * How two names are compared: Unicode compatibility form (full-width letters, ligatures), case
 * folded, zero-width and control characters removed, whitespace collapsed. "Alice", " alice " and
 * "ＡＬＩＣＥ" are one approver. A typed name is still whatever the sender typed: this only stops
 * one person counting twice by accident or by a trivial variation, it proves nothing.
 */
export function approverKey(name: string): string {
  return (
    name
      .normalize('NFKC')
      // biome-ignore lint/suspicious/noControlCharactersInRegex: removing invisible characters is the point
      .replace(/[\u0000-\u001f\u007f-\u009f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g, '')
      .toLowerCase()
      .replace(/\s+/g, ' ')
      .trim()
  );
}

/** Rejections that deny the ask. */
export function rejectionsToDeny(t: Pick<QuorumTally, 'needed' | 'rejectBy'>): number {
  return t.rejectBy === 'majority' ? Math.floor(t.needed / 2) + 1 : 1;
}

/** "1 of 2: alice approved", "2 of 2: alice, bob approved", "0 of 2", plus rejections when any. */
export function tallyText(t: QuorumTally): string {
  const approved = t.approvals.length ? `: ${t.approvals.map((v) => v.by).join(', ')} approved` : '';
  const rejected = t.rejections.length
    ? `; ${t.rejections.map((v) => v.by).join(', ')} rejected (${rejectionsToDeny(t)} denies)`
    : '';
  return `${t.approvals.length} of ${t.needed}${approved}${rejected}`;
}
