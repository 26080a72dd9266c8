// Facts scopes through real workers on the dev server (stores/fact-store.ts, activities/facts-scope.ts):
// batches that name the same `factsScope` count each other's calls, in flight too, from the fact
// store their workers share — the file store of one machine, and PostgreSQL (a throw-away server);
// a worker killed after the store has a call does not make it count twice; a store that cannot
// be read denies, naming it. And a limit holds across two `sluice hook claude` calls of one
// harness session, each its own batch (the hook's function in this process; test/hook.test.ts
// runs its process).
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import type { BatchOutput } from '../pipeline/types';
import { type SessionHandle, startSession } from '../client/session';
import { harnessTools, policyRules } from '../hooks';
import { defineConfig } from '../define/config';
import { PostgresStores } from '../stores/postgres';
import { openStores } from '../stores/stores';
import { eventually } from './eventually';
import { batch, type ChildWorker, type Harness, spawnWorker, startHarness } from './harness';
import { startPostgres, type TestPostgres } from './postgres';
import { runHook } from './run-hook';

// Child workers load TypeScript through tsx: at a load of 16 each takes many seconds, so the tests
// get minutes.
vi.setConfig({ testTimeout: 300_000, hookTimeout: 300_000 });

const CONFIG = path.join(__dirname, 'fixtures', 'facts-scope.config.ts');
const EMAIL_SCHEMA = `action "send_email" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { to: String }, session: { emailsLastHour: Long, deniedLastHour: Long } }
};
`;
const EMAIL_POLICY = `@id("email-limit")
@reason("at most 2 emails an hour")
forbid (principal, action == Action::"send_email", resource)
when { context.session.emailsLastHour >= 2 };

permit (principal, action == Action::"send_email", resource);
`;
const EMAIL_FACTS = {
  emailsLastHour: { count: { tool: 'send_email', window: '1h' } },
  deniedLastHour: { count: { tool: 'send_email', window: '1h', outcome: ['denied'] } },
};

/** A workspace whose `.cedar` folder holds a schema, a policy and the facts they read. */
function cedarWorkspace(under: string, schema: string, policy: string, facts: object): string {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(under, 'ws-')));
  fs.mkdirSync(path.join(ws, '.cedar'));
  fs.writeFileSync(path.join(ws, '.cedar', 'schema.cedarschema'), schema);
  fs.writeFileSync(path.join(ws, '.cedar', 'limit.cedar'), policy);
  fs.writeFileSync(path.join(ws, '.cedar', 'facts.json'), JSON.stringify(facts));
  return ws;
}

/** Each call's policy/decided event data, by call id. */
function decided(out: BatchOutput): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    out.events.filter((e) => e.type === 'policy/decided').map((e) => [String(e.data.callId), e.data]),
  );
}

const emails = (tos: string[], prefix: string) =>
  tos.map((to, i) => ({ id: `${prefix}${i + 1}`, name: 'send_email', args: { to } }));

