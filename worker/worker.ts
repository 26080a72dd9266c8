// A Sluice worker: the batch workflow plus the stage activities built from a user's config.
import type { DataConverter } from '@temporalio/common';
import { type NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import * as path from 'node:path';
import { createModelActivities } from '../activities/model-step';
import { createSessionActivities } from '../activities/session';
import { createStageActivities } from '../activities/stages';
import type { SluiceConfig } from './config';
import { FileResultStore } from './claim-check';
import { withHeartbeats } from './liveness';
import { JsonlSessionLog } from './sink';
import { sessionEventSinks } from './workflow-sinks';
import { protectStateDir } from '../tools/fs/protect';

export const DEFAULT_TASK_QUEUE = 'sluice';
export const DEFAULT_STATE_DIR = '.sluice';

export interface SluiceWorkerOptions {
  connection: NativeConnection;
  namespace?: string;
  taskQueue?: string;
  config: SluiceConfig;
  /** The git-ignored folder for session logs (and the embedded server's database). */
  stateDir?: string;
  /** A prebuilt bundle (tests build one per run); otherwise workflows/ is bundled at start. */
  workflowBundle?: WorkflowBundleOption;
  identity?: string;
  /**
   * Worker versioning (docs/upgrading.md): this worker serves one version of a Worker Deployment,
   * and every batch stays pinned to the version that started it, so a batch waiting for a person
   * finishes on the code that can replay it while newer versions run beside it.
   */
  deployment?: WorkerDeployment;
  maxCachedWorkflows?: number;
  maxEagerActivityReservationsPerWorkflowTask?: number;
  /** Payload encryption (worker/codec.ts); the clients of these batches need the same. */
  dataConverter?: DataConverter;
  /**
   * How long a workflow task waits on a dead worker's sticky queue before any worker may take
   * it. Temporal's default is 10 s; a batch resumes after a worker crash that much sooner.
   */
  stickyQueueScheduleToStartTimeoutMs?: number;
}

export interface WorkerDeployment {
  /** The Worker Deployment: one name for all versions of these workers. */
  name: string;
  /** This worker's version within it: a release or commit id, the same on every worker of that code. */
  buildId: string;
}

export const WORKFLOWS_PATH = path.join(__dirname, '..', 'workflows', 'index.ts');

export async function createSluiceWorker(opts: SluiceWorkerOptions): Promise<Worker> {
  const stateDir = opts.stateDir ?? DEFAULT_STATE_DIR;
  // Session logs and stored results of every session: no built-in tool may reach them.
  protectStateDir(stateDir);
  const sink = opts.config.sink ?? new JsonlSessionLog(stateDir);
  const resultStore = new FileResultStore(path.join(stateDir, 'results'));
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace ?? 'default',
    taskQueue: opts.taskQueue ?? DEFAULT_TASK_QUEUE,
    ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    activities: {
      ...withHeartbeats({
        ...createStageActivities(opts.config, { resultStore }),
        ...createModelActivities(opts.config, { resultStore }),
      }),
      ...createSessionActivities(sink),
    },
    sinks: sessionEventSinks(sink),
    ...(opts.identity ? { identity: opts.identity } : {}),
    ...(opts.deployment
      ? {
          workerDeploymentOptions: {
            version: { deploymentName: opts.deployment.name, buildId: opts.deployment.buildId },
            useWorkerVersioning: true,
            defaultVersioningBehavior: 'PINNED' as const,
          },
        }
      : {}),
    ...(opts.dataConverter ? { dataConverter: opts.dataConverter } : {}),
    ...(opts.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: opts.maxCachedWorkflows } : {}),
    ...(opts.maxEagerActivityReservationsPerWorkflowTask !== undefined
      ? { maxEagerActivityReservationsPerWorkflowTask: opts.maxEagerActivityReservationsPerWorkflowTask }
      : {}),
    stickyQueueScheduleToStartTimeout: opts.stickyQueueScheduleToStartTimeoutMs ?? 3_000,
  });
}
