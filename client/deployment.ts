// Worker Deployments (docs/upgrading.md): which version new batches start on, which versions still
// run batches, and which version a batch is pinned to. The same operations as the Temporal CLI's
// `temporal worker deployment ...`, for scripts and tests.
import { ServerError } from '../support/errors';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

const enums = temporal.api.enums.v1;

export interface DeploymentVersionSummary {
  buildId: string;
  /** Current: new batches start here. Draining: not current, batches pinned to it still run. Drained: none do. */
  status: string;
  drainage?: string;
}

export interface DeploymentStatus {
  name: string;
  current?: string;
  ramping?: string;
  versions: DeploymentVersionSummary[];
}

/**
 * Makes `buildId` the version new batches of the deployment start on. Its workers must have polled
 * once (the server learns a version from its pollers), so this retries for up to `waitMs`.
 */
export async function setCurrentVersion(
  client: Client,
  deploymentName: string,
  buildId: string,
  opts: { waitMs?: number; identity?: string } = {},
): Promise<void> {
  const deadline = Date.now() + (opts.waitMs ?? 30_000);
  for (;;) {
    try {
      await client.workflowService.setWorkerDeploymentCurrentVersion({
        namespace: client.options.namespace,
        deploymentName,
        buildId,
        identity: opts.identity ?? 'sluice',
      });
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new ServerError(
          `cannot make ${buildId} the current version of deployment ${deploymentName}: ${(err as Error).message}. Is a worker of that version running (\`npx sluice worker --deployment ${deploymentName} --build-id ${buildId}\`)?`,
        );
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

export async function deploymentStatus(client: Client, deploymentName: string): Promise<DeploymentStatus> {
  const r = await client.workflowService.describeWorkerDeployment({
    namespace: client.options.namespace,
    deploymentName,
  });
  const info = r.workerDeploymentInfo;
  const routing = info?.routingConfig;
  return {
    name: deploymentName,
    ...(routing?.currentDeploymentVersion?.buildId ? { current: routing.currentDeploymentVersion.buildId } : {}),
    ...(routing?.rampingDeploymentVersion?.buildId ? { ramping: routing.rampingDeploymentVersion.buildId } : {}),
    versions: (info?.versionSummaries ?? []).map((v) => ({
      buildId: v.deploymentVersion?.buildId ?? v.version ?? '?',
      status: enumName(enums.WorkerDeploymentVersionStatus, v.status, 'WORKER_DEPLOYMENT_VERSION_STATUS_'),
      ...(v.drainageInfo?.status
        ? { drainage: enumName(enums.VersionDrainageStatus, v.drainageInfo.status, 'VERSION_DRAINAGE_STATUS_') }
        : {}),
    })),
  };
}

/** The version a batch is pinned to (or last ran on), from the server's description of it. */
export async function batchVersion(
  client: Client,
  workflowId: string,
): Promise<{ buildId?: string; behavior: string } | undefined> {
  const d = await client.workflow.getHandle(workflowId).describe();
  const info = d.raw.workflowExecutionInfo?.versioningInfo;
  if (!info) return undefined;
  return {
    ...(info.deploymentVersion?.buildId ? { buildId: info.deploymentVersion.buildId } : {}),
    behavior: enumName(enums.VersioningBehavior, info.behavior, 'VERSIONING_BEHAVIOR_'),
  };
}

/** Enums arrive as numbers or names depending on the path; either way, `pinned`, `draining`, ... */
function enumName(values: Record<string | number, string | number>, value: unknown, prefix: string): string {
  const name = typeof value === 'number' ? String(values[value] ?? value) : String(value ?? 'UNSPECIFIED');
  return name.replace(prefix, '').toLowerCase();
}