describe.each(['files', 'postgresql'] as const)('facts scope in the %s store', (kind) => {
  let h: Harness;
  let pg: TestPostgres | undefined;
  let env: Record<string, string>;
  let first: ChildWorker | undefined;
  let second: ChildWorker | undefined;
  const run = `${process.pid}-${Date.now()}`;
  const scoped = (calls: ReturnType<typeof emails>, scope: string) =>
    batch(calls, { factsScope: `user:${scope}-${run}`, options: { approvalChannel: false } });

  beforeAll(async () => {
    h = await startHarness(`facts-scope-${kind}`, { tools: [] }, { autoStart: false });
    const ws = cedarWorkspace(h.stateDir, EMAIL_SCHEMA, EMAIL_POLICY, EMAIL_FACTS);
    env = { SLUICE_TEST_DIR: h.stateDir, SLUICE_FACTS_WORKSPACE: ws };
    if (kind === 'postgresql') {
      pg = await startPostgres();
      const url = await pg.createDatabase('sluice_facts');
      const setup = new PostgresStores(url);
      await setup.migrate();
      await setup.close();
      env.SLUICE_DATABASE_URL = url;
    }
    // The first worker can be held in a pre-execute stage (a call to `hang`), then killed.
    first = spawnWorker(CONFIG, h.taskQueue, h.stateDir, { ...env, SLUICE_FACTS_HANG: '1' });
    await first.ready;
  });
  afterAll(async () => {
    await first?.kill();
    await second?.kill();
    await h?.close();
    await pg?.stop();
  });

  it("two batches in one scope count each other's calls, one still in flight; another scope counts none", async () => {
    // Batch A's email stays in its body (in flight) until B has been judged.
    const a = await h.client.startBatch(scoped(emails(['held-a'], 'a'), 'alice'));
    await eventually('the held email running', () => fs.existsSync(path.join(h.stateDir, 'held-a.started')));
    const b = await h.client.runBatch(scoped(emails(['b1', 'b2'], 'b'), 'alice'));
    const c = await h.client.runBatch(scoped(emails(['c1'], 'c'), 'bob'));
    fs.writeFileSync(path.join(h.stateDir, 'held-a.release'), '');
    expect((await a.result()).results[0].result.isError).toBe(false);

    expect(b.results.map((r) => r.result.error?.code ?? 'ok')).toEqual(['ok', 'DENIED']);
    expect(decided(b).b1).toMatchObject({ decision: 'allow', facts: { emailsLastHour: 1, deniedLastHour: 0 } });
    expect(decided(b).b2).toMatchObject({
      decision: 'deny',
      policyId: 'email-limit',
      facts: { emailsLastHour: 2, deniedLastHour: 0 },
    });
    expect(decided(c).c1).toMatchObject({ decision: 'allow', facts: { emailsLastHour: 0 } });

    // Settled, the store has each call's outcome: the denied one counts as denied, not as sent.
    const d = await h.client.runBatch(scoped(emails(['d1'], 'd'), 'alice'));
    expect(decided(d).d1).toMatchObject({ decision: 'deny', facts: { emailsLastHour: 2, deniedLastHour: 1 } });
  });

  it("two sessions in one scope count each other's calls, a batch of the scope too", async () => {
    const scope = `team:ops-${run}`;
    const start = (name: string) =>
      startSession(h.client, { sessionId: `${name}-${kind}-${run}`, model: 'scripted', factsScope: scope });
    const one = await start('scope-one');
    const two = await start('scope-two');
    expect((await one.send('email:s1', { id: 'm1' })).text).toBe('sent to s1');
    expect((await two.send('email:s2', { id: 'm1' })).text).toBe('sent to s2');
    // The scope's third email, from a third session, is over the limit of two.
    const three = await start('scope-three');
    expect((await three.send('email:s3', { id: 'm1' })).text).toBe('not sent to s3');
    // Each session's log, in the store its workers write it to.
    const stores = openStores({
      stateDir: h.stateDir,
      ...(env.SLUICE_DATABASE_URL ? { databaseUrl: env.SLUICE_DATABASE_URL } : {}),
    });
    const facts = async (s: SessionHandle) =>
      (await stores.events(s.sessionId)).filter((e) => e.type === 'policy/decided').map((e) => e.data.facts);
    expect(await facts(two)).toEqual([{ emailsLastHour: 1, deniedLastHour: 0 }]);
    expect(await facts(three)).toEqual([{ emailsLastHour: 2, deniedLastHour: 0 }]);
    await stores.close();
    const d = await h.client.runBatch(batch(emails(['s4'], 's'), { factsScope: scope }));
    expect(decided(d).s1).toMatchObject({ decision: 'deny', facts: { emailsLastHour: 2, deniedLastHour: 1 } });
  });

  it('a worker killed after the store has the call: the call counts once', async () => {
    const k = await h.client.startBatch(scoped(emails(['hang'], 'k'), 'carol'));
    await eventually('the call held in its pre-execute stage', () => fs.existsSync(path.join(h.stateDir, 'hanging')));
    await first!.kill('SIGKILL');
    first = undefined;
    second = spawnWorker(CONFIG, h.taskQueue, h.stateDir, env);
    await second.ready;
    // The stage runs again on the second worker: the store already has the call, and keeps one.
    const out = await k.result();
    expect(out.results[0].result.isError).toBe(false);
    expect(decided(out).k1).toMatchObject({ decision: 'allow', facts: { emailsLastHour: 0 } });
    const l = await h.client.runBatch(scoped(emails(['l1'], 'l'), 'carol'));
    expect(decided(l).l1).toMatchObject({ decision: 'allow', facts: { emailsLastHour: 1 } });
  });

  it('a fact store that cannot be read denies the call, naming the store', async () => {
    const request = scoped(emails(['e1'], 'e'), 'dave');
    if (pg) await pg.kill();
    // The scope's file as an earlier Sluice wrote it is a folder: the store cannot read it.
    else
      fs.mkdirSync(
        path.join(h.stateDir, 'facts', `${createHash('sha256').update(request.factsScope!).digest('hex')}.jsonl`),
        { recursive: true },
      );
    try {
      const out = await h.client.runBatch(request);
      const where = pg
        ? /the fact store at the sluice_fact_calls table at postgres/
        : /the fact store at .*facts could not be reached/;
      expect(out.results[0].result.error?.code).toBe('DENIED');
      expect(out.results[0].result.error?.message).toMatch(where);
      expect(out.results[0].result.error?.message).toMatch(/denied rather than judged on an undercount/);
    } finally {
      if (pg) await pg.start();
    }
  });
});

