// `sluice replay`: runs recorded histories through the current workflow code. A change to the
// workflow that would break running or recorded batches fails here, before it reaches a worker.
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { WORKFLOWS_PATH } from '../worker/worker';
import { sessionEventSinks } from '../worker/workflow-sinks';
import type { LoadedHistory } from './history';

export interface ReplayOutcome {
  workflowId: string;
  source: string;
  ok: boolean;
  /** nondeterminism: the code no longer produces the recorded commands; error: replay itself failed. */
  failure?: 'nondeterminism' | 'error';
  message?: string;
}

export interface ReplayOptions {
  /** The workflows entry to bundle; default the installed Sluice's workflows/index.ts. */
  workflowsPath?: string;
  /** A prebuilt bundle instead (tests build one per run). */
  workflowBundlePath?: string;
}

export async function replayHistories(histories: LoadedHistory[], opts: ReplayOptions = {}): Promise<ReplayOutcome[]> {
  const workflowBundle = opts.workflowBundlePath
    ? { codePath: opts.workflowBundlePath }
    : await bundleWorkflowCode({ workflowsPath: opts.workflowsPath ?? WORKFLOWS_PATH, logger: quietBundler });
  const out: ReplayOutcome[] = [];
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
