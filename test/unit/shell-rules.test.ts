// The Bash judgment of the permission rules, against every form of issue 22's item 1: allowed only
// when the shell parser proves each simple command is allowed, denied wherever a denied command is,
// asked (or denied under a deny rule) when the parser cannot tell what runs. The same table runs
// through a real worker in test/shell-rules.test.ts.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type PermissionRules, permissionRules } from '../../hooks/permissions';
import { readShell, shellParserReady } from '../../hooks/shell';
import { type Outcome, RULES, SHELL_CASES } from '../shell-cases';

let rules: PermissionRules;
beforeAll(async () => {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-shell-rules-'));
  fs.mkdirSync(path.join(ws, '.claude'));
  fs.writeFileSync(path.join(ws, '.claude', 'settings.json'), JSON.stringify({ permissions: RULES }));
  rules = permissionRules({ workspace: ws });
  await rules.ready;
});

async function judge(command: string): Promise<{ outcome: Outcome; rule?: string; detail?: string }> {
  const v = rules.evaluate({ toolName: 'bash', aliases: ['Bash'], args: { command } });
  const policy = await rules.approval('Bash')({ command });
  if (v.kind === 'deny') return { outcome: 'deny', rule: v.rule?.text, detail: v.detail };
  // Allowed means both: the verdict is allow and bash's own prompt is lifted.
  expect(policy === 'auto').toBe(v.kind === 'allow');
  return { outcome: v.kind === 'allow' ? 'allow' : 'ask', rule: v.rule?.text, detail: v.detail };
}

describe('the Bash forms of issue 22 against allow echo/printf, deny touch/curl, ask rm', () => {
  for (const c of SHELL_CASES) {
    it(`${c.expect}: ${c.name} — ${JSON.stringify(c.command)}`, async () => {
      const got = await judge(c.command.replaceAll('F', 'victim.txt'));
      expect(got.outcome).toBe(c.expect);
      if (c.expect === 'deny') expect(got.rule).toMatch(/^Bash\((touch|curl):\*\)$/);
      if (c.expect === 'ask' && c.victim) expect(got.rule).toBe('Bash(rm:*)');
    });
  }
});

describe('what the judgment says', () => {
  it('an allow of a compound command names every rule it took', () => {
    const v = rules.evaluate({
      toolName: 'bash',
      aliases: ['Bash'],
      args: { command: 'npm run lint && npm run build' },
    });
    expect(v.kind).toBe('allow');
    expect(v.rules?.map((r) => r.text)).toEqual(['Bash(npm run lint)', 'Bash(npm run build)']);
  });

  it('a deny names the command it matched, or why Sluice could not tell', () => {
    const nested = rules.evaluate({ toolName: 'bash', aliases: ['Bash'], args: { command: "bash -c 'touch x'" } });
    expect(nested.detail).toBe('it matches `touch x` (found inside the command)');
    const unknown = rules.evaluate({ toolName: 'bash', aliases: ['Bash'], args: { command: 'tou\\\nch x' } });
    expect(unknown.detail).toMatch(/^Sluice cannot tell every command this runs \(a line continuation inside a word\)/);
  });

  it('reads quoting as bash does: words, escapes, $-expansions as unknown text', () => {
    const r = readShell(`X=1 \\touch "a b"'c'd e\\ f $HOME e{1,2}`);
    expect(r.unknown).toEqual([]);
    expect(r.commands[0]).toMatchObject({
      words: [['touch'], ['a bcd'], ['e f'], [null], [null]],
      assigns: true,
    });
    // tree-sitter splits `'c'\ d` where bash reads one word: the check of skipped text catches it.
    expect(readShell(`echo 'c'\\ d`).unknown).toEqual(['text the parser skipped: "\\\\ "']);
    expect(readShell('echo a#b').commands[0].words).toEqual([['echo'], ['a#b']]);
    expect(readShell('echo hi # a comment').unprovable).toContain('it has a comment');
  });

  it('is unknown before the parser has loaded, and loading is shared', async () => {
    await shellParserReady();
    expect(readShell('echo hi').unknown).toEqual([]);
  });
});

describe('the allow judgment is an inclusion, deny an intersection', () => {
  it('a hole in an argument: allowed by `prefix:*`, but a deny that could match denies', () => {
    const r = rulesWith({ allow: ['Bash(git push:*)'], deny: ['Bash(git push --force:*)'] });
    expect(r.evaluate(bash('git push origin main')).kind).toBe('allow');
    expect(r.evaluate(bash('git push $OPTS origin')).kind).toBe('deny');
    expect(r.evaluate(bash('git push "$B"')).kind).toBe('deny');
  });

  it('an exact rule never covers unknown text', () => {
    const r = rulesWith({ allow: ['Bash(npm run build)'] });
    expect(r.evaluate(bash('npm run $X')).kind).toBe('none');
    expect(r.evaluate(bash('npm run build')).kind).toBe('allow');
  });
});

let n = 0;
function rulesWith(permissions: object): PermissionRules {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), `sluice-shell-rules-${n++}-`));
  fs.mkdirSync(path.join(ws, '.claude'));
  fs.writeFileSync(path.join(ws, '.claude', 'settings.json'), JSON.stringify({ permissions }));
  return permissionRules({ workspace: ws });
}
const bash = (command: string) => ({ toolName: 'bash', aliases: ['Bash'], args: { command } });
