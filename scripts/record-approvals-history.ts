// Records test/fixtures/histories/<release>/quorum-batch.json (release: package.json's version): one
// batch whose asks need two people (`approvers: { quorum: 2 }`), so the quorum's votes, its
// refusals and its tally are in a recorded history: one call approved by two people, one voted for
// once and then rejected, a vote by the same person twice refused in between. test/replay.test.ts
// (through `sluice replay test/fixtures/histories`) replays it against the current workflow code.
// Record once per release that changed how approvals are decided:
//
//   npx tsx scripts/record-approvals-history.ts [--force]
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { z } from 'zod';
import type { SluiceClient } from '../client/client';
import { historyToJson } from '../client/history';
import { defineConfig, defineTool } from '../define/config';
import type { PendingApproval } from '../pipeline/types';
import { fixtureFile, RELEASE, withRecordingWorker, writeFixture } from './recording';

export const QUORUM_FIXTURE = fixtureFile(RELEASE, 'quorum-batch.json');

const config = defineConfig({
  tools: [
    defineTool({
      name: 'rotate_key',
      description: 'rotates a key; two people must approve',
      input: z.object({ key: z.string() }),
      approvers: { quorum: 2 },
      execute: ({ key }) => `rotated ${key}`,
    }),
  ],
});

async function pendingOf(client: SluiceClient, workflowId: string, callId: string): Promise<PendingApproval> {
  for (;;) {
    const p = (await client.batchState(workflowId)).pending.find((x) => x.callId === callId);
    if (p) return p;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main(argv: string[]) {
  if (fs.existsSync(QUORUM_FIXTURE) && !argv.includes('--force'))
    throw new Error(
      `${path.relative(process.cwd(), QUORUM_FIXTURE)} exists: release ${RELEASE} was recorded already (pass --force if its workflow code really changed before it shipped)`,
    );
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  await withRecordingWorker(config, async ({ client }) => {
    const handle = await client.startBatch({
      sessionId: 'fixture-quorum',
      turn: 1,
      step: 1,
      calls: [
        { id: 'api', name: 'rotate_key', arguments: { key: 'api' } },
        { id: 'db', name: 'rotate_key', arguments: { key: 'db' } },
      ],
    });
    const workflowId = handle.workflowId;
    const api = await pendingOf(client, workflowId, 'api');
    const db = await pendingOf(client, workflowId, 'db');
    const vote = (p: PendingApproval, decision: 'approve' | 'deny', by: string) =>
      client.decide({
        workflowId,
        approvalId: p.approvalId,
        argsDigest: p.argsDigest,
        decision,
        by,
        reason: 'fixture',
      });
    await vote(api, 'approve', 'alice');
    // The same person again is refused and recorded, not counted.
    await vote(api, 'approve', 'Alice').catch(() => undefined);
    await vote(api, 'approve', 'bob');
    await vote(db, 'approve', 'alice');
    await vote(db, 'deny', 'carol');
    await handle.result();
    writeFixture(QUORUM_FIXTURE, JSON.parse(historyToJson(await handle.fetchHistory())));
  });
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (err) => {
      console.error(`record-approvals-history failed: ${err.message ?? err}`);
      process.exit(1);
    },
  );
}
