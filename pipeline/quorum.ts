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
   * Set when asks naming groups were combined (stricterQuorum): a voter must be in a group of each
   * list. `groups` is then absent. Never written by a tool or a handler.
   */
  groupSets?: string[][];
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
  /** Several group lists, each must hold (QuorumSettings.groupSets). */
  groupSets?: string[][];
  /** The session's user, who may not approve (BatchOptions.sessionUser), when the batch names one. */
  sessionUser?: string;
  approvals: QuorumVote[];
  rejections: QuorumVote[];
}

const MAX_QUORUM = 10;

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

/**
 * The group lists a quorum ask names: `groups` (one list, any of its groups) or, once asks were
 * combined, `groupSets` (a group of each list).
 */
function groupSetsOf(q?: QuorumSettings): string[][] {
  if (!q) return [];
  if (q.groupSets?.length) return q.groupSets;
  return q.groups?.length ? [q.groups] : [];
}

/**
 * Group lists as one requirement: each list any-of within itself, every list must hold. A list
 * that another list's groups all belong to adds nothing (whoever is in the narrower one is in it
 * too) and is dropped; so is a repeat. Each list keeps its groups in the order first named.
 */
function combineGroupSets(sets: readonly (readonly string[] | undefined)[]): string[][] {
  const lists = sets.filter((s): s is readonly string[] => !!s?.length).map((s) => [...new Set(s)]);
  const covers = (wide: string[], narrow: string[]) => narrow.every((g) => wide.includes(g));
  return lists.filter((s, i) => !lists.some((o, j) => j !== i && covers(s, o) && (!covers(o, s) || j < i)));
}

/**
 * The stricter of two quorum asks (a tool's and a policy rule's, or two handlers'): the larger
 * quorum, and every group requirement together. Who may approve only narrows: a voter must be in
 * one group of each ask's `groups`, never in one of their union (docs/approvals.md).
 */
export function stricterQuorum(a?: QuorumSettings, b?: QuorumSettings): QuorumSettings | undefined {
  if (!a || !b) return a ?? b;
  const sets = combineGroupSets([...groupSetsOf(a), ...groupSetsOf(b)]);
  const rejectBy =
    a.rejectBy === 'first' || b.rejectBy === 'first' || !a.rejectBy || !b.rejectBy ? 'first' : 'majority';
  return {
    quorum: Math.max(a.quorum, b.quorum),
    ...groupsField(sets),
    ...(rejectBy === 'majority' ? { rejectBy } : {}),
  };
}

/** One list keeps the shape asks always had (`groups`); several are kept apart (`groupSets`). */
function groupsField(sets: string[][]): Pick<QuorumSettings, 'groups' | 'groupSets'> {
  return sets.length === 1 ? { groups: sets[0] } : sets.length > 1 ? { groupSets: sets } : {};
}

function withoutGroups(q: QuorumSettings): QuorumSettings {
  const { groups: _groups, groupSets: _sets, ...rest } = q;
  return rest;
}

/** What a tool's profile says of its approvers (ToolProfile's fields of that name). */
export interface ToolApprovers {
  identityRequired?: boolean;
  approverGroups?: string[];
  quorum?: QuorumSettings;
}

/**
 * Who may decide an ask, every source's constraints holding together: the tool's `approverGroups`,
 * its `approvers`, and the pre-execute ask's `approvers`. Pure: the workflow builds the ask from
 * it (workflows/approval-stage.ts) and judges each verified voter with groupsProblem.
 */
export interface ApproverRule {
  /** Distinct approvers needed (the larger of the quorums), or absent: one decision decides. */
  quorum?: QuorumSettings;
  /** A voter must be in a group of each list (combineGroupSets). Empty: no group is required. */
  groupSets: string[][];
  /** Only a verified approver may decide: the tool or the config says so, or a group is named. */
  identityRequired: boolean;
}

export function approverRule(tool: ToolApprovers | undefined, ask: QuorumSettings | undefined): ApproverRule {
  const stricter = stricterQuorum(tool?.quorum, ask);
  const groupSets = combineGroupSets([tool?.approverGroups, ...groupSetsOf(tool?.quorum), ...groupSetsOf(ask)]);
  // The tally shows (and the card says) the whole requirement, the tool's groups with the asks'.
  const quorum = stricter && { ...withoutGroups(stricter), ...groupsField(groupSets) };
  return {
    ...(quorum ? { quorum } : {}),
    groupSets,
    identityRequired: !!tool?.identityRequired || groupSets.length > 0,
  };
}

/** Why a verified approver in `memberOf` may not decide under these group lists; undefined if they may. */
export function groupsProblem(groupSets: readonly string[][], memberOf: readonly string[]): string | undefined {
  const missed = groupSets.filter((set) => !set.some((g) => memberOf.includes(g)));
  if (!missed.length) return undefined;
  return `needs ${describeGroupSets(groupSets)}; missing ${missed.map((s) => s.join(' or ')).join(', and ')}`;
}

/** "release", "release or ops", "release and oncall", "(sre or ops) and dba". */
export function describeGroupSets(groupSets: readonly string[][]): string {
  return groupSets
    .map((s) => (s.length > 1 && groupSets.length > 1 ? `(${s.join(' or ')})` : s.join(' or ')))
    .join(' and ');
}

/** A voter as the approval rules judge it (test/approval-properties.test.ts generates them). */
export interface Voter {
  /** Verified by a worker (a signed identity): `memberOf` is then its token's groups. */
  verified: boolean;
  memberOf: string[];
}

/** Whether this voter's decision may count under the rule (the workflow's refusals, as one predicate). */
export function mayDecide(rule: ApproverRule, voter: Voter): boolean {
  if (rule.identityRequired && !voter.verified) return false;
  return groupsProblem(rule.groupSets, voter.verified ? voter.memberOf : []) === undefined;
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
