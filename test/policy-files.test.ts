// The policy files of four harnesses applied together through a real worker (hooks/policy.ts):
// Codex `.rules`, Gemini CLI policy TOML, OpenCode `permission` and Claude Code permission rules
// decide direct calls, calls to a real MCP server (@modelcontextprotocol/server-filesystem over
// stdio) and Code Mode sub-calls alike, and the rule that decided is on record: the
// `policy/decided` event, the approval's reason, and `sluice audit`.
// Formats' pages: https://developers.openai.com/codex/rules,
// https://geminicli.com/docs/reference/policy-engine/, https://opencode.ai/docs/permissions/,
// https://docs.anthropic.com/en/docs/claude-code/iam.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { main } from '../cli';
import { policyRules } from '../hooks';
import type { BatchOutput } from '../pipeline/types';
import { bashTool, fsTools } from '../tools';
import { codeModeTool } from '../tools/code-mode';
import { mcpSource, type McpSource } from '../tools/mcp';
import { defineConfig } from '../define/config';
import { eventually, pendingApproval } from './eventually';
import { batch, spawnWorker, startHarness, text, type Harness } from './harness';

const bin = (pkg: string) =>
  path.join(__dirname, '..', 'node_modules', '@modelcontextprotocol', pkg, 'dist', 'index.js');

let ws: string;
let h: Harness;
let mcp: McpSource;

const CODEX = `# team rules
prefix_rule(pattern = ["echo"], match = ["echo hi"])
prefix_rule(
    pattern = ["git", "push"],
    decision = "forbidden",
    justification = "Pushes go through the release script.",
    match = ["git push origin main"],
)
`;
const GEMINI = `[[rule]]
mcpName = "fs"
toolName = "write_file"
decision = "ask_user"
priority = 100

[[rule]]
mcpName = "fs"
toolName = "move_file"
decision = "deny"
priority = 100
denyMessage = "Moving files is done by hand."
`;

beforeAll(async () => {
  ws = fs.realpathSync(fs.mkdtempSync(path.join(inject('runDir'), 'policy-files-')));
  const put = (rel: string, body: string) => {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    fs.writeFileSync(path.join(ws, rel), body);
  };
  put('.codex/rules/default.rules', CODEX);
  put('.gemini/policies/team.toml', GEMINI);
  put('opencode.json', JSON.stringify({ permission: { bash: { 'rm *': 'deny' } } }, null, 2));
  put('.claude/settings.json', JSON.stringify({ permissions: { ask: ['Bash(touch:*)'] } }, null, 2));
  put('notes.txt', 'notes\n');
  const policy = policyRules({ workspace: ws });
  // The server's own annotations would ask for writes anyway; auto here, so the asks below are the policy's.
  mcp = mcpSource({
    server: 'fs',
    command: process.execPath,
    args: [bin('server-filesystem'), ws],
    tools: { write_file: { approval: 'auto' }, move_file: { approval: 'auto' } },
  });
  h = await startHarness(
    'policy-files',
    defineConfig({
      tools: [
        ...fsTools({ root: ws }),
        bashTool({ root: ws, approval: policy.approval('bash') }),
        codeModeTool(),
        ...(await mcp.tools()),
      ],
      preExecute: [...policy.preExecute],
    }),
  );
});
afterAll(async () => {
  await h?.close();
  await mcp?.close();
});

const noChannel = { options: { approvalChannel: false } };
const byId = (out: BatchOutput) => Object.fromEntries(out.results.map((r) => [r.callId, r.result]));
const decided = (out: BatchOutput) =>
  Object.fromEntries(
    out.events.filter((e) => e.type === 'policy/decided').map((e) => [e.data.callId as string, e.data]),
  );

