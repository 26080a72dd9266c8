// Which release recorded this history: every patch id and memo flag of Sluice's workflows, each
// with the release it came in, when it may go, and why it exists. This is the only file that calls
// `patched()` or `deprecatePatch()` (biome.json refuses the import anywhere else); the workflows
// read their features from the frozen objects below, at their first lines, and nothing else knows
// a patch id. Modelled on the Temporal SDK's own registry (sdk-typescript packages/workflow/src/flags.ts).
//
// The replay promise starts at 1.0.0, the first release anyone could install: a history 1.0.0
// recorded replays on this code (test/fixtures/histories/1.0.0), and nothing older is read.
//
// How a patch behaves on replay decides where it may be read (checked in the SDK and in core,
// @temporalio/workflow internals.ts `patchInternal`, core `patch_state_machine.rs` and
// `workflow_machines.rs`):
//   - the answer is found by id: replaying, `patched(id)` is true only once core has seen the
//     marker in the workflow task being replayed or an earlier one (a look-ahead per task); a
//     marker recorded in a later task reads false in an earlier one;
//   - the marker is matched by ORDER: the marker command takes its place in the command stream,
//     and a recorded marker meeting any other command (or another patch's) is a nondeterminism;
//   - a recorded marker that the code asks nothing about fails the replay ("Non-deprecated patch
//     marker encountered ... but there is no corresponding change command"), unless it was
//     recorded deprecated.
// So a patch whose old path no supported history needs is not simply deleted: it is DEPRECATED
// (`deprecatePatch`, the SDK's way): asked at the very place 1.0.0 asked, it meets the marker a
// 1.0.0 history carries, and branches nothing. A new history records the marker as deprecated, and
// the release after the next, once no 1.0.0 worker can be rolled back to, drops the call (core
// skips a deprecated marker nobody asks about).
import { deprecatePatch, patched, workflowInfo } from '@temporalio/workflow';
import type { ApprovalsMemo } from '../pipeline/types';
import { APPROVALS_MEMO } from './definitions';

interface Patch {
  /** The id recorded in the marker (and in the TemporalChangeVersion search attribute). */
  id: string;
  /** The workflow that reads it. */
  workflow: 'toolBatch' | 'agentSession';
  /** The release whose new histories first carried the marker. */
  since: string;
  /**
   * `live`: a branch reads it (`patched`). `deprecated`: every supported history took its new
   * path, so nothing branches on it; it is asked (`deprecatePatch`) only so a 1.0.0 history's
   * marker meets its command.
   */
  state: 'live' | 'deprecated';
  /** When it may go. */
  removeAfter: string;
  /** Where the workflow asks for it: at its first lines, or where 1.0.0 read it. */
  read: 'at-start' | 'at-use';
  why: string;
}

/** When a patch deprecated in the first release after 1.0.0 may go: the SDK's second step. */
const AFTER_DEPRECATION =
  'the release after the one that deprecated it, once no 1.0.0 worker can be rolled back to and no batch or session 1.0.0 started still runs: then the call goes (a deprecated marker nobody asks about is skipped on replay)';

