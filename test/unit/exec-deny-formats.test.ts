// Deny rules held in the sandbox (tools/exec-deny.ts) from every policy format, through
// `policyRules()` and the real bash tool in bubblewrap: Gemini CLI `deny` with `commandPrefix`,
// OpenCode `"deny"` bash patterns, Claude Code rules that deny the shells themselves (the call's
// own shell still starts); and the denies another rule of the same file could override, which
// stay with the judgment. (Its own file: the rules registered hold for the whole process.)
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { policyRules } from '../../hooks';
import { bashTool } from '../../tools';
import { call, session } from '../tool-context';

const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-exec-formats-')));
const write = (rel: string, text: string) => {
  fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  fs.writeFileSync(path.join(root, rel), text);
};
write('.claude/settings.json', JSON.stringify({ permissions: { deny: ['Bash(bash:*)', 'Bash(sh:*)'] } }));
write(
  '.gemini/policies/p.toml',
  [
    '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "rm -f"\ndecision = "deny"\npriority = 100\n',
    // A deny outranked by an allow of higher priority: not masked.
    '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "ln"\ndecision = "deny"\npriority = 10\n',
    '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "ln -s"\ndecision = "allow"\npriority = 50\n',
  ].join('\n'),
);
write(
  'opencode.json',
  JSON.stringify({ permission: { bash: { 'chmod *': 'deny', 'cp *': 'deny', 'cp -i *': 'allow' } } }),
);
policyRules({ workspace: root });

const tools = [bashTool({ root, sandbox: 'bubblewrap', approval: 'auto' })];
const run = async (command: string) => (await call(tools, 'bash', { command }, session())).text;

describe('deny rules of every format, held in the sandbox', () => {
  it('Bash(bash:*) and Bash(sh:*) deny the shells a command starts, not the call itself', async () => {
    const text = await run(`echo top; bash -c 'touch A'; sh -c 'touch A'; echo 'touch A' | /bin/bash -; echo end`);
    expect(text).toContain('top\n');
    expect(text).toContain('end\n');
    expect(text).toContain('sluice: bash is denied by "Bash(bash:*)" (.claude/settings.json)');
    expect(text).toContain('sluice: sh is denied by "Bash(sh:*)" (.claude/settings.json)');
    expect(fs.existsSync(path.join(root, 'A'))).toBe(false);
  });

  it('Gemini CLI commandPrefix deny: that prefix is refused, the program otherwise runs', async () => {
    write('victim', 'keep me');
    const text = await run('echo "rm -f victim" | xargs -I{} env -S {}; rm victim.none 2>/dev/null; echo $?');
    expect(text).toContain(
      'sluice: this run of rm is denied by "toolName = \\"run_shell_command\\", commandPrefix = \\"rm -f\\"',
    );
    expect(text).toContain('(.gemini/policies/p.toml)');
    expect(fs.existsSync(path.join(root, 'victim'))).toBe(true);
    // `rm` without -f is not the rule's.
    expect(text.trim().split('\n').at(-2)).toBe('1');
  });

  it('OpenCode "deny" bash patterns: chmod refused wherever it is started', async () => {
    write('mode', '');
    fs.chmodSync(path.join(root, 'mode'), 0o644);
    const text = await run('find . -name mode -exec chmod 777 {} +');
    expect(text).toContain('sluice: chmod is denied by');
    expect(fs.statSync(path.join(root, 'mode')).mode & 0o777).toBe(0o644);
  });

  it('a deny another rule of its file could override stays with the judgment', async () => {
    write('src', 'x');
    // Gemini `ln -s` allowed above the `ln` deny; OpenCode `cp -i *` allowed after `cp *`.
    const text = await run('ln -s src link && cp src copy && echo ran');
    expect(text).toContain('ran\n');
    expect(fs.existsSync(path.join(root, 'copy'))).toBe(true);
  });
});
