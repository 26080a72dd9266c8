// Records test/fixtures/histories/<release>/client-tool-*.json (release: `unreleased` unless
// --release says otherwise): batches with client tools (`runsOn: 'client'`), so the commands a
// client body issues (its wait listed in the memo, the activity on the client's queue, the worker's
// check of the signed answer) replay against every later change. In client-tool-batch.json a
// worker-side call runs beside a client call that waits until the client attaches and then runs
// on it; in client-tool-unavailable.json no client comes within the tool's timeout, and the call
// ends CLIENT_UNAVAILABLE. test/replay.test.ts and test/replay-order.test.ts replay them (after a
// recording, write their order with SLUICE_REPLAY_ORDER=write on that test).
//
//   npx tsx scripts/record-client-tool-history.ts [--release NAME] [--force]
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { BatchRequest, SluiceClient } from '../client/client';
import { createClientKey, serveClientTools } from '../client/client-tools';
import { historyToJson } from '../client/history';
import { sessionHandle } from '../client/session';
import { defineConfig } from '../define/config';
import type { BatchState } from '../pipeline/types';
import { stateQuery } from '../workflows/definitions';
import { clientTools } from '../test/fixtures/client-tools.config';
import { echoTool } from '../test/fixtures/quick-tools';
import { freshFixtureFile, releaseArg, withRecordingWorker, writeFixture } from './recording';

const tools = [echoTool, ...clientTools];
const call = (id: string, name: string, args: Record<string, unknown>) => ({ id, name, arguments: args });

const batches: { file: string; request: Omit<BatchRequest, 'options'>; attach: boolean }[] = [
  {
    file: 'client-tool-batch.json',
    attach: true,
    request: {
      sessionId: 'fixture-client-tool',
      turn: 1,
      step: 1,
      calls: [call('e', 'echo', { text: 'worker side' }), call('n', 'note', { text: 'on the device' })],
    },
  },
  {
    file: 'client-tool-unavailable.json',
    attach: false,
    request: { sessionId: 'fixture-client-tool-gone', turn: 1, step: 1, calls: [call('q', 'quick', {})] },
  },
];

/** Waits until every client call of the batch waits on the client (its stage `on-client`). */
async function waitingOnClient(client: SluiceClient, workflowId: string, callIds: string[]): Promise<void> {
  for (;;) {
    const s = (await client.temporal.workflow
      .getHandle(workflowId)
      .query(stateQuery)
      .catch(() => undefined)) as BatchState | undefined;
    if (s && callIds.every((id) => s.calls.some((c) => c.callId === id && c.stage === 'on-client'))) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function main(argv: string[]) {
  const release = releaseArg(argv);
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  for (const b of batches) {
    const file = freshFixtureFile(release, b.file, argv);
    await withRecordingWorker(defineConfig({ tools }), async ({ client }) => {
      const key = createClientKey();
      const handle = await client.startBatch({ ...b.request, options: { client: key.binding } });
      const clientCalls = b.request.calls.filter((c) => c.name !== 'echo').map((c) => c.id);
      let stop = async () => {};
      if (b.attach) {
        // Attached only once the call waits, so the history holds the wait as a user would meet it.
        await waitingOnClient(client, handle.workflowId, clientCalls);
        const served = await serveClientTools(sessionHandle(client, b.request.sessionId), { tools: clientTools, key });
        stop = () => served.stop();
      }
      try {
        await handle.result();
      } finally {
        await stop();
      }
      writeFixture(file, JSON.parse(historyToJson(await handle.fetchHistory())), { tmp: true });
    });
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (err) => {
      console.error(`record-client-tool-history failed: ${err.message ?? err}`);
      process.exit(1);
    },
  );
}
