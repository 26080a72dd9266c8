// Command hooks against the real server: real bash and node hook scripts from
// test/fixtures/hooks, read from a workspace's .claude/settings.json and .codex/hooks.json.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { z } from 'zod';
import { commandHooks } from '../hooks';
import type { BatchOutput, SessionEvent } from '../pipeline/types';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';
import { pendingApproval } from './eventually';

const FIXTURES = path.join(__dirname, 'fixtures', 'hooks');
const bash = (script: string, ...args: string[]) =>
  ['bash', JSON.stringify(path.join(FIXTURES, script)), ...args.map((a) => JSON.stringify(a))].join(' ');
const node = (script: string, ...args: string[]) =>
  ['node', JSON.stringify(path.join(FIXTURES, script)), ...args.map((a) => JSON.stringify(a))].join(' ');
const cmd = (command: string, extra: object = {}) => ({ type: 'command', command, ...extra });

let workspace: string;
let captureDir: string;
let sleepyPidFile: string;
let h: Harness;

const fileArgs = z.object({ file_path: z.string(), content: z.string() });
/** A fixture tool whose result shows exactly the arguments its body was given. */
function probe(name: string, extra: { aliases?: string[]; fails?: boolean } = {}) {
  return defineTool({
    name,
    description: `fixture tool ${name}`,
    input: fileArgs,
    ...(extra.aliases ? { aliases: extra.aliases } : {}),
    retry: { maximumAttempts: 1 },
    execute: (args) => {
      if (extra.fails) throw new Error(`${name} broke while writing ${args.file_path}`);
      return `${name} ran with ${JSON.stringify(args)}`;
    },
  });
}

const TOOLS = [
  't_exit2',
  't_deny',
  't_ask',
  't_allow',
  't_garbage',
  't_badjson',
  't_sleepy',
  't_fail',
  't_mismatch',
  't_merge_deny',
  't_merge_ask',
  't_legacy',
  't_post_block',
  't_codex',
  't_plain',
];

beforeAll(async () => {
  workspace = fs.mkdtempSync(path.join(inject('runDir'), 'hooks-ws-'));
  captureDir = fs.mkdtempSync(path.join(inject('runDir'), 'hooks-capture-'));
  sleepyPidFile = path.join(captureDir, 'sleepy-child.pid');
  fs.mkdirSync(path.join(workspace, '.claude'));
  fs.mkdirSync(path.join(workspace, '.codex'));
  const allow = node('decide.js', 'allow', 'fine by policy');
  fs.writeFileSync(
    path.join(workspace, '.claude', 'settings.json'),
    JSON.stringify({
      hooks: {
        PreToolUse: [
          { matcher: 't_exit2', hooks: [cmd(bash('block-exit2.sh', 'no writes to prod: the file is protected'))] },
          { matcher: 't_deny', hooks: [cmd(node('decide.js', 'deny', 'secrets must not leave the machine'))] },
          { matcher: 't_ask', hooks: [cmd(node('decide.js', 'ask', 'a person should look at this'))] },
          { matcher: 't_allow', hooks: [cmd(allow)] },
          { matcher: 't_garbage', hooks: [cmd(bash('garbage.sh'))] },
          { matcher: 't_badjson', hooks: [cmd(bash('garbage.sh', 'broken'))] },
          { matcher: 't_sleepy', hooks: [cmd(bash('sleepy.sh', sleepyPidFile), { timeout: 5 })] },
          { matcher: 't_fail', hooks: [cmd(bash('fail.sh'))] },
          { matcher: 't_mismatch', hooks: [cmd(node('mismatch.js'))] },
          { matcher: 't_merge_deny|t_merge_ask', hooks: [cmd(node('decide.js', 'allow', 'hook one allows'))] },
          { matcher: '^t_merge_', hooks: [cmd(node('decide.js', 'ask', 'hook two wants a review'))] },
          { matcher: 't_merge_deny', hooks: [cmd(node('decide.js', 'deny', 'hook three says no'))] },
          { matcher: 'Edit|Write', hooks: [cmd(node('update-input.js')), cmd(node('capture.js', captureDir))] },
          { matcher: 't_legacy', hooks: [cmd(node('legacy.js', 'legacy says no'))] },
        ],
        PostToolUse: [
          {
            matcher: 'Write',
            hooks: [cmd(node('context.js', 'run the formatter on')), cmd(node('capture.js', captureDir))],
          },
          { matcher: 't_post_block', hooks: [cmd(bash('block-exit2.sh', 'the output leaked a token'))] },
          { matcher: 't_boom', hooks: [cmd(bash('block-exit2.sh', 'PostToolUse must not run for a failure'))] },
        ],
        PostToolUseFailure: [{ matcher: 't_boom', hooks: [cmd(node('context.js', 'the write failed for'))] }],
      },
    }),
  );
  // The same command again in the local file: Claude Code runs an identical command once.
  fs.writeFileSync(
    path.join(workspace, '.claude', 'settings.local.json'),
    JSON.stringify({ hooks: { PreToolUse: [{ matcher: 't_allow', hooks: [cmd(allow)] }] } }),
  );
  fs.writeFileSync(
    path.join(workspace, '.codex', 'hooks.json'),
    JSON.stringify({
      hooks: {
        PreToolUse: [
          {
            matcher: 't_codex',
            hooks: [
              cmd(node('decide.js', 'deny', 'codex policy says no'), { timeout: 10 }),
              cmd(node('capture.js', captureDir)),
            ],
          },
        ],
      },
    }),
  );

  const hooks = commandHooks({ workspace });
  h = await startHarness(
    'hooks',
    defineConfig({
      tools: [...TOOLS.map((n) => probe(n)), probe('write', { aliases: ['Write'] }), probe('t_boom', { fails: true })],
      preExecute: hooks.preExecute,
      postExecute: hooks.postExecute,
    }),
  );
});
afterAll(() => h?.close());

