// `sluice replay`: runs recorded histories through the current workflow code. A change to the
// workflow that would break running or recorded batches fails here, before it reaches a worker.
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { preloadSluiceWorkflows, WORKFLOWS_PATH } from '../worker/worker';
import { sessionEventSinks } from '../worker/workflow-sinks';
import type { LoadedHistory } from './history';

export interface ReplayOutcome {
  workflowId: string;
  source: string;
  ok: boolean;
  /**
   * nondeterminism: the code no longer produces the recorded commands; unknown-workflow-type: the
   * history is of a workflow the bundle does not have (the user's own, replayed without
   * --workflows); error: replay itself failed.
   */
  failure?: 'nondeterminism' | 'unknown-workflow-type' | 'error';
  message?: string;
  /** Nothing to check: no workflow task of the run has completed yet, so it recorded no command. */
  skipped?: boolean;
}

export interface ReplayOptions {
  /** The workflows entry to bundle; default the installed Sluice's workflows/index.ts. */
  workflowsPath?: string;
  /** A prebuilt bundle instead (tests build one per run). */
  workflowBundlePath?: string;
}

/**
 * The workflow types Sluice's own bundle exports (workflows/index.ts; the replay test checks the
 * two agree). A history of any other type replayed against Sluice's bundle would fail as
 * "non-determinism", which sends the user looking for a change they never made.
 */
export const SLUICE_WORKFLOW_TYPES: readonly string[] = [
  'toolBatch',
  'agentSession',
  'sluiceSessionBatchWatch',
  'reconcileCall',
];

export function historyWorkflowType(h: LoadedHistory): string | undefined {
  return h.history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? undefined;
}

export async function replayHistories(all: LoadedHistory[], opts: ReplayOptions = {}): Promise<ReplayOutcome[]> {
  const out: ReplayOutcome[] = [];
  let histories = all;
  if (!opts.workflowsPath) {
    // Sluice's own bundle: a history of another workflow type cannot replay here; say so up front.
    histories = [];
    for (const h of all) {
      const type = historyWorkflowType(h);
      if (type === undefined || SLUICE_WORKFLOW_TYPES.includes(type)) histories.push(h);
      else
        out.push({
          workflowId: h.workflowId,
          source: h.source,
          ok: false,
          failure: 'unknown-workflow-type',
          message: `workflow type ${type} is not in Sluice's workflow bundle; pass --workflows <file> with your workflows`,
        });
    }
    if (histories.length === 0) return out;
  }
  // A run with no completed workflow task (one just continued-as-new, its first task held back by
  // the server's backoff for runs that continue quickly) recorded no command to compare, and the
  // SDK's replayer waits for its next event forever: it is reported as skipped, not handed over.
  histories = histories.filter((h) => {
    if (hasCompletedTask(h)) return true;
    out.push({
      workflowId: h.workflowId,
      source: h.source,
      ok: true,
      skipped: true,
      message: 'no workflow task completed yet: nothing recorded to replay',
    });
    return false;
  });
  if (histories.length === 0) return out;
  const workflowBundle = opts.workflowBundlePath
    ? { codePath: opts.workflowBundlePath }
    : await bundleWorkflowCode(
        opts.workflowsPath
          ? { workflowsPath: opts.workflowsPath, logger: quietBundler }
          : // As a worker runs them: Sluice's workflow modules shared by the workflows of a thread.
            preloadSluiceWorkflows({ workflowsPath: WORKFLOWS_PATH, logger: quietBundler }),
      );
  // Histories of one batch id from several releases replay in separate rounds: a round reports
  // by workflow id.
  for (const round of distinctRounds(histories)) {
    const sources = new Map(round.map((h) => [h.workflowId, h.source]));
    const results = Worker.runReplayHistories(
      // A replay hands the batch's events to the sink again; here they go nowhere.
      { workflowBundle, replayName: 'sluice-replay', sinks: sessionEventSinks({ append: async () => undefined }) },
      round.map((h) => ({ workflowId: h.workflowId, history: h.history })),
    );
    for await (const r of results) {
      const source = sources.get(r.workflowId) ?? 'server';
      if (!r.error) out.push({ workflowId: r.workflowId, source, ok: true });
      else
        out.push({
          workflowId: r.workflowId,
          source,
          ok: false,
          failure: r.error instanceof DeterminismViolationError ? 'nondeterminism' : 'error',
          message: r.error.message,
        });
    }
  }
  return out;
}

function hasCompletedTask(h: LoadedHistory): boolean {
  return (h.history.events ?? []).some((e) => e.workflowTaskCompletedEventAttributes);
}

function distinctRounds(histories: LoadedHistory[]): LoadedHistory[][] {
  const rounds: LoadedHistory[][] = [];
  for (const h of histories) {
    const round = rounds.find((r) => !r.some((x) => x.workflowId === h.workflowId));
    if (round) round.push(h);
    else rounds.push([h]);
  }
  return rounds;
}

const quietBundler = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error(message: string) {
    console.error(message);
  },
};
