// The vocabulary of Sluice, shared by workflow code and worker code. Pure types only.
import type { VerifiedApprover } from './identity';
import type { ApprovalLifecycle } from './lifecycle';
import type { PolicyBinding } from './policy-binding';
import type { QuorumSettings, QuorumTally } from './quorum';

// Declared beside the lines that show it to approvers, so lifecycle.ts can name it without a cycle.
export type { PolicyBinding };

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/**
 * A session grant's argument pin (the rules that check pins are pipeline/grants.ts's). One pin: the value at `path` (dot-separated, e.g. `command` or `options.cwd`) must
 * equal `equals`, or be a string that starts with `prefix` (the prefix alone, or followed by a
 * space). A prefix pin never matches a value with shell separators or substitutions in it
 * (`;`, `&`, `|`, newline, backquote, `$(`, `<`, `>`), so `npm test && rm -rf ~` is not a
 * `npm test` command.
 */
export interface ArgumentPin {
  path: string;
  equals?: Json;
  prefix?: string;
}

/** "Allow for this session", given by a person (pipeline/grants.ts). */
export interface SessionGrant {
  id: string;
  toolName: string;
  pins: ArgumentPin[];
  /** Who granted it (the verified subject when the decision carried an identity). */
  by?: string;
  reason?: string;
  /** The ask it was given on. */
  approvalId: string;
  callId: string;
  workflowId: string;
  grantedAt: string;
}

export type ContentBlock = { type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string };

/** A context message queued by a stage, injected as `user/message` once the batch settles. */
export interface UserMessage {
  role: 'user';
  content: string;
  /** Who queued it: `tool:<name>`, `pre-execute:<handler>`, `post-execute:<handler>`, ... */
  source?: string;
}

/** One tool-call block of an assistant message, exactly as the model sent it. */
export interface ToolCall {
  id: string;
  name: string;
  /** The raw argument string the model sent. */
  arguments: string;
  /**
   * Set by the client (and a session's model step) when the model's arguments were too large to
   * send through Temporal: their length in characters. `arguments` then holds only a preview and
   * the call gets INVALID_ARGS.
   */
  argumentsChars?: number;
}

export interface ToolError {
  message: string;
  code?: string;
}

/** The single model-facing outcome of one call. */
export interface ToolResult {
  content: ContentBlock[];
  isError: boolean;
  error?: ToolError;
  /**
   * The tool's structured value, carried only while `content` is still its rendering: no
   * post-execute handler, finalizeContent or size bound changed what the model reads. Not recorded
   * in tool/result (the content is); in the batch output it is the tool message's `value`.
   */
  value?: Json;
  meta?: JsonObject;
  additionalContexts?: UserMessage[];
  concludesTurn?: true;
}

/**
 * A result on its way through the stages, before normalization. `value` is the body's
 * structured value; content is its rendering unless a stage replaced it.
 */
export interface Candidate {
  content: ContentBlock[];
  value?: Json;
  isError: boolean;
  error?: ToolError;
  meta?: JsonObject;
  concludesTurn?: true;
  /** Set when the body's full candidate was stored aside (stores/claim-check.ts); content is a preview. */
  stashed?: string;
}

/**
 * A pre-execute answer. An ask may name a quorum of approvers (a policy rule's two-person rule);
 * the stricter one holds. `policy` is set by the policy files (hooks/policy.ts): the digest of the
 * sources that judged the call and the rule that decided, which an ask is bound to.
 */
export type PreDecision = (
  | { kind: 'allow' }
  | { kind: 'deny'; reason: string }
  | ({ kind: 'ask'; approvers?: QuorumSettings } & AskTerms)
) & { policy?: PolicyBinding };

/** `allowed-session`: approved for the rest of the session (a session grant, pipeline/grants.ts). */
export type ApprovalOutcome = 'allowed-once' | 'allowed-session' | 'rejected' | 'cancelled' | 'unavailable';

/**
 * What a tool says about asking a person (`ToolDefinition.approval`): `ask` asks before every call;
 * `deny` refuses every call (asked and refused at once, so the record shows it); `auto` runs it
 * unless a pre-execute handler asks or denies. 0.2 called `deny` `'never'`, which OpenAI's
 * `require_approval: "never"` uses for the opposite (never ask), so `defineTool` refuses `'never'`.
 */
export type ToolApproval = 'ask' | 'deny' | 'auto';

/**
 * The policy as a batch records it in a tool's profile: `never` is `deny`'s recorded name, kept so
 * every recorded history replays.
 */
export type ApprovalPolicy = 'ask' | 'never' | 'auto';

export interface Card {
  title: string;
  summary?: string;
  /** Key facts shown on the card, e.g. the arguments. */
  fields?: JsonObject;
}