const args = (extra: object = {}) => ({ file_path: 'notes.txt', content: 'hello', ...extra });
const noChannel = { options: { approvalChannel: false } };

async function run1(name: string, extra = {}) {
  const out = await h.client.runBatch(batch([{ id: 'c1', name, args: args() }], extra));
  return {
    out,
    result: out.results[0].result,
    hookResults: ofType(out, 'hook/result'),
    invoked: ofType(out, 'hook/invoked'),
  };
}

function ofType(out: BatchOutput, type: string): SessionEvent['data'][] {
  return out.events.filter((e) => e.type === type).map((e) => e.data);
}

describe('PreToolUse hooks', () => {
  it('exit 2 blocks the call with stderr as the reason', async () => {
    const { result, invoked, hookResults } = await run1('t_exit2');
    expect(result.isError).toBe(true);
    expect(result.error?.code).toBe('DENIED');
    expect(text(result)).toContain('no writes to prod: the file is protected');
    expect(text(result)).not.toContain('ran with');
    expect(invoked).toEqual([
      expect.objectContaining({
        turn: 1,
        point: 'pre-execute',
        dialect: 'claude',
        handlerId: '.claude/settings.json:PreToolUse:0:0',
        matcher: 't_exit2',
        callId: 'c1',
      }),
    ]);
    expect(hookResults).toEqual([
      expect.objectContaining({
        point: 'pre-execute',
        handlerId: '.claude/settings.json:PreToolUse:0:0',
        decision: 'deny',
        exitCode: 2,
        stderrSummary: 'no writes to prod: the file is protected',
      }),
    ]);
    expect(typeof hookResults[0].durationMs).toBe('number');
  });

  it('a JSON deny denies with its reason', async () => {
    const { result, hookResults } = await run1('t_deny');
    expect(result.error?.code).toBe('DENIED');
    expect(text(result)).toContain('secrets must not leave the machine');
    expect(hookResults[0]).toMatchObject({
      decision: 'deny',
      exitCode: 0,
      reason: 'secrets must not leave the machine',
    });
  });

  it('the legacy decision "block" denies', async () => {
    const { result, hookResults } = await run1('t_legacy');
    expect(text(result)).toContain('legacy says no');
    expect(hookResults[0]).toMatchObject({ decision: 'deny' });
  });

  it('a JSON ask with no approval channel fails closed', async () => {
    const { out, result, hookResults } = await run1('t_ask', noChannel);
    expect(hookResults[0]).toMatchObject({ decision: 'ask', reason: 'a person should look at this' });
    expect(ofType(out, 'approval/asked')[0]).toMatchObject({ reason: 'a person should look at this', callId: 'c1' });
    expect(ofType(out, 'approval/decided')[0]).toMatchObject({ outcome: 'unavailable' });
    expect(result.error?.code).toBe('DENIED');
    expect(text(result)).toContain('a person should look at this');
    expect(text(result)).not.toContain('ran with');
  });

  it('a JSON ask waits for a person, and runs once approved', async () => {
    const handle = await h.client.startBatch(
      batch([{ id: 'c1', name: 't_ask', args: args() }], { options: { approvalTimeoutMs: 60_000 } }),
    );
    const pending = [await pendingApproval(h.client, handle.workflowId)];
    expect(pending[0].reason).toBe('a person should look at this');
    await h.client.approve(pending[0].approvalId, { workflowId: handle.workflowId, by: 'test' });
    const out = await handle.result();
    expect(text(out.results[0].result)).toContain('t_ask ran with');
  });

  it('a JSON allow lets the call run, and an identical command in two files runs once', async () => {
    const { result, invoked, hookResults } = await run1('t_allow');
    expect(result.isError).toBe(false);
    expect(text(result)).toContain('t_allow ran with');
    expect(invoked).toHaveLength(1);
    expect(hookResults).toEqual([expect.objectContaining({ decision: 'allow', exitCode: 0 })]);
  });

  it('garbage on stdout is recorded and decides nothing', async () => {
    const plain = await run1('t_garbage');
    expect(text(plain.result)).toContain('t_garbage ran with');
    expect(plain.hookResults[0]).toMatchObject({ decision: 'none', exitCode: 0 });
    expect((plain.hookResults[0].warnings as string[])[0]).toMatch(/stdout is not JSON.*not json at all/);

    const broken = await run1('t_badjson');
    expect(text(broken.result)).toContain('t_badjson ran with');
    expect(broken.hookResults[0]).toMatchObject({ decision: 'error', exitCode: 0 });
    expect(broken.hookResults[0].error).toMatch(/looks like JSON but does not parse/);
  });

  it('a hook that outlives its timeout is killed with its process group and does not block', async () => {
    const { result, hookResults } = await run1('t_sleepy');
    expect(text(result)).toContain('t_sleepy ran with');
    expect(hookResults[0]).toMatchObject({ decision: 'error', timedOut: true });
    expect(hookResults[0].error).toMatch(/did not finish within its 5s timeout/);
    expect(hookResults[0].exitCode).toBeUndefined();
    // 5 s, not 1 s: on a loaded machine bash could be killed before it started its child at all.
    const childPid = Number(fs.readFileSync(sleepyPidFile, 'utf8'));
    expect(isAlive(childPid)).toBe(false);
  });

  it('a non-zero exit other than 2 is a recorded error that does not block', async () => {
    const { result, hookResults } = await run1('t_fail');
    expect(text(result)).toContain('t_fail ran with');
    expect(hookResults[0]).toMatchObject({
      decision: 'error',
      exitCode: 1,
      stderrSummary: 'linter crashed: segmentation fault',
    });
  });

  it('a hookSpecificOutput for another event is dropped', async () => {
    const { result, hookResults } = await run1('t_mismatch');
    expect(text(result)).toContain('t_mismatch ran with');
    expect(hookResults[0]).toMatchObject({ decision: 'none' });
    expect((hookResults[0].warnings as string[])[0]).toMatch(/"PostToolUse", but the hook ran for PreToolUse/);
  });

  it('merges three hooks: deny beats ask beats allow', async () => {
    const denied = await run1('t_merge_deny', noChannel);
    expect(denied.hookResults.map((r) => r.decision)).toEqual(['allow', 'ask', 'deny']);
    expect(denied.invoked.map((r) => r.handlerId)).toEqual([
      '.claude/settings.json:PreToolUse:9:0',
      '.claude/settings.json:PreToolUse:10:0',
      '.claude/settings.json:PreToolUse:11:0',
    ]);
    expect(denied.invoked[1].matcher).toBe('^t_merge_');
    expect(text(denied.result)).toContain('hook three says no');
    expect(text(denied.result)).not.toContain('hook two');
    expect(ofType(denied.out, 'approval/asked')).toHaveLength(0);

    const asked = await run1('t_merge_ask', noChannel);
    expect(asked.hookResults.map((r) => r.decision)).toEqual(['allow', 'ask']);
    expect(ofType(asked.out, 'approval/asked')[0]).toMatchObject({ reason: 'hook two wants a review' });
    expect(asked.result.error?.code).toBe('DENIED');
  });

  it('matches a tool by its alias, passes the call on stdin, and ignores updatedInput', async () => {
    const { result, invoked, hookResults } = await run1('write');
    const pre = invoked.filter((e) => e.point === 'pre-execute');
    expect(pre.map((e) => e.matcher)).toEqual(['Edit|Write', 'Edit|Write']);
    // The body saw the model's arguments, not the hook's rewrite.
    expect(text(result)).toBe(`write ran with ${JSON.stringify(args())}`);
    const rewrite = hookResults.find((r) => r.handlerId === '.claude/settings.json:PreToolUse:12:0')!;
    expect(rewrite.decision).toBe('allow');
    expect((rewrite.warnings as string[])[0]).toMatch(/updatedInput was ignored/);

    const seen = JSON.parse(fs.readFileSync(path.join(captureDir, 'c1.PreToolUse.json'), 'utf8'));
    expect(seen.cwd).toBe(fs.realpathSync(workspace));
    expect(seen.projectDir).toBe(workspace);
    expect(seen.stdin).toMatchObject({
      cwd: workspace,
      hook_event_name: 'PreToolUse',
      tool_name: 'Write',
      tool_input: args(),
      tool_use_id: 'c1',
      permission_mode: 'default',
    });
    expect(seen.stdin.session_id).toMatch(/^s-/);
    const after = JSON.parse(fs.readFileSync(path.join(captureDir, 'c1.PostToolUse.json'), 'utf8'));
    expect(after.stdin).toMatchObject({
      hook_event_name: 'PostToolUse',
      tool_response: `write ran with ${JSON.stringify(args())}`,
    });
  });

  it('reads Codex hooks.json: deny, with turn_id on stdin', async () => {
    const { result, invoked } = await run1('t_codex');
    expect(text(result)).toContain('codex policy says no');
    expect(invoked.map((e) => e.dialect)).toEqual(['codex', 'codex']);
    expect(invoked[0].handlerId).toBe('.codex/hooks.json:PreToolUse:0:0');
    // Both ran in parallel: a deny does not stop the other hook of the same point.
    const seen = JSON.parse(fs.readFileSync(path.join(captureDir, 'c1.PreToolUse.json'), 'utf8'));
    expect(seen.stdin).toMatchObject({ tool_name: 't_codex', turn_id: '1' });
  });

  it('runs nothing for a tool no matcher selects', async () => {
    const { out, result } = await run1('t_plain');
    expect(text(result)).toContain('t_plain ran with');
    expect(out.events.filter((e) => e.type.startsWith('hook/'))).toHaveLength(0);
  });
});