describe('facts scope of a harness session: `sluice hook claude`', () => {
  let h: Harness;

  beforeAll(async () => {
    const dir = fs.mkdtempSync(path.join(inject('runDir'), 'facts-hook-'));
    const ws = cedarWorkspace(
      dir,
      `action "Bash" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { command: String, description?: String, timeout?: Long }, session: { pushesLastHour: Long } }
};
`,
      `@reason("one push an hour")
forbid (principal, action == Action::"Bash", resource)
when { context.args.command like "git push*" && context.session.pushesLastHour >= 1 };

permit (principal, action == Action::"Bash", resource);
`,
      { pushesLastHour: { count: { tool: 'Bash', window: '1h', where: { command: { like: 'git push*' } } } } },
    );
    // The hooks run in this process (test/run-hook.ts): their call key is kept in this run's folder.
    process.env.XDG_CONFIG_HOME = path.join(dir, 'config');
    h = await startHarness(
      'facts-hook',
      defineConfig({ tools: harnessTools(), preExecute: [...policyRules({ workspace: ws }).preExecute] }),
    );
  });
  afterAll(async () => {
    await h?.close();
  });

  let counter = 0;
  async function hook(session: string, command: string): Promise<{ decision: string; reason: string }> {
    counter++;
    const doc = {
      session_id: session,
      transcript_path: '/home/user/.claude/projects/p/t.jsonl',
      cwd: '/home/user/p',
      permission_mode: 'default',
      hook_event_name: 'PreToolUse',
      tool_name: 'Bash',
      tool_input: { command, description: 'push' },
      tool_use_id: `toolu_${process.pid}_${counter}`,
    };
    const args = ['claude', '--address', inject('temporalAddress'), '--task-queue', h.taskQueue, '--timeout', '120'];
    const r = await runHook(args, JSON.stringify(doc));
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout).hookSpecificOutput;
    return { decision: out.permissionDecision, reason: out.permissionDecisionReason };
  }

  it('one push an hour: the second hook call of a session is denied, another session is not', async () => {
    const session = `facts-hook-${process.pid}-${Date.now()}`;
    expect((await hook(session, 'git push origin main')).decision).toBe('allow');
    const second = await hook(session, 'git push origin next');
    expect(second.decision).toBe('deny');
    expect(second.reason).toMatch(/one push an hour/);
    // Other commands of the session, and another session's push, are not limited by it.
    expect((await hook(session, 'npm test')).decision).toBe('allow');
    expect((await hook(`${session}-other`, 'git push origin main')).decision).toBe('allow');
  });
});
