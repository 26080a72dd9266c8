// `sluice hook`: each harness's documented hook payload (test/fixtures/hook/, with the pages they
// come from) fed to `sluice hook <dialect>`, against the run's dev server and a worker whose config
// is harnessTools() + Claude Code permission rules from a project's .claude/settings.json. Asserts
// what the harness would read back: stdout JSON, stderr, exit code. The command's own function
// (hookMain, with this file's stdin and stdout) answers most payloads; the real `bin/sluice.js
// hook` process answers where the process is what is tested (an answer, the exit code of bad
// input, `hook serve`), since each process is a Node start that loads TypeScript through tsx.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { inject } from 'vitest';
import { WorkflowNotFoundError } from '@temporalio/client';
import { hookCallKey } from '../client/hook/hook-key';
import { SluiceClient } from '../client/client';
import {
  callInput,
  type HarnessDialect,
  type HarnessRequest,
  parseHookPayload,
  renderAnswer,
} from '../client/hook/dialects';
import { callStep, decide, startInOwnBlock } from '../client/hook/service';
import { commandHooks, harnessTools, permissionRules } from '../hooks';
import { batchWorkflowId } from '../workflows/definitions';
import { defineConfig } from '../define/config';
import { eventually, pendingApprovals } from './eventually';
import { type Harness, startHarness } from './harness';
import { runCli } from './run-cli';
import { runHook as inProcess, spawnHook as inOwnProcess } from './run-hook';

// A test that waits on a deny timeout or a hook's own timeout, or starts a real hook process
// (a Node start that loads TypeScript through tsx), takes many seconds at a load of 16 and more:
// the file's tests get minutes, not vitest's one.
vi.setConfig({ testTimeout: 300_000 });

const BIN = path.join(__dirname, '..', 'bin', 'sluice.js');
const FIXTURES = path.join(__dirname, 'fixtures', 'hook');

let h: Harness;
let workspace: string;
let hookWarnings: readonly string[] = [];
/** The hooks' environment: a config folder of this run's, where the first hook keeps the call key. */
let hookEnv: NodeJS.ProcessEnv;
let callKey: Buffer;

beforeAll(async () => {
  workspace = fs.mkdtempSync(path.join(inject('runDir'), 'hook-project-'));
  hookEnv = { ...process.env, XDG_CONFIG_HOME: path.join(workspace, 'config') };
  // The hooks run in this process read the same config folder as the hook processes.
  process.env.XDG_CONFIG_HOME = hookEnv.XDG_CONFIG_HOME;
  callKey = hookCallKey(hookEnv);
  fs.mkdirSync(path.join(workspace, '.claude'));
  fs.writeFileSync(
    path.join(workspace, '.claude', 'settings.json'),
    JSON.stringify({
      permissions: {
        allow: ['Bash(npm test:*)', 'Write(/src/**)'],
        deny: ['Bash(rm -rf:*)'],
        ask: ['Bash(git push:*)'],
      },
      // The harness's own line: the worker reading the same file must not run it on its calls.
      hooks: { PreToolUse: [{ matcher: '*', hooks: [{ type: 'command', command: 'npx sluice hook claude' }] }] },
    }),
  );
  const rules = permissionRules({ workspace });
  const hooks = commandHooks({ workspace });
  hookWarnings = hooks.warnings;
  h = await startHarness(
    'hook',
    defineConfig({ tools: harnessTools(), preExecute: [...hooks.preExecute, ...rules.preExecute] }),
  );
});

afterAll(async () => {
  await h?.close();
});

let counter = 0;
/** A fixture with this test's own session (and call id, command), so nothing is shared between tests. */
function payload(file: string, patch: { command?: string; toolUseId?: string | null; session?: string } = {}) {
  const doc = JSON.parse(fs.readFileSync(path.join(FIXTURES, file), 'utf8'));
  counter++;
  doc.session_id = patch.session ?? `hook-${process.pid}-${Date.now()}-${counter}`;
  if (patch.command !== undefined) doc.tool_input.command = patch.command;
  if (patch.toolUseId === null) delete doc.tool_use_id;
  else if (patch.toolUseId !== undefined || doc.tool_use_id !== undefined)
    doc.tool_use_id = patch.toolUseId ?? `toolu_${process.pid}_${counter}`;
  return doc;
}