describe('PostToolUse hooks', () => {
  it('additionalContext lands after every tool result of the batch', async () => {
    const out = await h.client.runBatch(
      batch([
        { id: 'w1', name: 'write', args: args({ file_path: 'a.txt' }) },
        { id: 'p2', name: 't_plain', args: args() },
        { id: 'w3', name: 'Write', args: args({ file_path: 'b.txt' }) },
      ]),
    );
    const seqOf = (type: string) => out.events.filter((e) => e.type === type).map((e) => e.seq);
    const contexts = out.events.filter((e) => e.type === 'user/message');
    expect(contexts.map((e) => e.data.content)).toEqual(['run the formatter on a.txt', 'run the formatter on b.txt']);
    expect(Math.min(...seqOf('user/message'))).toBeGreaterThan(Math.max(...seqOf('tool/result')));
    expect(out.messages.map((m) => m.role)).toEqual(['tool', 'tool', 'tool', 'user', 'user']);
    expect(out.messages[3]).toMatchObject({ role: 'user', content: 'run the formatter on a.txt' });
    const post = ofType(out, 'hook/result').filter((r) => r.point === 'post-execute' && r.callId === 'w1');
    expect(post[0]).toMatchObject({ decision: 'none', additionalContext: 'run the formatter on a.txt' });
  });

  it('exit 2 blocks the result with stderr as feedback', async () => {
    const { result, hookResults } = await run1('t_post_block');
    expect(result.isError).toBe(true);
    expect(result.error?.code).toBe('BLOCKED');
    expect(text(result)).toBe('the output leaked a token');
    expect(hookResults[0]).toMatchObject({ point: 'post-execute', decision: 'block', exitCode: 2 });
  });

  it('a failed body runs PostToolUseFailure, not PostToolUse', async () => {
    const { out, result, hookResults } = await run1('t_boom');
    expect(result.error?.code).toBe('TOOL_FAILED');
    expect(hookResults).toEqual([expect.objectContaining({ event: 'PostToolUseFailure', decision: 'none' })]);
    expect(out.messages.at(-1)).toMatchObject({ role: 'user', content: 'the write failed for notes.txt' });
  });

  it('a denied call runs no post hooks', async () => {
    const out = await h.client.runBatch(batch([{ id: 'c1', name: 't_deny', args: args() }]));
    expect(ofType(out, 'hook/invoked').map((e) => e.point)).toEqual(['pre-execute']);
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A killed child nobody has reaped yet is a zombie: dead, though kill(0) still finds it.
  try {
    return !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}
