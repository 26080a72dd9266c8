// Which release recorded this history: every patch id and memo flag of Sluice's workflows, each
// with the release it came in, when it may go, and why it exists. This is the only file that calls
// `patched()` (biome.json refuses the import anywhere else); the workflows read their features
// from the frozen objects below, at their first lines, and nothing else knows a patch id.
// Modelled on the Temporal SDK's own registry (sdk-typescript packages/workflow/src/flags.ts).
//
// How a patch behaves on replay decides where it may be read (checked in the SDK and in core,
// @temporalio/workflow internals.ts `patchInternal`, core `patch_state_machine.rs` and
// `workflow_machines.rs`):
//   - the answer is found by id: replaying, `patched(id)` is true only once core has seen the
//     marker in the workflow task being replayed or an earlier one (a look-ahead per task); a
//     marker recorded in a later task reads false in an earlier one;
//   - the marker is matched by ORDER: the marker command takes its place in the command stream,
//     and a recorded marker meeting any other command (or another patch's) is a nondeterminism.
// So a patch the old code read at the start of the workflow is read here at the start, in the
// same order; a patch the old code read at the point of use, maybe tasks later, is read there
// still, through a getter of this registry (`read: 'at-use'` below), calling `patched()` on every
// read as the old code did (the SDK itself remembers a true answer).
import { patched, workflowInfo } from '@temporalio/workflow';
import type { ApprovalsMemo } from '../pipeline/types';
import { APPROVALS_MEMO } from './definitions';

interface Patch {
  /** The id recorded in the marker (and in the TemporalChangeVersion search attribute). */
  id: string;
  /** The workflow that reads it. */
  workflow: 'toolBatch' | 'agentSession';
  /** The release whose new histories first carried the marker. */
  since: string;
  /** When the old path may go: no running history can still need it. */
  removeAfter: string;
  /** Where the workflow reads it: at its first lines, or where the old code read it. */
  read: 'at-start' | 'at-use';
  why: string;
}

/**
 * When a patch of 0.2 may go: the last history without the release marker (0.1.x batches, and
 * batches recorded on the way to 0.2) has ended and its fixtures are removed; then
 * `deprecatePatch` for one release (docs/upgrading.md).
 */
const WITH_0_1 = 'every 0.1.x worker retired and the 0.1.0 fixtures removed; then deprecatePatch for one release';
const PRE_0_2 = `${WITH_0_1} (and the 0.2.0 fixtures recorded before sluice-batch-0.2)`;

