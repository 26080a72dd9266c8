// The fail-open from issue 13 / issue 10 item 3: hooks written for Claude Code or Codex test the
// tool name their agent sends (`tool_name == "Bash"`), so every path a call can take — the
// lower-case Sluice name, an alias, another case, a Code Mode sub-call — must reach them under
// that name. Real python hook scripts, real bash and fs tools, a real Temporal server.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { z } from 'zod';
import { commandHooks } from '../hooks';
import type { BatchOutput } from '../pipeline/types';
import { bashTool, fsTools, todoWriteTool } from '../tools';
import { codeModeTool } from '../tools/code-mode';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';

const FIXTURES = path.join(__dirname, 'fixtures', 'hooks');
const py = (script: string) => `python3 ${JSON.stringify(path.join(FIXTURES, script))}`;
const record = (file: string, label: string) =>
  `node ${JSON.stringify(path.join(FIXTURES, 'record-call.js'))} ${JSON.stringify(file)} ${label}`;
const cmd = (command: string) => ({ type: 'command', command });

let workspace: string;
let seenFile: string;
let h: Harness;

beforeAll(async () => {
  workspace = fs.mkdtempSync(path.join(inject('runDir'), 'hook-names-ws-'));
  seenFile = path.join(fs.mkdtempSync(path.join(inject('runDir'), 'hook-names-seen-')), 'seen.jsonl');
  fs.mkdirSync(path.join(workspace, '.claude'));
  fs.mkdirSync(path.join(workspace, '.codex'));
  fs.writeFileSync(path.join(workspace, 'notes.txt'), 'alpha\nbeta\n');
  fs.writeFileSync(
    path.join(workspace, '.claude', 'settings.json'),
    JSON.stringify({
      hooks: {
        PreToolUse: [
          // Exactly as the validator example's header says: matcher "Bash".
          { matcher: 'Bash', hooks: [cmd(py('bash-validator.py'))] },
          { matcher: 'Edit|Write', hooks: [cmd(py('file-guard.py'))] },
          { matcher: '*', hooks: [cmd(record(seenFile, 'claude'))] },
        ],
      },
    }),
  );
  fs.writeFileSync(
    path.join(workspace, '.codex', 'hooks.json'),
    JSON.stringify({
      hooks: {
        PreToolUse: [
          { matcher: 'Bash', hooks: [cmd(py('bash-validator.py'))] },
          { matcher: '^apply_patch$', hooks: [cmd(py('patch-guard.py'))] },
          { matcher: '', hooks: [cmd(record(seenFile, 'codex'))] },
        ],
      },
    }),
  );
  const hooks = commandHooks({ workspace });
  h = await startHarness(
    'hook-names',
    defineConfig({
      tools: [
        ...fsTools({ root: workspace }),
        todoWriteTool(),
        bashTool({ root: workspace, approval: 'auto' }),
        codeModeTool(),
        defineTool({
          name: 'mcp__deploy__release',
          description: 'fixture: an MCP-named tool',
          input: z.object({ tag: z.string() }),
          execute: ({ tag }) => `released ${tag}`,
        }),
      ],
      preExecute: hooks.preExecute,
      postExecute: hooks.postExecute,
    }),
  );
});
afterAll(() => h?.close());

