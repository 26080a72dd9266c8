// Every policy format together (hooks/policy.ts) and `sluice policy explain` / `check`: which
// source wins, the rule and line on record, the approval reason's words, the embedded tests run by
// `check` (a broken Codex example fails it), a Sluice test file, and rules nothing matched.
// Formats' own pages: https://docs.anthropic.com/en/docs/claude-code/iam (permission rules),
// https://developers.openai.com/codex/rules, https://geminicli.com/docs/reference/policy-engine/,
// https://opencode.ai/docs/permissions/.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { decisionOf, policyRules } from '../../hooks/policy';
import { shellParserReady } from '../../hooks/shell';
import { runCli } from '../run-cli';

function workspace(files: Record<string, string>): string {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'policy-all-'));
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    fs.writeFileSync(path.join(ws, rel), text);
  }
  return ws;
}

const CLAUDE = JSON.stringify({ permissions: { allow: ['Bash(git status)'], ask: ['Bash(git push:*)'] } }, null, 2);
const CODEX = `prefix_rule(pattern = ["git", "push"], decision = "prompt", match = ["git push origin main"])
prefix_rule(
    pattern = ["git", "push", "--force"],
    decision = "forbidden",
    justification = "Force-pushing rewrites others' history.",
    match = ["git push --force origin"],
    not_match = ["git push origin"],
)
`;
const GEMINI = '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "curl"\ndecision = "deny"\npriority = 10\n';
const OPENCODE = JSON.stringify({ permission: { bash: { 'npm *': 'allow', 'rm *': 'deny' } } }, null, 2);

function all(): string {
  return workspace({
    '.claude/settings.json': CLAUDE,
    '.codex/rules/default.rules': CODEX,
    '.gemini/policies/team.toml': GEMINI,
    'opencode.json': OPENCODE,
  });
}

async function cli(args: string[]): Promise<{ code: number; text: string }> {
  const { code, output } = await runCli(args);
  return { code, text: output };
}

describe('policyRules across formats', () => {
  it('the strictest source wins and says which file, line and rule decided', async () => {
    await shellParserReady();
    const p = policyRules({ workspace: all() });
    expect(p.files.map((f) => f.label)).toEqual([
      '.claude/settings.json',
      '.codex/rules/default.rules',
      '.gemini/policies/team.toml',
      'opencode.json',
    ]);
    const push = p.explain({ toolName: 'bash', args: { command: 'git push --force origin' } });
    expect(push.decision).toBe('deny');
    expect(push.winner!.rule).toMatchObject({ format: 'codex', file: '.codex/rules/default.rules', line: 2 });
    expect(push.sources.find((s) => s.format === 'claude')).toMatchObject({
      decision: 'ask',
      rule: { line: 7, text: 'Bash(git push:*)' },
    });
    // An ask from Claude Code and Codex: the first source in order names the rule.
    const ask = p.explain({ toolName: 'bash', args: { command: 'git push origin' } });
    expect(ask.decision).toBe('ask');
    expect(decisionOf('ask', ask.winner!.rule!)).toEqual({
      kind: 'ask',
      reason: 'asked by .claude/settings.json: `Bash(git push:*)`',
    });
    expect(decisionOf('deny', push.winner!.rule!)).toEqual({
      kind: 'deny',
      reason:
        'denied by .codex/rules/default.rules: `prefix_rule(pattern = ["git", "push", "--force"], decision = "forbidden")` — Force-pushing rewrites others\' history.',
    });
    expect(p.explain({ toolName: 'bash', args: { command: 'curl x' } }).winner!.format).toBe('gemini');
    expect(p.explain({ toolName: 'bash', args: { command: 'rm -rf x' } }).winner!.format).toBe('opencode');
    expect(p.explain({ toolName: 'bash', args: { command: 'npm test' } }).decision).toBe('allow');
    expect(await p.approval('bash')({ command: 'npm test' })).toBe('auto');
    expect(await p.approval('bash')({ command: 'npm test && git push' })).toBe('ask');
  });

  it('a failing embedded example stops policyRules (the worker) unless asked to report it', () => {
    const ws = workspace({
      '.codex/rules/default.rules': CODEX.replace(
        'not_match = ["git push origin"]',
        'not_match = ["git push --force x"]',
      ),
    });
    expect(() => policyRules({ workspace: ws })).toThrow(
      /default\.rules:2 .*example git push --force x should not match but it does/,
    );
    expect(policyRules({ workspace: ws, examples: 'report' }).check().ok).toBe(false);
  });
});

