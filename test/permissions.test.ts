// Claude Code permission rules as a pre-execute extension, through a real worker: allow removes
// bash's prompt, ask asks, deny denies (over both), hooks still run, Code Mode sub-calls too.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { z } from 'zod';
import { commandHooks, permissionRules } from '../hooks';
import type { BatchOutput } from '../pipeline/types';
import { bashTool, fsTools } from '../tools';
import { codeModeTool } from '../tools/code-mode';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';

let ws: string;
let seenFile: string;
let h: Harness;

beforeAll(async () => {
  ws = fs.mkdtempSync(path.join(inject('runDir'), 'perm-ws-'));
  seenFile = path.join(fs.mkdtempSync(path.join(inject('runDir'), 'perm-seen-')), 'seen.jsonl');
  fs.mkdirSync(path.join(ws, '.claude'));
  fs.writeFileSync(path.join(ws, '.env'), 'TOKEN=planted');
  const record = `node ${JSON.stringify(path.join(__dirname, 'fixtures', 'hooks', 'record-call.js'))} ${JSON.stringify(seenFile)} hook`;
  fs.writeFileSync(
    path.join(ws, '.claude', 'settings.json'),
    JSON.stringify({
      permissions: {
        allow: ['Bash(echo:*)', 'Bash(rm -rf build)', 'Edit(src/**)'],
        ask: ['mcp__deploy'],
        deny: ['Read(./.env)', 'Edit(src/generated/**)'],
      },
      hooks: { PreToolUse: [{ matcher: '*', hooks: [{ type: 'command', command: record }] }] },
    }),
  );
  fs.writeFileSync(
    path.join(ws, '.claude', 'settings.local.json'),
    JSON.stringify({ permissions: { deny: ['Bash(rm:*)'] } }),
  );
  const hooks = commandHooks({ workspace: ws });
  const rules = permissionRules({ workspace: ws });
  h = await startHarness(
    'permissions',
    defineConfig({
      tools: [
        ...fsTools({ root: ws }),
        bashTool({ root: ws, approval: rules.approval('Bash') }),
        codeModeTool(),
        defineTool({
          name: 'mcp__deploy__release',
          description: 'fixture MCP-named tool',
          input: z.object({}),
          execute: () => 'released',
        }),
      ],
      preExecute: [...hooks.preExecute, ...rules.preExecute],
    }),
  );
});
afterAll(() => h?.close());

const noChannel = { options: { approvalChannel: false } };
const byId = (out: BatchOutput) => Object.fromEntries(out.results.map((r) => [r.callId, r.result]));
const ofType = (out: BatchOutput, type: string) => out.events.filter((e) => e.type === type).map((e) => e.data);

describe('permission rules', () => {
  it('allow runs bash without a prompt; unlisted asks; deny wins over an allow that also matches', async () => {
    const out = await h.client.runBatch(
      batch(
        [
          { id: 'allowed', name: 'bash', args: { command: 'echo allowed-by-rule' } },
          { id: 'unlisted', name: 'bash', args: { command: 'touch unlisted-ran' } },
          { id: 'denied', name: 'Bash', args: { command: 'rm -rf build' } },
        ],
        noChannel,
      ),
    );
    const r = byId(out);
    expect(text(r.allowed)).toContain('allowed-by-rule');
    expect(r.unlisted.error?.code).toBe('DENIED');
    expect(fs.existsSync(path.join(ws, 'unlisted-ran'))).toBe(false);
    expect(text(r.denied)).toContain(
      'the permission rule "Bash(rm:*)" in .claude/settings.local.json denies this call',
    );
    const asked = ofType(out, 'approval/asked').map((e) => e.callId);
    expect(asked).toEqual(['unlisted']);
    const matched = ofType(out, 'permission/matched');
    expect(matched).toEqual([
      expect.objectContaining({ callId: 'allowed', decision: 'allow', rule: 'Bash(echo:*)' }),
      expect.objectContaining({ callId: 'denied', decision: 'deny', settings: '.claude/settings.local.json' }),
    ]);
    expect(matched[0].settingsDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    // Hooks still run for every call, denied ones included.
    const hooked = fs.readFileSync(seenFile, 'utf8');
    for (const id of ['allowed', 'unlisted', 'denied']) expect(hooked).toContain(`"id":"${id}"`);
  });

  it('Read(./.env), Edit(src/**), Edit(src/generated/**) and mcp__deploy, directly and from run_code', async () => {
    const code = `
      const out = {};
      for (const [k, f] of [['env', () => tools.read({ file_path: '.env' })], ['rm', () => tools.bash({ command: 'rm -rf src' })]]) {
        try { await f(); out[k] = 'ran'; } catch (e) { out[k] = e.message; }
      }
      return out;`;
    const out = await h.client.runBatch(
      batch(
        [
          { id: 'env', name: 'read', args: { file_path: '.env' } },
          { id: 'src', name: 'write', args: { file_path: 'src/a.ts', content: 'ok' } },
          { id: 'gen', name: 'write', args: { file_path: 'src/generated/a.ts', content: 'no' } },
          { id: 'mcp', name: 'mcp__deploy__release', args: {} },
          { id: 'P', name: 'run_code', args: { code, description: 'read env, remove src' } },
        ],
        noChannel,
      ),
    );
    const r = byId(out);
    expect(text(r.env)).toContain('"Read(./.env)"');
    expect(text(r.env)).not.toContain('planted');
    expect(r.src.isError).toBe(false);
    expect(text(r.gen)).toContain('"Edit(src/generated/**)"');
    expect(fs.existsSync(path.join(ws, 'src/generated/a.ts'))).toBe(false);
    expect(r.mcp.error?.code).toBe('DENIED');
    expect(ofType(out, 'approval/asked').find((e) => e.callId === 'mcp')?.reason).toContain('"mcp__deploy"');
    expect(text(r.P)).toContain('Read(./.env)');
    expect(text(r.P)).toContain('Bash(rm:*)');
    expect(fs.existsSync(path.join(ws, 'src', 'a.ts'))).toBe(true);
  });
});
