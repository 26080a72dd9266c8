// Codex `.rules` files read without running them, from the examples of Codex's own documentation:
// https://developers.openai.com/codex/rules (the `gh pr view` rule with its match / not_match
// examples; "the most restrictive decision wins"; `decision` defaults to allow) and the
// codex-execpolicy README (`pattern = ["git", ["push", "fetch"]]`, examples as word lists,
// host_executable).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { codexRules, parseCodexConfig, parseRulesFile } from '../../hooks/codex-rules';
import { PolicyFileError } from '../../hooks/policy-types';
import { shellParserReady } from '../../hooks/shell';
import { formatExpects, RULES, SHELL_CASES } from '../shell-cases';

const file = { label: '.codex/rules/default.rules', digest: 'sha256:test' };

const DOCS_RULE = `# Prompt before running commands with the prefix \`gh pr view\` outside the sandbox.
prefix_rule(
    # The prefix to match.
    pattern = ["gh", "pr", "view"],

    # The action to take when Codex requests to run a matching command.
    decision = "prompt",

    # Optional rationale for why this rule exists.
    justification = "Viewing PRs is allowed with approval",

    # \`match\` and \`not_match\` are optional "inline unit tests" where you can
    # provide examples of commands that should (or should not) match this rule.
    match = [
        "gh pr view 7888",
        "gh pr view --repo openai/codex",
        "gh pr view 7888 --json title,body,comments",
    ],
    not_match = [
        # Does not match because the \`pattern\` must be an exact prefix.
        "gh pr --repo openai/codex view 7888",
    ],
)
`;

const README_RULE = `prefix_rule(
    pattern = ["git", ["push", "fetch"]],
    decision = "prompt",  # allow | prompt | forbidden
    match = [["git", "push", "origin", "main"]],  # examples that must match
    not_match = [["git", "status"]],              # examples that must not match
)
`;

function workspace(files: Record<string, string>): string {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'codex-rules-'));
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    fs.writeFileSync(path.join(ws, rel), text);
  }
  return ws;
}
// Bash commands are read with the shell parser, which loads asynchronously.
beforeAll(() => shellParserReady());

const bash = (command: string) => ({ toolName: 'bash', args: { command } });

