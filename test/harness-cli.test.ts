// The real harness CLIs in front of Sluice, end to end: Claude Code (`claude -p`), Codex (`codex
// exec`), Gemini CLI (`gemini -p`) and OpenCode (`opencode run`), installed from npm at pinned
// versions (harness-cli/clis.ts), each driven by a scripted model on 127.0.0.1
// (harness-cli/fake-model.ts) that asks its shell tool to run a command, with the harness's hooks
// (OpenCode's: the plugin `sluice hook install opencode` writes) running the real
// `bin/sluice.js hook <dialect>` against the run's dev server and a worker in its own process
// (harness-cli/worker.config.ts).
//
// The commands are `./mark <name>`, a script in the harness's project that appends a line to
// runs/<name>: what ran, and how often, is read from there, not from what anyone reports. The
// worker's rules allow `./mark allowed-*`, deny `./mark denied-*` and ask about `./mark asked-*`.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import type { PendingApproval } from '../pipeline/types';
import { eventually } from './eventually';
import { type ChildWorker, type Harness, spawnWorker, startHarness } from './harness';
import { HARNESS_CLIS, type HarnessCli, installHarnessClis, type Ran, runHarness } from './harness-cli/clis';
import { type FakeModel, startFakeModel } from './harness-cli/fake-model';
import { runProcess } from './run-process';

// Real CLIs and a hook process per tool call, each loading TypeScript, on a loaded machine.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const ROOT = path.join(__dirname, '..');
const WORKER_CONFIG = path.join(__dirname, 'harness-cli', 'worker.config.ts');
/** The deciding hooks' `--timeout`: long enough that a person's decision reaches the waiting hook. */
const WAITING_HOOK_S = 300;

let h: Harness;
let model: FakeModel;
let worker: ChildWorker | undefined;
let dir: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(inject('runDir'), 'harness-cli-'));
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
  const [harness, fake] = await Promise.all([
    startHarness('harness-cli', { tools: [] }, { autoStart: false }),
    startFakeModel(),
    installHarnessClis(),
  ]);
  h = harness;
  model = fake;
  process.env.SLUICE_TEST_POLICY_WS = policy;
  await startWorker();
});

afterAll(async () => {
  await worker?.kill();
  await model?.close();
  await h?.close();
});

async function startWorker() {
  worker = spawnWorker(WORKER_CONFIG, h.taskQueue, h.stateDir, {
    SLUICE_TEST_POLICY_WS: path.join(dir, 'policy'),
  });
  await worker.ready;
}

/** A project folder with the `mark` script, for one harness run (or a few that share its runs/). */
function project(name: string): string {
  const p = path.join(dir, name);
  fs.mkdirSync(path.join(p, 'runs'), { recursive: true });
  fs.writeFileSync(path.join(p, 'mark'), '#!/bin/sh\necho ran >> "$(dirname "$0")/runs/$1"\n', { mode: 0o755 });
  return p;
}

/** How many times `./mark <name>` ran in the project. */
function runs(projectDir: string, name: string): number {
  const f = path.join(projectDir, 'runs', name);
  return fs.existsSync(f) ? fs.readFileSync(f, 'utf8').split('\n').filter(Boolean).length : 0;
}

