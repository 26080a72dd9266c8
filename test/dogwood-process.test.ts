// The Dogwood reference as one long-lived process (hooks/dogwood.ts): a worker's decisions go to
// the same Python over its pipe, several at once answered each to its own; a process killed while
// it holds a decision denies that call (fail closed, on record) and the next decision starts a new
// one. The stand-in Pythons below are shell scripts that note their start and then run the real
// reference, or take a request and never answer. Needs dogwood-py (test setup installs it).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { type DogwoodScope, decideDogwood, stopDogwood } from '../hooks/dogwood';
import { dogwoodPolicy } from '../hooks/dogwood-policy';
import type { CallRecord } from '../pipeline/types';

const SCHEMA = `namespace Agent {
  type SendEmailInput = { to: String };
  entity Gateway;
  entity OAuthUser;
  action "SendEmail" appliesTo { principal: [OAuthUser], resource: [Gateway], context: { input: SendEmailInput } };
}
`;
// Two an hour, the call being judged counted.
const POLICY = `@id("two_an_hour")
permit (principal, action == Agent::Action::"SendEmail", resource)
when temporal {
  exists (n: Long). (
    (count for (t: Timepoint). where (formerly within 1h (Agent::Action::"SendEmail"::request{} && tp(t)))) == n
    && n <= 2
  )
};
`;
const SCOPE: DogwoodScope = {
  namespace: 'Agent',
  principal: 'Agent::OAuthUser::"alice"',
  resource: 'Agent::Gateway::"mail"',
  actions: { send_email: 'SendEmail' },
  input: 'arguments',
};
const SET = { policy: POLICY, policySchema: SCHEMA, source: 'limits.dw' };
const T0 = Date.parse('2026-12-01T10:00:00Z');

let dir: string;
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(inject('runDir'), 'dogwood-process-')));
  fs.mkdirSync(path.join(dir, '.dogwood'));
  fs.writeFileSync(path.join(dir, '.dogwood', 'schema.cedarschema'), SCHEMA);
  fs.writeFileSync(path.join(dir, '.dogwood', 'limits.dw'), POLICY);
});

const saved = process.env.SLUICE_PYTHON;
afterEach(() => {
  stopDogwood();
  if (saved === undefined) delete process.env.SLUICE_PYTHON;
  else process.env.SLUICE_PYTHON = saved;
});

/** A stand-in for python3: a shell script with `body`, which may `exec python3 "$@"` to run the reference. */
function fakePython(name: string, body: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

function email(i: number, atS: number): CallRecord {
  return { callId: `e${i}`, tool: 'send_email', args: { to: `p${i}` }, at: T0 + atS * 1000, turn: 1, outcome: 'ok' };
}

/** Resolves once `file` exists: the stand-in writes it when it holds a request. */
async function appears(file: string): Promise<string> {
  while (!fs.existsSync(file)) await new Promise((r) => setTimeout(r, 20));
  return fs.readFileSync(file, 'utf8').trim();
}

describe('one Dogwood process per worker', () => {
  it('serves every decision from one process, several at once each answered with its own verdict', async () => {
    const starts = path.join(dir, 'starts');
    process.env.SLUICE_PYTHON = fakePython('counted', `echo $$ >> '${starts}'\nexec python3 "$@"`);
    // After k earlier emails within the hour: allowed while k < 2.
    const cases = [0, 1, 2, 3, 1, 0, 2].map((k) => ({
      k,
      earlier: Array.from({ length: k }, (_, i) => email(i, i)),
    }));
    const sequential = [];
    for (const c of cases) sequential.push((await decideDogwood(SET, SCOPE, c.earlier, email(9, 60))).decision);
    expect(sequential).toEqual(cases.map((c) => (c.k < 2 ? 'allow' : 'deny')));
    const together = await Promise.all(cases.map((c) => decideDogwood(SET, SCOPE, c.earlier, email(9, 60))));
    expect(together.map((d) => d.decision)).toEqual(sequential);
    expect(fs.readFileSync(starts, 'utf8').trim().split('\n')).toHaveLength(1);
  });

  it('a process killed while it holds a decision denies that call, on record; the next decision starts a new one', async () => {
    const held = path.join(dir, 'held');
    const { handler } = dogwoodPolicy({ dir: '.dogwood', workspace: dir, scope: SCOPE });
    const judge = (id: string) => {
      const events: { type: string; data: Record<string, unknown> }[] = [];
      const answer = handler({
        call: { id, name: 'send_email', args: { to: 'z' }, argsDigest: '' },
        tool: { name: 'send_email', description: '', aliases: [] },
        sessionId: 's',
        turn: 1,
        step: 1,
        workflowId: 'w',
        idempotencyKey: 'k',
        state: {},
        record: { calls: [], now: T0, reach: 'session' },
        addContext: () => {},
        emit: (type, data) => events.push({ type, data }),
      });
      return { answer, events };
    };
    // The set loads (the reference validates it) once, by the real reference.
    expect(await judge('x0').answer).toEqual({ kind: 'allow' });
    // Then a stand-in whose first start takes the decision and holds it (its pid says so); every later one is the reference.
    process.env.SLUICE_PYTHON = fakePython(
      'dies-once',
      `if [ ! -e '${held}' ]; then read -r line; echo $$ > '${held}.tmp'; mv '${held}.tmp' '${held}'; exec sleep 100000; fi\nexec python3 "$@"`,
    );
    const first = judge('x1');
    process.kill(Number(await appears(held)), 'SIGKILL');
    expect(await first.answer).toMatchObject({ kind: 'deny', reason: expect.stringMatching(/killed by SIGKILL/) });
    expect(first.events).toEqual([
      { type: 'policy/decided', data: expect.objectContaining({ decision: 'deny', source: 'dogwood' }) },
    ]);
    const next = judge('x2');
    expect(await next.answer).toEqual({ kind: 'allow' });
    expect(next.events[0].data).toMatchObject({ decision: 'allow', policyId: 'two_an_hour' });
  });

  it('a decision that overruns its timeout stops the process; the next decision is judged by a new one', async () => {
    const held = path.join(dir, 'slow');
    process.env.SLUICE_PYTHON = fakePython(
      'slow-once',
      `if [ ! -e '${held}' ]; then touch '${held}'; exec sleep 100000; fi\nexec python3 "$@"`,
    );
    // It never answers at all, so whatever the timeout, it passes first.
    await expect(decideDogwood(SET, SCOPE, [], email(0, 0), 300)).rejects.toThrow(/no answer within 300 ms/);
    expect((await decideDogwood(SET, SCOPE, [], email(0, 0))).decision).toBe('allow');
  });
});