const hookArgs = (dialect: string, args: string[]) => [
  dialect,
  '--address',
  inject('temporalAddress'),
  '--task-queue',
  h.taskQueue,
  '--timeout',
  '120',
  ...args,
];
const stdin = (input: unknown) => (typeof input === 'string' ? input : JSON.stringify(input));

/** `sluice hook <dialect>` answered by the command's function in this process. */
const runHook = (dialect: string, input: unknown, args: string[] = []) =>
  inProcess(hookArgs(dialect, args), stdin(input));

/** The real `bin/sluice.js hook <dialect>` process, as a harness runs it. */
const spawnHook = (dialect: string, input: unknown, args: string[] = []) =>
  inOwnProcess(hookArgs(dialect, args), stdin(input), hookEnv);

/** The batch a decide event starts for its call (occurrence n); Codex's Bash without its `description`. */
function decisionBatch(
  doc: { session_id: string; tool_name: string; tool_input: any },
  n = 0,
  dialect = 'claude',
): string {
  const toolInput = callInput(dialect as HarnessDialect, doc.tool_name, doc.tool_input);
  return batchWorkflowId(
    doc.session_id,
    n,
    callStep({ sessionId: doc.session_id, toolName: doc.tool_name, toolInput }, callKey),
  );
}

/** Resolves when `client` is first asked for the result of `workflowId`: the hook waits on that batch. */
function onResultWait(client: SluiceClient, workflowId: string): Promise<void> {
  const workflow = client.temporal.workflow;
  const getHandle = workflow.getHandle.bind(workflow);
  return new Promise((resolve) => {
    vi.spyOn(workflow, 'getHandle').mockImplementation((id, ...rest) => {
      const handle = getHandle(id, ...rest);
      if (id !== workflowId) return handle;
      const watchedHandle = Object.create(handle);
      watchedHandle.result = () => {
        resolve();
        return handle.result();
      };
      return watchedHandle;
    });
  });
}

