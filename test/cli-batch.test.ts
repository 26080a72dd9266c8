// `sluice batch` and a second decision, as a user meets them (issue 22 item 10, issue 23 item 9):
// submitting the same (session, turn, step) again attaches to the batch, running or finished,
// and runs nothing twice, while another batch of the session still running is refused by name;
// a calls file that names no session is a usage error, not a session made up from the file
// name; approving an approval already decided is refused `decided`, not "not found".
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { DecisionRefusedError } from '../support/errors';
import { defineConfig, defineTool } from '../define/config';
import { batchWorkflowId } from '../workflows/definitions';
import { pendingApproval } from './eventually';
import { startHarness, type Harness } from './harness';
import { runCli } from './run-cli';

let h: Harness;
let scratch: string;
const ran: string[] = [];

beforeAll(async () => {
  h = await startHarness(
    'cli-batch',
    defineConfig({
      tools: [
        defineTool({
          name: 'deploy',
          description: 'deploys',
          input: z.object({ env: z.string() }),
          approval: 'ask',
          approvalTimeoutMs: 5 * 60_000,
          execute: ({ env }) => {
            ran.push(env);
            return `deployed ${env}`;
          },
        }),
      ],
    }),
  );
  scratch = fs.mkdtempSync(path.join(inject('runDir'), 'cli-batch-'));
});
afterAll(() => h?.close());

const cli = (args: string[]) => runCli(args, { address: inject('temporalAddress'), taskQueue: h.taskQueue });

function callsFile(name: string, body: object): string {
  const f = path.join(scratch, name);
  fs.writeFileSync(f, JSON.stringify(body));
  return f;
}

describe('sluice batch', () => {
  it('a second submission of a running batch attaches to it; another batch of the session is refused by name', async () => {
    const session = `attach-${process.pid}-${Date.now()}`;
    const env = `prod-${session}`;
    const file = callsFile('attach.json', {
      sessionId: session,
      turn: 1,
      step: 1,
      calls: [{ id: 'd', name: 'deploy', arguments: { env } }],
    });
    const wf = batchWorkflowId(session, 1, 1);
    const first = cli(['batch', file, '--json', '--state-dir', h.stateDir]);
    const asked = await pendingApproval(h.client, wf, () => true, { timeoutMs: 120_000 });

    // The very batch again, while it waits for a person: attached, not refused.
    const second = cli(['batch', file, '--json', '--state-dir', h.stateDir]);
    // A different batch of the same session while that one runs: refused, naming the running one.
    const other = await cli(['batch', file, '--step', '2', '--json', '--state-dir', h.stateDir]);
    expect(other.code).toBe(2);
    expect(other.output).toContain(`another batch still running (${wf})`);

    await h.client.decide({ approvalId: asked.approvalId, argsDigest: asked.argsDigest, decision: 'approve', by: 't' });
    const [a, b] = await Promise.all([first, second]);
    expect(a.code, a.output).toBe(0);
    expect(b.code, b.output).toBe(0);
    expect(JSON.parse(b.output)).toEqual(JSON.parse(a.output));
    expect(JSON.parse(a.output).results[0].result.content[0].text).toBe(`deployed ${env}`);

    // Finished: the same submission attaches again and returns the same outcome.
    const third = await cli(['batch', file, '--json', '--state-dir', h.stateDir]);
    expect(third.code, third.output).toBe(0);
    expect(JSON.parse(third.output)).toEqual(JSON.parse(a.output));
    expect(ran.filter((e) => e === env)).toHaveLength(1);

    // And a second approval of the decided ask: refused `decided`, by the CLI and the library.
    const again = await cli(['approve', asked.approvalId, '--by', 'late']);
    expect(again.code).toBe(1);
    expect(again.output).toContain(`approval ${asked.approvalId} was already decided: allowed-once by t`);
    const refused = await h.client.decide({ approvalId: asked.approvalId, decision: 'approve', by: 'late' }).then(
      () => undefined,
      (e) => e,
    );
    expect(refused).toBeInstanceOf(DecisionRefusedError);
    expect((refused as DecisionRefusedError).refusal).toMatchObject({
      code: 'decided',
      outcome: 'allowed-once',
      by: 't',
    });
  });

  it('a calls file that names no session is refused with what to do, and runs nothing', async () => {
    const file = callsFile('calls.json', [{ id: 'd', name: 'deploy', arguments: { env: 'nameless' } }]);
    const r = await cli(['batch', file, '--state-dir', h.stateDir]);
    expect(r.code).toBe(2);
    expect(r.output).toMatch(
      /calls\.json names no session: add "sessionId": "\.\.\." to the file .* or pass --session ID/,
    );
    expect(ran).not.toContain('nameless');
    // Named on the command line, it runs (and asks).
    const session = `named-${process.pid}-${Date.now()}`;
    const named = cli(['batch', file, '--session', session, '--json', '--state-dir', h.stateDir]);
    const asked = await pendingApproval(h.client, batchWorkflowId(session, 1, 1), () => true, { timeoutMs: 120_000 });
    await h.client.decide({ approvalId: asked.approvalId, argsDigest: asked.argsDigest, decision: 'deny', by: 't' });
    expect((await named).code).toBe(3);
  });

  it('a calls file with arguments nested past the limit says which call and how deep, and runs nothing', async () => {
    // Written as text: JSON.stringify of a value this deep would overflow this test's own stack.
    const deep = `${'{"env":'.repeat(100_000)}"x"${'}'.repeat(100_000)}`;
    const file = path.join(scratch, 'deep.json');
    fs.writeFileSync(
      file,
      `{"sessionId":"deep-${process.pid}","calls":[{"id":"ok","name":"deploy","arguments":{"env":"deep-ok"}},{"id":"d","name":"deploy","arguments":${deep}}]}`,
    );
    const r = await cli(['batch', file, '--state-dir', h.stateDir]);
    expect(r.code).toBe(2);
    expect(r.output).toMatch(
      /deep\.json: calls\[1\] \(id "d", tool "deploy"\) has arguments that nest .* more than 256 levels deep/,
    );
    expect(r.output).not.toContain('Maximum call stack');
    expect(ran).not.toContain('deep-ok');
  });
});
