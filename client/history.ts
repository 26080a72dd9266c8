// Workflow histories for auditors: read from the server (a batch id, or every batch of a
// session) or from an exported JSON file, in the same JSON as `temporal workflow show -o json`.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { BatchInput } from '../pipeline/types';
import { HistoryNotFound } from '../support/errors';
import { historyFromJson, historyToJsonText } from './history-json';
import { RECONCILE_WORKFLOW, type ReconcileInput, reconcileWorkflowId } from '../pipeline/reconcile';
import { batchWorkflowId } from '../workflows/definitions';
import { SESSION_WORKFLOW, sessionWorkflowId } from '../workflows/session-definitions';

type History = temporal.api.history.v1.IHistory;

export interface LoadedHistory {
  workflowId: string;
  history: History;
  /** Where it came from: `server` or the file's path. */
  source: string;
}

export { HistoryNotFound } from '../support/errors';

/**
 * A history file, a folder of them (every .json below it, e.g. test/fixtures/histories/ with one
 * folder per release), a batch's workflow id, or a session id (every batch of it, oldest first).
 */
export async function loadHistories(target: string, client?: Client): Promise<LoadedHistory[]> {
  if (looksLikeFile(target)) return [readHistoryFile(target)];
  if (fs.existsSync(target) && fs.statSync(target).isDirectory()) {
    const files = (fs.readdirSync(target, { recursive: true }) as string[])
      .filter((f) => f.endsWith('.json'))
      .sort()
      .map((f) => path.join(target, f));
    if (files.length === 0) throw new HistoryNotFound(`${target} holds no history .json files`);
    return files.map(readHistoryFile);
  }
  if (!client) throw new HistoryNotFound(`${target} is not a history file, and no server is connected to look it up`);
  try {
    const d = await client.workflow.getHandle(target).describe();
    const own = {
      workflowId: target,
      history: await client.workflow.getHandle(target).fetchHistory(),
      source: 'server',
    };
    return [own, ...(await reconcileHistories(client, target, d.searchAttributes?.SluiceSessionId?.[0]))];
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  const runs: { workflowId: string; runId: string; start: number }[] = [];
  for await (const wf of client.workflow.list({ query: `SluiceSessionId = '${target.replace(/'/g, '')}'` })) {
    runs.push({ workflowId: wf.workflowId, runId: wf.runId, start: wf.startTime.getTime() });
  }
  if (runs.length === 0) {
    throw new HistoryNotFound(
      `no workflow ${target} and no batch of a session ${target} on this server (namespace and address right? \`npx sluice approvals\` lists running batches)`,
    );
  }
  runs.sort((a, b) => a.start - b.start);
  return Promise.all(
    runs.map(async (r) => ({
      workflowId: r.workflowId,
      history: await client.workflow.getHandle(r.workflowId, r.runId).fetchHistory(),
      source: 'server',
    })),
  );
}

/** The reconcile workflows of a batch's unknown outcomes (pipeline/reconcile.ts), so its audit shows them. */
async function reconcileHistories(client: Client, batchId: string, sessionId: unknown): Promise<LoadedHistory[]> {
  if (typeof sessionId !== 'string' || !batchId.startsWith('sluice-batch:')) return [];
  const prefix = reconcileWorkflowId(batchId, '');
  const out: LoadedHistory[] = [];
  for await (const wf of client.workflow.list({
    query: `WorkflowType = '${RECONCILE_WORKFLOW}' AND SluiceSessionId = '${sessionId.replace(/'/g, '')}'`,
  }))
    if (wf.workflowId.startsWith(prefix))
      out.push({
        workflowId: wf.workflowId,
        history: await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory(),
        source: 'server',
      });
  return out;
}

function looksLikeFile(target: string): boolean {
  return target.endsWith('.json') || (fs.existsSync(target) && fs.statSync(target).isFile());
}

export function readHistoryFile(file: string): LoadedHistory {
  let data: unknown;
  try {
    data = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new HistoryNotFound(`cannot read ${file}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`);
  }
  let history: History;
  try {
    history = historyFromJson(data);
  } catch (err) {
    throw new HistoryNotFound(
      `${file} is not a workflow history (${(err as Error).message}); export one with \`npx sluice export <workflowId>\` or \`temporal workflow show -w <id> -o json\``,
    );
  }
  return { workflowId: workflowIdOf(history) ?? file, history, source: file };
}

/** The same JSON shape the Temporal CLI and UI export. */
export function historyToJson(history: History): string {
  return `${historyToJsonText(history)}\n`;
}

/**
 * A batch's, session's or reconcile card's id follows from its input; histories themselves do not
 * carry the workflow id.
 */
function workflowIdOf(history: History): string | undefined {
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  const input = decode(started?.input) as Partial<BatchInput> | undefined;
  if (started?.workflowType?.name === SESSION_WORKFLOW)
    return typeof input?.sessionId === 'string' ? sessionWorkflowId(input.sessionId) : undefined;
  // A reconcile card's input names its batch and call too: it is not that batch.
  if (started?.workflowType?.name === RECONCILE_WORKFLOW) {
    const card = input as Partial<ReconcileInput> | undefined;
    return typeof card?.batchWorkflowId === 'string' && typeof card.callId === 'string'
      ? reconcileWorkflowId(card.batchWorkflowId, card.callId)
      : undefined;
  }
  if (!input || typeof input.sessionId !== 'string' || typeof input.turn !== 'number' || typeof input.step !== 'number')
    return undefined;
  return batchWorkflowId(input.sessionId, input.turn, input.step);
}

/** The i-th payload of a payloads field, decoded with the default JSON converter. */
export function decode(payloads: temporal.api.common.v1.IPayloads | null | undefined, i = 0): unknown {
  const p = payloads?.payloads?.[i];
  if (!p) return undefined;
  try {
    return defaultPayloadConverter.fromPayload(p);
  } catch {
    return undefined;
  }
}
