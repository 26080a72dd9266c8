// `sluice ui`: the approval inbox page for a server, in the foreground.
import { startInbox } from '../servers/inbox/server';
import { DEFAULT_STATE_DIR } from '../stores/session-log-path';
import { openStores } from '../stores/stores';
import { untilStopSignal } from '../support/stop-signal';
import { defineCommand } from './command';
import { INBOX_FLAGS, INBOX_OPTIONS, inboxSettings } from './inbox-options';
import { client, CONNECTION_FLAGS, CONNECTION_OPTIONS, STORE_FLAGS, STORE_OPTIONS } from './shared';

export const ui = defineCommand({
  name: 'ui',
  synopsis: 'ui',
  summary: 'Serve the approval inbox web page for the server at --address',
  flags: { ...INBOX_FLAGS, ...STORE_FLAGS, ...CONNECTION_FLAGS },
  help: `Usage: npx sluice ui [options]

Serves the approval inbox page for the server at --address, in the foreground. It answers only
to its own address (and --inbox-allowed-host names): a request under any other Host is refused
(421), so a web page cannot reach it by DNS rebinding.

Options:
  --task-queue NAME       Only the batches of this task queue (one team's, on a shared namespace)
${INBOX_OPTIONS}
${STORE_OPTIONS}
${CONNECTION_OPTIONS}`,
  async run({ values: v, out }) {
    const settings = inboxSettings(v);
    const { sluice, close } = await client(v);
    const stores = openStores({ stateDir: v['state-dir'] ?? DEFAULT_STATE_DIR });
    const inbox = await startInbox({
      client: sluice,
      ...settings,
      store: stores,
      // `sluice ui --task-queue Q`: one team's batches only on a shared namespace.
      ...(v['task-queue'] ? { taskQueue: v['task-queue'] } : {}),
    });
    out(`Approval inbox: ${inbox.url}   (Ctrl-C stops it)`);
    if (!['127.0.0.1', 'localhost', '::1'].includes(settings.host) && !settings.trustedUserHeader) {
      out(
        `warning: the inbox listens on ${settings.host} and anyone who reaches it can approve calls under any name; put it behind a proxy that authenticates and pass --trusted-user-header`,
      );
    }
    await untilStopSignal();
    await inbox.close();
    await stores.close();
    await close();
    return 0;
  },
});
