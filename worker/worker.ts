// Sluice inside a Temporal worker: `SluicePlugin` adds the batch workflow, the stage activities and
// the session-event sink to any Worker.create, beside the user's own workflows, activities and
// interceptors; `createSluiceWorker` is a worker that hosts nothing else.
import { markVersionedWorker } from '../temporal/eager-start';
import { ensureSearchAttributes } from '../temporal/setup';
import type { DataConverter } from '@temporalio/common';
import {
  type BundleOptions,
  type BundlerPlugin,
  type NativeConnection,
  type ReplayWorkerOptions,
  Runtime,
  Worker,
  type WorkerOptions,
  type WorkerPlugin,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createAttachActivities } from '../activities/attach-batch';
import { createModelActivities } from '../activities/model-step';
import { createFirstRoundActivities, createSessionActivities } from '../activities/session';
import { createSessionBatchActivities } from './session-batch';
import { createIdentityActivities } from '../activities/identity';
import { createNotifyActivities } from '../activities/notify';
import { createStageActivities } from '../activities/stages';
import { DEFAULT_TASK_QUEUE } from '../workflows/definitions';
import { DEFAULT_RESULT_RETENTION_MS, defineConfig, parseRetention, type SluiceConfig } from '../define/config';
import { HEARTBEAT_THROTTLE, withHeartbeats } from './liveness';
import { openStores, type SluiceStores } from '../stores/stores';
import type { SluiceTelemetry } from './telemetry';
import { sessionEventSinks } from './workflow-sinks';
import { type FactStore, withFactOutcomes } from '../stores/fact-store';
import type { EventSink } from '../stores/sink';
import { protectStateDir } from '../tools/fs/protect';

export { DEFAULT_TASK_QUEUE } from '../workflows/definitions';
import { DEFAULT_STATE_DIR } from '../stores/session-log-path';
export { DEFAULT_STATE_DIR };

/**
 * The batch workflow's module: compiled JavaScript in an installed package, TypeScript in a
 * checkout (Temporal's bundler compiles .ts outside node_modules only).
 */
export const WORKFLOWS_PATH = ((base: string) => (fs.existsSync(`${base}.ts`) ? `${base}.ts` : `${base}.js`))(
  path.join(__dirname, '..', 'workflows', 'index'),
);

export interface SluicePluginOptions {
  config: SluiceConfig;
  /** The git-ignored folder for session logs and stored results (default `.sluice`). */
  stateDir?: string;
  /**
   * Where session events and stored results go. Default: PostgreSQL when SLUICE_DATABASE_URL is
   * set, files in the state folder otherwise. The config's own `sink` and `resultStore` win.
   */
  stores?: SluiceStores;
  /**
   * Traces and metrics (worker/telemetry.ts): Sluice's stage spans and metrics. For Temporal's own
   * workflow and activity spans add `telemetry.temporalPlugin()` to the worker's plugins
   * (createSluiceWorker does).
   */
  telemetry?: SluiceTelemetry;
  /**
   * Register Sluice's search attributes in the worker's namespace before it polls, when missing
   * (default true), as `npx sluice worker` and `npx sluice setup` do. Without them the server
   * refuses every batch's start. Set false where the worker's credentials may not add them and an
   * admin ran `npx sluice setup`.
   */
  registerSearchAttributes?: boolean;
}

/**
 * A Temporal worker plugin: `Worker.create({ ..., plugins: [new SluicePlugin({ config })] })`.
 * Your `workflowsPath` keeps its workflows and gains `toolBatch`; your activities, sinks and
 * interceptors stay. With a prebuilt `workflowBundle`, bundle `sluiceWorkflowsPath(yours)` into it,
 * with `preloadModules: [WORKFLOWS_PATH]` (or this plugin among the bundler's `plugins`).
 */
export class SluicePlugin implements WorkerPlugin, BundlerPlugin {
  readonly name = 'sluice';
  private readonly config: SluiceConfig;
  private readonly stateDir: string;
  private readonly stores: SluiceStores;
  private readonly telemetry?: SluiceTelemetry;
  private readonly registerSearchAttributes: boolean;

  constructor(opts: SluicePluginOptions) {
    this.registerSearchAttributes = opts.registerSearchAttributes !== false;
    this.config = defineConfig(opts.config);
    this.stateDir = opts.stateDir ?? DEFAULT_STATE_DIR;
    // Session logs and stored results of every session: no built-in tool may reach them.
    protectStateDir(this.stateDir);
    this.stores = opts.stores ?? openStores({ stateDir: this.stateDir });
    this.telemetry = opts.telemetry;
  }

