// The built-in tools through the real pipeline: confinement, the ledger across batches, worker
// restarts and sessions, bash's approval default and process-group kill, todo_write's event.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchRequest } from '../client/client';
import type { BatchOutput, SessionEvent } from '../pipeline/types';
import { commandHooks } from '../hooks';
import { bashTool, fsTools, todoWriteTool, versionOf } from '../tools';
import { defineConfig } from '../define/config';
import { batchWorkflowId } from '../workflows/definitions';
import { batch, startHarness, text, type Harness } from './harness';
import { pendingApproval, poll } from './eventually';
import { alive, pidsIn, treeCommand } from './processes';

const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-tools-')));
const root = path.join(base, 'ws');
const outside = path.join(base, 'outside');
fs.mkdirSync(root);
fs.mkdirSync(outside);

/** A Claude Code project whose PreToolUse hook keeps `Edit|Write` away from .env files. */
function claudeProject(): string {
  const dir = path.join(base, 'claude-project');
  fs.mkdirSync(path.join(dir, '.claude'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, '.claude', 'protect-env.js'),
    `let s = ''; process.stdin.on('data', (d) => (s += d)).on('end', () => {
      const { tool_input } = JSON.parse(s);
      if (/(^|\\/)\\.env$/.test(tool_input.file_path)) console.log(JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: tool_input.file_path + ' holds secrets' } }));
    });`,
  );
  const hook = { type: 'command', command: 'node "$CLAUDE_PROJECT_DIR/.claude/protect-env.js"' };
  fs.writeFileSync(
    path.join(dir, '.claude', 'settings.json'),
    JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'Edit|Write', hooks: [hook] }] } }),
  );
  return dir;
}

let h: Harness;
beforeAll(async () => {
  const hooks = commandHooks({ workspace: claudeProject() });
  const config = defineConfig({
    preExecute: hooks.preExecute,
    tools: [
      ...fsTools({ root }),
      todoWriteTool(),
      // Short heartbeats so a cancel reaches the running body quickly.
      // The process-group fallback, whose pids this file watches (test/unit/bash.test.ts covers both modes).
      { ...bashTool({ root, sandbox: 'none' }), heartbeatTimeoutMs: 3000 },
    ],
    postExecute: [
      {
        name: 'no-secret-todos',
        handler: (ctx) =>
          ctx.call.name === 'todo_write' && JSON.stringify(ctx.call.args).includes('secret')
            ? { action: 'block', feedback: 'todo lists may not mention secrets' }
            : undefined,
      },
    ],
  });
  h = await startHarness('tools', config);
});
afterAll(() => h?.close());

const put = (rel: string, content: string) => fs.writeFileSync(path.join(root, rel), content);
const get = (rel: string) => fs.readFileSync(path.join(root, rel), 'utf8');
const ofType = (events: SessionEvent[], type: string) => events.filter((e) => e.type === type).map((e) => e.data);

/** The session's next batch: same session, next step, the previous batch's state and seq. */
function after(prev: BatchOutput, calls: Parameters<typeof batch>[0]): BatchRequest {
  return {
    ...batch(calls),
    sessionId: prev.sessionId,
    turn: prev.turn,
    step: prev.step + 1,
    state: prev.state,
    startSeq: prev.nextSeq,
  };
}