export const PATCHES = {
  batch02: {
    id: 'sluice-batch-0.2',
    workflow: 'toolBatch',
    since: '0.2.0',
    removeAfter: '0.2.x retired too: it stands for every change below, so it goes last',
    read: 'at-start',
    why: 'every change of release 0.2 in one marker: a new batch records this one (and its TemporalChangeVersion upsert) instead of one per change, six history events fewer; histories recorded on the way to 0.2 replay by the single patches below',
  },
  sessionAttribute: {
    id: 'sluice-session-attribute',
    workflow: 'toolBatch',
    since: '0.2.0 (before sluice-batch-0.2)',
    removeAfter: PRE_0_2,
    read: 'at-start',
    why: 'a batch started without the SluiceSessionId search attribute (a parent workflow, the stock CLI) upserts it, so it is findable by session; read only when the attribute is missing, as before',
  },
  asksTogether: {
    id: 'sluice-asks-together',
    workflow: 'toolBatch',
    since: '0.2.0 (before sluice-batch-0.2)',
    removeAfter: PRE_0_2,
    read: 'at-start',
    why: 'the first ask of a batch raises the asks of the later calls whose pre-execute asks too; batches recorded before ask one at a time',
  },
  contentOnce: {
    id: 'sluice-content-once',
    workflow: 'toolBatch',
    since: '0.2.0 (before sluice-batch-0.2)',
    removeAfter: PRE_0_2,
    read: 'at-start',
    why: 'the output carries each result once, with values and error codes in tool messages (pipeline/output.ts); batches recorded before keep the budget shares they had',
  },
  leanAwaits: {
    id: 'sluice-lean-awaits',
    workflow: 'toolBatch',
    since: '0.2.0 (before sluice-batch-0.2)',
    removeAfter: PRE_0_2,
    read: 'at-start',
    why: 'no await where the value is at hand (the lean stage runner, workflows/placement.ts): fewer awaits change the order in which concurrent calls issue commands, so batches recorded before replay on the legacy runner',
  },
  seqClaim: {
    id: 'sluice-seq-claim',
    workflow: 'toolBatch',
    since: '0.2.0 (before sluice-batch-0.2)',
    removeAfter: PRE_0_2,
    read: 'at-start',
    why: 'a batch claims its session seqs before recording anything (a local activity), and one that claims second fails; batches recorded before never claimed',
  },
  outcomeUnknown: {
    id: 'sluice-outcome-unknown',
    workflow: 'toolBatch',
    since: '0.2.0 (before sluice-batch-0.2)',
    removeAfter: PRE_0_2,
    read: 'at-use',
    why: 'a lost attempt of an at-most-once body ends OUTCOME_UNKNOWN and starts a reconcile workflow. Read where the attempt is lost, tasks after the start: a marker recorded there reads false at the start of its replay (the look-ahead is per task), so an eager read would replay such a batch down the old path',
  },
  sessionTemporalCancel: {
    id: 'sluice-session-temporal-cancel',
    workflow: 'agentSession',
    since: '0.2.0',
    removeAfter: WITH_0_1,
    read: 'at-use',
    why: 'a session cancelled from Temporal cancels its running batch and completes with its reason. Read only on a Temporal cancel (when it happens, and at the end), as before: read at the start, every new session would record a marker, and an old one cancelled late would meet its marker with no command',
  },
  sessionLocalModelStep: {
    id: 'sluice-session-local-step',
    workflow: 'agentSession',
    since: '1.0.0',
    removeAfter: 'never while sessions may ask for it: it marks the runs whose model steps are local activities',
    read: 'at-start',
    why: "a session started with modelCall.local runs its model step as a local activity (a marker) instead of an activity task and the workflow task its completion needs. Read at the first line of a run, and only when the input asks for it, so a history without the option never meets the marker. A run that carries it reads no other patch (it is newer than both, so they are true) and decides to continue-as-new from the value its last step recorded: the workflow task a local step's result reaches can differ between the recording and a replay, so a patch or the history's length read there could differ too. (A first try, sluice-session-local-model-step, read the history's length beside its local steps and failed to replay; it was never released)",
  },
  sessionIdleContinueAsNew: {
    id: 'sluice-session-idle-continue-as-new',
    workflow: 'agentSession',
    since: '0.1.0',
    removeAfter: 'every 0.1.0 session that started before this patch has ended; then deprecatePatch for one release',
    read: 'at-use',
    why: 'an idle session whose history is full continues-as-new once the update that ended the last turn returned. Read at each idle wait, as before: a run continued mid-turn reaches its first wait tasks after its start, where its marker was recorded',
  },
} as const satisfies Record<string, Patch>;

interface MemoFlag {
  /** Where in the batch's start memo (APPROVALS_MEMO) the flag is read. */
  reads: string;
  since: string;
  removeAfter: string;
  why: string;
}

/**
 * Flags read from the memo the batch was started with: a third mechanism beside patches, for
 * changes whose first command can come in the activation that replays a local activity's result,
 * before the marker's workflow task, where a `patched()` marker is not safe.
 */
export const MEMO_FLAGS = {
  approvalsMemo: {
    reads: `memo.${APPROVALS_MEMO} present`,
    since: '0.1.0',
    removeAfter: 'never while a client may start batches without the empty memo (the stock CLI, a parent workflow)',
    why: 'only a batch started with the empty approvals memo keeps it current (cards, digests, recent outcomes readable with every worker down); batches recorded before the memo existed replay without the writes',
  },
  oneWritePerDecision: {
    reads: `memo.${APPROVALS_MEMO}.oneWritePerDecision`,
    since: '0.2.0',
    removeAfter: 'every batch started by a client without the flag has ended',
    why: 'a decision taken by signal writes the memo and search attributes once, from the ask it ends, not also in the handler; batches recorded with the write in the handler replay unchanged',
  },
} as const satisfies Record<string, MemoFlag>;

