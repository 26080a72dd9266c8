// Listing what waits for a person, from the server alone: visibility finds the batches, each
// batch's memo (or, for a batch older than the memo, its query) holds its cards and digests, and
// an approval id leads to its batch through the search attributes. No worker is needed.
import type { Client } from '@temporalio/client';
import { decodeMapFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import { endedRefusal } from '../../pipeline/approval-rules';
import type { ClientWait } from '../../pipeline/client-tools';
import type { ApprovalsMemo, PendingApproval } from '../../pipeline/types';
import { APPROVALS_MEMO, BATCH_WORKFLOW, CLIENT_WAITS_MEMO, stateQuery } from '../../workflows/definitions';
import { DecisionRefusedError, NotFoundError, SluiceError } from '../../support/errors';

/** How long a read that needs no worker may take before the client says it cannot tell. */
export const SERVER_DEADLINE_MS = 10_000;
/** How many recent batches a decision for an approval no longer waiting looks through for how it ended. */
const DECIDED_SCAN = 2_000;
/** How long a batch's worker has to answer before a decision is queued by signal instead. */
export const DEFAULT_PROBE_MS = 3_000;

/** What waits for a person, and the batches the client could not read (it never guesses "nothing"). */
export interface ApprovalsOverview {
  pending: PendingApproval[];
  unreadable: { workflowId: string; problem: string }[];
}

/** Narrows the approvals listed to one task queue (a team's workers) or one session. */
export interface ApprovalsScope {
  taskQueue?: string;
  sessionId?: string;
}

/** A batch's approvals as the server holds them (`read`). */
export type BatchApprovals = { running: boolean; pending: PendingApproval[]; memo?: ApprovalsMemo };

/**
 * Every approval waiting for a person, from the server alone: visibility finds the batches, and
 * each batch's memo (read with describe, strongly consistent) holds its cards and digests. No
 * worker is needed. Batches started before the memo existed are queried, with a deadline.
 */
export async function overview(temporal: Client, scope: ApprovalsScope = {}): Promise<ApprovalsOverview> {
  const listed: string[] = [];
  // The raw listing, not workflow.list(): that one decodes every batch's memo on the way, so a
  // single memo this client cannot decode (another team's key) failed the whole listing.
  // Each batch's memo is read below, on its own.
  await listRunning(temporal, ['SluiceAwaitingApproval = true'], scope, 'for approval', 'the waiting batches', (e) => {
    if (e.execution?.workflowId) listed.push(e.execution.workflowId);
  });
  const out: ApprovalsOverview = { pending: [], unreadable: [] };
  await Promise.all(
    listed.map(async (workflowId) => {
      try {
        const read = await readBatch(temporal, workflowId);
        if (read.running) out.pending.push(...read.pending);
      } catch (err) {
        const message = (err as Error).message;
        out.unreadable.push({
          workflowId,
          problem: /encoding|decrypt|codec|key id/i.test(message)
            ? `its memo cannot be decoded by this client (${message}): it was written with a payload codec or key this client does not have (SLUICE_CODEC_KEYS), likely by another team's workers on the namespace`
            : message,
        });
      }
    }),
  );
  out.pending.sort((a, b) => a.expiresAt.localeCompare(b.expiresAt));
  return out;
}

/**
 * The calls waiting for the user's device (client tools no client of the session has taken yet),
 * from the server alone: the running batches' memos list them. Nobody decides these; they end when
 * the session's client takes the call, or as CLIENT_UNAVAILABLE at `expiresAt`. A memo this client
 * cannot decode is skipped here: the approvals overview names such batches.
 */
export async function clientWaits(temporal: Client, scope: ApprovalsScope = {}): Promise<ClientWait[]> {
  const waits: ClientWait[] = [];
  const type = [`WorkflowType = '${BATCH_WORKFLOW}'`];
  await listRunning(temporal, type, scope, "for the user's device", 'the running batches', async (e) => {
    const field = e.memo?.fields?.[CLIENT_WAITS_MEMO];
    if (!field) return;
    const memo = await decodeMapFromPayloads(temporal.options.loadedDataConverter, {
      [CLIENT_WAITS_MEMO]: field,
    }).catch(() => undefined);
    waits.push(...((memo?.[CLIENT_WAITS_MEMO] as ClientWait[] | undefined) ?? []));
  });
  return waits.sort((a, b) => a.expiresAt.localeCompare(b.expiresAt));
}

type Execution = NonNullable<
  Awaited<ReturnType<Client['workflowService']['listWorkflowExecutions']>>['executions']
>[number];

/**
 * Every running execution the conditions and scope select, page by page, within the server
 * deadline; a listing that fails says what could not be told (`waitsFor`) and what to check.
 */
async function listRunning(
  temporal: Client,
  conditions: string[],
  scope: ApprovalsScope,
  waitsFor: string,
  what: string,
  each: (e: Execution) => void | Promise<void>,
): Promise<void> {
  const query = [
    ...conditions,
    "ExecutionStatus = 'Running'",
    ...(scope.taskQueue ? [`TaskQueue = ${quote(scope.taskQueue)}`] : []),
    ...(scope.sessionId ? [`SluiceSessionId = ${quote(scope.sessionId)}`] : []),
  ].join(' AND ');
  try {
    await temporal.withDeadline(Date.now() + SERVER_DEADLINE_MS, async () => {
      let nextPageToken: Uint8Array | undefined;
      do {
        const page = await temporal.workflowService.listWorkflowExecutions({
          namespace: temporal.options.namespace,
          query,
          ...(nextPageToken?.length ? { nextPageToken } : {}),
        });
        for (const e of page.executions ?? []) await each(e);
        nextPageToken = page.nextPageToken ?? undefined;
      } while (nextPageToken?.length);
    });
  } catch (err) {
    throw new SluiceError(
      `cannot tell whether any call waits ${waitsFor}: listing ${what} failed (${(err as Error).message}). Check the connection to Temporal (--address, TEMPORAL_ADDRESS).`,
    );
  }
}

/** A visibility query's string literal. */
function quote(v: string): string {
  return `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * A batch's approvals as the server holds them: its memo (no worker needed), or for a batch
 * started before the memo existed, its query (bounded: a worker must answer within the probe).
 */
export async function readBatch(temporal: Client, workflowId: string): Promise<BatchApprovals> {
  const handle = temporal.workflow.getHandle(workflowId);
  const desc = await temporal.withDeadline(Date.now() + SERVER_DEADLINE_MS, () => handle.describe());
  const running = desc.status.name === 'RUNNING';
  const memo = desc.memo?.[APPROVALS_MEMO] as ApprovalsMemo | undefined;
  if (memo && memo.v === 1) return { running, pending: running ? memo.pending : [], memo };
  if (!running) return { running, pending: [] };
  try {
    const state = await temporal.withDeadline(Date.now() + DEFAULT_PROBE_MS, () => handle.query(stateQuery));
    return { running, pending: state.pending };
  } catch (err) {
    throw new SluiceError(
      `this batch predates the approvals memo and no worker answered its query within ${DEFAULT_PROBE_MS / 1000}s (${(err as Error).message}); start a worker to read it`,
    );
  }
}

/** Finds the batch that waits on an approval id, from search attributes alone (no worker needed). */
export async function find(temporal: Client, approvalId: string): Promise<string> {
  // Search attributes reach visibility a moment after the ask: look again briefly before
  // telling a person their id is unknown.
  for (let attempt = 0; attempt < 4; attempt++) {
    if (attempt) await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
    for await (const wf of temporal.workflow.list({
      query: `SluicePendingApprovals = '${approvalId.replace(/'/g, '')}'`,
    })) {
      return wf.workflowId;
    }
  }
  // Not waiting: if a batch's memo records it as decided or expired, that is the answer (a
  // second approve is refused `decided`, as documented), not "unknown id".
  const ended = await findDecided(temporal, approvalId);
  if (ended) throw ended;
  throw new NotFoundError(
    `no batch is waiting on approval ${approvalId}: it may have been decided or expired already. List pending ones with \`npx sluice approvals\`.`,
  );
}