/** Whether a workflow of that id was ever started. */
async function exists(workflowId: string): Promise<boolean> {
  try {
    await h.client.temporal.workflow.getHandle(workflowId).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

describe('Claude Code', () => {
  it('PreToolUse (the real hook process): an allow rule answers allow; the worker skipped its own `sluice hook` line', async () => {
    expect(hookWarnings.some((w) => w.includes('sluice hook'))).toBe(true);
    const r = await spawnHook('claude', payload('claude-pre-tool-use.json'));
    expect(r.code).toBe(0);
    expect(r.json).toEqual({
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        permissionDecision: 'allow',
        permissionDecisionReason: 'allowed by Sluice policy',
      },
    });
  });

  it('parallel tool calls: hooks of one session at once each get their own batch and answer', async () => {
    const session = `hook-parallel-${process.pid}-${Date.now()}`;
    const docs = [1, 2, 3].map((i) =>
      payload('claude-pre-tool-use.json', { session, command: `npm test -- --shard ${i}` }),
    );
    const answers = await Promise.all(docs.map((d) => runHook('claude', d)));
    for (const r of answers) expect(r.json.hookSpecificOutput.permissionDecision).toBe('allow');
  });

  it('PreToolUse: a deny rule answers deny with the rule as the reason', async () => {
    const r = await runHook('claude', payload('claude-pre-tool-use.json', { command: 'rm -rf build' }));
    expect(r.code).toBe(0);
    expect(r.json.hookSpecificOutput.permissionDecision).toBe('deny');
    expect(r.json.hookSpecificOutput.permissionDecisionReason).toMatch(/rm -rf/);
  });

  it('PreToolUse: ask → approved by a person while the hook waits → allow, and audit shows who', async () => {
    const doc = payload('claude-pre-tool-use.json', { command: 'git push origin main' });
    const running = runHook('claude', doc);
    const wf = decisionBatch(doc);
    const [pending] = await pendingApprovals(h.client, wf, 1);
    expect(pending.toolName).toBe('Bash');
    await h.client.decide({ approvalId: pending.approvalId, decision: 'approve', by: 'alice', workflowId: wf });
    const r = await running;
    expect(r.code).toBe(0);
    expect(r.json.hookSpecificOutput).toEqual({
      hookEventName: 'PreToolUse',
      permissionDecision: 'allow',
      permissionDecisionReason: 'approved in Sluice by alice',
    });
    // The harness ran it; PostToolUse records its result into the same session.
    const post = payload('claude-post-tool-use.json', { session: doc.session_id, toolUseId: doc.tool_use_id });
    post.tool_name = 'Bash';
    post.tool_input = doc.tool_input;
    post.tool_response = {
      stdout: 'To github.com:acme/app.git\n   1a2b3c4..5d6e7f8  main -> main',
      stderr: '',
      interrupted: false,
    };
    const rec = await runHook('claude', post);
    expect(rec.code).toBe(0);
    expect(rec.stdout).toBe('');
    const audit = await runCli(['audit', doc.session_id, '--json'], { address: inject('temporalAddress') });
    expect(audit.code).toBe(0);
    const a = JSON.parse(audit.output);
    const calls = a.batches.flatMap((b: any) => b.calls);
    const decided = calls.find((c: any) => c.name === 'Bash');
    expect(decided.approval.outcome).toBe('allowed-once');
    expect(decided.approval.by).toBe('alice');
    const result = calls.find((c: any) => c.name === 'harness_result');
    expect(JSON.stringify(result)).toContain('main -> main');
    expect(JSON.stringify(result)).toContain(wf);
  });

  it('PreToolUse: ask → denied by a person → deny with their reason', async () => {
    const doc = payload('claude-pre-tool-use.json', { command: 'git push --force origin main' });
    const running = runHook('claude', doc);
    const wf = decisionBatch(doc);
    const [pending] = await pendingApprovals(h.client, wf, 1);
    await h.client.decide({
      approvalId: pending.approvalId,
      decision: 'deny',
      by: 'bob',
      reason: 'no force pushes to main',
      workflowId: wf,
    });
    const r = await running;
    expect(r.json.hookSpecificOutput.permissionDecision).toBe('deny');
    expect(r.json.hookSpecificOutput.permissionDecisionReason).toMatch(/no force pushes to main/);
  });

  it('PreToolUse: ask → nobody decides before the deny timeout → deny', async () => {
    const doc = payload('claude-pre-tool-use.json', { command: 'git push origin release' });
    const r = await runHook('claude', doc, ['--approval-timeout', '2']);
    expect(r.code).toBe(0);
    expect(r.json.hookSpecificOutput.permissionDecision).toBe('deny');
    expect(r.json.hookSpecificOutput.permissionDecisionReason).toMatch(/Sluice:/);
  });

  it('the hook gives up first: ask (fail closed); the late approval applies when the same call is asked again', async () => {
    const doc = payload('claude-pre-tool-use.json', { command: 'git push origin late' });
    const giving = runHook('claude', doc, ['--timeout', '15']);
    const wf = decisionBatch(doc);
    const [pending] = await pendingApprovals(h.client, wf, 1);
    const first = await giving;
    expect(first.code).toBe(0);
    expect(first.json.hookSpecificOutput.permissionDecision).toBe('ask');
    expect(first.json.hookSpecificOutput.permissionDecisionReason).toContain(pending.approvalId);
    await h.client.decide({ approvalId: pending.approvalId, decision: 'approve', by: 'carol', workflowId: wf });
    await eventually('the batch to finish', async () => (await h.client.readApprovals(wf)).running === false);
    // Claude Code then shows its permission dialog: its PermissionRequest (no tool_use_id) gets the decision.
    const again = payload('claude-permission-request.json', {
      session: doc.session_id,
      command: doc.tool_input.command,
    });
    again.tool_input = doc.tool_input;
    const r = await runHook('claude', again);
    expect(r.json).toEqual({
      hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } },
    });
  });

  it('PermissionRequest after a PreToolUse that gave up attaches to its batch, still waiting: one ask, its outcome', async () => {
    // PermissionRequest carries no tool_use_id; PreToolUse started the batch with one. The
    // PreToolUse hook gives up (ask) while the approval waits; the PermissionRequest then waits on
    // that same batch, and the person's decision, given once it waits there, is its answer.
    const doc = payload('claude-pre-tool-use.json', { command: 'git push origin attach' });
    const giving = runHook('claude', doc, ['--timeout', '20']);
    const wf = decisionBatch(doc);
    const [pending] = await pendingApprovals(h.client, wf, 1);
    const first = await giving;
    expect(first.json.hookSpecificOutput.permissionDecision).toBe('ask');
    expect((await h.client.readApprovals(wf)).running).toBe(true);
    // Decided in this process, through a client that says when the hook waits on the batch's result.
    const watched = new SluiceClient({ connection: h.connection, taskQueue: h.taskQueue });
    const waiting = onResultWait(watched, wf);
    const perm = payload('claude-permission-request.json', { session: doc.session_id });
    perm.tool_input = doc.tool_input;
    const answering = decide(parseHookPayload('claude', JSON.stringify(perm)), {
      sluice: watched,
      deadline: Date.now() + 240_000,
      budgetMs: 240_000,
      callKey,
    });
    await waiting;
    await h.client.decide({
      approvalId: pending.approvalId,
      decision: 'deny',
      by: 'ivan',
      reason: 'not from this branch',
      workflowId: wf,
    });
    const r = await answering;
    expect(r.workflowId).toBe(wf);
    expect(renderAnswer('claude', 'PermissionRequest', r.answer).stdout).toMatch(
      /"behavior":"deny","message":"Sluice:[^"]*not from this branch/,
    );
    expect(await exists(decisionBatch(doc, 1))).toBe(false);
  });

  it('a call whose result was recorded (PostToolUse) is not shared with the identical call after it', async () => {
    const doc = payload('claude-pre-tool-use.json', { command: 'git push origin twice', toolUseId: null });
    const running = runHook('claude', doc);
    const wf = decisionBatch(doc);
    const [pending] = await pendingApprovals(h.client, wf, 1);
    await h.client.decide({ approvalId: pending.approvalId, decision: 'approve', by: 'grace', workflowId: wf });
    expect((await running).json.hookSpecificOutput.permissionDecision).toBe('allow');
    // Within 30 s and with no tool_use_id, the same call asked again shares the decision...
    const again = await runHook('claude', doc);
    expect(again.json.hookSpecificOutput.permissionDecision).toBe('allow');
    expect(await exists(decisionBatch(doc, 1))).toBe(false);
    // ...until the harness says it ran: then the identical call is a new one, asked afresh.
    const post = payload('claude-post-tool-use.json', { session: doc.session_id, toolUseId: null });
    post.tool_name = 'Bash';
    post.tool_input = doc.tool_input;
    expect((await runHook('claude', post)).code).toBe(0);
    const third = runHook('claude', doc);
    const [second] = await pendingApprovals(h.client, decisionBatch(doc, 1), 1);
    await h.client.decide({
      approvalId: second.approvalId,
      decision: 'deny',
      by: 'grace',
      reason: 'it ran already',
      workflowId: decisionBatch(doc, 1),
    });
    const r = await third;
    expect(r.json.hookSpecificOutput.permissionDecision).toBe('deny');
    expect(r.json.hookSpecificOutput.permissionDecisionReason).toMatch(/it ran already/);
  });

  it('PermissionRequest: deny rule → behavior deny with a message; PostToolUseFailure is recorded', async () => {
    const doc = payload('claude-permission-request.json');
    const r = await runHook('claude', doc);
    expect(r.code).toBe(0);
    expect(r.json.hookSpecificOutput.hookEventName).toBe('PermissionRequest');
    expect(r.json.hookSpecificOutput.decision.behavior).toBe('deny');
    expect(r.json.hookSpecificOutput.decision.message).toMatch(/rm -rf/);
    const fail = payload('claude-post-tool-use-failure.json');
    const rec = await runHook('claude', fail);
    expect(rec.code).toBe(0);
    const out = await h.client.temporal.workflow
      .getHandle(
        batchWorkflowId(
          fail.session_id,
          0,
          callStep({ sessionId: fail.session_id, toolName: 'Bash', toolInput: fail.tool_input }, callKey, 'result'),
        ),
      )
      .result();
    expect(JSON.stringify(out)).toContain('Command exited with non-zero status code 1');
  });
});