describe('policy files through the worker', () => {
  it('direct calls: a Codex allow removes bash’s prompt, a forbidden rule denies with its justification, OpenCode denies rm', async () => {
    const out = await h.client.runBatch(
      batch(
        [
          { id: 'echo', name: 'bash', args: { command: 'echo policy-allowed' } },
          { id: 'push', name: 'bash', args: { command: 'git push origin main' } },
          { id: 'rm', name: 'bash', args: { command: 'rm -rf notes.txt' } },
          { id: 'touch', name: 'bash', args: { command: 'touch made-by-touch' } },
        ],
        noChannel,
      ),
    );
    const r = byId(out);
    const d = decided(out);
    expect(text(r.echo)).toContain('policy-allowed');
    expect(d.echo).toMatchObject({ decision: 'allow', source: 'codex', file: '.codex/rules/default.rules', line: 2 });
    expect(r.push.error?.code).toBe('DENIED');
    expect(text(r.push)).toContain(
      'denied by .codex/rules/default.rules: `prefix_rule(pattern = ["git", "push"], decision = "forbidden")` — Pushes go through the release script.',
    );
    expect(d.push).toMatchObject({
      decision: 'deny',
      source: 'codex',
      line: 3,
      message: 'Pushes go through the release script.',
    });
    expect(d.push.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(d.push.policyDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(d.rm).toMatchObject({
      decision: 'deny',
      source: 'opencode',
      file: 'opencode.json',
      rule: '"bash": {"rm *": "deny"}',
    });
    expect(fs.existsSync(path.join(ws, 'notes.txt'))).toBe(true);
    // Claude Code's ask, with no approval channel: fails closed, the reason names the file and rule.
    expect(r.touch.error?.code).toBe('DENIED');
    expect(out.events.find((e) => e.type === 'approval/asked' && e.data.callId === 'touch')?.data.reason).toContain(
      'asked by .claude/settings.json: `Bash(touch:*)`',
    );
    expect(fs.existsSync(path.join(ws, 'made-by-touch'))).toBe(false);
  });

  it('MCP calls: Gemini rules by mcpName and toolName ask and deny; the card says which rule asked', async () => {
    const handle = await h.client.startBatch(
      batch(
        [
          { id: 'write', name: 'mcp__fs__write_file', args: { path: path.join(ws, 'from-mcp.txt'), content: 'x' } },
          {
            id: 'move',
            name: 'mcp__fs__move_file',
            args: { source: path.join(ws, 'notes.txt'), destination: path.join(ws, 'moved.txt') },
          },
          { id: 'read', name: 'mcp__fs__read_text_file', args: { path: path.join(ws, 'notes.txt') } },
        ],
        { options: { approvalTimeoutMs: 120_000 } },
      ),
    );
    const p = await pendingApproval(h.client, handle.workflowId, (x) => x.callId === 'write');
    expect(p.reason).toContain(
      'asked by .gemini/policies/team.toml: `toolName = "write_file", mcpName = "fs", decision = "ask_user", priority = 100`',
    );
    // `sluice approvals` prints the same reason on the card. The listing reads the server's
    // visibility store, which may lag the batch's own query under load: wait until it lists the ask.
    await eventually(
      'the ask in the visibility listing',
      async () =>
        (await h.client.approvals.list({ taskQueue: h.taskQueue })).find((m) => m.approvalId === p.approvalId),
      { timeoutMs: 120_000 },
    );
    const lines: string[] = [];
    await main(['approvals', '--address', inject('temporalAddress'), '--task-queue', h.taskQueue], (s) =>
      lines.push(s),
    );
    expect(lines.join('\n')).toContain('why: asked by .gemini/policies/team.toml');
    await h.client.deny(p.approvalId, { by: 'reviewer', reason: 'not now' });
    const out = await handle.result();
    const r = byId(out);
    const d = decided(out);
    expect(d.write).toMatchObject({ decision: 'ask', source: 'gemini', file: '.gemini/policies/team.toml', line: 1 });
    expect(fs.existsSync(path.join(ws, 'from-mcp.txt'))).toBe(false);
    expect(text(r.move)).toContain('denied by .gemini/policies/team.toml');
    expect(text(r.move)).toContain('Moving files is done by hand.');
    expect(d.move).toMatchObject({ decision: 'deny', line: 7 });
    expect(fs.existsSync(path.join(ws, 'moved.txt'))).toBe(false);
    expect(text(r.read)).toContain('notes');
    expect(d.read).toBeUndefined();

    // `sluice audit` shows the rule under the call's pre-execute stage.
    const audit: string[] = [];
    await main(['audit', handle.workflowId, '--address', inject('temporalAddress')], (s) => audit.push(s));
    expect(audit.join('\n')).toContain('policy deny by .gemini/policies/team.toml:7 (gemini)');
  });

  it('Code Mode sub-calls meet the same rules', async () => {
    const code = `
      const out = {};
      for (const [k, f] of [
        ['push', () => tools.bash({ command: 'git push' })],
        ['move', () => tools.mcp__fs__move_file({ source: ${JSON.stringify(path.join(ws, 'notes.txt'))}, destination: ${JSON.stringify(path.join(ws, 'moved2.txt'))} })],
        ['echo', () => tools.bash({ command: 'echo from-code' })],
      ]) {
        try { const r = await f(); out[k] = typeof r === 'string' ? r : JSON.stringify(r); } catch (e) { out[k] = 'refused: ' + e.message; }
      }
      return out;`;
    const out = await h.client.runBatch(
      batch([{ id: 'P', name: 'run_code', args: { code, description: 'policy' } }], noChannel),
    );
    const result = text(byId(out).P);
    expect(result).toContain('refused: denied by .codex/rules/default.rules');
    expect(result).toContain('refused: denied by .gemini/policies/team.toml');
    expect(result).toContain('from-code');
    expect(fs.existsSync(path.join(ws, 'moved2.txt'))).toBe(false);
    const sub = out.events
      .filter((e) => e.type === 'policy/decided')
      .map((e) => [e.data.callId, e.data.source, e.data.decision]);
    expect(sub).toEqual(
      expect.arrayContaining([
        ['P:code:0', 'codex', 'deny'],
        ['P:code:1', 'gemini', 'deny'],
        ['P:code:2', 'codex', 'allow'],
      ]),
    );
  });
});

describe('a policy the worker cannot read', () => {
  const start = async (files: Record<string, string>) => {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(inject('runDir'), 'policy-bad-')));
    for (const [rel, body] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      fs.writeFileSync(path.join(dir, rel), body);
    }
    const w = spawnWorker(
      path.join(__dirname, 'fixtures', 'policy.config.ts'),
      `policy-bad-${process.pid}-${Date.now()}`,
      fs.mkdtempSync(path.join(inject('runDir'), 'policy-bad-state-')),
      { SLUICE_TEST_POLICY_WS: dir },
    );
    try {
      await w.ready;
    } catch (err) {
      return (err as Error).message;
    } finally {
      await w.kill();
    }
    return 'the worker started';
  };

  it('stops the worker at start, naming the file, the line and what was not understood', async () => {
    const why = await start({
      '.codex/rules/default.rules': 'prefix_rule(pattern = ["ls"])\nexec_rule(pattern = ["rm"])\n',
    });
    expect(why).toMatch(/worker exited/);
    expect(why).toContain('.codex/rules/default.rules:2: exec_rule(...) is not understood');
  });

  it('stops the worker when an embedded Codex example fails, naming the rule and the example', async () => {
    const why = await start({
      '.codex/rules/default.rules':
        'prefix_rule(pattern = ["git", "push"], decision = "forbidden", match = ["git pull"])\n',
    });
    expect(why).toContain(
      '.codex/rules/default.rules:1 prefix_rule(pattern = ["git", "push"], decision = "forbidden"): example git pull should match but it does not',
    );
  });
});
