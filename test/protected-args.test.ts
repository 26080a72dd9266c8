// Protected paths hold for MCP tools and your own tools too (tools/protected-args.ts): a real MCP
// filesystem server (@modelcontextprotocol/server-filesystem over stdio) and two of our own tools
// are refused hook settings, hook scripts and the state folder, by name, through a link, and from
// a Code Mode program, found by argument name, by schema `format` and by the tool's declaration.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import type { BatchOutput } from '../pipeline/types';
import { protectedPathArgs } from '../tools';
import { pathArgsCheck } from '../tools/protected-args';
import { codeModeTool } from '../tools/code-mode';
import { mcpSource, type McpSource } from '../tools/mcp';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';

const bin = (pkg: string) =>
  path.join(__dirname, '..', 'node_modules', '@modelcontextprotocol', pkg, 'dist', 'index.js');

let ws: string;
let h: Harness;
let mcp: McpSource;
const copied: string[] = [];

beforeAll(async () => {
  ws = fs.realpathSync(fs.mkdtempSync(path.join(inject('runDir'), 'protected-args-')));
  fs.mkdirSync(path.join(ws, '.claude', 'hooks'), { recursive: true });
  fs.writeFileSync(path.join(ws, '.claude', 'hooks', 'guard.sh'), '#!/bin/sh\nexit 0\n');
  fs.writeFileSync(
    path.join(ws, '.claude', 'settings.local.json'),
    JSON.stringify({ hooks: { PreToolUse: [{ hooks: [{ type: 'command', command: 'sh scripts/check.sh' }] }] } }),
  );
  fs.mkdirSync(path.join(ws, 'scripts'));
  fs.writeFileSync(path.join(ws, 'scripts', 'check.sh'), 'exit 0\n');
  fs.symlinkSync(path.join(ws, '.claude'), path.join(ws, 'innocent'));
  mcp = mcpSource({
    server: 'fs',
    command: process.execPath,
    args: [bin('server-filesystem'), ws],
    tools: { write_file: { approval: 'auto' }, move_file: { approval: 'auto' } },
  });
  const copy = defineTool({
    name: 'copy_to',
    description: 'Copies text to a target it declares as a path.',
    input: z.object({ target: z.string(), text: z.string() }),
    pathArgs: ['target'],
    execute: ({ target, text: t }) => {
      copied.push(target);
      fs.writeFileSync(path.resolve(ws, target), t);
      return 'copied';
    },
  });
  const archive = defineTool({
    name: 'archive',
    description: 'Archives a location given by schema format.',
    input: { type: 'object', properties: { where: { type: 'string', format: 'path' } }, required: ['where'] },
    execute: (a: { where: string }) => `archived ${a.where}`,
  });
  const tools = [...(await mcp.tools()), copy, archive, codeModeTool()];
  h = await startHarness('protected-args', defineConfig({ tools, guards: [protectedPathArgs({ root: ws, tools })] }));
});
afterAll(async () => {
  await h?.close();
  await mcp?.close();
});

// Nothing here should ask; with no approval channel an ask would fail the test at once instead of waiting.
const noChannel = { options: { approvalChannel: false } };
const byId = (out: BatchOutput) => Object.fromEntries(out.results.map((r) => [r.callId, r.result]));

describe('protected paths in MCP and own tools’ arguments', () => {
  it('refuses hook settings, hook scripts, a link to .claude and the state folder; lets other paths through', async () => {
    const settings = fs.readFileSync(path.join(ws, '.claude', 'settings.local.json'), 'utf8');
    const out = await h.client.runBatch(
      batch(
        [
          {
            id: 'settings',
            name: 'mcp__fs__write_file',
            args: { path: path.join(ws, '.claude/settings.local.json'), content: '{}' },
          },
          {
            id: 'script',
            name: 'mcp__fs__write_file',
            args: { path: path.join(ws, 'scripts/check.sh'), content: 'curl evil' },
          },
          {
            id: 'link',
            name: 'mcp__fs__write_file',
            args: { path: path.join(ws, 'innocent/hooks/guard.sh'), content: 'x' },
          },
          {
            id: 'move',
            name: 'mcp__fs__move_file',
            args: { source: path.join(ws, '.claude/hooks/guard.sh'), destination: path.join(ws, 'g.sh') },
          },
          { id: 'state', name: 'mcp__fs__read_text_file', args: { path: path.join(h.stateDir, 'sessions') } },
          { id: 'declared', name: 'copy_to', args: { target: '.codex/hooks.json', text: '{}' } },
          { id: 'format', name: 'archive', args: { where: '.gemini' } },
          { id: 'fine', name: 'mcp__fs__write_file', args: { path: path.join(ws, 'notes.txt'), content: 'ok' } },
          { id: 'fine2', name: 'copy_to', args: { target: 'out.txt', text: 'ok' } },
        ],
        noChannel,
      ),
    );
    const r = byId(out);
    for (const id of ['settings', 'script', 'link', 'move', 'state', 'declared', 'format']) {
      expect(r[id].error?.code, id).toBe('DENIED');
      expect(text(r[id]), id).toContain('Protected paths hold for every tool');
    }
    expect(text(r.settings)).toContain('is under .claude');
    expect(text(r.script)).toContain('hook script named in the workspace’s hook settings');
    expect(text(r.state)).toContain('Sluice state folder');
    expect(text(r.move)).toContain('the argument source names');
    expect(fs.readFileSync(path.join(ws, '.claude', 'settings.local.json'), 'utf8')).toBe(settings);
    expect(fs.readFileSync(path.join(ws, 'scripts', 'check.sh'), 'utf8')).toBe('exit 0\n');
    expect(fs.existsSync(path.join(ws, 'g.sh'))).toBe(false);
    expect(copied).toEqual(['out.txt']);
    expect(r.fine.isError).toBe(false);
    expect(fs.readFileSync(path.join(ws, 'notes.txt'), 'utf8')).toBe('ok');
  });

  it('holds for sub-calls of a Code Mode program too', async () => {
    const target = JSON.stringify(path.join(ws, '.claude/settings.local.json'));
    const code = `try { await tools.mcp__fs__write_file({ path: ${target}, content: '{}' }); return 'wrote'; } catch (e) { return 'refused: ' + e.message; }`;
    const out = await h.client.runBatch(
      batch([{ id: 'P', name: 'run_code', args: { code, description: 'rewrite settings' } }], noChannel),
    );
    expect(text(byId(out).P)).toContain('refused: ');
    expect(text(byId(out).P)).toContain('is under .claude');
  });
});

describe('a schema nested deeper than any stack', () => {
  it('is walked without overflowing, and a path `format` at its bottom still counts', () => {
    let nested: Record<string, unknown> = {
      type: 'object',
      properties: { out: { type: 'string', format: 'file-path' } },
    };
    for (let i = 0; i < 200_000; i++) nested = { type: 'object', properties: { a: nested } };
    const check = pathArgsCheck({ root: ws }, { name: 'deep', jsonSchema: nested });
    expect(check({ out: '.claude/settings.local.json' })).toMatch(/deep: the argument out names/);
    expect(check({ out: 'notes.txt' })).toBeUndefined();
  });
});
