// A worker process: `npx sluice worker`, or spawned by tests that kill it with -9.
import { IllegalStateError } from '@temporalio/common';
import { DefaultLogger, makeTelemetryFilterString, Runtime } from '@temporalio/worker';
import { connect } from '../temporal/connection';
import { ensureSearchAttributes } from '../temporal/setup';
import { dataConverterFromEnv } from '../codec/payload';
import { useCompactHeap, workerHeap } from './heap';
import { loadConfig } from './load-config';
import { openStores } from '../stores/stores';
import { describeCopy } from '../support/copy';
import { startMetricsServer, telemetryFromEnv } from './telemetry';
import { createSluiceWorker, DEFAULT_STATE_DIR, DEFAULT_TASK_QUEUE, type WorkerDeployment } from './worker';

export interface RunWorkerOptions {
  config?: string;
  address?: string;
  namespace?: string;
  taskQueue?: string;
  stateDir?: string;
  workflowBundlePath?: string;
  /** Worker versioning: the Worker Deployment and this worker's build id (docs/upgrading.md). */
  deployment?: string;
  buildId?: string;
  log?: (line: string) => void;
}

let runtimeInstalled = false;

/**
 * Core's runtime can be set up once per process, before its first connection: quiet by default,
 * and Core's own lines forwarded to the SDK logger, which writes to stderr (Core would otherwise
 * print them, coloured, on stdout, ahead of a command's JSON). A process that installed its own
 * runtime first keeps it.
 */
export function installRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const level = process.env.SLUICE_VERBOSE ? 'INFO' : 'WARN';
  const core = coreMetricsPort();
  try {
    Runtime.install({
      logger: new DefaultLogger(level),
      telemetryOptions: {
        logging: { forward: {}, filter: makeTelemetryFilterString({ core: level }) },
        // The runtime's own Prometheus endpoint, on loopback; the worker's /metrics serves it too.
        ...(core ? { metrics: { prometheus: { bindAddress: `127.0.0.1:${core}` } } } : {}),
      },
    });
  } catch (err) {
    if (!(err instanceof IllegalStateError)) throw err;
  }
}

/** SLUICE_METRICS_PORT as a number, or undefined; a bad value is an error a person can fix. */
export function metricsPort(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const v = env.SLUICE_METRICS_PORT?.trim();
  if (!v) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65534)
    throw new Error(`SLUICE_METRICS_PORT must be a port number (1-65534), not ${JSON.stringify(v)}`);
  return n;
}

/** SLUICE_MAX_CACHED_WORKFLOWS as a number (the worker's sticky cache), or undefined for Sluice's default. */
export function maxCachedWorkflows(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const v = env.SLUICE_MAX_CACHED_WORKFLOWS?.trim();
  if (!v) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n === 1)
    throw new Error(
      `SLUICE_MAX_CACHED_WORKFLOWS must be 0 (no sticky cache) or a whole number of at least 2, not ${JSON.stringify(v)}`,
    );
  return n;
}

/** The Temporal runtime's own metrics port: SLUICE_CORE_METRICS_PORT, else the metrics port + 1. */
function coreMetricsPort(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const port = metricsPort(env);
  if (port === undefined) return undefined;
  return env.SLUICE_CORE_METRICS_PORT ? Number(env.SLUICE_CORE_METRICS_PORT) : port + 1;
}

export async function runWorker(opts: RunWorkerOptions): Promise<void> {
  const log = opts.log ?? ((l: string) => console.log(l));
  installRuntime();
  const deployment = deploymentOf(opts);
  const cache = maxCachedWorkflows();
  const heap = workerHeap();
  const config = await loadConfig(opts.config);
  const { connection, namespace, address } = await connect({ address: opts.address, namespace: opts.namespace });
  await ensureSearchAttributes(connection, namespace);
  const taskQueue = opts.taskQueue ?? DEFAULT_TASK_QUEUE;
  const stateDir = opts.stateDir ?? DEFAULT_STATE_DIR;
  const stores = openStores({ stateDir, warn: (m) => Runtime.instance().logger.warn(m) });
  await stores.ready();
  const telemetry = telemetryFromEnv();
  const port = metricsPort();
  const metrics =
    telemetry && port !== undefined
      ? await startMetricsServer(telemetry, {
          port,
          host: process.env.SLUICE_METRICS_HOST ?? '0.0.0.0',
          coreUrl: `http://127.0.0.1:${coreMetricsPort()}/metrics`,
        })
      : undefined;
  telemetry?.setPendingApprovals(async () =>
    Number(
      (
        await connection.workflowService.countWorkflowExecutions({
          namespace,
          // This worker's task queue: on a shared namespace another team's batches are not ours to page on.
          query: `SluiceAwaitingApproval = true AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue.replace(/['\\]/g, '')}'`,
        })
      ).count?.toString() ?? 0,
    ),
  );
  // Before the worker starts its workflow threads: each thread's heap is made with the flag.
  if (heap === 'compact') useCompactHeap();
  const worker = await createSluiceWorker({
    connection,
    namespace,
    taskQueue,
    config,
    stateDir,
    stores,
    ...(telemetry ? { telemetry } : {}),
    dataConverter: dataConverterFromEnv(),
    ...(opts.workflowBundlePath ? { workflowBundle: { codePath: opts.workflowBundlePath } } : {}),
    ...(deployment ? { deployment } : {}),
    ...(cache !== undefined ? { maxCachedWorkflows: cache } : {}),
  });
  log(
    `sluice worker: ${describeCopy()}; ${config.tools.length} tool(s) on task queue "${taskQueue}" at ${address} (namespace ${namespace}), pid ${process.pid}, stores: ${stores.kind} (${stores.where})${process.env.SLUICE_CODEC_KEYS ? ', payloads encrypted' : ''}${deployment ? `, deployment ${deployment.name} version ${deployment.buildId}` : ''}${heap === 'compact' ? ', compact heap' : ''}${metrics ? `, metrics on port ${port}` : ''}${telemetry?.tracer ? ', traces over OTLP' : ''}`,
  );
  try {
    await worker.run();
  } finally {
    await metrics?.close();
    await telemetry?.shutdown();
    await stores.close();
    await connection.close();
  }
}

/** --deployment/--build-id, else SLUICE_DEPLOYMENT/SLUICE_BUILD_ID: both or neither. */
export function deploymentOf(opts: Pick<RunWorkerOptions, 'deployment' | 'buildId'>): WorkerDeployment | undefined {
  const name = opts.deployment ?? process.env.SLUICE_DEPLOYMENT;
  const buildId = opts.buildId ?? process.env.SLUICE_BUILD_ID;
  if (!name && !buildId) return undefined;
  if (!name || !buildId)
    throw new Error(
      `worker versioning needs both a deployment name and a build id (got ${name ? `deployment ${name}` : `build id ${buildId}`} only): pass --deployment NAME --build-id ID, or set SLUICE_DEPLOYMENT and SLUICE_BUILD_ID (docs/upgrading.md)`,
    );
  return { name, buildId };
}

if (require.main === module) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  runWorker({
    config: arg('config'),
    address: arg('address'),
    namespace: arg('namespace'),
    taskQueue: arg('task-queue'),
    stateDir: arg('state-dir'),
    workflowBundlePath: arg('workflow-bundle'),
    deployment: arg('deployment'),
    buildId: arg('build-id'),
  }).catch((err) => {
    console.error(`sluice worker: ${err.message ?? err}`);
    process.exit(1);
  });
}