  configureWorker(options: WorkerOptions): WorkerOptions {
    if (options.workerDeploymentOptions?.useWorkerVersioning)
      markVersionedWorker(options.namespace ?? 'default', options.taskQueue);
    const t = this.telemetry;
    const store = this.config.resultStore ?? this.stores.results;
    const resultStore = t ? t.countingStore(store) : store;
    const facts = this.stores.facts;
    const sink = factsFed(this.config.sink ?? this.stores.sink, facts);
    const stages = withHeartbeats({
      ...createStageActivities(this.config, { resultStore, ...(facts ? { facts } : {}) }),
      ...createModelActivities(this.config, { resultStore, live: this.stores.live }),
    });
    const stageActivities = t ? t.wrapActivities(stages) : stages;
    const session = createSessionActivities(sink);
    const sluice: Record<string, unknown> = {
      ...stageActivities,
      ...session,
      ...createSessionBatchActivities(),
      ...createFirstRoundActivities(session, stageActivities),
      ...createIdentityActivities(
        this.config.approvers,
        this.stores.claimOnce ? { claimOnce: this.stores.claimOnce } : {},
      ),
      ...createNotifyActivities(this.config.notifiers, this.config.approvalLinks),
      ...createAttachActivities(),
    };
    const mine = (options.activities ?? {}) as Record<string, unknown>;
    const clash = Object.keys(sluice).filter((n) => n in mine);
    if (clash.length)
      throw new Error(
        `SluicePlugin: your activities ${clash.join(', ')} have the names of Sluice's stage activities; rename yours (Sluice's are fixed by the histories they are in)`,
      );
    const sinks = sessionEventSinks(
      sink,
      {},
      t ? (workflowId, sessionId, events) => t.observeEvents(workflowId, sessionId, events) : undefined,
    );
    if (options.sinks && 'sessionEvents' in options.sinks)
      throw new Error('SluicePlugin: your worker already has a sink named sessionEvents; Sluice needs that name');
    return {
      ...withWorkflows(options),
      activities: { ...mine, ...sluice },
      sinks: { ...(options.sinks ?? {}), ...sinks },
      // Stage beats reach the server at their own pace, not one per 80% of the timeout (worker/liveness.ts).
      maxHeartbeatThrottleInterval: options.maxHeartbeatThrottleInterval ?? HEARTBEAT_THROTTLE,
    };
  }

  /**
   * Before the worker polls: Sluice's search attributes, registered where missing (a fresh server or
   * namespace would refuse the first batch's start without them). Then stored results past the
   * retention (config.resultRetention) go at start and every hour the worker runs.
   */
  async runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    if (this.registerSearchAttributes && worker.connection)
      await ensureSearchAttributes(worker.connection, worker.options.namespace).catch((err: Error) =>
        Runtime.instance().logger.warn(
          `sluice: could not check or register Sluice's search attributes (${err.message}); if batches fail to start, run \`npx sluice setup\` with the worker's TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE`,
        ),
      );
    const store = this.config.resultStore ?? this.stores.results;
    const setting = this.config.resultRetention;
    if (setting === false || !store.prune) return next(worker);
    const retention = setting === undefined ? DEFAULT_RESULT_RETENTION_MS : parseRetention(setting);
    const prune = () =>
      store.prune!(new Date(Date.now() - retention)).catch((err: Error) =>
        console.warn(`sluice: stored results older than the retention could not be deleted: ${err.message}`),
      );
    void prune();
    const timer = setInterval(prune, Math.min(retention, 3_600_000));
    timer.unref();
    try {
      return await next(worker);
    } finally {
      clearInterval(timer);
    }
  }

  configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    return withWorkflows(options);
  }

  /** The bundle a worker builds, or `bundleWorkflowCode({ ..., plugins: [plugin] })`: see preloadSluiceWorkflows. */
  configureBundler(options: BundleOptions): BundleOptions {
    return preloadSluiceWorkflows(options);
  }
}

/**
 * Sluice's workflow modules are loaded once per workflow thread and shared by every workflow in
 * it, rather than evaluated again at each workflow's start (Temporal's `preloadModules`, for a
 * worker with the default reusable V8 context). Each batch is a workflow of its own, so that
 * evaluation (about forty modules) was part of every batch's worker CPU and memory. The modules
 * hold no state of their own: constants, definitions and functions (test/preload.test.ts keeps it
 * so). Your workflow modules are still evaluated per workflow.
 */
export function preloadSluiceWorkflows(options: BundleOptions): BundleOptions {
  const preload = options.preloadModules ?? [];
  return preload.includes(WORKFLOWS_PATH) ? options : { ...options, preloadModules: [...preload, WORKFLOWS_PATH] };
}

function withWorkflows<O extends WorkerOptions | ReplayWorkerOptions>(options: O): O {
  if (options.workflowBundle) return options;
  const workflowsPath = options.workflowsPath ? sluiceWorkflowsPath(options.workflowsPath) : WORKFLOWS_PATH;
  if (workflowsPath === options.workflowsPath || workflowsPath === WORKFLOWS_PATH) return { ...options, workflowsPath };
  // The combined module lives outside any package, so the bundler is told where Temporal's
  // workflow library (the one Sluice resolves) lives.
  const temporalModules = path.resolve(require.resolve('@temporalio/workflow/package.json'), '..', '..', '..');
  const hook = options.bundlerOptions?.webpackConfigHook;
  return {
    ...options,
    workflowsPath,
    bundlerOptions: {
      ...options.bundlerOptions,
      webpackConfigHook: (config) => {
        const out = hook ? hook(config) : config;
        out.resolve = { ...out.resolve, modules: [...(out.resolve?.modules ?? ['node_modules']), temporalModules] };
        return out;
      },
    },
  };
}

