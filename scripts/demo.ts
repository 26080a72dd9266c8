// `npm start`: the embedded server, a worker, and a scripted agent session that exercises allow,
// deny, ask, a flaky tool that succeeds on retry, a post-execute rewrite and an injected context.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline/promises';
import { Runtime, DefaultLogger } from '@temporalio/worker';
import { SluiceClient } from '../client/client';
import { connect } from '../client/connection';
import { DEFAULT_INBOX_PORT, startInbox, type Inbox } from '../client/inbox/server';
import { printOutput } from '../client/cli';
import { renderPendingCard } from '../client/render';
import { ensureSearchAttributes } from '../client/setup';
import type { SessionState, ToolCall } from '../pipeline/types';
import { portOpen, startDevServer, type DevServer } from '../worker/dev-server';
import { loadConfig } from '../worker/load-config';
import { sessionLogPath } from '../worker/sink';
import { createSluiceWorker } from '../worker/worker';

interface Script {
  turns: { say: string; calls: (Omit<ToolCall, 'arguments'> & { arguments: object })[] }[];
}

async function main() {
  const stateDir = process.env.SLUICE_STATE_DIR ?? '.sluice';
  const port = Number(process.env.SLUICE_PORT ?? 7233);
  const approvalTimeoutMs = Number(process.env.SLUICE_DEMO_APPROVAL_TIMEOUT_MS ?? 120_000);
  const script: Script = JSON.parse(fs.readFileSync(path.join(__dirname, 'demo-session.json'), 'utf8'));
  Runtime.install({ logger: new DefaultLogger('ERROR') });

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
  let inbox: Inbox | undefined;
  try {
    inbox = await startInbox({ client, port: Number(process.env.SLUICE_INBOX_PORT ?? DEFAULT_INBOX_PORT) });
    console.log(`Approval inbox: ${inbox.url}`);
  } catch (err) {
    console.log(`Approval inbox: not started (${(err as Error).message})`);
  }

  const sessionId = `demo-${new Date()
    .toISOString()
    .replace(/[-:.TZ]/g, '')
    .slice(0, 14)}`;
  const interactive = process.stdin.isTTY === true;
  const approver = `${os.userInfo().username}@terminal`;
  let startSeq = 0;
  let state: SessionState = {};
  const elsewhere = `\`npx sluice approve <id>\` from another shell${inbox ? ` or a click in the inbox (${inbox.url})` : ''}`;
  console.log(
    `Session ${sessionId}. Approvals ${interactive ? 'are asked here (y/n)' : `wait for ${elsewhere}, or are denied after ${approvalTimeoutMs / 1000}s`}.\n`,
  );

  for (const [i, turn] of script.turns.entries()) {
    console.log(`model (turn ${i + 1}): ${turn.say}`);
    if (turn.calls.length === 0) break;
    const handle = await client.startBatch({
      sessionId,
      turn: i + 1,
      step: 1,
      calls: turn.calls,
      startSeq,
      state,
      options: { approvalTimeoutMs },
    });
    const result = handle.result();
    let done = false;
    void result.finally(() => (done = true)).catch(() => undefined);
    const shown = new Set<string>();
    while (!done) {
      const pending = await handle.query<import('../pipeline/types').BatchState>('sluice.state').then(
        (s) => s.pending,
        () => [],
      );
      for (const p of pending.filter((x) => !shown.has(x.approvalId))) {
        shown.add(p.approvalId);
        console.log(`\n${renderPendingCard(p)}`);
        if (!interactive) continue;
        const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
        const answer = (await rl.question('Approve this call? [y/N] ')).trim().toLowerCase();
        rl.close();
        const decision = answer === 'y' || answer === 'yes' ? 'approve' : 'deny';
        try {
          const r = await client.decide({
            approvalId: p.approvalId,
            decision,
            by: approver,
            workflowId: handle.workflowId,
            argsDigest: p.argsDigest,
          });
          console.log(`→ ${r.outcome}`);
        } catch (err) {
          console.log(`→ ${(err as Error).message}`);
        }
      }
      await Promise.race([result.catch(() => undefined), new Promise((r) => setTimeout(r, 300))]);
    }
    const output = await result;
    console.log('');
    printOutput(output, (s) => console.log(`  ${s}`));
    console.log('');
    startSeq = output.nextSeq;
    state = output.state;
  }

  console.log(`\nSession log: ${sessionLogPath(stateDir, sessionId)}   (npx sluice events ${sessionId})`);
  console.log(`Each batch is a workflow "sluice-batch:${sessionId}:<turn>:1" in the Web UI: ${uiUrl}`);
  console.log(`What happened, from the workflow histories: npx sluice audit ${sessionId}`);
  await inbox?.close();
  worker.shutdown();
  await running;
  await connection.close();
  await server?.stop();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`demo failed: ${err.message ?? err}`);
    process.exit(1);
  },
);
