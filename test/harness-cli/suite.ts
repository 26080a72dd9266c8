// The set-up and helpers every test/harness-cli-*.test.ts file shares: the real harness CLIs in
// front of Sluice, end to end: Claude Code (`claude -p`), Codex (`codex exec`), Gemini CLI
// (`gemini -p`) and OpenCode (`opencode run`), installed from npm at pinned versions (clis.ts),
// each driven by a scripted model on 127.0.0.1 (fake-model.ts) that asks its shell tool to run a
// command, with the harness's hooks (OpenCode's: the plugin `sluice hook install opencode` writes)
// running the real `bin/sluice.js hook <dialect>` against the run's dev server and a worker on
// worker.config.ts: in the test's process, or in a process of its own for the file that kills it
// (a worker's process is TypeScript through tsx, seconds of CPU). A file per CLI, so the four run
// on workers of their own; each file has its own harness, model and worker.
//
// The commands are `./mark <name>`, a script in the harness's project that appends a line to
// runs/<name>: what ran, and how often, is read from there, not from what anyone reports. The
// worker's rules allow `./mark allowed-*`, deny `./mark denied-*` and ask about `./mark asked-*`.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, expect, inject, it, vi } from 'vitest';
import type { PendingApproval } from '../../pipeline/types';
import { eventually } from '../eventually';
import { type ChildWorker, type Harness, spawnWorker, startHarness } from '../harness';
import { runProcess } from '../run-process';
import { loadConfig } from '../../worker/load-config';
import { HARNESS_CLIS, type HarnessCli, installHarnessClis, type Ran, runHarness } from './clis';
import { type FakeModel, startFakeModel } from './fake-model';

const ROOT = path.join(__dirname, '..', '..');
const WORKER_CONFIG = path.join(__dirname, 'worker.config.ts');
/** The deciding hooks' `--timeout`: long enough that a person's decision reaches the waiting hook. */
export const WAITING_HOOK_S = 300;

export const CLIS = Object.keys(HARNESS_CLIS) as HarnessCli[];

let h: Harness;
let model: FakeModel;
let worker: ChildWorker | undefined;
let dir: string;

/**
 * The file's harness, scripted model and worker, started before its tests and stopped after;
 * `ownProcess`: the worker in a process of its own, which a test can kill (killWorker).
 */
export function useHarnessClis(name: string, { ownProcess = false } = {}): void {
  // Real CLIs and a hook process per tool call, each loading TypeScript, on a loaded machine.
  vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(inject('runDir'), `${name}-`));
    const policy = path.join(dir, 'policy');
    fs.mkdirSync(path.join(policy, '.claude'), { recursive: true });
    fs.writeFileSync(
      path.join(policy, '.claude', 'settings.json'),
      JSON.stringify({
        permissions: {
          allow: ['Bash(./mark allowed-*)'],
          deny: ['Bash(./mark denied-*)'],
          ask: ['Bash(./mark asked-*)'],
        },
      }),
    );
    // worker.config.ts reads it when it loads.
    process.env.SLUICE_TEST_POLICY_WS = policy;
    const config = ownProcess ? { tools: [] } : await loadConfig(WORKER_CONFIG);
    const [harness, fake] = await Promise.all([
      startHarness(name, config, { autoStart: !ownProcess }),
      startFakeModel(),
      installHarnessClis(),
    ]);
    h = harness;
    model = fake;
    if (ownProcess) await startWorker();
  });

  afterAll(async () => {
    await worker?.kill();
    await model?.close();
    await h?.close();
  });
}

/** Starts the file's worker in a process of its own (`ownProcess`); resolves once it polls. */
export async function startWorker() {
  worker = spawnWorker(WORKER_CONFIG, h.taskQueue, h.stateDir, {
    SLUICE_TEST_POLICY_WS: path.join(dir, 'policy'),
  });
  await worker.ready;
}

/** Kills the file's worker with `signal`. */
export async function killWorker(signal: NodeJS.Signals): Promise<void> {
  await worker!.kill(signal);
}

/** The scripted model every harness of the file talks to. */
export function fakeModel(): FakeModel {
  return model;
}

/** A project folder with the `mark` script, for one harness run (or a few that share its runs/). */
export function project(name: string): string {
  const p = path.join(dir, name);
  fs.mkdirSync(path.join(p, 'runs'), { recursive: true });
  fs.writeFileSync(path.join(p, 'mark'), '#!/bin/sh\necho ran >> "$(dirname "$0")/runs/$1"\n', { mode: 0o755 });
  return p;
}