/**
 * A workflows module exporting your workflows and Sluice's batch workflow together: what
 * SluicePlugin hands the bundler, and what to pass to `bundleWorkflowCode` for a prebuilt bundle.
 * Your module's own exports win no name from Sluice's: a clash is an error at bundle time.
 */
export function sluiceWorkflowsPath(userWorkflowsPath: string): string {
  const user = path.resolve(userWorkflowsPath);
  const code = `// Generated by Sluice: ${path.basename(user)}'s workflows and Sluice's batch workflow.
const user = require(${JSON.stringify(user)});
const sluice = require(${JSON.stringify(WORKFLOWS_PATH)});
for (const name of Object.keys(sluice))
  if (name in user) throw new Error('your workflows export ' + name + ', which is the name of a Sluice workflow: rename yours');
module.exports = Object.assign({}, user, sluice);
`;
  const dir = path.join(os.tmpdir(), 'sluice-workflows');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${createHash('sha256').update(code).digest('hex').slice(0, 16)}.cjs`);
  if (!fs.existsSync(file) || fs.readFileSync(file, 'utf8') !== code) fs.writeFileSync(file, code);
  return file;
}

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
  /**
   * Batches kept in the sticky cache between workflow tasks (default DEFAULT_MAX_CACHED_BATCHES).
   * Past it the least recently used batch leaves memory and replays its history on its next task:
   * batches waiting for a person leave first, so they cost the worker no memory while they wait.
   */
  maxCachedWorkflows?: number;
  maxEagerActivityReservationsPerWorkflowTask?: number;
  /** Payload encryption (codec/payload.ts); the clients of these batches need the same. */
  dataConverter?: DataConverter;
  /**
   * How long a workflow task waits on a dead worker's sticky queue before any worker may take
   * it. Temporal's default is 10 s; a batch resumes after a worker crash that much sooner.
   */
  stickyQueueScheduleToStartTimeoutMs?: number;
  /**
   * Where session events and stored results go. Default: PostgreSQL when SLUICE_DATABASE_URL is
   * set, files in the state folder otherwise. The config's own `sink` and `resultStore` win.
   */
  stores?: SluiceStores;
  /** Traces and metrics; with a span exporter, Temporal's OpenTelemetry interceptors are added too. */
  telemetry?: SluiceTelemetry;
  /** See SluicePluginOptions.registerSearchAttributes (default true). */
  registerSearchAttributes?: boolean;
}

/**
 * The sticky cache of a Sluice worker. Temporal's default sizes it from the heap limit (about 2,300
 * workflows on a 4 GB heap), so thousands of batches waiting for a person each kept their sandbox
 * in memory (about 0.2 MiB each: bench/run.ts, docs/performance.md). A batch is busy for a few
 * workflow tasks; 250 covers that many batches in flight at once per worker, bounds the cache near
 * 50 MiB, and lets the rest leave: an evicted batch replays its tens of events on its next task.
 */
export const DEFAULT_MAX_CACHED_BATCHES = 250;

export interface WorkerDeployment {
  /** The Worker Deployment: one name for all versions of these workers. */
  name: string;
  /** This worker's version within it: a release or commit id, the same on every worker of that code. */
  buildId: string;
}

/** A worker that hosts Sluice alone: Worker.create with SluicePlugin and Sluice's defaults. */
export async function createSluiceWorker(opts: SluiceWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace ?? 'default',
    taskQueue: opts.taskQueue ?? DEFAULT_TASK_QUEUE,
    plugins: [
      new SluicePlugin({
        config: opts.config,
        stateDir: opts.stateDir,
        stores: opts.stores,
        telemetry: opts.telemetry,
        ...(opts.registerSearchAttributes === false ? { registerSearchAttributes: false } : {}),
      }),
      ...(opts.telemetry?.spanProcessor ? [opts.telemetry.temporalPlugin()] : []),
    ],
    ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : {}),
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
    maxCachedWorkflows: opts.maxCachedWorkflows ?? DEFAULT_MAX_CACHED_BATCHES,
    ...(opts.maxEagerActivityReservationsPerWorkflowTask !== undefined
      ? { maxEagerActivityReservationsPerWorkflowTask: opts.maxEagerActivityReservationsPerWorkflowTask }
      : {}),
    stickyQueueScheduleToStartTimeout: opts.stickyQueueScheduleToStartTimeoutMs ?? 3_000,
  });
}

/** The sink with the fact store's outcomes fed from it (stores/fact-store.ts), when there is a fact store. */
function factsFed(sink: EventSink, facts: FactStore | undefined): EventSink {
  return facts ? withFactOutcomes(sink, facts, (m) => Runtime.instance().logger.warn(m)) : sink;
}
