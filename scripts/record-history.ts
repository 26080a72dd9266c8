// Records test/fixtures/histories/<release>/mixed-batch.json: one batch of the demo config's
// tools that exercises allow, deny, an approved ask, a retried body and a post-execute rewrite,
// run on a throwaway dev server with the current workflow code. test/replay.test.ts replays every
// release's fixtures against the current code, so a change that would break a batch started by
// any released version fails CI (docs/upgrading.md). Record once per release that changed the
// workflow code; a release's fixture is never re-recorded unless --force says so:
//
//   npx tsx scripts/record-history.ts [--release 0.2.0] [--force]
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { historyToJson } from '../client/history';
import {
  demoConfig,
  FIXTURES,
  fixtureFile as releaseFile,
  RELEASE,
  withRecordingWorker,
  writeFixture,
} from './recording';

export { FIXTURES };

export function fixtureFile(release: string): string {
  return releaseFile(release, 'mixed-batch.json');
}
export const FIXTURE_SESSION = 'fixture-mixed';
export const FIXTURE_APPROVER = 'fixture-approver';

async function main(argv: string[]) {
  const at = argv.indexOf('--release');
  const release = at >= 0 ? argv[at + 1] : RELEASE;
  if (!release || !/^[\w.-]+$/.test(release)) throw new Error('--release takes a release name such as 0.2.0');
  const FIXTURE = fixtureFile(release);
  if (fs.existsSync(FIXTURE) && !argv.includes('--force'))
    throw new Error(
      `${path.relative(process.cwd(), FIXTURE)} exists: release ${release} was recorded already. Record a new release (--release NAME, or bump package.json's version), or pass --force if this release's workflow code really changed before it shipped.`,
    );
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  await withRecordingWorker(await demoConfig(), async ({ client }) => {
    const handle = await client.startBatch({
      sessionId: FIXTURE_SESSION,
      turn: 1,
      step: 1,
      calls: [
        { id: 'weather', name: 'get_weather', arguments: { city: 'Lisbon' } },
        { id: 'delete', name: 'delete_files', arguments: { pattern: 'scratch/**' } },
        {
          id: 'email',
          name: 'send_email',
          arguments: { to: 'ada@example.com', subject: 'Your summary', body: 'Lisbon is sunny.' },
        },
        { id: 'quote', name: 'fetch_quote', arguments: { symbol: 'TMPRL' } },
        { id: 'customer', name: 'lookup_customer', arguments: { id: '42' } },
      ],
    });
    for (;;) {
      const state = await client.batchState(handle.workflowId);
      const p = state.pending.find((x) => x.callId === 'email');
      if (p) {
        await client.approve(p.approvalId, {
          workflowId: handle.workflowId,
          by: FIXTURE_APPROVER,
          reason: 'recorded fixture',
          argsDigest: p.argsDigest,
        });
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    await handle.result();
    const json = JSON.parse(historyToJson(await handle.fetchHistory()));
    writeFixture(FIXTURE, json);
  });
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (err) => {
      console.error(`record-history failed: ${err.message ?? err}`);
      process.exit(1);
    },
  );
}
