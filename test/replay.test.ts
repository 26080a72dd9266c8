// Recorded histories replay with the current workflow code; a non-deterministic change to the
// workflow fails `sluice replay` with exit code 1, so CI catches it.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { readHistoryFile } from '../client/history';
import { SLUICE_WORKFLOW_TYPES } from '../client/replay';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, type Harness } from './harness';
import { runCli as cli, spawnCli as sluice } from './run-cli';

const FIXTURES = path.join(__dirname, 'fixtures', 'histories');
const FIXTURE = path.join(FIXTURES, '1.0.0', 'mixed-batch.json');
const ROOT = path.join(__dirname, '..');

let h: Harness;
let scratch: string;
beforeAll(async () => {
  h = await startHarness(
    'replay',
    defineConfig({
      tools: [
        defineTool({
          name: 'echo',
          description: 'echo',
          input: z.object({ text: z.string() }),
          execute: ({ text }) => text,
        }),
      ],
    }),
  );
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-replay-'));
});
afterAll(async () => {
  await h?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

/** A copy of the workflow code that can be bundled on its own, optionally with one edit. */
function workflowCopy(name: string, edit?: (callPipeline: string) => string): string {
  const dir = path.join(scratch, name);
  for (const sub of ['workflows', 'pipeline', 'codec'])
    fs.cpSync(path.join(ROOT, sub), path.join(dir, sub), { recursive: true });
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  if (edit) {
    const file = path.join(dir, 'workflows', 'call-pipeline.ts');
    const before = fs.readFileSync(file, 'utf8');
    const after = edit(before);
    expect(after, 'the edit must change the workflow code').not.toBe(before);
    fs.writeFileSync(file, after);
  }
  return path.join(dir, 'workflows', 'index.ts');
}

describe('replay', () => {
  it('the recorded fixture replays against the current workflow bundle', async () => {
    const { history, workflowId } = readHistoryFile(FIXTURE);
    expect(workflowId).toBe('sluice-batch:fixture-mixed:1:1');
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, workflowId);
  });

  it("`sluice replay test/fixtures/histories` replays every released version's fixtures with the current code", async () => {
    const releases = fs.readdirSync(FIXTURES).filter((d) => fs.statSync(path.join(FIXTURES, d)).isDirectory());
    // The replay promise starts at 1.0.0, the first release anyone could install.
    expect(releases).toEqual(expect.arrayContaining(['1.0.0']));
    expect(releases.filter((r) => r.startsWith('0.'))).toEqual([]);
    const files = releases.flatMap((d) => fs.readdirSync(path.join(FIXTURES, d)).filter((f) => f.endsWith('.json')));
    const r = await cli(['replay', FIXTURES, '--json']);
    expect(r.code, r.output).toBe(0);
    const results = JSON.parse(r.output);
    expect(results).toHaveLength(files.length);
    for (const release of releases)
      expect(results.some((x: { source: string }) => x.source.includes(`${path.sep}${release}${path.sep}`))).toBe(true);
    expect(results.every((x: { ok: boolean }) => x.ok)).toBe(true);
    // The CLI bundles the workflow code from source, then replays twenty histories: over a minute
    // on a loaded machine.
  }, 240_000);

  it('`sluice export` writes a history that `sluice replay` replays; a non-deterministic change fails with exit 1', async () => {
    const handle = await h.client.startBatch(
      batch([
        { name: 'echo', args: { text: 'a' } },
        { name: 'echo', args: { text: 'b' } },
      ]),
    );
    await handle.result();
    const exported = path.join(scratch, 'exported.json');
    const exp = await cli(['export', handle.workflowId, '--out', exported, '--address', inject('temporalAddress')]);
    expect(exp.code, exp.output).toBe(0);
    expect(JSON.parse(fs.readFileSync(exported, 'utf8')).events[0].eventType).toBe(
      'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
    );

    const same = await cli(['replay', exported, FIXTURE, '--workflows', workflowCopy('unchanged')]);
    expect(same.code, same.output).toBe(0);
    expect(same.output).toContain('2 history(ies) replayed with no determinism failure');

    // A timer before pre-execute: the code now issues a command the recorded history never had.
    const broken = workflowCopy('timer-before-preflight', (src) => {
      const preflight = 'let pre: PreflightResult;';
      expect(src, 'the edit needs the preflight line of call-pipeline.ts').toContain(preflight);
      // Admission is a Stage (stage-runner.ts): it waits with yield*, not await.
      const timed = src.replace(preflight, `yield* waitFor(sleep('1 ms'));\n    ${preflight}`);
      return `import { sleep } from '@temporalio/workflow';\n${timed}`;
    });
    const failed = await cli(['replay', FIXTURE, '--workflows', broken]);
    expect(failed.code, failed.output).toBe(1);
    expect(failed.output).toMatch(/FAILED {2}sluice-batch:fixture-mixed:1:1 \(.*mixed-batch\.json\): nondeterminism/);
    // Two workflow bundles are built from source here: minutes on a loaded machine.
  }, 240_000);

  it("a history of the user's own workflow, replayed without --workflows, names the missing type instead of non-determinism", async () => {
    // The user's parent workflow: a recorded history whose workflow type Sluice's bundle lacks.
    const recorded = JSON.parse(fs.readFileSync(FIXTURE, 'utf8'));
    recorded.events[0].workflowExecutionStartedEventAttributes.workflowType.name = 'myAgent';
    const own = path.join(scratch, 'my-agent.json');
    fs.writeFileSync(own, JSON.stringify(recorded));
    // The bin, as a user runs it (from the checkout it runs the TypeScript source).
    const r = sluice(['replay', own]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stdout).toContain(
      "workflow type myAgent is not in Sluice's workflow bundle; pass --workflows <file> with your workflows",
    );
    expect(r.stdout).not.toMatch(/nondeterminism|no longer matches/);
    const json = sluice(['replay', own, '--json']);
    expect(JSON.parse(json.stdout)[0].failure).toBe('unknown-workflow-type');
  });

  it('a run with no completed workflow task yet is reported as skipped, beside one that replays, and nothing waits', async () => {
    // A session run just continued-as-new, its first task held back by the server's backoff: its
    // history is the started event alone. The SDK's replayer waited for its next event forever.
    const recorded = JSON.parse(fs.readFileSync(FIXTURE, 'utf8'));
    const fresh = path.join(scratch, 'just-started.json');
    fs.writeFileSync(fresh, JSON.stringify({ events: recorded.events.slice(0, 1) }));
    const r = sluice(['replay', fresh, FIXTURE], {}, 120_000);
    expect(r.status, `${r.error ?? ''} ${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(
      /skipped sluice-batch:fixture-mixed:1:1 \(.*just-started\.json\): no workflow task completed yet/,
    );
    expect(r.stdout).toMatch(/ok {6}sluice-batch:fixture-mixed:1:1 \(.*mixed-batch\.json\)/);
    expect(r.stdout).toContain('1 history(ies) replayed with no determinism failure, 1 skipped (nothing recorded yet)');
  }, 150_000);

  it("the workflow types replay treats as Sluice's are the ones workflows/index.ts exports", () => {
    const index = fs.readFileSync(path.join(ROOT, 'workflows', 'index.ts'), 'utf8');
    const exported = [...index.matchAll(/^export \{ (\w+) \}/gm)].map((m) => m[1]);
    expect([...SLUICE_WORKFLOW_TYPES].sort()).toEqual(exported.sort());
  });

  it('a missing or malformed history is a clear usage problem, not a crash', async () => {
    const garbage = path.join(scratch, 'garbage.json');
    fs.writeFileSync(garbage, '{"not": "a history"}');
    const r = await cli(['replay', garbage]);
    expect(r.code).toBe(1);
    expect(r.output).toContain('is not a workflow history');
    const none = await cli(['replay']);
    expect(none.code).toBe(2);
  });
});