interface UnmarkedChange {
  since: string;
  /** Why no patch marker: replay compares what it would break, and this changes none of it. */
  why: string;
}

/**
 * Changes of what a new history carries that need no marker: they add data to a command the old
 * code issued at the same point (core compares a scheduled activity's type and id on replay, not
 * its input), taken from a result recorded in the history itself, so an old history replays with
 * the old data. Listed here so every change of workflow behaviour is in one file.
 */
export const UNMARKED_CHANGES = {
  approverGroupsTogether: {
    since: '1.0.0',
    why: "who may decide an ask is every source's groups together (pipeline/quorum.ts approverRule): the tool's approverGroups, its quorum's groups and each handler's ask's groups must each hold, where a quorum's groups used to replace approverGroups and two asks' groups were joined as one any-of list. It changes only which verified votes are refused (the check runs on the recorded verifyApprover result), and only for an ask whose groups come from two sources, which no recorded history has: those replay unchanged (`sluice replay test/fixtures/histories`). A batch waiting across the upgrade on such an ask, with a vote taken under the old rule that the new one refuses, would not replay: let those asks end (or deny them) before upgrading. Decisions relayed from an MCP client's form (ApprovalDecision.mcpClient) are new data, refused on quorum and verified-only asks; no recorded decision carries one",
  },
  pendingApprovalPolicy: {
    since: '1.0.0',
    why: "a pending approval carries the policy it was raised under (PendingApproval.policy) in the memo, the query, its approval/asked event and its notices. Data only: the same commands in the same order (memo and activity payloads are not compared on replay), so no marker. It was briefly behind a patch (sluice-approval-policy, never released) read where a bound ask starts, after the preflight's local activity; a marker whose presence follows a local activity's result replayed in an earlier workflow task on a loaded worker than it was recorded in, read false there and failed the task (a batch moved to another Worker Deployment version in a clean-clone run)",
  },
  approvalQuorum: {
    since: '1.0.0',
    why: "an ask with a quorum (approvers on a tool or a pre-execute ask) counts distinct votes, refuses the session user and repeat approvers, and ends at the quorum or the first (or majority) rejection. The quorum comes from results recorded in the history (the preflight's profile, a hook's ask), and no release before 1.0.0 recorded one, so an older history replays with one decision per ask. It was briefly behind a patch (sluice-approval-quorum, never released) read where a quorum ask starts, after the preflight's local activity: the same hazard as the policy's patch (a marker whose presence follows a local activity's result can replay in an earlier workflow task than it was recorded in)",
  },
  policyBinding: {
    since: '1.0.0',
    why: 'the guards after a decision get the policy the ask was bound to (CallRef.askedUnder), taken from the recorded preflight result (Gate.policy); a preflight recorded before has no binding, so its guards input is unchanged, and a worker of any release may run them',
  },
  sessionBatchAttribute: {
    since: '1.0.0',
    why: "a session starts its batch with SluiceSessionId set (as SluiceClient.startBatch does), so a new batch skips the upsert it made when the attribute was missing (one event fewer a step). The session's command is the same child start (core matches a child's workflow id and type on replay, not its search attributes); whether a batch upserts comes from its own recorded start event, so a batch started without the attribute still upserts on replay",
  },
  packedOutput: {
    since: '1.0.0',
    why: "a batch returns its output packed (pipeline/output.ts packBatchOutput: events, results and tool messages leave out what the rest of the output says; packed 3 also a tool message's role, and writes a tool/call or tool/result that says only its call id short; packed 4 also writes a lone text block as its text, runs of short events as one, and leaves out contentIn and the false flags), kept only when expandBatchOutput reads it back exactly. Data only: the workflow's result, which a replay does not compare, so a recorded history replays with the same commands (and returns the packed form); readers take every form a release recorded through expandBatchOutput, and the session reads a batch's messages through batchMessages",
  },
  bodyRefFromWorkflowId: {
    since: '1.0.0',
    why: "a body's input leaves out the session id, turn and step its workflow id names (pipeline/stages.ts packCallRef); the worker reads them from the id. Data in the same ScheduleActivityTask command (core compares an activity's type and id on replay, not its input); a body scheduled before carries them and runs as it did. A worker of an earlier build cannot run the new input, so a batch's bodies need its own build's workers (worker versioning pins them)",
  },
  digestWhereBound: {
    since: '1.0.0',
    why: "the preflight returns the keyed argsDigest only for a call the workflow binds to it (an ask, an at-most-once body), and a stage's input carries it only then (pipeline/stages.ts WireCallRef); every other stage keys the arguments with its own worker's key. Data only: the preflight's local-activity marker, which a replay reads but does not compare, and the inputs of the same commands; a preflight recorded before returned the digest for every call, which the workflow then sends on as it did. A worker of an earlier build reads a body or settle input without the digest as a call without one, so a batch's stages need its own build's workers (worker versioning pins them)",
  },
  shortStageResults: {
    since: '1.0.0',
    why: "a preflight result that says no more than its call id is written as that id and a reply that is not deferred leaves `deferred` out, and its plan the stages that run locally (pipeline/stages.ts packPreflightReply, unpackPlan: a plan recorded before names all three), a body's result that is a plainly rendered value and nothing else as `{ value }`, a string value as itself (packBodyResult), and a body's input carries its inline share only when it is under BODY_INLINE_BYTES (pipeline/budget.ts), the worker's bound for every body result. Data only: the preflight's local-activity marker and the body activity's result, which a replay reads but does not compare; the unpacking reads the forms recorded before as they were. A workflow of an earlier build cannot read the short forms, so a batch's stages need its own build's workers (worker versioning pins them)",
  },
  oneCallStraight: {
    since: '1.0.0',
    why: "a batch of one call runs it straight through (admit, body, settle; workflows/batch.ts runOneCall) instead of through the model-order scheduler's two loops: about a fifth fewer workflow promises (98 → 76), each with a stack trace from the SDK's hook. The same stages in the same order issue the same commands, but fewer awaits could let a Code Mode sub-call's command come out before or after the settle's in another order than it was recorded, so the choice is read from data the history holds: the first round's local-activity result says `straight` (pipeline/seq-claim.ts FirstRound), which workers of this build write for a batch of one call (the first build to write it did so for a first group of one call whatever the batch's size, so the workflow also checks that the batch has one call). A round recorded before has none, and its batch replays on the scheduler. A worker of an earlier build writes none, so its batches keep the scheduler",
  },
  guardsInBody: {
    since: '1.0.0',
    why: "after a person's yes, the guards run first in the activity that runs the body (guardThenExecuteBody, activities/execute.ts), right before it and again before each retry, instead of as a stage of their own (the runGuards local activity) between the decision and the body: one worker round trip and one marker less a decided call. The choice is read from data the history holds: the preflight's ask says `guardsInBody` (pipeline/stages.ts Gate), which workers of this build write; an ask recorded before has none, and its call replays with the guards' own stage. A local body keeps that stage too. A worker of an earlier build has no guardThenExecuteBody: such a body's attempts fail there (retried by the tool's policy) rather than run without the guards, and worker versioning pins a batch's bodies to its own build's workers",
  },
} as const satisfies Record<string, UnmarkedChange>;

