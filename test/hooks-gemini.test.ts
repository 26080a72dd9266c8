// Gemini CLI hooks, the third dialect: .gemini/settings.json BeforeTool / AfterTool with real
// bash (jq) and node scripts, against real tools and a real Temporal server.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { commandHooks, type CommandHooks } from '../hooks';
import type { BatchOutput } from '../pipeline/types';
import { bashTool, fsTools } from '../tools';
import { codeModeTool } from '../tools/code-mode';
import { defineConfig } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';

const FIXTURES = path.join(__dirname, 'fixtures', 'hooks');
const script = (name: string, ...args: string[]) =>
  [
    name.endsWith('.js') ? 'node' : 'bash',
    JSON.stringify(path.join(FIXTURES, name)),
    ...args.map((a) => JSON.stringify(a)),
  ].join(' ');

let ws: string;
let seenFile: string;
let hooks: CommandHooks;
let h: Harness;

beforeAll(async () => {
  ws = fs.mkdtempSync(path.join(inject('runDir'), 'gemini-ws-'));
  seenFile = path.join(fs.mkdtempSync(path.join(inject('runDir'), 'gemini-seen-')), 'seen.jsonl');
  fs.mkdirSync(path.join(ws, '.gemini'));
  fs.writeFileSync(path.join(ws, 'secret.txt'), 'SECRET=hunter2\n');
  fs.writeFileSync(path.join(ws, 'ok.txt'), 'nothing to see\n');
  fs.writeFileSync(
    path.join(ws, '.gemini', 'settings.json'),
    JSON.stringify({
      hooks: {
        enabled: true,
        BeforeTool: [
          {
            matcher: 'run_shell_command',
            hooks: [{ name: 'shell-guard', type: 'command', command: script('gemini-shell-guard.sh'), timeout: 10000 }],
          },
          { matcher: 'write_file|replace', hooks: [{ type: 'command', command: script('gemini-env-guard.sh') }] },
          { matcher: '.*', hooks: [{ type: 'command', command: script('record-call.js', seenFile, 'gemini') }] },
          {
            matcher: 'glob',
            sequential: true,
            hooks: [{ type: 'command', command: 'sleep 5', timeout: 500 }],
          },
        ],
        AfterTool: [{ matcher: 'read_file', hooks: [{ type: 'command', command: script('gemini-after-read.js') }] }],
        SessionStart: [{ hooks: [{ type: 'command', command: 'true' }] }],
      },
    }),
  );
  hooks = commandHooks({ workspace: ws });
  h = await startHarness(
    'gemini-hooks',
    defineConfig({
      tools: [...fsTools({ root: ws }), bashTool({ root: ws, approval: 'auto' }), codeModeTool()],
      preExecute: hooks.preExecute,
      postExecute: hooks.postExecute,
    }),
  );
});
afterAll(() => h?.close());

const byId = (out: BatchOutput) => Object.fromEntries(out.results.map((r) => [r.callId, r.result]));
const ofType = (out: BatchOutput, type: string) => out.events.filter((e) => e.type === type).map((e) => e.data);

describe('Gemini CLI hooks', () => {
  it('loads .gemini/settings.json, warning about what it cannot honour', () => {
    expect(hooks.hooks.map((x) => `${x.dialect}:${x.event}`)).toEqual([
      'gemini:BeforeTool',
      'gemini:BeforeTool',
      'gemini:BeforeTool',
      'gemini:BeforeTool',
      'gemini:AfterTool',
    ]);
    // Gemini timeouts are milliseconds.
    expect(hooks.hooks[0].timeoutSec).toBe(10);
    const warnings = hooks.warnings.join('\n');
    expect(warnings).toMatch(/hooks\.enabled is not an event/);
    expect(warnings).toMatch(/"sequential" is not honoured/);
    expect(warnings).toMatch(/SessionStart hooks are ignored/);
  });

  it('BeforeTool: a JSON deny and an exit 2 block, under Gemini tool names, also from run_code', async () => {
    const code = `
      try { await tools.bash({ command: 'rm -rf ./ok.txt' }); return 'ran'; }
      catch (e) { return 'refused: ' + e.message; }`;
    const out = await h.client.runBatch(
      batch([
        { id: 'rm', name: 'bash', args: { command: 'rm -rf ./ok.txt' } },
        { id: 'echo', name: 'Bash', args: { command: 'echo fine' } },
        { id: 'env', name: 'write', args: { file_path: '.env', content: 'A=1' } },
        { id: 'edit', name: 'edit', args: { file_path: 'sub/.env', old_string: 'a', new_string: 'b' } },
        { id: 'P', name: 'run_code', args: { code, description: 'delete ok.txt' } },
      ]),
    );
    const r = byId(out);
    expect(text(r.rm)).toContain('recursive deletes are blocked by the gemini policy');
    expect(text(r.echo)).toContain('fine');
    expect(text(r.env)).toContain('gemini policy: .env is off limits');
    expect(text(r.edit)).toContain('gemini policy: sub/.env is off limits');
    expect(text(r.P)).toContain('refused: recursive deletes are blocked');
    expect(fs.existsSync(path.join(ws, 'ok.txt'))).toBe(true);
    expect(fs.existsSync(path.join(ws, '.env'))).toBe(false);

    const seen = fs
      .readFileSync(seenFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const names = Object.fromEntries(seen.map((s) => [s.id, s.tool_name]));
    expect(names).toMatchObject({ rm: 'run_shell_command', echo: 'run_shell_command', env: 'write_file' });
    expect(names['P:code:0']).toBe('run_shell_command');
    expect(seen.find((s) => s.id === 'rm').tool_input).toEqual({ command: 'rm -rf ./ok.txt' });
    const results = ofType(out, 'hook/result').filter((e) => e.callId === 'rm');
    expect(results[0]).toMatchObject({ event: 'BeforeTool', decision: 'deny', exitCode: 0 });
  });

  it('AfterTool: decision deny withholds the result; additionalContext follows the batch', async () => {
    const out = await h.client.runBatch(
      batch([
        { id: 'sec', name: 'read', args: { file_path: 'secret.txt' } },
        { id: 'ok', name: 'read', args: { file_path: 'ok.txt' } },
      ]),
    );
    const r = byId(out);
    expect(r.sec.error?.code).toBe('BLOCKED');
    expect(text(r.sec)).toBe('the file held a secret; its content was withheld');
    expect(text(r.sec)).not.toContain('hunter2');
    expect(text(r.ok)).toContain('nothing to see');
    expect(out.messages.at(-1)).toMatchObject({ role: 'user', content: 'read ok.txt at a timestamp' });
  });

  it('a timeout given in milliseconds kills the hook and does not block', async () => {
    const out = await h.client.runBatch(batch([{ id: 'g', name: 'glob', args: { pattern: '*.txt' } }]));
    expect(out.results[0].result.isError).toBe(false);
    const sleepy = ofType(out, 'hook/result').find((e) => e.timedOut);
    expect(sleepy?.error).toMatch(/did not finish within its 0.5s timeout/);
  });
});