export interface SessionEvent {
  type: string;
  seq: number;
  time: string;
  data: JsonObject;
}

/** An event a stage asks to record; the workflow gives it its seq and time. */
export interface EventDraft {
  type: string;
  data: JsonObject;
}

/**
 * State that later batches of a session need (fs observations, todos), in namespaces of keyed
 * entries. It travels through workflow input and output, never in worker memory alone.
 */
export type SessionState = { [namespace: string]: { [key: string]: Json } };
/** A patch of session state: a `null` value deletes the key. */
export type StatePatch = { [namespace: string]: { [key: string]: Json | null } };

export interface RetryPolicyInput {
  initialIntervalMs?: number;
  backoffCoefficient?: number;
  maximumIntervalMs?: number;
  maximumAttempts?: number;
  nonRetryableErrorTypes?: string[];
}

/**
 * The client a session belongs to: the public half of a key the client made when the session
 * started (an Ed25519 JWK) and its id. Recorded in the session's input, and handed to each batch
 * in its options: a worker accepts a client tool's result only when this key signed it.
 */
export interface ClientBinding {
  /** The key's id: the first 32 hex digits of the sha-256 of its public `x`. Names the task queue. */
  keyId: string;
  publicKey: { kty: 'OKP'; crv: 'Ed25519'; x: string };
}

export interface BatchOptions {
  /** At most this many concurrency-safe bodies at once. Default 10. */
  maxParallel?: number;
  /** Deny timeout for approvals when the tool sets none. Default 10 minutes. */
  approvalTimeoutMs?: number;
  /** Whether any approval channel (signal, update, terminal, page) listens. Default true. */
  approvalChannel?: boolean;
  /** Assignee, reminder and escalation for this batch's asks (a tool's own settings win). */
  approvalLifecycle?: ApprovalLifecycle;
  /**
   * Who the session acts for (a name or a verified subject): under a quorum (`approvers` on a
   * tool or an ask) this person may not approve the session's calls (the two-person rule).
   */
  sessionUser?: string;
  /**
   * Which of the worker's notifiers (by their `name`) get this batch's approval notices; default
   * all of them. Targets are named, never given here: their URLs and secrets stay in the worker.
   */
  notifiers?: string[];
  /** The session's client (pipeline/client-tools.ts): where client tools run, and whose key signs their results. */
  client?: ClientBinding;
}

/** What became of a call, as far as the record says now. */
export type CallOutcome = 'pending' | 'ok' | 'failed' | 'denied' | 'not-run';

/** One call as the record holds it: the unit session facts are folded from (pipeline/facts.ts). */
export interface CallRecord {
  callId: string;
  tool: string;
  args: JsonObject;
  /** Workflow time the call was recorded, ms since the epoch. */
  at: number;
  turn: number;
  outcome: CallOutcome;
  /** Who let it run or stopped it: a policy rule (its file:line), a person (who), or nobody asked. */
  decider?: { kind: 'policy' | 'person'; who?: string };
}

export interface BatchInput {
  sessionId: string;
  turn: number;
  step: number;
  calls: ToolCall[];
  /** The seq the first event of this batch gets: the previous batch's `nextSeq`, or 0. */
  startSeq?: number;
  state?: SessionState;
  options?: BatchOptions;
  /** A session's batch: the session's earlier calls, for session facts (workflows/session-facts.ts). */
  earlier?: CallRecord[];
  /**
   * `session`: the batch came from a session that carries its calls (`sessionFacts: true`), sent
   * even when it has none yet. Absent: the batch carries only its own calls, and a policy that
   * reads a session fact denies (pipeline/facts.ts beyondReach). A runBatch caller says `session`
   * only when it carries the session's calls itself and hands them all in `earlier` (or it has
   * none yet): the policy then counts what it is given.
   */
  reach?: 'session';
  /**
   * The facts scope the batch's calls are counted in (a person `user:alice`, a team, a harness's
   * session): every batch that names it sees the others' calls, read from the fact store every
   * worker shares (stores/fact-store.ts), and writes its own there.
   */
  factsScope?: string;
}

export type ModelMessage =
  | {
      role: 'tool';
      toolCallId: string;
      toolName: string;
      content: ContentBlock[];
      isError: boolean;
      /** On an error result: its message and code (DENIED, INVALID_ARGS, UNKNOWN_TOOL, a tool's own...). */
      error?: ToolError;
      /** The tool's structured value, when it returned one and nothing rewrote the content (ToolResult.value). */
      value?: Json;
    }
  | { role: 'user'; content: string; source?: string };

/**
 * A batch's outcome as the client, `toolBatchChild` and the CLI hand it over. Each result's content
 * and value are one object shared by its tool message, its `results` entry and its tool/result
 * event (the workflow returns them once: codec/output.ts).
 */