describe('tool-fs through the pipeline', () => {
  it("denies '..' and symlink escapes, recording no observation", async () => {
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret\n');
    fs.symlinkSync(outside, path.join(root, 'door'));
    const out = await h.client.runBatch(
      batch([
        { name: 'read', args: { file_path: '../outside/secret.txt' } },
        { name: 'Read', args: { file_path: 'door/secret.txt' } },
        { name: 'write', args: { file_path: 'door/planted.txt', content: 'x' } },
        { name: 'grep', args: { pattern: 'secret', path: 'door' } },
      ]),
    );
    for (const r of out.results) {
      expect(r.result).toMatchObject({ isError: true, error: { code: 'FS_OUTSIDE_WORKSPACE' } });
      expect(text(r.result)).toMatch(/^Error: .*(contains '\.\.'|outside the workspace root through a symbolic link)/);
    }
    expect(ofType(out.events, 'fs/observed')).toEqual([]);
    expect(fs.readdirSync(outside)).toEqual(['secret.txt']);
  });

  it('refuses a stale edit: the file changed on disk between the read and the edit', async () => {
    put('stale.txt', 'v1\n');
    const first = await h.client.runBatch(batch([{ name: 'read', args: { file_path: 'stale.txt' } }]));
    expect(ofType(first.events, 'fs/observed')).toEqual([
      { path: 'stale.txt', state: 'present', version: versionOf('v1\n'), partial: false },
    ]);
    put('stale.txt', 'v2\n');
    const second = await h.client.runBatch(
      after(first, [{ name: 'edit', args: { file_path: 'stale.txt', old_string: 'v1', new_string: 'mine' } }]),
    );
    expect(second.results[0].result).toMatchObject({ isError: true, error: { code: 'FS_STALE_VERSION' } });
    expect(text(second.results[0].result)).toContain('Read the file again, then retry the edit.');
    expect(get('stale.txt')).toBe('v2\n');
  });

  it('edits in a later batch on an observation from an earlier one, across a worker restart', async () => {
    put('durable.txt', 'before\n');
    const first = await h.client.runBatch(batch([{ name: 'read', args: { file_path: 'durable.txt' } }]));
    await h.stopWorker();
    const handle = await h.client.startBatch(
      after(first, [{ name: 'Edit', args: { file_path: 'durable.txt', old_string: 'before', new_string: 'after' } }]),
    );
    await h.startWorker();
    const second = await handle.result();
    expect(second.results[0].result).toMatchObject({ isError: false });
    expect(text(second.results[0].result)).toBe('Edited durable.txt: replaced 1 occurrence.');
    expect(get('durable.txt')).toBe('after\n');
    expect(second.state.fs['durable.txt']).toEqual({ state: 'present', version: versionOf('after\n'), partial: false });
    expect(second.events[0].seq).toBe(first.nextSeq);
  });

  it("keeps sessions apart: session B cannot edit on session A's read", async () => {
    put('shared.txt', 'common\n');
    const a = await h.client.runBatch(batch([{ name: 'read', args: { file_path: 'shared.txt' } }]));
    const b = await h.client.runBatch(
      batch([{ name: 'edit', args: { file_path: 'shared.txt', old_string: 'common', new_string: 'B was here' } }]),
    );
    expect(b.results[0].result).toMatchObject({ isError: true, error: { code: 'FS_NOT_OBSERVED' } });
    expect(b.state.fs).toBeUndefined();
    const a2 = await h.client.runBatch(
      after(a, [{ name: 'edit', args: { file_path: 'shared.txt', old_string: 'common', new_string: 'A was here' } }]),
    );
    expect(a2.results[0].result.isError).toBe(false);
    expect(get('shared.txt')).toBe('A was here\n');
  });

  it('reads concurrently and edits after them within one batch', async () => {
    put('one.txt', '1\n');
    put('two.txt', '2\n');
    const out = await h.client.runBatch(
      batch([
        { name: 'read', args: { file_path: 'one.txt' } },
        { name: 'read', args: { file_path: 'two.txt' } },
        { name: 'edit', args: { file_path: 'two.txt', old_string: '2', new_string: 'two' } },
        { name: 'glob', args: { pattern: '*.txt' } },
      ]),
    );
    expect(out.results.map((r) => r.result.isError)).toEqual([false, false, false, false]);
    expect(get('two.txt')).toBe('two\n');
    expect(text(out.results[3].result)).toContain('two.txt');
  });
});

describe('Claude Code hooks on the built-in tools', () => {
  it('match Edit|Write by alias and see Claude Code field names in tool_input', async () => {
    put('.env', 'KEY=1\n');
    const first = await h.client.runBatch(
      batch([
        { name: 'read', args: { file_path: '.env' } },
        { name: 'write', args: { file_path: 'notes.txt', content: 'fine' } },
      ]),
    );
    expect(first.results.map((r) => r.result.isError)).toEqual([false, false]);
    const second = await h.client.runBatch(
      after(first, [
        { name: 'Edit', args: { file_path: '.env', old_string: 'KEY=1', new_string: 'KEY=2' } },
        { name: 'write', args: { file_path: path.join(root, '.env'), content: 'KEY=3\n' } },
      ]),
    );
    for (const r of second.results) {
      expect(r.result).toMatchObject({ isError: true, error: { code: 'DENIED' } });
      expect(text(r.result)).toContain('.env holds secrets');
    }
    expect(get('.env')).toBe('KEY=1\n');
    // the hook ran for write and edit only, never for read
    expect(ofType([...first.events, ...second.events], 'hook/invoked')).toHaveLength(3);
  });
});