describe("one call's decision never answers another on the same step", () => {
  // A 48-bit step can be shared by two calls (a birthday search finds a pair). The batch of a
  // harmless call is planted on the step of a harmful one, as that search would: the harmful call,
  // asked with no tool_use_id within the same-call window, must get its own batch and decision.
  function harmful(session: string): HarnessRequest {
    return {
      dialect: 'gemini',
      event: 'BeforeTool',
      kind: 'decide',
      sessionId: session,
      toolName: 'Bash',
      toolInput: { command: 'rm -rf /srv/data' },
    };
  }

  async function plant(session: string, step: number, command: string) {
    const calls = [{ id: 'harness-0', name: 'Bash', arguments: JSON.stringify({ command }) }];
    const { handle } = await startInOwnBlock(h.client, { sessionId: session, turn: 0, step, calls }, async (b) => b);
    return handle.workflowId;
  }

  const service = () => ({ sluice: h.client, deadline: Date.now() + 120_000, budgetMs: 120_000, callKey });

  it('a finished allow of other arguments is not attached to: the call is decided afresh (deny)', async () => {
    const session = `hook-collide-done-${process.pid}-${Date.now()}`;
    const req = harmful(session);
    const step = callStep(req, callKey);
    const planted = await plant(session, step, 'npm test');
    const out = await h.client.temporal.workflow.getHandle(planted).result();
    expect(JSON.stringify(out)).not.toContain('isError');
    const decided = await decide(req, service());
    expect(decided.answer.decision).toBe('deny');
    expect(decided.answer.reason).toMatch(/rm -rf/);
    expect(decided.workflowId).toBe(batchWorkflowId(session, 1, step));
  });

  it('a running ask of other arguments is not attached to: the call is decided afresh (deny)', async () => {
    const session = `hook-collide-running-${process.pid}-${Date.now()}`;
    const req = harmful(session);
    const step = callStep(req, callKey);
    const planted = await plant(session, step, 'git push origin collide');
    const [pending] = await pendingApprovals(h.client, planted, 1);
    const decided = await decide(req, service());
    expect(decided.answer.decision).toBe('deny');
    expect(decided.workflowId).toBe(batchWorkflowId(session, 1, step));
    // The planted ask was left alone, still waiting for its own person.
    expect((await h.client.readApprovals(planted)).pending.map((p) => p.approvalId)).toEqual([pending.approvalId]);
    await h.client.decide({ approvalId: pending.approvalId, decision: 'deny', by: 'test', workflowId: planted });
  });

  it('the same call asked again within the window still shares its batch', async () => {
    const session = `hook-collide-same-${process.pid}-${Date.now()}`;
    const req = { ...harmful(session), toolInput: { command: 'npm test -- same' } };
    const first = await decide(req, service());
    expect(first.answer.decision).toBe('allow');
    const again = await decide({ ...req, toolInput: { command: 'npm test -- same' } }, service());
    expect(again.workflowId).toBe(first.workflowId);
  });
});