/**
 * The refusal for an approval some batch's memo records as ended (decided or expired), from the
 * newest batches first (at most DECIDED_SCAN of them, running or closed). Memos come from the
 * listing itself, decoded one by one, so a batch this client cannot decode is skipped.
 */
async function findDecided(temporal: Client, approvalId: string): Promise<DecisionRefusedError | undefined> {
  let nextPageToken: Uint8Array | undefined;
  let seen = 0;
  try {
    do {
      const page = await temporal.withDeadline(Date.now() + SERVER_DEADLINE_MS, () =>
        temporal.workflowService.listWorkflowExecutions({
          namespace: temporal.options.namespace,
          query: `WorkflowType = '${BATCH_WORKFLOW}'`,
          pageSize: 200,
          ...(nextPageToken?.length ? { nextPageToken } : {}),
        }),
      );
      for (const e of page.executions ?? []) {
        seen++;
        const fields = e.memo?.fields;
        if (!fields?.[APPROVALS_MEMO]) continue;
        const memo = (
          await decodeMapFromPayloads(temporal.options.loadedDataConverter, fields).catch(() => undefined)
        )?.[APPROVALS_MEMO] as ApprovalsMemo | undefined;
        const done = memo?.decided?.find((d) => d.approvalId === approvalId);
        if (!done || !e.execution?.workflowId) continue;
        return new DecisionRefusedError(endedRefusal(approvalId, done, ` (batch ${e.execution.workflowId})`));
      }
      nextPageToken = page.nextPageToken ?? undefined;
    } while (nextPageToken?.length && seen < DECIDED_SCAN);
  } catch {
    // Visibility unreachable: the caller's NotFoundError still says what to do.
  }
  return undefined;
}
