// `npx sluice dev` running: the embedded Temporal dev server, a worker and the approval inbox page,
// in the foreground. Loaded only when the command runs (cli/dev.ts): it needs the worker package.
import * as path from 'node:path';
import { SluiceClient } from '../client/client';
import { connect } from '../temporal/connection';
import { startInbox, type Inbox } from '../servers/inbox/server';
import { dataConverterFromEnv } from '../codec/payload';
import { installRuntime, runWorker } from '../worker/main';
import { openStores } from '../stores/stores';
import { startDevServer, portOpen, TRANSFER_QUEUE_FAST } from '../temporal/dev-server';

export interface DevOptions {
  stateDir: string;
  config?: string;
  port?: number;
  uiPort?: number;
  headless?: boolean;
  taskQueue?: string;
  /** Where the approval inbox listens; undefined: no inbox. */
  inbox?: {
    host: string;
    port: number;
    trustedUserHeader?: string;
    trustedProxies?: string[];
    proxySecret?: string;
    insecureProxyWithoutSecret?: boolean;
    allowedHosts?: string[];
  };
}

export async function runDev(opts: DevOptions): Promise<void> {
  const port = opts.port ?? 7233;
  if (await portOpen('127.0.0.1', port)) {
    throw new Error(
      `something already listens on 127.0.0.1:${port}. If it is a Sluice dev server, run just a worker (\`npx sluice worker\`); otherwise choose another port with --port.`,
    );
  }
  const server = await startDevServer({
    stateDir: opts.stateDir,
    port,
    uiPort: opts.uiPort,
    headless: opts.headless,
    log: (l) => console.log(l),
    // A session step crosses the server's transfer queue six times; at the default poll rate
    // each crossing waits up to 50 ms on a quiet machine (docs/performance.md).
    dynamicConfig: TRANSFER_QUEUE_FAST,
  });
  console.log(
    `Temporal dev server: ${server.address} (database ${path.join(opts.stateDir, 'temporal.db')}, CLI ${server.cli})`,
  );
  if (server.uiUrl) console.log(`Temporal Web UI:     ${server.uiUrl}`);
  let inbox: Inbox | undefined;
  let closeInbox = async () => {};
  if (opts.inbox) {
    installRuntime();
    const c = await connect({ address: server.address });
    try {
      inbox = await startInbox({
        client: new SluiceClient({
          connection: c.connection,
          namespace: c.namespace,
          taskQueue: opts.taskQueue,
          dataConverter: dataConverterFromEnv(),
        }),
        store: openStores({ stateDir: opts.stateDir }),
        ...opts.inbox,
      });
      console.log(`Approval inbox:      ${inbox.url}`);
    } catch (err) {
      // The worker matters more than the page: say why there is no page, and go on without it.
      console.log(`Approval inbox:      not started: ${(err as Error).message}`);
    }
    closeInbox = async () => {
      await inbox?.close();
      await c.connection.close();
    };
  }
  console.log(
    `Session logs:        ${path.join(opts.stateDir, 'sessions')}/<session>.jsonl   (Ctrl-C stops everything)`,
  );
  try {
    await runWorker({
      config: opts.config,
      address: server.address,
      taskQueue: opts.taskQueue,
      stateDir: opts.stateDir,
    });
  } finally {
    await closeInbox();
    await server.stop();
  }
}