describe('Codex', () => {
  it('PreToolUse: allow is an empty stdout (Codex supports only deny there); deny is its JSON', async () => {
    const allowed = await runHook('codex', payload('codex-pre-tool-use.json'));
    expect(allowed.code).toBe(0);
    expect(allowed.stdout).toBe('');
    const denied = await runHook('codex', payload('codex-pre-tool-use.json', { command: 'rm -rf /' }));
    expect(denied.json).toMatchObject({
      hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny' },
    });
  });

  it('PreToolUse: an ask the hook cannot wait out is a deny (an empty answer would let Codex run it)', async () => {
    const doc = payload('codex-pre-tool-use.json', { command: 'git push origin codex' });
    const giving = runHook('codex', doc, ['--timeout', '15']);
    await pendingApprovals(h.client, decisionBatch(doc), 1);
    const r = await giving;
    expect(r.json.hookSpecificOutput.permissionDecision).toBe('deny');
    expect(r.json.hookSpecificOutput.permissionDecisionReason).toMatch(/waiting for a person to approve/);
  });

  it("PermissionRequest's `description` does not make it another call: the PreToolUse approval answers it", async () => {
    const doc = payload('codex-pre-tool-use.json', { command: 'git push origin described' });
    const running = runHook('codex', doc);
    const wf = decisionBatch(doc, 0, 'codex');
    const [pending] = await pendingApprovals(h.client, wf, 1);
    await h.client.decide({ approvalId: pending.approvalId, decision: 'approve', by: 'heidi', workflowId: wf });
    expect((await running).stdout).toBe('');
    // Codex then asks its own approval, with the model's justification added to the input.
    const perm = payload('codex-permission-request.json', { session: doc.session_id, command: doc.tool_input.command });
    expect(perm.tool_input.description).toBeTruthy();
    const r = await runHook('codex', perm, ['--timeout', '30']);
    expect(r.json).toEqual({
      hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } },
    });
    expect(await exists(decisionBatch(doc, 1, 'codex'))).toBe(false);
  });

  it('PermissionRequest: ask → approved → behavior allow; PostToolUse recorded', async () => {
    const doc = payload('codex-permission-request.json');
    const running = runHook('codex', doc);
    const wf = decisionBatch(doc, 0, 'codex');
    const [pending] = await pendingApprovals(h.client, wf, 1);
    await h.client.decide({ approvalId: pending.approvalId, decision: 'approve', by: 'dave', workflowId: wf });
    const r = await running;
    expect(r.json).toEqual({
      hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } },
    });
    const post = payload('codex-post-tool-use.json', { session: doc.session_id, command: doc.tool_input.command });
    post.tool_input = doc.tool_input;
    const rec = await runHook('codex', post);
    expect(rec.code).toBe(0);
  });
});