export interface BatchOutput {
  sessionId: string;
  turn: number;
  step: number;
  /** Tool results in model order, then the injected user messages. */
  messages: ModelMessage[];
  results: { callId: string; name: string; result: ToolResult }[];
  events: SessionEvent[];
  nextSeq: number;
  concludesTurn: boolean;
  cancelled: boolean;
  state: SessionState;
}

export type CallStage =
  | 'queued'
  | 'pre-execute'
  | 'awaiting-approval'
  | 'guards'
  | 'waiting-to-dispatch'
  /** A client tool's body, scheduled on the session client's task queue: waiting for the user's device, or running there. */
  | 'on-client'
  | 'executing'
  | 'post-execute'
  | 'done';

/**
 * What the one who asks says of an ask, beside the call itself: why, and the policy it was raised
 * under. A pre-execute answer's ask carries it (PreDecision), the gate (pipeline/stages.ts) and
 * the workflow's ask options pass it whole, and every view of the ask keeps it: the pending
 * approval (the query, the memo, `sluice approvals`), the `approval/asked` event and the approvers'
 * notices (pipeline/ask.ts). A field added here reaches them all (test/unit/ask-views.test.ts);
 * a handler's answer is still checked field by field (pipeline/fold.ts parsePreDecision).
 */
export interface AskTerms {
  reason?: string;
  /**
   * The policy the ask was raised under (policy files, hooks/policy.ts): its digest, the files it is
   * over and the rule that asked. The approval is bound to it: a worker reading other files judges
   * the call again after the decision (`policy/rechecked`). Absent for asks no policy file saw.
   */
  policy?: PolicyBinding;
  /**
   * The session facts the deciding policy read for the call (its `policy/decided` event's facts),
   * so the person who decides sees what the policy saw: `emailsLastHour: 4`.
   */
  facts?: Record<string, number | boolean>;
  /** What a shadow candidate policy would have said of the call (its `policy/shadow` event): never enforced. */
  shadow?: ShadowVerdict;
}

/** A shadow candidate's verdict as the ask carries it (hooks/policy-shadow.ts verdictRecord). */
export interface ShadowVerdict {
  decision: 'allow' | 'ask' | 'deny' | 'none';
  file?: string;
  line?: number;
  rule?: string;
  policyId?: string;
  message?: string;
  facts?: Record<string, number | boolean>;
}

/**
 * The ask: one call waiting for a person, as the batch keeps it and lists it. Declared once; the
 * event, the notice and the memo's copy are views of it (pipeline/ask.ts).
 */
export interface PendingApproval extends AskTerms {
  approvalId: string;
  workflowId: string;
  sessionId: string;
  turn: number;
  step: number;
  callId: string;
  toolName: string;
  card: Card;
  arguments: Json;
  /** sha-256 of the canonical JSON of the arguments shown; a decision may carry it. */
  argsDigest: string;
  askedAt: string;
  expiresAt: string;
  /** Set for Code Mode sub-calls: the run_code call the program belongs to. */
  parentCallId?: string;
  /** Set in the memo's copy when the arguments were too large for it: `arguments` is then a preview string. */
  argumentsTruncated?: true;
  /** Only a verified approver (a signed identity) may decide; in one of `approverGroups` when set. */
  identityRequired?: true;
  approverGroups?: string[];
  /**
   * Set instead of `approverGroups` when several sources name groups (the tool's approverGroups, a
   * quorum's groups, a handler's ask): a verified approver must be in a group of each list.
   */
  approverGroupSets?: string[][];
  /** Who the ask is assigned to now (lifecycle: first assignee, escalation, reassignment). */
  assignee?: string;
  /** A quorum ask: how many distinct approvers it needs, and the votes so far. */
  quorum?: QuorumTally;
  /**
   * `reconcile`: not an approval but an unknown outcome to reconcile (`sluice reconcile`): the
   * body may or may not have run; `reason` says what was lost. It does not expire.
   */
  kind?: 'reconcile';
}

/**
 * The batch's memo entry `sluiceApprovals`: what waits and how recent asks ended, readable with
 * `describe` (or a visibility list) while no worker runs.
 */
export interface ApprovalsMemo {
  v: 1;
  pending: PendingApproval[];
  decided: DecidedApproval[];
  refused: MemoRefusal[];
  /**
   * Only in the memo a batch starts with (EMPTY_APPROVALS_MEMO): the batch writes its memo once
   * for a decision taken by signal, when the ask ends, rather than in the signal handler as well.
   * Read from the start event, so batches started without it replay as they were recorded.
   */
  oneWritePerDecision?: true;
  /** The session grants the batch knows (given before or in it), and which calls they allowed. */
  grants?: SessionGrant[];
  grantUses?: GrantUse[];
  /** One-time approval links this batch took a decision from (newest last): each is refused after. */
  linksUsed?: string[];
}

