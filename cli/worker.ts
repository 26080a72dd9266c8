// `sluice worker`: a worker against an existing Temporal server.
import { DEFAULT_STATE_DIR } from '../stores/session-log-path';
import { defineCommand } from './command';
import { CONNECTION_FLAGS, CONNECTION_OPTIONS, needsWorker, STORE_FLAGS } from './shared';

export const worker = defineCommand({
  name: 'worker',
  synopsis: 'worker',
  summary: 'A worker against TEMPORAL_ADDRESS (or --address)',
  flags: {
    config: { type: 'string' },
    ...STORE_FLAGS,
    deployment: { type: 'string' },
    'build-id': { type: 'string' },
    ...CONNECTION_FLAGS,
  },
  help: `Usage: npx sluice worker [options]

A worker against an existing Temporal server.

Options:
  --config FILE           Sluice config module (default sluice.config.ts)
  --state-dir DIR         Session logs and stored results (default ${DEFAULT_STATE_DIR}) when no database is set
  --database-url URL      Session events and stored results in PostgreSQL, shared by every worker
                          (default: SLUICE_DATABASE_URL); apply its schema first with \`npx sluice setup\`
  --deployment NAME       Worker versioning (docs/upgrading.md): serve one version of this Worker
                          Deployment; every batch stays pinned to the version that started it
  --build-id ID           This worker's version in the deployment (a release or commit id; the same
                          on every worker running this code). Both also from SLUICE_DEPLOYMENT and
                          SLUICE_BUILD_ID
${CONNECTION_OPTIONS}`,
  async run({ values: v }) {
    const { runWorker } = await needsWorker('worker', () => import('../worker/main'));
    await runWorker({
      config: v.config,
      address: v.address,
      namespace: v.namespace,
      taskQueue: v['task-queue'],
      stateDir: v['state-dir'],
      deployment: v.deployment,
      buildId: v['build-id'],
    });
    return 0;
  },
});