describe('Gemini CLI', () => {
  it('BeforeTool: allow and deny, by the same Bash rules (run_shell_command is Bash)', async () => {
    const allowed = await runHook('gemini', payload('gemini-before-tool.json'));
    expect(allowed.json).toEqual({ decision: 'allow' });
    const denied = await runHook('gemini', payload('gemini-before-tool.json', { command: 'rm -rf ~' }));
    expect(denied.json.decision).toBe('deny');
    expect(denied.json.reason).toMatch(/rm -rf/);
  });

  it('BeforeTool: ask → timed out → deny; AfterTool recorded', async () => {
    const doc = payload('gemini-before-tool.json', { command: 'git push origin gemini' });
    const r = await runHook('gemini', doc, ['--approval-timeout', '2']);
    expect(r.json.decision).toBe('deny');
    const after = payload('gemini-after-tool.json', { session: doc.session_id, command: doc.tool_input.command });
    after.tool_input = doc.tool_input;
    const rec = await runHook('gemini', after);
    expect(rec.code).toBe(0);
  });
});

describe('bad input never allows', () => {
  it('malformed JSON, missing fields, an unknown dialect or event: exit 2 with the reason on stderr', async () => {
    // The real process: the exit code is what the harness reads.
    const notJson = await spawnHook('claude', '{"session_id": ');
    expect(notJson.code).toBe(2);
    expect(notJson.stdout).toBe('');
    expect(notJson.stderr).toMatch(/not JSON/);
    const noTool = payload('claude-pre-tool-use.json');
    delete noTool.tool_name;
    const missing = await runHook('claude', noTool);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/tool_name/);
    const dialect = await runHook('cursor', payload('claude-pre-tool-use.json'));
    expect(dialect.code).toBe(2);
    expect(dialect.stderr).toMatch(/unknown hook dialect "cursor"/);
    const stop = payload('claude-pre-tool-use.json');
    stop.hook_event_name = 'Stop';
    const event = await runHook('claude', stop);
    expect(event.code).toBe(2);
    expect(event.stderr).toMatch(/not "Stop"/);
    const geminiAsClaude = await runHook('claude', payload('gemini-before-tool.json'));
    expect(geminiAsClaude.code).toBe(2);
  });

  it('no Temporal server: Claude Code falls back to its own prompt, Codex, Gemini CLI and OpenCode to deny', async () => {
    const nowhere = ['--address', '127.0.0.1:9', '--timeout', '4'];
    const [claude, perm, codex, gemini, opencode] = await Promise.all([
      runHook('claude', payload('claude-pre-tool-use.json'), nowhere),
      runHook('claude', payload('claude-permission-request.json'), nowhere),
      runHook('codex', payload('codex-pre-tool-use.json'), nowhere),
      runHook('gemini', payload('gemini-before-tool.json'), nowhere),
      runHook('opencode', payload('opencode-tool-execute-before.json'), nowhere),
    ]);
    expect(claude.json.hookSpecificOutput.permissionDecision).toBe('ask');
    expect(claude.json.hookSpecificOutput.permissionDecisionReason).toMatch(/fails closed/);
    // A PermissionRequest's fallback is no output (the harness's own prompt); its why is on stderr.
    expect(perm.code).toBe(0);
    expect(perm.stdout).toBe('');
    expect(perm.stderr).toMatch(/could not be reached.*fails closed/);
    expect(codex.json.hookSpecificOutput.permissionDecision).toBe('deny');
    expect(gemini.json.decision).toBe('deny');
    expect(opencode.json.decision).toBe('deny');
  });
});