/** How many times `./mark <name>` ran in the project. */
export function runs(projectDir: string, name: string): number {
  const f = path.join(projectDir, 'runs', name);
  return fs.existsSync(f) ? fs.readFileSync(f, 'utf8').split('\n').filter(Boolean).length : 0;
}

export function harness(
  cli: HarnessCli,
  cwd: string,
  prompt: string,
  hookTimeoutS = WAITING_HOOK_S,
  extra: { untrustedProjectHooks?: boolean } = {},
): Promise<Ran> {
  return runHarness(cli, prompt, {
    cwd,
    home: path.join(cwd, `.home-${cli}`),
    model: model.base,
    sluice: { address: inject('temporalAddress'), taskQueue: h.taskQueue },
    hookTimeoutS,
    ...extra,
  });
}

/** The approval waiting for `./mark <name>` (other than those in `seen`), once it is asked. */
export function approvalFor(name: string, seen: string[] = []): Promise<PendingApproval> {
  return eventually(
    `an approval for ./mark ${name}`,
    async () =>
      (await h.client.approvals.list({ taskQueue: h.taskQueue })).find(
        (p) => JSON.stringify(p.arguments).includes(`./mark ${name}`) && !seen.includes(p.approvalId),
      ),
    { timeoutMs: 300_000 },
  );
}

/** `sluice <args>` in a process of its own. */
export function sluice(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return runProcess(process.execPath, [path.join(ROOT, 'bin', 'sluice.js'), ...args], {
    env: { ...process.env, ...env },
  });
}

/** `sluice approve|deny <id>`, as a person types it. */
function decide(verb: 'approve' | 'deny', p: PendingApproval, extra: string[] = []): Promise<Ran> {
  return sluice([
    verb,
    p.approvalId,
    '--workflow',
    p.workflowId,
    '--by',
    'erin',
    '--address',
    inject('temporalAddress'),
    '--task-queue',
    h.taskQueue,
    ...extra,
  ]);
}

/** `decide`, which must be applied. */
export async function decided(verb: 'approve' | 'deny', p: PendingApproval, extra: string[] = []) {
  const r = await decide(verb, p, extra);
  expect(r.code, shown(r)).toBe(0);
}

/** What the harness printed, for an assertion's message. */
export const shown = (r: Ran) => `exit ${r.code}\nstdout: ${r.stdout.slice(-3000)}\nstderr: ${r.stderr.slice(-3000)}`;

/**
 * The two tests every harness CLI has: allow and deny, then ask with `sluice approve` and `deny`;
 * each one run of the harness whose model calls the shell twice (a harness's start is seconds of
 * CPU, and the second call shows the harness carries on after Sluice's answer to the first).
 */
export function decidedBySluice(cli: HarnessCli): void {
  it(`${cli} ${HARNESS_CLIS[cli].version}: an allowed command runs; a denied one never runs and the harness shows Sluice's reason`, async () => {
    const p = project(`${cli}-allow-deny`);
    const r = await harness(cli, p, `RUN: ./mark allowed-1-${cli}\nRUN: ./mark denied-1-${cli}`);
    expect(runs(p, `allowed-1-${cli}`), shown(r)).toBe(1);
    expect(runs(p, `denied-1-${cli}`), shown(r)).toBe(0);
    // The model read Sluice's reason as the tool's result and ended with it (FINISHED: <result>).
    expect(r.stdout, shown(r)).toMatch(/FINISHED:[^]*Sluice/);
    expect(r.stdout, shown(r)).toContain('./mark denied-*');
  });

  it(`${cli}: an asked command runs once after \`sluice approve\`, and never after \`sluice deny\``, async () => {
    const p = project(`${cli}-ask`);
    const running = harness(cli, p, `RUN: ./mark asked-yes-${cli}\nRUN: ./mark asked-no-${cli}`);
    const yes = await approvalFor(`asked-yes-${cli}`);
    await decided('approve', yes);
    const no = await approvalFor(`asked-no-${cli}`);
    // The model makes its second call once the first one's result is in: the approved command ran.
    expect(runs(p, `asked-yes-${cli}`)).toBe(1);
    await decided('deny', no, ['--reason', 'not on a Saturday']);
    const r = await running;
    expect(runs(p, `asked-yes-${cli}`), shown(r)).toBe(1);
    expect(runs(p, `asked-no-${cli}`), shown(r)).toBe(0);
    expect(r.stdout, shown(r)).toContain('not on a Saturday');
  });
}