/** What the approvals of a batch do, from the memo it was started with (MEMO_FLAGS). */
export interface MemoFeatures {
  readonly approvalsMemo: boolean;
  readonly oneWritePerDecision: boolean;
}

/** What a batch does, by the release that recorded its history. */
export interface BatchFeatures extends MemoFeatures {
  readonly release02: boolean;
  /** Upsert SluiceSessionId: it is missing, and the batch is of a release that does. */
  readonly upsertSessionId: boolean;
  readonly asksTogether: boolean;
  readonly contentOnce: boolean;
  readonly leanAwaits: boolean;
  /** How the batch claims its session seqs: with the first preflight (0.2), alone, or not at all. */
  readonly seqClaim: 'with-first-preflight' | 'alone' | 'none';
  /** Read at use: when an at-most-once body's attempt is lost (PATCHES.outcomeUnknown). */
  readonly outcomeUnknown: boolean;
}

/**
 * A batch's features, read at its first line. The release patch is read now: for a batch that
 * carries it (every new batch) every feature is a constant and nothing else is read. A history
 * recorded before it (only a replay meets one) reads each feature's own patch the first time the
 * batch uses it, once: the old code read them one by one in its first activation with commands
 * in between (the session attribute's upsert; the memo write of a decision signal that came with
 * the start, run when the approvals set their handlers), and markers are matched in order. So
 * toolBatch uses them in the old order: upsertSessionId, asksTogether, (the approvals' handlers),
 * contentOnce, leanAwaits, seqClaim; outcomeUnknown when an attempt is lost.
 */
