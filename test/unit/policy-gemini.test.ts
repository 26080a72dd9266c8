// Gemini CLI policy engine files, from the examples of Gemini CLI's own documentation:
// https://geminicli.com/docs/reference/policy-engine/ (quick start `rm -rf` deny, `git` ask_user,
// arrays of tool names, `mcpName` targeting, `mcpName = "*"`, tiers and `priority`, `denyMessage`,
// `modes`, `commandRegex`, `argsPattern` on the arguments as stable JSON, `allowRedirection`).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { geminiPolicy, parseGeminiPolicy, stableJson } from '../../hooks/gemini-policy';
import { PolicyFileError } from '../../hooks/policy-types';
import { shellParserReady } from '../../hooks/shell';
import { formatExpects, RULES, SHELL_CASES } from '../shell-cases';

function workspace(files: Record<string, string>): string {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'gemini-policy-'));
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    fs.writeFileSync(path.join(ws, rel), text);
  }
  return ws;
}
// Bash commands are read with the shell parser, which loads asynchronously.
beforeAll(() => shellParserReady());

const bash = (command: string) => ({ toolName: 'bash', args: { command } });
const file = { label: '.gemini/policies/a.toml', digest: 'sha256:t' };

describe('Gemini CLI policy TOML', () => {
  it('quick start: rm -rf is denied, with the rule and its line on record', () => {
    const ws = workspace({
      '.gemini/policies/my-rules.toml': `# first\n[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "rm -rf"\ndecision = "deny"\npriority = 100\n`,
    });
    const src = geminiPolicy({ workspace: ws });
    const v = src.evaluate(bash('rm -rf /'));
    expect(v.decision).toBe('deny');
    expect(v.rule).toMatchObject({ file: '.gemini/policies/my-rules.toml', line: 2, format: 'gemini' });
    expect(v.rule!.text).toContain('commandPrefix = "rm -rf"');
    // A prefix ends at a word boundary.
    expect(src.evaluate(bash('rm -rfx')).decision).toBe('none');
    // A denied command hidden after another one is still denied.
    expect(src.evaluate(bash('echo hi && rm -rf /')).decision).toBe('deny');
  });

  it('git asks; a list of tool names; write_file and replace are our write and edit', () => {
    const src = geminiPolicy({
      workspace: workspace({
        '.gemini/policies/p.toml': `[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "git"\ndecision = "ask_user"\npriority = 100\n\n[[rule]]\ntoolName = ["write_file", "replace"]\ndecision = "ask_user"\npriority = 10\n`,
      }),
    });
    expect(src.evaluate(bash('git push origin')).decision).toBe('ask');
    expect(src.evaluate({ toolName: 'write', args: { file_path: 'a', content: 'x' } }).decision).toBe('ask');
    expect(
      src.evaluate({ toolName: 'edit', args: { file_path: 'a', old_string: 'a', new_string: 'b' } }).decision,
    ).toBe('ask');
    expect(src.evaluate({ toolName: 'read', args: { file_path: 'a' } }).decision).toBe('none');
  });

  it('MCP: mcpName + toolName, a whole server, every server, and FQN wildcards', () => {
    const src = geminiPolicy({
      workspace: workspace({
        '.gemini/policies/mcp.toml': `[[rule]]\nmcpName = "my-jira-server"\ntoolName = "search"\ndecision = "allow"\npriority = 200\n\n[[rule]]\nmcpName = "untrusted-server"\ndecision = "deny"\npriority = 500\ndenyMessage = "This server is not trusted by the admin."\n\n[[rule]]\ntoolName = "*"\nmcpName = "*"\ndecision = "ask_user"\npriority = 10\n\n[[rule]]\ntoolName = "mcp_docs_*"\ndecision = "allow"\npriority = 300\n`,
      }),
    });
    expect(src.evaluate({ toolName: 'mcp__my-jira-server__search', args: {} }).decision).toBe('allow');
    expect(src.evaluate({ toolName: 'mcp__my-jira-server__delete', args: {} }).decision).toBe('ask');
    const d = src.evaluate({ toolName: 'mcp__untrusted-server__anything', args: {} });
    expect(d.decision).toBe('deny');
    expect(d.rule!.message).toBe('This server is not trusted by the admin.');
    expect(src.evaluate({ toolName: 'mcp__docs__lookup', args: {} }).decision).toBe('allow');
    expect(src.evaluate({ toolName: 'bash', args: { command: 'ls' } }).decision).toBe('none');
  });

  it('tiers: an admin rule at priority 20 beats a user rule at 100, which beats a workspace rule at 999', () => {
    const ws = workspace({
      'user.toml': '[[rule]]\ntoolName = "run_shell_command"\ndecision = "allow"\npriority = 100\n',
      'admin.toml':
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "curl"\ndecision = "deny"\npriority = 20\n',
      'ws.toml': '[[rule]]\ntoolName = "run_shell_command"\ndecision = "ask_user"\npriority = 999\n',
    });
    const src = geminiPolicy({
      workspace: ws,
      sources: [
        { path: 'ws.toml', tier: 'workspace' },
        { path: 'user.toml', tier: 'user' },
        { path: 'admin.toml', tier: 'admin' },
      ],
    });
    expect(src.evaluate(bash('curl x')).decision).toBe('deny');
    expect(src.evaluate(bash('ls')).decision).toBe('allow');
  });

  it('argsPattern on the stable JSON, commandRegex from the start of the command, on RE2', () => {
    expect(stableJson({ b: 1, a: { d: [1, 'x'], c: null } })).toBe('{"a":{"c":null,"d":[1,"x"]},"b":1}');
    const src = geminiPolicy({
      workspace: workspace({
        '.gemini/policies/re.toml': `[[rule]]\ntoolName = "run_shell_command"\ncommandRegex = "git (commit|push)"\ndecision = "ask_user"\npriority = 5\n\n[[rule]]\ntoolName = "write_file"\nargsPattern = '"file_path":"[^"]*\\.env"'\ndecision = "deny"\npriority = 5\n`,
      }),
    });
    expect(src.evaluate(bash('git push')).decision).toBe('ask');
    expect(src.evaluate(bash('echo git push')).decision).toBe('none');
    expect(src.evaluate({ toolName: 'write', args: { file_path: 'prod.env', content: '' } }).decision).toBe('deny');
    expect(src.evaluate({ toolName: 'write', args: { file_path: 'notes.md', content: '' } }).decision).toBe('none');
  });

  it('a pathological pattern runs in linear time on RE2; one RE2 refuses stops the start with file and line', () => {
    const src = geminiPolicy({
      workspace: workspace({
        '.gemini/policies/slow.toml': `[[rule]]\ntoolName = "run_shell_command"\ncommandRegex = "(a+)+b"\ndecision = "deny"\npriority = 1\n`,
      }),
    });
    // Catastrophic on a backtracking engine (it never matches, after trying every split); RE2
    // answers in one pass.
    expect(src.evaluate(bash(`${'a'.repeat(50_000)}!`)).decision).toBe('none');
    expect(src.evaluate(bash('aaab')).decision).toBe('deny');
    expect(() =>
      parseGeminiPolicy(
        '\n\n[[rule]]\ntoolName = "x"\nargsPattern = "(a)\\\\1"\ndecision = "deny"\n',
        file,
        'workspace',
      ),
    ).toThrow(/a\.toml:3: argsPattern "\(a\)\\\\1" is not a regular expression RE2 accepts/);
  });

  it('modes: a rule for yolo is not active in the default mode; redirection turns an allow into an ask', () => {
    const src = geminiPolicy({
      workspace: workspace({
        '.gemini/policies/m.toml': `[[rule]]\ntoolName = "*"\ndecision = "allow"\npriority = 999\nmodes = ["yolo"]\n\n[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "echo"\ndecision = "allow"\npriority = 1\n`,
      }),
    });
    expect(src.evaluate({ toolName: 'write', args: { file_path: 'a', content: '' } }).decision).toBe('none');
    expect(src.evaluate(bash('echo hi')).decision).toBe('allow');
    const r = src.evaluate(bash('echo hi > out.txt'));
    expect(r.decision).toBe('ask');
    expect(r.note).toMatch(/allowRedirection/);
    // An allow needs every part of a compound command allowed.
    expect(src.evaluate(bash('echo hi; curl x')).decision).toBe('none');
  });

  it('bad input names the file and the line: invalid TOML, an unknown field, a bad decision, both prefix and regex', () => {
    const cases: [string, RegExp][] = [
      ['[[rule]]\ntoolName = \n', /a\.toml:2: not valid TOML/],
      [
        '[[rule]]\ntoolName = "x"\ndecision = "allow"\n\n[[rule]]\ntoolName = "y"\nverdict = "deny"\n',
        /a\.toml:5: rule 2: the field "verdict" is not understood/,
      ],
      [
        '[[rule]]\ntoolName = "x"\ndecision = "block"\n',
        /a\.toml:1: rule 1: decision must be "allow", "deny" or "ask_user"/,
      ],
      ['[[rule]]\ncommandPrefix = "a"\ncommandRegex = "b"\ndecision = "deny"\n', /cannot both be given/],
      [
        '[[rule]]\ntoolName = "x"\ndecision = "deny"\npriority = 1000\n',
        /priority must be a whole number from 0 to 999/,
      ],
    ];
    for (const [text, re] of cases) {
      let err: unknown;
      try {
        parseGeminiPolicy(text, file, 'workspace');
      } catch (e) {
        err = e;
      }
      expect(err, text).toBeInstanceOf(PolicyFileError);
      expect((err as Error).message, text).toMatch(re);
    }
  });
});

