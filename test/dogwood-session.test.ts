// A Dogwood temporal policy through a real worker on the dev server, as a workspace's `.dogwood`
// set read by policyRules (the session-facts worker, test/fixtures/facts-session.config.ts, reads
// the workspace it is given): at most five emails an hour across a session's turns, holding across
// a worker killed with SIGKILL and a continue-as-new, since the reference judges the calls the
// session carried, never a worker's memory (nor the Python process's: the new worker starts a new
// one). The session's runs and batches then replay from their recorded histories: each verdict is
// in the history, and the workflow code reaches it again without asking the reference.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadHistories } from '../client/history';
import { replayHistories } from '../client/replay';
import { startSession } from '../client/session';
import { readSessionLog } from '../stores/sink';
import { eventually } from './eventually';
import { type ChildWorker, type Harness, spawnWorker, startHarness } from './harness';

const SCHEMA = `namespace Agent {
  type SendEmailInput = { to: String };
  entity Gateway;
  entity OAuthUser;
  action "SendEmail" appliesTo { principal: [OAuthUser], resource: [Gateway], context: { input: SendEmailInput } };
}
`;
// The call being judged counts itself, as Dogwood counts it: n <= 5 lets five an hour.
const POLICY = `@id("email_limit")
@hint("at most five emails an hour")
permit (principal, action == Agent::Action::"SendEmail", resource)
when temporal {
  exists (n: Long). (
    (count for (t: Timepoint). where (formerly within 1h (Agent::Action::"SendEmail"::request{} && tp(t)))) == n
    && n <= 5
  )
};
`;
const SCOPE = {
  namespace: 'Agent',
  principal: 'Agent::OAuthUser::"alice"',
  resource: 'Agent::Gateway::"mail"',
  actions: { send_email: 'SendEmail' },
  input: 'arguments',
};
const CONFIG = path.join(__dirname, 'fixtures', 'facts-session.config.ts');

let s: Harness;
let worker: ChildWorker | undefined;
beforeAll(async () => {
  s = await startHarness('dogwood-session', { tools: [] }, { autoStart: false });
});
afterAll(async () => {
  await worker?.kill();
  await s?.close();
});

describe('a Dogwood temporal policy across a worker kill and a continue-as-new', () => {
  // Two worker starts, six turns and a replay: minutes on a loaded machine.
  it('at most five emails an hour: the sixth is denied, and every run replays', { timeout: 600_000 }, async () => {
    const ws = fs.mkdtempSync(path.join(s.stateDir, 'ws-'));
    fs.mkdirSync(path.join(ws, '.dogwood'));
    fs.writeFileSync(path.join(ws, '.dogwood', 'schema.cedarschema'), SCHEMA);
    fs.writeFileSync(path.join(ws, '.dogwood', 'limit.dw'), POLICY);
    fs.writeFileSync(path.join(ws, '.dogwood', 'scope.json'), JSON.stringify(SCOPE));
    const env = { SLUICE_TEST_DIR: s.stateDir, SLUICE_FACTS_WORKSPACE: ws };
    const start = async () => {
      worker = spawnWorker(CONFIG, s.taskQueue, s.stateDir, env);
      await worker.ready;
    };
    await start();
    const session = await startSession(s.client, {
      sessionId: `dogwood-emails-${process.pid}-${Date.now()}`,
      model: 'scripted',
      continueAsNewAfterEvents: 20,
      sessionFacts: true,
    });
    const texts: string[] = [];
    for (let i = 1; i <= 3; i++) texts.push((await session.send(`email:p${i}`, { id: `m${i}` })).text);
    // The worker (and with it its reference process) dies between turns; a new one takes the session on.
    await worker!.kill('SIGKILL');
    worker = undefined;
    await start();
    for (let i = 4; i <= 5; i++) texts.push((await session.send(`email:p${i}`, { id: `m${i}` })).text);
    // The sixth goes to a later run than the first: the count crossed a continue-as-new.
    await eventually('a second run of the session', async () => (await session.state()).runs > 1);
    texts.push((await session.send('email:p6', { id: 'm6' })).text);
    expect(texts).toEqual(['sent to p1', 'sent to p2', 'sent to p3', 'sent to p4', 'sent to p5', 'not sent to p6']);
    expect(fs.readFileSync(path.join(s.stateDir, 'sent.log'), 'utf8')).not.toContain(' p6');
    const decided = (await readSessionLog(s.stateDir, session.sessionId)).filter((e) => e.type === 'policy/decided');
    expect(decided.map((e) => [e.data.source, e.data.decision])).toEqual([
      ...Array.from({ length: 5 }, () => ['dogwood', 'allow']),
      ['dogwood', 'deny'],
    ]);
    expect(decided.at(-1)?.data).toMatchObject({
      policyId: 'email_limit',
      file: '.dogwood/limit.dw',
      message: 'at most five emails an hour',
    });
    await worker!.kill('SIGTERM');
    worker = undefined;

    // With no worker and no reference running: the session's runs and its batches replay, with the
    // workflow code the workers ran (the run's bundle; `sluice replay` bundles it anew each time,
    // and test/session.test.ts runs it).
    const results = await replayHistories(await loadHistories(session.sessionId, s.client.temporal), {
      workflowBundlePath: inject('workflowBundlePath'),
    });
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(results.filter((r) => r.workflowId === session.workflowId).length).toBeGreaterThan(1);
    expect(results.length).toBeGreaterThanOrEqual(6 + 2);
  });
});