describe('OpenCode: the payload its plugin sends', () => {
  it('tool.execute.before: allow and deny by the same Bash rules (bash is Bash); an ask approved; tool.execute.after recorded', async () => {
    const allowed = await runHook('opencode', payload('opencode-tool-execute-before.json'));
    expect(allowed.json).toEqual({ decision: 'allow' });
    const denied = await runHook('opencode', payload('opencode-tool-execute-before.json', { command: 'rm -rf ~' }));
    expect(denied.json.decision).toBe('deny');
    expect(denied.json.reason).toMatch(/rm -rf/);
    const doc = payload('opencode-tool-execute-before.json', { command: 'git push origin opencode' });
    const running = runHook('opencode', doc);
    const wf = decisionBatch({ ...doc, tool_name: 'Bash' });
    const [pending] = await pendingApprovals(h.client, wf, 1);
    expect(pending.toolName).toBe('Bash');
    await h.client.decide({ approvalId: pending.approvalId, decision: 'approve', by: 'judy', workflowId: wf });
    expect((await running).json).toEqual({ decision: 'allow' });
    const after = payload('opencode-tool-execute-after.json', { session: doc.session_id, toolUseId: doc.tool_use_id });
    after.tool_input = doc.tool_input;
    expect((await runHook('opencode', after)).code).toBe(0);
  });
});

describe('Claude Code http hooks: sluice hook serve', () => {
  it('POST /claude answers in the body, always 200 (a non-2xx would let the call run)', async () => {
    const port = 20000 + (process.pid % 20000);
    const child = spawn(
      process.execPath,
      [
        BIN,
        'hook',
        'serve',
        '--port',
        String(port),
        '--address',
        inject('temporalAddress'),
        '--task-queue',
        h.taskQueue,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: hookEnv },
    );
    try {
      let log = '';
      child.stderr.on('data', (d) => (log += d));
      await eventually('the hook server to listen', () => log.includes('serving http hooks'), { timeoutMs: 60_000 });
      const allowed = await post(port, '/claude', JSON.stringify(payload('claude-pre-tool-use.json')));
      expect(allowed.status).toBe(200);
      expect(JSON.parse(allowed.body).hookSpecificOutput.permissionDecision).toBe('allow');
      const garbage = await post(port, '/claude', 'not json');
      expect(garbage.status).toBe(200);
      expect(JSON.parse(garbage.body).hookSpecificOutput.permissionDecision).toBe('deny');
      // A web page is not a harness: a request carrying an Origin, or a Host other than the
      // loopback address (a DNS name rebound to 127.0.0.1), is refused before it reaches Sluice.
      const body = JSON.stringify(payload('claude-pre-tool-use.json'));
      const fromPage = await post(port, '/claude', body, { origin: 'https://evil.example' });
      expect(fromPage.status).toBe(403);
      const rebound = await post(port, '/claude', body, { host: `evil.example:${port}` });
      expect(rebound.status).toBe(403);
    } finally {
      child.kill('SIGTERM');
    }
  });
});

function post(
  port: number,
  route: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: route,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        let data = '';
        res.on('data', (d) => (data += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