describe('sluice policy', () => {
  it('explain prints every source and the winner; --json carries the files and digests', async () => {
    const ws = all();
    const r = await cli(['policy', 'explain', 'bash', '{"command":"git push --force origin"}', '--workspace', ws]);
    expect(r.code).toBe(0);
    expect(r.text).toMatch(/claude +ask +\.claude\/settings\.json:7 +Bash\(git push:\*\)/);
    expect(r.text).toMatch(/codex +deny +\.codex\/rules\/default\.rules:2/);
    expect(r.text).toMatch(/gemini +no opinion/);
    expect(r.text).toMatch(/→ deny, decided by \.codex\/rules\/default\.rules:2/);
    const calls = path.join(ws, 'calls.json');
    fs.writeFileSync(
      calls,
      JSON.stringify([
        { name: 'bash', arguments: '{"command":"npm ci"}' },
        { name: 'read', arguments: { file_path: 'a' } },
      ]),
    );
    const j = await cli(['policy', 'explain', '--file', calls, '--workspace', ws, '--json']);
    const doc = JSON.parse(j.text);
    expect(doc.calls.map((c: { explanation: { decision: string } }) => c.explanation.decision)).toEqual([
      'allow',
      'none',
    ]);
    expect(doc.files[0].digest).toMatch(/^sha256:/);
    expect(doc.policyDigest).toMatch(/^sha256:/);
    expect((await cli(['policy', 'explain', 'bash', 'not json', '--workspace', ws])).code).toBe(2);
  });

  it('check passes on good examples and tests, lists unmatched rules, and fails on a broken example', async () => {
    const ws = all();
    fs.writeFileSync(
      path.join(ws, 'policy-tests.json'),
      JSON.stringify({
        tests: [
          {
            tool: 'bash',
            args: { command: 'git push origin' },
            expect: 'ask',
            source: 'claude',
            rule: 'Bash(git push:*)',
          },
          { tool: 'bash', args: { command: 'curl example.com' }, expect: 'deny', source: 'gemini' },
          { tool: 'bash', args: { command: 'npm test' }, expect: 'allow' },
        ],
      }),
    );
    const ok = await cli(['policy', 'check', '--workspace', ws]);
    expect(ok.text).toMatch(/embedded examples: 3 run, 0 failed/);
    expect(ok.text).toMatch(/policy tests: 3 run, 0 failed/);
    // Nothing exercised `git status` or `rm *`.
    expect(ok.text).toMatch(/\.claude\/settings\.json:4 Bash\(git status\)/);
    expect(ok.text).toMatch(/opencode\.json:5 "bash": \{"rm \*": "deny"\}/);
    expect(ok.code).toBe(0);
    expect((await cli(['policy', 'check', '--workspace', ws, '--strict'])).code).toBe(1);

    fs.writeFileSync(
      path.join(ws, 'policy-tests.json'),
      JSON.stringify({ tests: [{ tool: 'bash', args: { command: 'curl x' }, expect: 'allow' }] }),
    );
    const wrong = await cli(['policy', 'check', '--workspace', ws]);
    expect(wrong.code).toBe(1);
    expect(wrong.text).toMatch(/FAIL tests\[0\] bash \{"command":"curl x"\}: expected allow, got deny/);

    fs.writeFileSync(
      path.join(ws, '.codex/rules/default.rules'),
      CODEX.replace('match = ["git push --force origin"]', 'match = ["git push origin"]'),
    );
    fs.rmSync(path.join(ws, 'policy-tests.json'));
    const broken = await cli(['policy', 'check', '--workspace', ws]);
    expect(broken.code).toBe(1);
    expect(broken.text).toMatch(
      /FAIL \.codex\/rules\/default\.rules:2 .*: example git push origin should match but it does not/,
    );
  });

  it('an unreadable file fails with its name and line', async () => {
    const ws = workspace({ '.gemini/policies/bad.toml': '[[rule]]\ntoolName = "x"\ndecision = "maybe"\n' });
    const r = await cli(['policy', 'check', '--workspace', ws]);
    expect(r.code).toBe(1);
    expect(r.text).toMatch(/\.gemini\/policies\/bad\.toml:1: rule 1: decision must be/);
  });
});