describe('bash through the pipeline', () => {
  it('is denied by default when nobody decides within the approval timeout', async () => {
    const out = await h.client.runBatch(
      batch([{ name: 'bash', args: { command: 'touch ran.marker' } }], { options: { approvalTimeoutMs: 1000 } }),
    );
    expect(out.results[0].result).toMatchObject({ isError: true, error: { code: 'DENIED' } });
    expect(text(out.results[0].result)).toContain('approval was required but not given');
    expect(ofType(out.events, 'approval/decided')).toEqual([expect.objectContaining({ outcome: 'unavailable' })]);
    expect(fs.existsSync(path.join(root, 'ran.marker'))).toBe(false);
  });

  it('once approved, kills the whole process tree on timeout', async () => {
    const pidFile = path.join(base, 'pipeline-timeout.pids');
    const req = batch([
      { name: 'bash', args: { command: treeCommand(pidFile), timeout: 1500, description: 'start sleepers' } },
    ]);
    const handle = await h.client.startBatch(req);
    await approveFirst(req);
    const out = await handle.result();
    expect(out.results[0].result).toMatchObject({ isError: true, error: { code: 'COMMAND_TIMEOUT' } });
    const pids = pidsIn(pidFile);
    expect(pids).toHaveLength(3);
    await poll(() => pids.filter(alive)).toEqual([]);
  });

  it('kills the whole process tree when the batch is cancelled', async () => {
    const pidFile = path.join(base, 'pipeline-cancel.pids');
    const req = batch([{ name: 'bash', args: { command: treeCommand(pidFile) } }]);
    const handle = await h.client.startBatch(req);
    await approveFirst(req);
    await poll(() => pidsIn(pidFile)).toHaveLength(3);
    await handle.cancel();
    const out = await handle.result();
    expect(out.results[0].result).toMatchObject({ isError: true, error: { code: 'ABORTED' } });
    const pids = pidsIn(pidFile);
    await poll(() => pids.filter(alive)).toEqual([]);
  });
});

describe('todo_write through the pipeline', () => {
  it('refuses an invalid list and records nothing', async () => {
    const out = await h.client.runBatch(
      batch([
        {
          name: 'TodoWrite',
          args: {
            todos: [
              { content: 'a', status: 'in_progress' },
              { content: 'b', status: 'in_progress' },
            ],
          },
        },
      ]),
    );
    expect(out.results[0].result).toMatchObject({ isError: true, error: { code: 'INVALID_ARGS' } });
    expect(ofType(out.events, 'todo/write')).toEqual([]);
    expect(out.state.todo).toBeUndefined();
  });

  it('records todo/write and keeps the list even when post-execute blocks the result', async () => {
    const todos = [{ content: 'rotate the secret', status: 'pending' }];
    const out = await h.client.runBatch(batch([{ name: 'todo_write', args: { todos } }]));
    expect(out.results[0].result).toMatchObject({ isError: true, error: { code: 'BLOCKED' } });
    expect(text(out.results[0].result)).toBe('todo lists may not mention secrets');
    expect(ofType(out.events, 'todo/write')).toEqual([{ todos }]);
    expect(out.state.todo).toEqual({ list: todos });
    const types = out.events.map((e) => e.type);
    expect(types.indexOf('todo/write')).toBeLessThan(types.indexOf('tool/result'));
  });
});

/** Waits for the batch's first pending approval and approves it, as a person would. */
async function approveFirst(req: BatchRequest): Promise<void> {
  const workflowId = batchWorkflowId(req.sessionId, req.turn, req.step);
  const { approvalId } = await pendingApproval(h.client, workflowId);
  await h.client.approve(approvalId, { workflowId, by: 'test' });
}
