// Records test/fixtures/histories/<release>/mixed-batch.json: one batch of the demo config's
// tools that exercises allow, deny, an approved ask, a retried body and a post-execute rewrite,
// run on a throwaway dev server with the current workflow code. test/replay.test.ts replays every
// release's fixtures against the current code, so a change that would break a batch started by
// any released version fails CI (docs/upgrading.md). Record once per release that changed the
// workflow code; a release's fixture is never re-recorded unless --force says so:
//
//   npx tsx scripts/record-history.ts [--release 0.2.0] [--force]
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { SluiceClient } from '../client/client';
import { connect } from '../client/connection';
import { historyToJson } from '../client/history';
import { freePort, startDevServer } from '../worker/dev-server';
import { loadConfig } from '../worker/load-config';
import { createSluiceWorker } from '../worker/worker';

export const FIXTURES = path.join(__dirname, '..', 'test', 'fixtures', 'histories');
const RELEASE: string = require('../package.json').version;

export function fixtureFile(release: string): string {
  return path.join(FIXTURES, release, 'mixed-batch.json');
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
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-record-'));
  const server = await startDevServer({
    stateDir: path.resolve('.sluice'),
    port: await freePort(),
    headless: true,
    dbFile: ':memory:',
  });
  const { connection, namespace } = await connect({ address: server.address });
  const taskQueue = 'sluice-record';
  const worker = await createSluiceWorker({
    connection,
    namespace,
    taskQueue,
    config: await loadConfig(path.join(__dirname, '..', 'sluice.config.ts')),
    stateDir: scratch,
  });
  const running = worker.run();
  try {
    const client = new SluiceClient({ connection, namespace, taskQueue });
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
    fs.mkdirSync(path.dirname(FIXTURE), { recursive: true });
    fs.writeFileSync(FIXTURE, `${JSON.stringify(scrubIdentities(json), null, 2)}\n`);
    console.log(`wrote ${path.relative(process.cwd(), FIXTURE)} (${json.events.length} events)`);
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
    await server.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Worker identities and sticky queue names name the recording machine (pid@host-...), and stack
 * traces the folder it ran in; they mean nothing here.
 */
function scrubIdentities(value: unknown): unknown {
  const root = path.resolve(__dirname, '..') + path.sep;
  const host = new RegExp(`^\\d+@${os.hostname().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*$`);
  const scrub = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(scrub);
    if (typeof v === 'string') return host.test(v) ? 'sluice-record' : v.split(root).join('<repo>/');
    if (!v || typeof v !== 'object') return v;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, scrub(x)]));
  };
  return scrub(value);
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