// The shell forms of issue 22 item 1 (test/shell-cases.ts), under RULES written as Gemini rules.
describe('Gemini CLI policy reads commands as bash does', () => {
  const prefix = (rule: string) => /^Bash\((.*?)(?::\*)?\)$/.exec(rule)![1];
  const toml = (['allow', 'deny', 'ask'] as const)
    .flatMap((kind) =>
      RULES[kind].map(
        (r) =>
          `[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = ${JSON.stringify(prefix(r))}\ndecision = "${{ allow: 'allow', deny: 'deny', ask: 'ask_user' }[kind]}"\npriority = 100\n`,
      ),
    )
    .join('\n');
  const src = () => geminiPolicy({ workspace: workspace({ '.gemini/policies/shell.toml': toml }) });
  // Like Gemini CLI's own parts, an allowed command must be plain words to be allowed.
  it.each(SHELL_CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    expect(formatExpects(c)).toContain(src().evaluate(bash(c.command)).decision);
  });
  it('an unreadable command under allow rules alone asks', () => {
    const only = geminiPolicy({
      workspace: workspace({
        '.gemini/policies/a.toml':
          '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "echo"\ndecision = "allow"\npriority = 1\n',
      }),
    });
    expect(only.evaluate(bash("echo 'unterminated")).decision).toBe('ask');
    expect(only.evaluate(bash('echo ok')).decision).toBe('allow');
  });
});
