// Records test/fixtures/histories/<release>/agent-session.json (release: package.json's version):
// the first run of an agent session with the demo config's tools and a scripted model (a model
// step, a batch with an allowed and a denied call, turns by update and by signal) up to its
// continue-as-new. test/session-replay.test.ts replays every release's recording against the
// current workflow code. Record once per release that changed workflows/session.ts:
//
//   npx tsx scripts/record-session-history.ts
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { scriptedModel } from '../agent/adapters/scripted';
import { SluiceClient } from '../client/client';
import { connect } from '../client/connection';
import { historyToJson } from '../client/history';
import { startSession } from '../client/session';
import { freePort, startDevServer } from '../worker/dev-server';
import { loadConfig } from '../worker/load-config';
import { createSluiceWorker } from '../worker/worker';

export const SESSION_FIXTURE = path.join(
  __dirname,
  '..',
  'test',
  'fixtures',
  'histories',
  require('../package.json').version,
  'agent-session.json',
);
export const SESSION_FIXTURE_ID = 'fixture-session';

async function main() {
  Runtime.install({ logger: new DefaultLogger(process.env.SLUICE_VERBOSE ? 'WARN' : 'ERROR') });
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-record-'));
  const server = await startDevServer({
    stateDir: path.resolve('.sluice'),
    port: await freePort(),
    headless: true,
    dbFile: ':memory:',
  });
  const { connection, namespace } = await connect({ address: server.address });
  const taskQueue = 'sluice-record';
  const config = await loadConfig(path.join(__dirname, '..', 'sluice.config.ts'));
  const worker = await createSluiceWorker({
    connection,
    namespace,
    taskQueue,
    config: {
      ...config,
      models: {
        fixture: scriptedModel((req) =>
          req.turn === 1 && req.step === 1
            ? {
                text: 'Checking the weather and cleaning up.',
                calls: [
                  { id: 'weather', name: 'get_weather', args: { city: 'Lisbon' } },
                  { id: 'delete', name: 'delete_files', args: { pattern: 'scratch/**' } },
                ],
              }
            : { text: `Answer for turn ${req.turn}.` },
        ),
      },
    },
    stateDir: scratch,
  });
  const running = worker.run();
  running.catch((err) => console.error(`the worker stopped: ${err.stack ?? err}`));
  try {
    const client = new SluiceClient({ connection, namespace, taskQueue });
    const session = await startSession(client, {
      sessionId: SESSION_FIXTURE_ID,
      model: 'fixture',
      system: 'You are the fixture.',
      continueAsNewAfterEvents: 40,
    });
    const first = await session.workflow.describe();
    await session.send('What is the weather in Lisbon?', { id: 'fixture-1' });
    await session.post('Thanks.', { id: 'fixture-2' });
    // More short turns until the run continues-as-new (its history passed 40 events).
    for (let i = 3; (await session.state()).runs === 1; i++) {
      if (i > 10) throw new Error('the session never continued-as-new');
      await session.send(`Message ${i}.`, { id: `fixture-${i}` });
    }
    await session.cancel();
    await session.result();
    const history = await client.temporal.workflow.getHandle(session.workflowId, first.runId).fetchHistory();
    const json = JSON.parse(historyToJson(history));
    const last = json.events[json.events.length - 1].eventType;
    if (last !== 'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW') throw new Error(`the first run ended with ${last}`);
    fs.mkdirSync(path.dirname(SESSION_FIXTURE), { recursive: true });
    fs.writeFileSync(SESSION_FIXTURE, `${JSON.stringify(scrubIdentities(json), null, 2)}\n`);
    console.log(`wrote ${path.relative(process.cwd(), SESSION_FIXTURE)} (${json.events.length} events)`);
  } finally {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running.catch(() => undefined);
    await connection.close();
    await server.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

/** Worker identities, sticky queues and the recording folder name the machine; they mean nothing here. */
function scrubIdentities(value: unknown): unknown {
  const root = path.resolve(__dirname, '..') + path.sep;
  const host = new RegExp(`^\\d+@${os.hostname().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*$`);
  const scrub = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(scrub);
    if (typeof v === 'string')
      return host.test(v) ? 'sluice-record' : v.split(root).join('<repo>/').split(os.tmpdir()).join('<tmp>');
    if (!v || typeof v !== 'object') return v;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, scrub(x)]));
  };
  return scrub(value);
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(`record-session-history failed: ${process.env.SLUICE_VERBOSE ? err.stack : (err.message ?? err)}`);
      process.exit(1);
    },
  );
}
