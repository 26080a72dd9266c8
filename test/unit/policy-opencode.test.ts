// OpenCode's `permission` block, from the examples of OpenCode's own documentation:
// https://opencode.ai/docs/permissions/ (global `*` with per-tool overrides, a single action for
// everything, granular bash and edit rules where the last matching rule wins, wildcards, command
// wrappers such as `sudo rm -rf /`, external_directory with `~`).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { openCodePermissions } from '../../hooks/opencode-permissions';
import { PolicyFileError } from '../../hooks/policy-types';
import { shellParserReady } from '../../hooks/shell';
import { formatExpects, RULES, SHELL_CASES } from '../shell-cases';

function workspace(config: unknown, raw?: string): string {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'opencode-'));
  fs.writeFileSync(path.join(ws, 'opencode.json'), raw ?? JSON.stringify(config, null, 2));
  return ws;
}
// Bash commands are read with the shell parser, which loads asynchronously.
beforeAll(() => shellParserReady());

const bash = (command: string) => ({ toolName: 'bash', args: { command } });

describe('OpenCode permission', () => {
  it('global * with per-tool overrides, and one action for everything', () => {
    const src = openCodePermissions({
      workspace: workspace({
        $schema: 'https://opencode.ai/config.json',
        permission: { '*': 'ask', bash: 'allow', edit: 'deny' },
      }),
    });
    expect(src.evaluate(bash('anything')).decision).toBe('allow');
    expect(src.evaluate({ toolName: 'write', args: { file_path: 'a.txt', content: '' } }).decision).toBe('deny');
    expect(src.evaluate({ toolName: 'read', args: { file_path: 'a.txt' } }).decision).toBe('ask');
    const all = openCodePermissions({ workspace: workspace({ permission: 'allow' }) });
    expect(all.evaluate({ toolName: 'mcp__x__y', args: {} }).decision).toBe('allow');
  });

  it('granular rules: the last matching rule wins, with its file and line on record', () => {
    const ws = workspace({
      permission: {
        bash: { '*': 'ask', 'git *': 'allow', 'npm *': 'allow', 'rm *': 'deny', 'grep *': 'allow' },
        edit: { '*': 'deny', 'packages/web/src/content/docs/*.mdx': 'allow' },
      },
    });
    const src = openCodePermissions({ workspace: ws });
    const v = src.evaluate(bash('git status --porcelain'));
    expect(v.decision).toBe('allow');
    expect(v.rule).toMatchObject({ file: 'opencode.json', line: 5, text: '"bash": {"git *": "allow"}' });
    // `git *` also matches a bare `git`.
    expect(src.evaluate(bash('git')).decision).toBe('allow');
    expect(src.evaluate(bash('rm -rf build')).decision).toBe('deny');
    expect(src.evaluate(bash('curl x')).decision).toBe('ask');
    // A compound command: the strictest of its commands.
    expect(src.evaluate(bash('git status && rm -rf /')).decision).toBe('deny');
    expect(
      src.evaluate({ toolName: 'edit', args: { file_path: 'packages/web/src/content/docs/a.mdx' } }).decision,
    ).toBe('allow');
    expect(src.evaluate({ toolName: 'write', args: { file_path: 'src/a.ts', content: '' } }).decision).toBe('deny');
  });

  it('wrappers: sudo rm -rf / is denied by rm *, nested wrappers are peeled', () => {
    const src = openCodePermissions({
      workspace: workspace({ permission: { bash: { '*': 'allow', 'rm *': 'deny' } } }),
    });
    expect(src.evaluate(bash('sudo rm -rf /')).decision).toBe('deny');
    expect(src.evaluate(bash('env A=1 rm x')).decision).toBe('deny');
    expect(src.evaluate(bash('find . -name x -exec rm {} ;')).decision).toBe('deny');
  });

  it('external_directory: paths outside the workspace, with ~ expanded', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'opencode-home-'));
    const ws = workspace({
      permission: {
        external_directory: { '~/projects/personal/**': 'allow' },
        edit: { '~/projects/personal/**': 'deny' },
      },
    });
    const src = openCodePermissions({ workspace: ws, home });
    const inside = path.join(home, 'projects/personal/x/a.txt');
    expect(src.evaluate({ toolName: 'read', args: { file_path: inside } }).decision).toBe('allow');
    expect(src.evaluate({ toolName: 'mcp__fs__read_file', args: { path: inside } }).decision).toBe('allow');
    // Not listed: no opinion from OpenCode (Sluice's own workspace confinement still applies).
    expect(src.evaluate({ toolName: 'read', args: { file_path: '/etc/passwd' } }).decision).toBe('none');
  });

  it('bad input names the file and line', () => {
    let err: unknown;
    try {
      openCodePermissions({ workspace: workspace(null, '{\n  "permission": {\n    "bash": "maybe"\n  }\n}') });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PolicyFileError);
    expect((err as Error).message).toMatch(
      /opencode\.json:3: "bash": "maybe": the action must be "allow", "ask" or "deny"/,
    );
    expect(() => openCodePermissions({ workspace: workspace(null, '{\n  "permission": {,\n}') })).toThrow(
      /opencode\.json:2: not valid JSON/,
    );
  });

  it('a misspelt "permission" (Claude Code\'s "permissions", another case) stops the worker; other settings load', () => {
    for (const key of ['permissions', 'Permission', 'PERMISSIONS', 'permision', 'perm_ission'])
      expect(() => openCodePermissions({ workspace: workspace({ [key]: { bash: { 'rm *': 'deny' } } }) })).toThrow(
        new RegExp(`opencode\\.json: the top level has the key "${key}".*did you mean permission\\?`),
      );
    const src = openCodePermissions({
      workspace: workspace({
        $schema: 'x',
        model: 'a/b',
        plugin: [],
        provider: {},
        permission: { bash: { 'rm *': 'deny' } },
      }),
    });
    expect(src.evaluate(bash('rm -rf /srv')).decision).toBe('deny');
  });
});

// The shell forms of issue 22 item 1 (test/shell-cases.ts), under RULES written as OpenCode permissions.
describe('OpenCode permissions read commands as bash does', () => {
  const wildcard = (rule: string) => {
    const m = /^Bash\((.*?)(:\*)?\)$/.exec(rule)!;
    return m[2] ? `${m[1]} *` : m[1];
  };
  const bashRules = Object.fromEntries(
    (['allow', 'deny', 'ask'] as const).flatMap((kind) => RULES[kind].map((r) => [wildcard(r), kind])),
  );
  const src = () => openCodePermissions({ workspace: workspace({ permission: { bash: bashRules } }) });
  it.each(SHELL_CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    expect(formatExpects(c)).toContain(src().evaluate(bash(c.command)).decision);
  });
  it('an unreadable command asks even where everything is allowed; `git *` does not vouch for `git $X`', () => {
    const all = openCodePermissions({ workspace: workspace({ permission: { bash: 'allow' } }) });
    expect(all.evaluate(bash("echo 'unterminated")).decision).toBe('ask');
    const git = openCodePermissions({
      workspace: workspace({ permission: { bash: { '*': 'ask', 'git *': 'allow', 'rm *': 'deny' } } }),
    });
    // `$REF` is outside the positive list: no allow applies, and nothing here denies or asks.
    expect(git.evaluate(bash('git log $REF')).decision).toBe('none');
    expect(git.evaluate(bash('git log main')).decision).toBe('allow');
    expect(git.evaluate(bash('$X -rf /')).decision).toBe('deny');
  });
});