/** A call that ran on a session grant instead of asking. */
export interface GrantUse {
  callId: string;
  grantId: string;
  toolName: string;
  by?: string;
}

/** A refused decision as the memo keeps it, so a sender waiting for its outcome learns why. */
export interface MemoRefusal {
  approvalId: string;
  code: RefusalCode;
  message: string;
  via: 'signal' | 'update';
  at: string;
  by?: string;
  requestId?: string;
}

export interface BatchState {
  workflowId: string;
  sessionId: string;
  turn: number;
  step: number;
  status: 'running' | 'awaiting-approval' | 'settling' | 'completed';
  cancelRequested: boolean;
  /** The batch's calls, then Code Mode sub-calls (with the run_code call they belong to) as they come. */
  calls: { callId: string; name: string; stage: CallStage; isError?: boolean; parentCallId?: string }[];
  pending: PendingApproval[];
  decided: DecidedApproval[];
  grants?: SessionGrant[];
  grantUses?: GrantUse[];
  nextSeq: number;
}

/** How an ask ended. `expired` marks an `unavailable` that came from the deny timeout. */
export interface DecidedApproval {
  approvalId: string;
  callId: string;
  outcome: ApprovalOutcome;
  by?: string;
  reason?: string;
  decidedAt: string;
  expired?: true;
  /** The requestId of the decision that settled it, when the sender gave one. */
  requestId?: string;
  /** For `allowed-session`: the grant this decision gave, or the id of an earlier one that covered it. */
  grant?: SessionGrant;
  grantId?: string;
  /** Set when the decision carried a signed identity that a worker verified. */
  verified?: VerifiedApprover;
  /** A quorum ask: every approver whose vote counted (and `by` lists them). */
  approvers?: string[];
}

/** A person's (or integration's) decision, sent by signal or update. */
export interface ApprovalDecision {
  approvalId: string;
  decision: 'approve' | 'deny';
  by?: string;
  reason?: string;
  /**
   * The digest of the arguments the person was shown. Required by the update; optional on the
   * signal. Either way, a digest that differs from the pending approval's refuses the decision.
   */
  argsDigest?: string;
  /** Chosen by the sender to find this decision's outcome in the memo (`sluice approve --wait`). */
  requestId?: string;
  /**
   * `session`: approve this call and later ones of the same tool in the session, narrowed by
   * `pins` (each must hold for this call). Ignored on a deny.
   */
  scope?: 'once' | 'session';
  pins?: ArgumentPin[];
  /**
   * The approver's JWT sealed to the workers' key (client/identity.ts): a worker verifies it and
   * records the subject as `by`. Never the token itself: that would put it in history in clear.
   */
  signedIdentity?: string;
  /**
   * Sent by the inbox for a decision made through a one-time approval link whose signature it
   * checked: the batch refuses a link for another approval, one past its expiry, or one it has
   * already taken a decision from, and records the link id with the decision it takes.
   */
  link?: { id: string; approvalId: string; expiresAt: string };
  /**
   * Sent by `sluice gateway --elicitation-decides` for an answer given in an MCP client's form:
   * the name the client gave itself. Unverified: recorded as the client's answer (never under a
   * person's name), refused on a quorum ask and where a verified approver is required.
   */
  mcpClient?: string;
}

/** Why a decision was not taken; the update fails with it and `approval/refused` records it. */
export type RefusalCode =
  | 'unknown'
  | 'decided'
  | 'expired'
  | 'digest-mismatch'
  | 'digest-missing'
  | 'malformed'
  | 'bad-pins'
  | 'unverified'
  | 'wrong-group'
  /** One-time approver tokens (approvers.oneTimeTokens): this token's jti already decided. */
  | 'token-used'
  /** Quorum: this approver (after normalisation, or by verified subject) already voted. */
  | 'same-approver'
  /** Quorum: the session's own user may not approve its calls (two-person rule). */
  | 'self-approval'
  /** Quorum: a vote with no name to tell approvers apart. */
  | 'anonymous'
  /** One-time links: this link already decided; a link for another approval; a link past its expiry; not signed with the key. */
  | 'link-used'
  | 'link-mismatch'
  | 'link-expired'
  | 'link-forged';

export interface DecisionRefusal {
  code: RefusalCode;
  message: string;
  callId?: string;
  /** For `decided` / `expired`: how the ask ended. */
  outcome?: ApprovalOutcome;
  by?: string;
}

/** What the `sluice.decide` update returns once the decision has been applied. */
export interface DecisionApplied {
  approvalId: string;
  /** `pending`: a quorum vote was recorded and the ask still waits for more. */
  outcome: ApprovalOutcome | 'pending';
  by?: string;
  /** A quorum ask: the tally after this vote. */
  quorum?: QuorumTally;
}