export const PATCHES = {
  batch02: {
    id: 'sluice-batch-0.2',
    workflow: 'toolBatch',
    since: '0.2.0',
    state: 'deprecated',
    removeAfter: AFTER_DEPRECATION,
    read: 'at-start',
    why: 'every 1.0.0 batch carries it, at its first command: it stood for six changes made before 1.0.0 (the session attribute upserted when missing, asks raised together, content once in the output, no await on a result at hand, the seq claim with the first preflight, OUTCOME_UNKNOWN for a lost at-most-once attempt), which every batch since does',
  },
  sessionTemporalCancel: {
    id: 'sluice-session-temporal-cancel',
    workflow: 'agentSession',
    since: '0.2.0',
    state: 'deprecated',
    removeAfter: AFTER_DEPRECATION,
    read: 'at-use',
    why: 'a session cancelled from Temporal cancels its running batch and completes with its reason. A 1.0.0 session whose steps are activities asked for it on a Temporal cancel only (when it happens, and at the end), so it is asked there still',
  },
  sessionIdleContinueAsNew: {
    id: 'sluice-session-idle-continue-as-new',
    workflow: 'agentSession',
    since: '0.1.0',
    state: 'deprecated',
    removeAfter: AFTER_DEPRECATION,
    read: 'at-use',
    why: 'an idle session whose history is full continues-as-new once the update that ended the last turn returned. A 1.0.0 session whose steps are activities asked for it at each idle wait, so it is asked there still',
  },
  sessionLocalModelStep: {
    id: 'sluice-session-local-step',
    workflow: 'agentSession',
    since: '1.0.0',
    state: 'live',
    removeAfter: 'never while sessions may ask for it: it marks the runs whose model steps are local activities',
    read: 'at-start',
    why: "a session started with modelCall.local runs its model step as a local activity (a marker) instead of an activity task and the workflow task its completion needs. Read at the first line of a run, and only when the input asks for it, so a history without the option never meets the marker. A run that carries it asks for no other patch but sessionBatchActivity (beside it, at the same first line), and decides to continue-as-new from the value its last step recorded: the workflow task a local step's result reaches can differ between the recording and a replay, so a patch or the history's length read there could differ too. (A first try, sluice-session-local-model-step, read the history's length beside its local steps and failed to replay; it was never released)",
  },
  sessionBatchActivity: {
    id: 'sluice-session-batch-activity',
    workflow: 'agentSession',
    since: '1.1.0',
    state: 'live',
    removeAfter:
      'every session run started before it has ended (the old path is a child start, which such a run replays)',
    read: 'at-start',
    why: "a session step's batch is started and awaited by an activity of the session (sluiceSessionBatch: eager start on the worker, the output read by a long poll) instead of as a child workflow: four hops through the server fewer a step. Read at the first line of every run, the local-step patch first where asked, so no read follows a local step's result; a run recorded before replays its child starts. A batch still running after the activity's few seconds (on a person, on a device) is waited on by a watch child (sluiceSessionBatchWatch) and the activity runs again once it ends: that path issues commands only after the activity answered that the batch still runs, an answer no run before this patch could get, so it needs no patch of its own (and the batch's end signal is sent only when a watch asked for it: a batch history without the ask issues nothing new). With model steps as activities, the same activity runs first as a local activity in the workflow task that has the model's reply, waiting 1.5 s at most (no trip through the server for a batch that ends within it), and the activity above takes over past that; this came before any release carried the patch, so the unreleased recording it changes (agent-session-batch-activity.json, session-batch-parked.json) was recorded again rather than a patch of its own added. With model steps as activities, the loop then decides to continue-as-new from the history's fullness read before that local activity (SessionControl.fullAtBatch), never after its result, for the reason sessionLocalModelStep gives",
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
    why: 'only a batch started with the empty approvals memo keeps it current (cards, digests, recent outcomes readable with every worker down); a batch started without it (the stock CLI, a parent workflow) runs without the writes',
  },
  oneWritePerDecision: {
    reads: `memo.${APPROVALS_MEMO}.oneWritePerDecision`,
    since: '0.2.0',
    removeAfter: 'every batch started by a client without the flag has ended',
    why: 'a decision taken by signal writes the memo and search attributes once, from the ask it ends, not also in the handler; batches started by a client that does not set it write in the handler too',
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
    why: "a batch returns its output packed (codec/output.ts packBatchOutput, `packed: 4`: events, results and tool messages leave out what the rest of the output says, a tool message its role, a tool/call or tool/result that says only its call id is short, a lone text block is its text, runs of short events are one, contentIn and the false flags are left out), kept only when expandBatchOutput reads it back exactly. Data only: the workflow's result, which a replay does not compare, so a recorded history replays with the same commands (and returns the packed form); readers take the content-once form 1.0.0 returned and the packed one through expandBatchOutput, and the session reads a batch's messages through batchMessages",
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

/**
 * A batch's features, read at its first line, where 1.0.0 read its release patch: the marker a
 * 1.0.0 batch carries first is met here, and the memo flags are read.
 */
export function batchFeatures(): MemoFeatures {
  deprecatePatch(PATCHES.batch02.id);
  return memoFeatures();
}

/** What a session does by the release that recorded its history. */
export interface SessionFeatures {
  /** Read at the first line of a run, only when its input asks for local model steps (PATCHES.sessionLocalModelStep). */
  readonly localModelStep: boolean;
  /** Read at the first line of a run: a step's batch is started by an activity, not as a child (PATCHES.sessionBatchActivity). */
  readonly batchByActivity: boolean;
  /** A Temporal cancel is handled: where a 1.0.0 run asked for PATCHES.sessionTemporalCancel. */
  temporalCancelHandled(): void;
  /** The session waits idle: where a 1.0.0 run asked for PATCHES.sessionIdleContinueAsNew. */
  idleWait(): void;
}

/**
 * A session's features, read at its first line. A run that asks for local model steps reads their
 * patch now; a run that has it asked for no other patch in 1.0.0 and asks only for the batch
 * activity's now, beside it (never after a local step's result). Every run reads the batch
 * activity's patch there: a run recorded before it has no marker and starts child batches. A run
 * whose steps are activities asks for the deprecated patches where 1.0.0 read them, so the
 * markers its history carries meet their commands.
 */
export function sessionFeatures(wantsLocalModelStep: boolean): SessionFeatures {
  if (wantsLocalModelStep && patched(PATCHES.sessionLocalModelStep.id))
    return Object.freeze({
      localModelStep: true,
      batchByActivity: patched(PATCHES.sessionBatchActivity.id),
      temporalCancelHandled() {},
      idleWait() {},
    });
  return Object.freeze({
    localModelStep: false,
    batchByActivity: patched(PATCHES.sessionBatchActivity.id),
    temporalCancelHandled: () => deprecatePatch(PATCHES.sessionTemporalCancel.id),
    idleWait: () => deprecatePatch(PATCHES.sessionIdleContinueAsNew.id),
  });
}

function memoFeatures(): MemoFeatures {
  const memo = workflowInfo().memo?.[APPROVALS_MEMO] as ApprovalsMemo | undefined;
  return Object.freeze({ approvalsMemo: memo !== undefined, oneWritePerDecision: memo?.oneWritePerDecision === true });
}