function harness(
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
function approvalFor(name: string, seen: string[] = []): Promise<PendingApproval> {
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
function sluice(args: string[], env: Record<string, string> = {}): Promise<Ran> {
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
async function decided(verb: 'approve' | 'deny', p: PendingApproval, extra: string[] = []) {
  const r = await decide(verb, p, extra);
  expect(r.code, shown(r)).toBe(0);
}

/** What the harness printed, for an assertion's message. */
const shown = (r: Ran) => `exit ${r.code}\nstdout: ${r.stdout.slice(-3000)}\nstderr: ${r.stderr.slice(-3000)}`;

const CLIS = Object.keys(HARNESS_CLIS) as HarnessCli[];

describe.concurrent('each harness CLI decided by Sluice', () => {
  for (const cli of CLIS) {
    it(`${cli} ${HARNESS_CLIS[cli].version}: an allowed command runs; a denied one never runs and the harness shows Sluice's reason`, async () => {
      const p = project(`${cli}-allow-deny`);
      const allowed = await harness(cli, p, `RUN: ./mark allowed-1-${cli}`);
      expect(runs(p, `allowed-1-${cli}`), shown(allowed)).toBe(1);
      const denied = await harness(cli, p, `RUN: ./mark denied-1-${cli}`);
      expect(runs(p, `denied-1-${cli}`), shown(denied)).toBe(0);
      // The model read Sluice's reason as the tool's result and ended with it (FINISHED: <result>).
      expect(denied.stdout, shown(denied)).toMatch(/FINISHED:[^]*Sluice/);
      expect(denied.stdout, shown(denied)).toContain('./mark denied-*');
    });

    it(`${cli}: an asked command runs once after \`sluice approve\`, and never after \`sluice deny\``, async () => {
      const p = project(`${cli}-ask`);
      const approving = harness(cli, p, `RUN: ./mark asked-yes-${cli}`);
      const yes = await approvalFor(`asked-yes-${cli}`);
      await decided('approve', yes);
      const approved = await approving;
      expect(runs(p, `asked-yes-${cli}`), shown(approved)).toBe(1);

      const denying = harness(cli, p, `RUN: ./mark asked-no-${cli}`);
      const no = await approvalFor(`asked-no-${cli}`);
      await decided('deny', no, ['--reason', 'not on a Saturday']);
      const denied = await denying;
      expect(runs(p, `asked-no-${cli}`), shown(denied)).toBe(0);
      expect(denied.stdout, shown(denied)).toContain('not on a Saturday');
    });
  }

  it('Gemini CLI: the identical call again after an approved one ran is asked afresh (its AfterTool was recorded)', async () => {
    const p = project('gemini-twice');
    // The model makes the same call twice in a row; Gemini CLI sends no tool_use_id.
    const running = harness('gemini', p, 'RUN: ./mark asked-twice\nTIMES: 2');
    const first = await approvalFor('asked-twice');
    await decided('approve', first);
    const second = await approvalFor('asked-twice', [first.approvalId]);
    expect(runs(p, 'asked-twice')).toBe(1);
    await decided('deny', second, ['--reason', 'once is enough']);
    const r = await running;
    expect(runs(p, 'asked-twice'), shown(r)).toBe(1);
    expect(r.stdout, shown(r)).toContain('once is enough');
  });

  it('Claude Code -p: an ask the hook gives up on is refused; the model, told to run it again, gets the approval', async () => {
    const p = project('claude-headless');
    // A short hook time: the hook answers `ask` (fail closed) while the approval still waits, and
    // `claude -p` refuses the call at once; the reason tells the model to run the same call again.
    const hookS = 15;
    const running = harness('claude', p, 'RUN: ./mark asked-headless', hookS);
    const pending = await approvalFor('asked-headless');
    await eventually('the model to read the refusal', () =>
      model.log.some((l) => JSON.stringify(l.body).includes(`sluice approve ${pending.approvalId}`)),
    );
    // The person decides after the asking hook's time is over: attached to by the call asked
    // again, or applied to it as a late decision, it reaches the repeated call either way.
    const after = Date.parse(pending.askedAt) + (hookS + 1) * 1000;
    await eventually('the asking hook to be past its time', () => Date.now() > after);
    await decided('approve', pending);
    const r = await running;
    expect(runs(p, 'asked-headless'), shown(r)).toBe(1);
  });
});

describe('a harness that will not run the hook', () => {
  it("Codex: a project's .codex/hooks.json, project untrusted and hooks unreviewed, is skipped silently; `sluice hook doctor codex` says so", async () => {
    const p = project('codex-untrusted');
    const r = await harness('codex', p, 'RUN: ./mark denied-untrusted\nUNESCALATED', WAITING_HOOK_S, {
      untrustedProjectHooks: true,
    });
    // The policy denies it, yet it ran: Codex never called the hook (which fails closed).
    expect(runs(p, 'denied-untrusted'), shown(r)).toBe(1);
    const doctor = await sluice(['hook', 'doctor', 'codex', '--project', p], {
      HOME: path.join(p, '.home-codex'),
      CODEX_HOME: path.join(p, '.home-codex', 'codex'),
    });
    expect(doctor.code, shown(doctor)).toBe(1);
    expect(doctor.stdout).toMatch(/FAIL .*not trusted/);
    expect(doctor.stdout).toMatch(/will NOT run/);
  });
});

describe('the worker is killed while approvals wait', () => {
  it('every harness: the hook keeps waiting, a new worker takes over, the approval arrives and the command runs once', async () => {
    const projects = Object.fromEntries(CLIS.map((cli) => [cli, project(`${cli}-killed`)]));
    const running = CLIS.map((cli) => harness(cli, projects[cli], `RUN: ./mark asked-killed-${cli}`));
    const pending = await Promise.all(CLIS.map((cli) => approvalFor(`asked-killed-${cli}`)));
    await worker!.kill('SIGKILL');
    await startWorker();
    for (const p of pending) await decided('approve', p);
    const ran = await Promise.all(running);
    CLIS.forEach((cli, i) => expect(runs(projects[cli], `asked-killed-${cli}`), shown(ran[i])).toBe(1));
  });
});