describe('Codex .rules', () => {
  it("parses the documentation's rule: pattern, decision, justification, examples, and the line it starts on", () => {
    const { rules } = parseRulesFile(DOCS_RULE, file);
    expect(rules).toHaveLength(1);
    const r = rules[0];
    expect(r.pattern).toEqual([['gh'], ['pr'], ['view']]);
    expect(r.decision).toBe('ask');
    expect(r.message).toBe('Viewing PRs is allowed with approval');
    expect(r.line).toBe(2);
    expect(r.text).toBe('prefix_rule(pattern = ["gh", "pr", "view"], decision = "prompt")');
    expect(r.examples.match).toHaveLength(3);
    expect(r.examples.notMatch[0]).toEqual(['gh', 'pr', '--repo', 'openai/codex', 'view', '7888']);
  });

  it('runs the documented examples at load, and asks for gh pr view but not for the reordered command', () => {
    const ws = workspace({ '.codex/rules/default.rules': DOCS_RULE + README_RULE });
    const src = codexRules({ workspace: ws });
    expect(src.examples()).toMatchObject({ ran: 6, failures: [] });
    expect(src.evaluate(bash('gh pr view 7888')).decision).toBe('ask');
    expect(src.evaluate(bash('gh pr --repo openai/codex view 7888')).decision).toBe('none');
    // alternatives at one position
    expect(src.evaluate(bash('git fetch origin')).decision).toBe('ask');
    expect(src.evaluate(bash('git status')).decision).toBe('none');
  });

  it('refuses to start when an embedded example fails, naming the file, the line, the rule and the example', () => {
    const broken = README_RULE.replace('not_match = [["git", "status"]]', 'not_match = ["git push --force"]');
    const ws = workspace({ '.codex/rules/team.rules': `\n\n${broken}` });
    expect(() => codexRules({ workspace: ws })).toThrow(
      /\.codex\/rules\/team\.rules:3 prefix_rule\(pattern = \["git", \["push", "fetch"\]\], decision = "prompt"\): example git push --force should not match but it does/,
    );
  });

  it('strictest decision wins: forbidden over prompt over allow, whatever the order', () => {
    const ws = workspace({
      '.codex/rules/a.rules':
        'prefix_rule(pattern = ["git"])\nprefix_rule(pattern = ["git", "push"], decision = "forbidden", justification = "Use the release script.")',
      '.codex/rules/b.rules': 'prefix_rule(pattern = ["git", "push"], decision = "prompt")',
    });
    const src = codexRules({ workspace: ws });
    const v = src.evaluate(bash('git push origin main'));
    expect(v.decision).toBe('deny');
    expect(v.rule).toMatchObject({ file: '.codex/rules/a.rules', line: 2, message: 'Use the release script.' });
    expect(v.matched).toHaveLength(3);
    expect(src.evaluate(bash('git log')).decision).toBe('allow');
  });

  it('judges every command of a compound one: forbidden anywhere decides, allow needs every part', () => {
    const ws = workspace({
      '.codex/rules/default.rules':
        'prefix_rule(pattern = ["ls"])\nprefix_rule(pattern = ["rm"], decision = "forbidden")',
    });
    const src = codexRules({ workspace: ws });
    expect(src.evaluate(bash('ls -la && rm -rf /')).decision).toBe('deny');
    expect(src.evaluate(bash('ls; ls -la | ls')).decision).toBe('allow');
    expect(src.evaluate(bash('ls && curl evil')).decision).toBe('none');
    // Substitution, redirection and globs are not what the words say: an allow rule does not vouch for them.
    expect(src.evaluate(bash('ls $(cat list)')).decision).toBe('none');
    expect(src.evaluate(bash('ls > out.txt')).decision).toBe('none');
    // A forbidden program is forbidden by its path too; an allowed one only when host_executable lists the path.
    expect(src.evaluate(bash('/bin/rm -rf x')).decision).toBe('deny');
    expect(src.evaluate(bash('/usr/bin/ls')).decision).toBe('none');
  });

  it('host_executable lets an allowed program be written as one of its listed paths', () => {
    const ws = workspace({
      '.codex/rules/default.rules':
        'host_executable(name = "git", paths = ["/usr/bin/git"])\nprefix_rule(pattern = ["git", "status"])',
    });
    const src = codexRules({ workspace: ws });
    expect(src.evaluate(bash('/usr/bin/git status')).decision).toBe('allow');
    expect(src.evaluate(bash('/tmp/git status')).decision).toBe('none');
  });

  it('host_executable paths may start at the home folder, as Codex writes them (~/.openai/bin/az)', () => {
    const ws = workspace({
      '.codex/rules/default.rules':
        'host_executable(name = "az", paths = ["~/.openai/bin/az"])\nprefix_rule(pattern = ["az", "account"])',
    });
    const src = codexRules({ workspace: ws });
    expect(src.evaluate(bash(`${os.homedir()}/.openai/bin/az account show`)).decision).toBe('allow');
    expect(src.evaluate(bash('/tmp/az account show')).decision).toBe('none');
    expect(() =>
      codexRules({
        workspace: workspace({ '.codex/rules/default.rules': 'host_executable(name = "az", paths = ["bin/az"])' }),
      }),
    ).toThrow(/absolute or start with ~\//);
  });

  it('reads names bound to literals (SHELLS = [...]) and joins lists with +, without running anything', () => {
    const text = `SHELLS = ["bash", "zsh"]\nFLAGS = ["-c"] + ["-lc"]\nprefix_rule(pattern = [SHELLS, FLAGS], decision = "forbidden", match = ["zsh -lc 'date'"])`;
    const { rules } = parseRulesFile(text, file);
    expect(rules[0].pattern).toEqual([
      ['bash', 'zsh'],
      ['-c', '-lc'],
    ]);
  });

  it('stops at anything outside the subset, naming the file, the line and what was not understood', () => {
    const cases: [string, RegExp][] = [
      ['load("//x.star", "f")\n', /default\.rules:1: load\(\.\.\.\) is not understood/],
      [
        '\nprefix_rule(pattern = ["a"], decision = "deny")',
        /default\.rules:2: decision must be "allow", "prompt" or "forbidden", not "deny"/,
      ],
      ['prefix_rule(pattern = [])', /pattern must be a non-empty list/],
      ['prefix_rule(pattern = ["a"], when = "x")', /prefix_rule has no argument when/],
      ['prefix_rule(pattern = ["a"]', /expected "," or "\)"|found the end of the file/],
      ['prefix_rule(pattern = [UNDEFINED])', /the name UNDEFINED is not defined/],
      ['\n\nfor x in y: pass', /default\.rules:3: .*not understood/],
      ['prefix_rule(pattern = ["a"], match = [open("f")])', /open\(\.\.\.\) is not understood inside a value/],
    ];
    for (const [text, re] of cases) {
      const err = (() => {
        try {
          parseRulesFile(text, file);
        } catch (e) {
          return e as Error;
        }
      })();
      expect(err, text).toBeInstanceOf(PolicyFileError);
      expect(err!.message, text).toMatch(re);
    }
  });

  it('maps config.toml: never turns prompt into deny, read-only denies the file editors, danger-full-access is not honoured', () => {
    const ws = workspace({
      '.codex/rules/default.rules': 'prefix_rule(pattern = ["git", "push"], decision = "prompt")',
      '.codex/config.toml': 'approval_policy = "never"\nsandbox_mode = "read-only"\n',
    });
    const src = codexRules({ workspace: ws });
    expect(src.evaluate(bash('git push')).decision).toBe('deny');
    expect(src.evaluate({ toolName: 'write', args: { file_path: 'a.txt', content: '' } }).decision).toBe('deny');
    expect(src.evaluate({ toolName: 'read', args: { file_path: 'a.txt' } }).decision).toBe('none');
    const full = parseCodexConfig('sandbox_mode = "danger-full-access"', {
      format: 'codex',
      label: '.codex/config.toml',
      path: '/x',
      digest: 'd',
    });
    expect(full.notes.join()).toMatch(/not honoured/);
    expect(() =>
      parseCodexConfig('\napproval_policy = "sometimes"', {
        format: 'codex',
        label: '.codex/config.toml',
        path: '/x',
        digest: 'd',
      }),
    ).toThrow(/config\.toml:2: approval_policy must be one of/);
  });

  // One row per value Codex accepts (developers.openai.com/codex/config-reference): each has a note
  // saying what it means here, and only never / read-only change a decision.
  it.each([
    ['approval_policy', 'untrusted', /ask first/, 'ask'],
    ['approval_policy', 'on-request', /no meaning in Sluice/, 'ask'],
    ['approval_policy', 'on-failure', /no meaning in Sluice/, 'ask'],
    ['approval_policy', 'never', /a prompt rule denies/, 'deny'],
    ['sandbox_mode', 'read-only', /file-editing tools .* are denied/, 'ask'],
    ['sandbox_mode', 'workspace-write', /Sluice's default/, 'ask'],
    ['sandbox_mode', 'danger-full-access', /not honoured/, 'ask'],
  ])('%s = "%s": %s, a prompt rule %s', (key, value, note, promptRule) => {
    const ws = workspace({
      '.codex/rules/default.rules': 'prefix_rule(pattern = ["git", "push"], decision = "prompt")',
      '.codex/config.toml': `${key} = "${value}"\n`,
    });
    const src = codexRules({ workspace: ws });
    expect(src.warnings).toEqual([expect.stringMatching(note)]);
    expect(src.evaluate(bash('git push')).decision).toBe(promptRule);
    const edit = src.evaluate({ toolName: 'edit', args: { file_path: 'a.txt', old_string: 'a', new_string: 'b' } });
    expect(edit.decision).toBe(value === 'read-only' ? 'deny' : 'none');
  });

  it('refuses a value that is only a name on Object.prototype', () => {
    const file = { format: 'codex' as const, label: '.codex/config.toml', path: '/x', digest: 'd' };
    expect(() => parseCodexConfig('sandbox_mode = "constructor"', file)).toThrow(
      /sandbox_mode must be one of read-only/,
    );
    expect(() => parseCodexConfig('approval_policy = "__proto__"', file)).toThrow(/approval_policy must be one of/);
  });
});

// The shell forms of issue 22 item 1 (test/shell-cases.ts), under RULES written as Codex rules.
describe('Codex .rules read commands as bash does', () => {
  const prefix = (rule: string) => /^Bash\((.*?)(?::\*)?\)$/.exec(rule)![1].split(' ');
  const rules = (['allow', 'deny', 'ask'] as const)
    .flatMap((kind) =>
      RULES[kind].map(
        (r) =>
          `prefix_rule(pattern = ${JSON.stringify(prefix(r))}, decision = "${{ allow: 'allow', deny: 'forbidden', ask: 'prompt' }[kind]}")`,
      ),
    )
    .join('\n');
  const src = () => codexRules({ workspace: workspace({ '.codex/rules/shell.rules': rules }) });
  // Codex vouches only for plain words: a substitution or brace expansion is an opaque script.
  it.each(SHELL_CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    expect(formatExpects(c)).toContain(src().evaluate(bash(c.command)).decision);
  });
  it('an unreadable command under allow rules alone asks', () => {
    const only = codexRules({ workspace: workspace({ '.codex/rules/a.rules': 'prefix_rule(pattern = ["echo"])' }) });
    expect(only.evaluate(bash("echo 'unterminated")).decision).toBe('ask');
    expect(only.evaluate(bash('echo ok')).decision).toBe('allow');
  });
});