const exists = (f: string) => fs.existsSync(path.join(workspace, f));
let n = 0;
/** A command that leaves a marker file when it runs, and that the validator must block. */
function forbidden(): { marker: string; command: string } {
  const marker = `ran-${++n}`;
  return { marker, command: `touch ${marker}; curl -s http://127.0.0.1:9/ || true` };
}
function seen(): { label: string; id: string; tool_name: string; tool_input: Record<string, unknown> }[] {
  if (!fs.existsSync(seenFile)) return [];
  return fs
    .readFileSync(seenFile, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
}
const results = (out: BatchOutput) => Object.fromEntries(out.results.map((r) => [r.callId, r.result]));

describe('a PreToolUse hook for "Bash" sees every bash call as Bash', () => {
  it('blocks bash, Bash and BASH; lets a harmless command through', async () => {
    const a = forbidden();
    const b = forbidden();
    const c = forbidden();
    const out = await h.client.runBatch(
      batch([
        { id: 'lower', name: 'bash', args: { command: a.command } },
        { id: 'canon', name: 'Bash', args: { command: b.command } },
        { id: 'upper', name: 'BASH', args: { command: c.command } },
        { id: 'fine', name: 'bash', args: { command: 'echo harmless > ok-1.txt; cat ok-1.txt' } },
      ]),
    );
    const r = results(out);
    for (const id of ['lower', 'canon']) {
      expect(r[id].error?.code).toBe('DENIED');
      expect(text(r[id])).toContain('network downloads are not allowed from the agent');
    }
    // A name no tool answers to is refused before any body runs.
    expect(r.upper.error?.code).toBe('UNKNOWN_TOOL');
    expect([a, b, c].map((x) => exists(x.marker))).toEqual([false, false, false]);
    expect(text(r.fine)).toContain('harmless');

    const mine = seen().filter((s) => ['lower', 'canon', 'fine'].includes(s.id));
    expect(new Set(mine.map((s) => s.tool_name))).toEqual(new Set(['Bash']));
    expect(mine.find((s) => s.id === 'lower' && s.label === 'claude')?.tool_input).toEqual({ command: a.command });
  });

  it('blocks a bash sub-call inside run_code, which uses the lower-case name', async () => {
    const a = forbidden();
    const code = `
      const out = [];
      try { await tools.bash({ command: ${JSON.stringify(a.command)} }); out.push('ran'); }
      catch (e) { out.push('refused: ' + e.message); }
      out.push(await tools.bash({ command: 'echo sub-ok' }));
      return out;`;
    const out = await h.client.runBatch(
      batch([{ id: 'P', name: 'run_code', args: { code, description: 'try a download' } }]),
    );
    const body = text(out.results[0].result);
    expect(body).toContain('refused: ');
    expect(body).toContain('network downloads are not allowed from the agent');
    expect(body).toContain('sub-ok');
    expect(exists(a.marker)).toBe(false);
    const sub = seen().filter((s) => s.id.startsWith('P:code:'));
    expect(sub.length).toBeGreaterThanOrEqual(4);
    expect(new Set(sub.map((s) => s.tool_name))).toEqual(new Set(['Bash']));
  });
});

describe('an "Edit|Write" hook sees write and edit as Write and Edit', () => {
  it('blocks write, Write and edit of .env, directly and from run_code', async () => {
    const code = `
      try { await tools.write({ file_path: '.env', content: 'FROM_CODE=1' }); return 'written'; }
      catch (e) { return 'refused: ' + e.message; }`;
    const out = await h.client.runBatch(
      batch([
        { id: 'w1', name: 'write', args: { file_path: '.env', content: 'A=1' } },
        { id: 'w2', name: 'Write', args: { file_path: 'config/.env', content: 'B=2' } },
        { id: 'e1', name: 'edit', args: { file_path: '.env', old_string: 'A', new_string: 'Z' } },
        { id: 'ok', name: 'write', args: { file_path: 'fine.txt', content: 'allowed' } },
        { id: 'P2', name: 'run_code', args: { code, description: 'write the env file' } },
      ]),
    );
    const r = results(out);
    for (const id of ['w1', 'w2', 'e1']) {
      expect(r[id].error?.code).toBe('DENIED');
      expect(text(r[id])).toContain('holds secrets; the agent may not change it');
    }
    expect(text(r.P2)).toContain('refused: ');
    expect(text(r.P2)).toContain('.env holds secrets');
    expect(exists('.env')).toBe(false);
    expect(exists('config/.env')).toBe(false);
    expect(fs.readFileSync(path.join(workspace, 'fine.txt'), 'utf8')).toBe('allowed');
    const claude = seen().filter((s) => s.label === 'claude' && ['w1', 'w2', 'e1', 'ok'].includes(s.id));
    expect(Object.fromEntries(claude.map((s) => [s.id, s.tool_name]))).toEqual({
      w1: 'Write',
      w2: 'Write',
      e1: 'Edit',
      ok: 'Write',
    });
  });
});

describe('every built-in reaches hooks under its agent name', () => {
  it('Claude Code names for every built-in and an MCP tool; Codex sees Bash and apply_patch', async () => {
    const out = await h.client.runBatch(
      batch([
        { id: 'n-read', name: 'read', args: { file_path: 'notes.txt' } },
        { id: 'n-glob', name: 'glob', args: { pattern: '*.txt' } },
        { id: 'n-grep', name: 'grep', args: { pattern: 'alpha' } },
        { id: 'n-todo', name: 'todo_write', args: { todos: [{ content: 'x', status: 'pending', activeForm: 'x' }] } },
        { id: 'n-write', name: 'write', args: { file_path: 'new.txt', content: 'one\ntwo' } },
        { id: 'n-edit', name: 'edit', args: { file_path: 'notes.txt', old_string: 'beta', new_string: 'gamma' } },
        { id: 'n-bash', name: 'bash', args: { command: 'true' } },
        { id: 'n-mcp', name: 'mcp__deploy__release', args: { tag: 'v1' } },
      ]),
    );
    expect(out.results.every((r) => !r.result.isError)).toBe(true);
    const names = (label: string) =>
      Object.fromEntries(
        seen()
          .filter((s) => s.label === label && s.id.startsWith('n-'))
          .map((s) => [s.id, s.tool_name]),
      );
    expect(names('claude')).toEqual({
      'n-read': 'Read',
      'n-glob': 'Glob',
      'n-grep': 'Grep',
      'n-todo': 'TodoWrite',
      'n-write': 'Write',
      'n-edit': 'Edit',
      'n-bash': 'Bash',
      'n-mcp': 'mcp__deploy__release',
    });
    expect(names('codex')).toMatchObject({ 'n-write': 'apply_patch', 'n-edit': 'apply_patch', 'n-bash': 'Bash' });
    const patch = seen().find((s) => s.label === 'codex' && s.id === 'n-edit')!.tool_input.command;
    expect(patch).toBe('*** Begin Patch\n*** Update File: notes.txt\n@@\n-beta\n+gamma\n*** End Patch');
  });

  it("a Codex apply_patch hook blocks a write to .env; Codex's Bash hook blocks bash", async () => {
    const a = forbidden();
    const codexOnly = commandHooks({ workspace, sources: ['.codex/hooks.json'] });
    const h2 = await startHarness(
      'hook-names-codex',
      defineConfig({
        tools: [...fsTools({ root: workspace }), bashTool({ root: workspace, approval: 'auto' })],
        preExecute: codexOnly.preExecute,
      }),
    );
    try {
      const out = await h2.client.runBatch(
        batch([
          { id: 'cw', name: 'write', args: { file_path: '.env', content: 'A=1' } },
          { id: 'cb', name: 'bash', args: { command: a.command } },
        ]),
      );
      const r = results(out);
      expect(text(r.cw)).toContain('patches to .env are not allowed');
      expect(text(r.cb)).toContain('network downloads are not allowed');
      expect(exists('.env')).toBe(false);
      expect(exists(a.marker)).toBe(false);
    } finally {
      await h2.close();
    }
  });
});
