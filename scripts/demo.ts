// `npm start`: the embedded server, a worker, and a durable agent session (workflows/session.ts)
// with a scripted model (scripts/demo-session.json: no key, no network) that exercises allow,
// deny, ask, a flaky tool that succeeds on retry, a post-execute rewrite and an injected context.
import * as os from 'node:os';
import * as path from 'node:path';
import { Runtime, DefaultLogger } from '@temporalio/worker';
import { SluiceClient } from '../client/client';
import { connect } from '../temporal/connection';
import { DEFAULT_INBOX_PORT, startInbox, type Inbox } from '../servers/inbox/server';
import { LineInput, runChat, scriptMessages } from '../client/chat';
import { ensureSearchAttributes } from '../temporal/setup';
import { portOpen, startDevServer, type DevServer } from '../temporal/dev-server';
import { loadConfig } from '../worker/load-config';
import { sessionLogPath } from '../stores/sink';
import { openStores } from '../stores/stores';
import { createSluiceWorker } from '../worker/worker';

const SCRIPT = path.join(__dirname, 'demo-session.json');

async function main() {
  const stateDir = process.env.SLUICE_STATE_DIR ?? '.sluice';
  const port = Number(process.env.SLUICE_PORT ?? 7233);
  const approvalTimeoutMs = Number(process.env.SLUICE_DEMO_APPROVAL_TIMEOUT_MS ?? 120_000);
  Runtime.install({ logger: new DefaultLogger('ERROR') });

  const { server, address, uiUrl } = await temporalServer(stateDir, port);
  const { connection, namespace } = await connect({ address });
  await ensureSearchAttributes(connection, namespace);
  const taskQueue = 'sluice-demo';
  const worker = await createSluiceWorker({
    connection,
    namespace,
    taskQueue,
    config: await loadConfig(path.join(__dirname, '..', 'sluice.config.ts')),
    stateDir,
  });
  const running = worker.run();
  const client = new SluiceClient({ connection, namespace, taskQueue });
  const inbox = await openInbox(client);

  const sessionId = `demo-${new Date()
    .toISOString()
    .replace(/[-:.TZ]/g, '')
    .slice(0, 14)}`;
  const interactive = process.stdin.isTTY === true;
  announceSession(sessionId, interactive, inbox, approvalTimeoutMs);
  await runDemoSession(client, stateDir, sessionId, interactive, approvalTimeoutMs);

  await inbox?.close();
  worker.shutdown();
  await running;
  await connection.close();
  await server?.stop();
  afterwards(stateDir, sessionId, uiUrl, server !== undefined);
}

/**
 * Where to look once the demo has ended. A server the demo started is stopped by now: the audit
 * and the Web UI need it back (`npx sluice dev` serves the same database from the state folder).
 */
function afterwards(stateDir: string, sessionId: string, uiUrl: string, stopped: boolean) {
  console.log(`\nSession log: ${sessionLogPath(stateDir, sessionId)}   (npx sluice events ${sessionId})`);
  if (stopped)
    console.log(
      `The demo's Temporal server has stopped; its database stays in ${stateDir}. To look at the session, serve it again with \`npx sluice dev${stateDir === '.sluice' ? '' : ` --state-dir ${stateDir}`}\` (Ctrl-C to stop), then:`,
    );
  console.log(`  npx sluice audit ${sessionId}    what happened, from the workflow histories`);
  console.log(
    `  ${uiUrl}    the Web UI: the workflow "sluice-session:${sessionId}", each batch a child "sluice-batch:${sessionId}:1:<step>"`,
  );
}

/** A Temporal server already on the port is used as it is; otherwise the demo starts (and later stops) one. */
async function temporalServer(
  stateDir: string,
  port: number,
): Promise<{ server?: DevServer; address: string; uiUrl: string }> {
  let server: DevServer | undefined;
  let address = `127.0.0.1:${port}`;
  if (await portOpen('127.0.0.1', port)) {
    console.log(`Using the Temporal server already listening on ${address}.`);
  } else {
    server = await startDevServer({ stateDir, port, log: (l) => console.log(l) });
    address = server.address;
    console.log(
      `Started the Temporal dev server at ${address} (Temporal CLI: ${path.relative(process.cwd(), server.cli) || server.cli}).`,
    );
  }
  const uiUrl = server?.uiUrl ?? `http://127.0.0.1:${port + 1000}`;
  console.log(`Temporal Web UI: ${uiUrl}\n`);
  return { server, address, uiUrl };
}

/** The approval inbox is a convenience: the demo runs without it (the port may be taken). */
async function openInbox(client: SluiceClient): Promise<Inbox | undefined> {
  try {
    const inbox = await startInbox({ client, port: Number(process.env.SLUICE_INBOX_PORT ?? DEFAULT_INBOX_PORT) });
    console.log(`Approval inbox: ${inbox.url}`);
    return inbox;
  } catch (err) {
    console.log(`Approval inbox: not started (${(err as Error).message})`);
    return undefined;
  }
}

function announceSession(sessionId: string, interactive: boolean, inbox: Inbox | undefined, approvalTimeoutMs: number) {
  const elsewhere = `\`npx sluice approve <id>\` from another shell${inbox ? ` or a click in the inbox (${inbox.url})` : ''}`;
  console.log(
    `Session ${sessionId}. Approvals ${interactive ? 'are asked here (y/n)' : `wait for ${elsewhere}, or are denied after ${approvalTimeoutMs / 1000}s`}.`,
  );
  console.log(
    `It is a durable agent session (workflow sluice-session:${sessionId}) with a scripted model: no key, no network.\n`,
  );
}

/**
 * The whole agent loop runs in the worker; this terminal only shows it and answers approvals, so
 * if it is killed, `npx sluice dev` and `npx sluice chat --resume <session>` pick it up.
 */
async function runDemoSession(
  client: SluiceClient,
  stateDir: string,
  sessionId: string,
  interactive: boolean,
  approvalTimeoutMs: number,
): Promise<void> {
  const input = new LineInput(process.stdin);
  const stores = openStores({ stateDir }); // where the worker writes the session log (files or PostgreSQL)
  try {
    await runChat({
      client,
      sessionId,
      start: {
        sessionId,
        model: `script:${SCRIPT}`,
        system: 'You are the Sluice demo agent.',
        endWhenIdle: true,
        batch: { approvalTimeoutMs },
      },
      events: stores,
      eventsWhere: stores.where,
      input,
      out: (s) => console.log(s),
      approver: `${os.userInfo().username}@terminal`,
      askApprovals: interactive,
      messages: scriptMessages(SCRIPT),
    });
  } finally {
    input.close();
    await stores.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`demo failed: ${err.message ?? err}`);
    process.exit(1);
  },
);