export function batchFeatures(sessionIdMissing: boolean): BatchFeatures {
  const memo = memoFeatures();
  if (patched(PATCHES.batch02.id))
    return Object.freeze({
      ...memo,
      release02: true,
      upsertSessionId: sessionIdMissing,
      asksTogether: true,
      contentOnce: true,
      leanAwaits: true,
      seqClaim: 'with-first-preflight' as const,
      outcomeUnknown: true,
    });
  const once = <T>(read: () => T) => {
    let value: { v: T } | undefined;
    return () => (value ??= { v: read() }).v;
  };
  const upsertSessionId = once(() => sessionIdMissing && patched(PATCHES.sessionAttribute.id));
  const asksTogether = once(() => patched(PATCHES.asksTogether.id));
  const contentOnce = once(() => patched(PATCHES.contentOnce.id));
  const leanAwaits = once(() => patched(PATCHES.leanAwaits.id));
  const seqClaim = once(() => (patched(PATCHES.seqClaim.id) ? ('alone' as const) : ('none' as const)));
  return Object.freeze({
    ...memo,
    release02: false,
    get upsertSessionId() {
      return upsertSessionId();
    },
    get asksTogether() {
      return asksTogether();
    },
    get contentOnce() {
      return contentOnce();
    },
    get leanAwaits() {
      return leanAwaits();
    },
    get seqClaim() {
      return seqClaim();
    },
    // Not remembered: the old code asked at every lost attempt.
    get outcomeUnknown() {
      return patched(PATCHES.outcomeUnknown.id);
    },
  });
}

/** What a session does, by the release that recorded its history: every patch read at use. */
export interface SessionFeatures {
  /** Read on a Temporal cancel only (PATCHES.sessionTemporalCancel). */
  readonly temporalCancel: boolean;
  /** Read at each idle wait (PATCHES.sessionIdleContinueAsNew). */
  readonly idleContinueAsNew: boolean;
  /** Read at the first line of a run, only when its input asks for local model steps (PATCHES.sessionLocalModelStep). */
  readonly localModelStep: boolean;
}

/**
 * A session's features, read at its first line. A run that asks for local model steps reads their
 * patch now; a run that has it is of this release, so the other two are constants there, and it
 * reads no patch later (a read next to a local step's result is not safe, docs/upgrading.md).
 */
export function sessionFeatures(wantsLocalModelStep: boolean): SessionFeatures {
  if (wantsLocalModelStep && patched(PATCHES.sessionLocalModelStep.id))
    return Object.freeze({ temporalCancel: true, idleContinueAsNew: true, localModelStep: true });
  return Object.freeze({
    get temporalCancel() {
      return patched(PATCHES.sessionTemporalCancel.id);
    },
    get idleContinueAsNew() {
      return patched(PATCHES.sessionIdleContinueAsNew.id);
    },
    localModelStep: false,
  });
}

function memoFeatures(): MemoFeatures {
  const memo = workflowInfo().memo?.[APPROVALS_MEMO] as ApprovalsMemo | undefined;
  return Object.freeze({ approvalsMemo: memo !== undefined, oneWritePerDecision: memo?.oneWritePerDecision === true });
}
