// The command line's small promises: JSON on stdout stays JSON, every flag a command reads (and
// every flag its errors point to) is in its --help, and a decision sent by signal is reported back.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { COMMAND_HELP } from '../cli';
import type { PendingApproval } from '../pipeline/types';
import { defineConfig } from '../define/config';
import { readSessionLog } from '../stores/sink';
import { batch, startHarness, type Harness } from './harness';
import { pendingApproval } from './eventually';
import { runCli as cli, spawnCli } from './run-cli';
import { deployTool } from './fixtures/deploy-tool';

const ROOT = path.join(__dirname, '..');
const FIXTURE = path.join(__dirname, 'fixtures', 'histories', '1.0.0', 'mixed-batch.json');

let h: Harness;
let scratch: string;
beforeAll(async () => {
  h = await startHarness(
    'cli',
    defineConfig({
      tools: [deployTool()],
    }),
  );
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-cli-'));
});
afterAll(async () => {
  await h?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const pendingOf = (workflowId: string): Promise<PendingApproval> => pendingApproval(h.client, workflowId);

describe('sluice CLI', () => {
  it('`replay --json` prints only JSON on stdout, even when a replay fails', () => {
    // A copy of the workflow code with a timer first thing: the fixture no longer replays.
    const dir = path.join(scratch, 'broken');
    for (const sub of ['workflows', 'pipeline', 'codec'])
      fs.cpSync(path.join(ROOT, sub), path.join(dir, sub), { recursive: true });
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    const file = path.join(dir, 'workflows', 'batch.ts');
    const before = fs.readFileSync(file, 'utf8');
    const start = 'export async function toolBatch(input: BatchInput): Promise<BatchOutputWire> {';
    const after = `import { sleep } from '@temporalio/workflow';\n${before.replace(start, `${start}\n  await sleep('1 ms');`)}`;
    expect(before).toContain(start);
    fs.writeFileSync(file, after);

    const r = spawnCli(['replay', FIXTURE, '--workflows', path.join(dir, 'workflows', 'index.ts'), '--json'], {
      FORCE_COLOR: '1',
    });
    expect(r.status, r.stderr).toBe(1);
    const results = JSON.parse(r.stdout);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ ok: false, failure: 'nondeterminism' });
  }, 240_000); // bundles a copy of the workflow code in a child process: a minute or more on a loaded machine

  it('`dev --help` and `approve --help` list every flag the commands read and their errors mention', async () => {
    const dev = await cli(['dev', '--help']);
    expect(dev.code).toBe(0);
    for (const flag of [
      '--port',
      '--ui-port',
      '--headless',
      '--config',
      '--state-dir',
      '--task-queue',
      '--inbox-host',
      '--inbox-port',
      '--no-inbox',
      '--trusted-user-header',
    ])
      expect(dev.output).toContain(flag);
    const approve = await cli(['approve', '--help']);
    expect(approve.code).toBe(0);
    for (const flag of [
      '--by',
      '--reason',
      '--digest',
      '--workflow',
      '--signal',
      '--wait',
      '--wait-timeout',
      '--json',
      '--address',
    ])
      expect(approve.output).toContain(flag);
    expect((await cli(['help', 'deny'])).output).toBe(COMMAND_HELP.approve);
    // What the error messages of these commands point to is listed too.
    const source = fs.readFileSync(path.join(ROOT, 'cli', 'dev-runtime.ts'), 'utf8');
    for (const flag of source.match(/--[a-z-]+/g) ?? []) expect(dev.output).toContain(flag);
  });

  it('`--version` names the copy the CLI runs; no help names a file the package does not ship', async () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      version: string;
      files: string[];
    };
    const v = await cli(['--version']);
    expect(v.code).toBe(0);
    // From the checkout the CLI runs its TypeScript source (bin/sluice.js).
    expect(v.output).toBe(`sluice ${pkg.version} (source) at ${fs.realpathSync(ROOT)}`);
    const helps = [(await cli(['--help'])).output, ...Object.values(COMMAND_HELP)].join('\n');
    const named = helps.match(/(?<![\w.-])(?:[\w-]+\/)+[\w.-]+\.(?:md|ts|js|json|txt)\b/g) ?? [];
    expect(named.length).toBeGreaterThan(0);
    const shipped = (file: string) => pkg.files.some((f) => file === f || file.startsWith(`${f}/`));
    expect(named.filter((f) => !shipped(f))).toEqual([]);
    expect(helps).not.toContain('test/fixtures');
  });

  it('`batch --help` documents its exit codes', async () => {
    const r = await cli(['batch', '--help']);
    expect(r.code).toBe(0);
    expect(r.output).toMatch(/Exit codes:\n\s+0 .+\n\s+1 .+\n(.+\n)*\s+2 .+\n(.+\n)*\s+3 /);
    expect(r.output).toContain('--start-seq');
  });

  it('a decision sent by signal is reported back: applied, or refused and why', async () => {
    const address = inject('temporalAddress');
    const common = ['--address', address, '--task-queue', h.taskQueue];

    const first = await h.client.startBatch(batch([{ name: 'deploy', args: { env: 'staging' } }]));
    const p1 = await pendingOf(first.workflowId);
    const wrong = await cli([
      'approve',
      p1.approvalId,
      '--signal',
      '--by',
      'carol',
      '--digest',
      'sha256:nope',
      ...common,
    ]);
    expect(wrong.code, wrong.output).toBe(1);
    expect(wrong.output).toContain('signal refused (digest-mismatch)');
    const applied = await cli(['approve', p1.approvalId, '--signal', '--by', 'alice', ...common]);
    expect(applied.code, applied.output).toBe(0);
    expect(applied.output).toBe(`${p1.approvalId}: allowed-once (signal applied)`);
    const late = await cli([
      'deny',
      p1.approvalId,
      '--signal',
      '--by',
      'bob',
      '--json',
      '--workflow',
      first.workflowId,
      ...common,
    ]);
    expect(late.code, late.output).toBe(1);
    expect(JSON.parse(late.output)).toMatchObject({
      status: 'refused',
      refusal: { code: 'decided', by: 'alice', outcome: 'allowed-once' },
    });
    const out = await first.result();
    expect(out.results[0].result.isError).toBeFalsy();
  });

  it('`sluice batch` without --start-seq continues the session from its log and the server', async () => {
    const session = `cli-seq-${Date.now()}`;
    const file = path.join(scratch, 'calls.json');
    fs.writeFileSync(file, JSON.stringify([{ id: 'c1', name: 'nope', arguments: {} }]));
    const common = ['--address', inject('temporalAddress'), '--task-queue', h.taskQueue, '--state-dir', h.stateDir];
    const first = await cli(['batch', file, '--session', session, '--json', ...common]);
    expect(first.code, first.output).toBe(3); // an unknown tool: the batch completes with an error result
    const out1 = JSON.parse(first.output);
    expect(out1.events[0].seq).toBe(0);
    const second = await cli(['batch', file, '--session', session, '--step', '2', '--json', ...common]);
    expect(second.code, second.output).toBe(3);
    const out2 = JSON.parse(second.output);
    expect(out2.events[0].seq).toBe(out1.nextSeq);
    const logged = await readSessionLog(h.stateDir, session);
    expect(logged.map((e) => e.seq)).toEqual([...out1.events, ...out2.events].map((e) => e.seq));
    expect(new Set(logged.map((e) => e.seq)).size).toBe(logged.length);
  });
});
