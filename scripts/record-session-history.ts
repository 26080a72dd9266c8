// Records test/fixtures/histories/<release>/agent-session.json (release: package.json's version):
// the first run of an agent session with the demo config's tools and a scripted model (a model
// step, a batch with an allowed and a denied call, turns by update and by signal) up to its
// continue-as-new. test/session-replay.test.ts replays every release's recording against the
// current workflow code. Record once per release that changed workflows/session.ts:
//
//   npx tsx scripts/record-session-history.ts
//
// With --local: the same session with its model steps local activities (modelCall.local), into
// agent-session-local.json, which `sluice replay test/fixtures/histories` replays beside the rest.
// With --into <folder> <file>: into test/fixtures/histories/<folder>/<file> instead (a recording of
// the release in the making beside the ones already there, e.g. `--into unreleased
// agent-session-batch-activity.json`).
// With --park: the first batch also sends an email, which waits on a person's approval; the
// approval is given only once the step has left its batch activity and waits on the batch's
// end (a watch child), so the recording holds that path (e.g. `--park --into unreleased
// session-batch-parked.json`), and that batch's own history into
// test/fixtures/session-parked-batches/ (…-batch.json: the ask it received, the signal it sent at
// its end; not among the histories, whose batches replay-order.test.ts numbers from seq 0).
import * as path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { scriptedModel } from '../agent/adapters/scripted';
import { historyToJson } from '../client/history';
import { type SessionHandle, startSession } from '../client/session';
import { batchWorkflowId } from '../workflows/definitions';
import { SESSION_BATCH_WATCH_WORKFLOW } from '../workflows/session-definitions';
import { demoConfig, fixtureFile, RELEASE, withRecordingWorker, writeFixture } from './recording';

export const SESSION_FIXTURE = fixtureFile(RELEASE, 'agent-session.json');
export const SESSION_FIXTURE_ID = 'fixture-session';
const LOCAL = process.argv.includes('--local');
const INTO = process.argv.indexOf('--into');
const PARK = process.argv.includes('--park');
const EMAIL = { id: 'email', name: 'send_email', args: { to: 'ada@example.com', subject: 'Lisbon', body: 'Sunny.' } };

async function main() {
  Runtime.install({ logger: new DefaultLogger(process.env.SLUICE_VERBOSE ? 'WARN' : 'ERROR') });
  const config = await demoConfig();
  const models = {
    fixture: scriptedModel((req) =>
      req.turn === 1 && req.step === 1
        ? {
            text: 'Checking the weather and cleaning up.',
            calls: [
              { id: 'weather', name: 'get_weather', args: { city: 'Lisbon' } },
              { id: 'delete', name: 'delete_files', args: { pattern: 'scratch/**' } },
              ...(PARK ? [EMAIL] : []),
            ],
          }
        : { text: `Answer for turn ${req.turn}.` },
    ),
  };
  await withRecordingWorker({ ...config, models }, async ({ client }) => {
    const session = await startSession(client, {
      sessionId: LOCAL ? `${SESSION_FIXTURE_ID}-local` : SESSION_FIXTURE_ID,
      model: 'fixture',
      ...(LOCAL ? { modelCall: { local: true } } : {}),
      system: 'You are the fixture.',
      continueAsNewAfterEvents: 40,
    });
    const first = await session.workflow.describe();
    const firstTurn = session.send('What is the weather in Lisbon?', { id: 'fixture-1' });
    if (PARK) await approveOnceParked(session);
    await firstTurn;
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
    const file =
      INTO >= 0
        ? fixtureFile(process.argv[INTO + 1], process.argv[INTO + 2])
        : LOCAL
          ? fixtureFile(RELEASE, 'agent-session-local.json')
          : SESSION_FIXTURE;
    writeFixture(file, json, { tmp: true });
    // The parked batch too: it was asked to signal the watch at its end, and did (its last command).
    if (PARK) {
      const batch = await client.temporal.workflow.getHandle(batchWorkflowId(session.sessionId, 1, 1)).fetchHistory();
      const beside = path.join(__dirname, '..', 'test', 'fixtures', 'session-parked-batches');
      writeFixture(path.join(beside, `${path.basename(file, '.json')}-batch.json`), JSON.parse(historyToJson(batch)), {
        tmp: true,
      });
    }
  });
}

/** Approves the first batch's email once its step waits on the batch's end with no activity. */
async function approveOnceParked(session: SessionHandle): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const events = (await session.workflow.fetchHistory()).events ?? [];
    const watching = events.some(
      (e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowType?.name === SESSION_BATCH_WATCH_WORKFLOW,
    );
    const [pending] = watching ? await session.pendingApprovals() : [];
    if (pending) {
      await session.client.decide({ approvalId: pending.approvalId, decision: 'approve', by: 'fixture' });
      return;
    }
    if (Date.now() > deadline) throw new Error('the step never waited on its batch with no activity');
    await new Promise((r) => setTimeout(r, 200));
  }
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
