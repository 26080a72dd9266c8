// A worker process: `npx sluice worker`, or spawned by tests that kill it with -9.
import { IllegalStateError } from '@temporalio/common';
import { DefaultLogger, makeTelemetryFilterString, Runtime } from '@temporalio/worker';
import { connect } from '../client/connection';
import { ensureSearchAttributes } from '../client/setup';
import { dataConverterFromEnv } from './codec';
import { loadConfig } from './load-config';
import { openStores } from './stores';
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
  try {
    Runtime.install({
      logger: new DefaultLogger(level),
      telemetryOptions: { logging: { forward: {}, filter: makeTelemetryFilterString({ core: level }) } },
    });
  } catch (err) {
    if (!(err instanceof IllegalStateError)) throw err;
  }
}

export async function runWorker(opts: RunWorkerOptions): Promise<void> {
  const log = opts.log ?? ((l: string) => console.log(l));
  installRuntime();
  const deployment = deploymentOf(opts);
  const config = await loadConfig(opts.config);
  const { connection, namespace, address } = await connect({ address: opts.address, namespace: opts.namespace });
  await ensureSearchAttributes(connection, namespace);
  const taskQueue = opts.taskQueue ?? DEFAULT_TASK_QUEUE;
  const stateDir = opts.stateDir ?? DEFAULT_STATE_DIR;
  const stores = openStores({ stateDir, warn: (m) => Runtime.instance().logger.warn(m) });
  await stores.ready();
  const worker = await createSluiceWorker({
    connection,
    namespace,
    taskQueue,
    config,
    stateDir,
    stores,
    dataConverter: dataConverterFromEnv(),
    ...(opts.workflowBundlePath ? { workflowBundle: { codePath: opts.workflowBundlePath } } : {}),
    ...(deployment ? { deployment } : {}),
  });
  log(
    `sluice worker: ${config.tools.length} tool(s) on task queue "${taskQueue}" at ${address} (namespace ${namespace}), pid ${process.pid}, stores: ${stores.kind} (${stores.where})${process.env.SLUICE_CODEC_KEYS ? ', payloads encrypted' : ''}${deployment ? `, deployment ${deployment.name} version ${deployment.buildId}` : ''}`,
  );
  try {
    await worker.run();
  } finally {
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
