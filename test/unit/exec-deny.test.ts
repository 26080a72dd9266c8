// Deny rules held where the command runs (tools/exec-deny.ts): with `Bash(touch:*)` denied, no
// way of starting touch inside bash's real bubblewrap sandbox creates the file — the forms the
// security issue found past the judgment of the text, an interpreter exec'ing the real path, and
// generated nestings of launchers — and the output names the rule. What it cannot hold is asserted
// as docs/tools.md states it: a copy of the program that was never masked runs, an interpreter
// writes files itself, and without the sandbox a command is refused instead.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { permissionRules, policyRules } from '../../hooks';
import { claudeExecDenies } from '../../hooks/exec-deny-rules';
import { bashTool } from '../../tools';
import { execDenyRules, wrapperScript } from '../../tools/exec-deny';
import { call, session } from '../tool-context';

const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-exec-deny-')));
const root = path.join(base, 'ws');
fs.mkdirSync(path.join(root, '.claude'), { recursive: true });
fs.mkdirSync(path.join(root, '.codex', 'rules'), { recursive: true });
fs.writeFileSync(
  path.join(root, '.claude', 'settings.json'),
  JSON.stringify({ permissions: { deny: ['Bash(touch:*)', 'Bash(git push:*)'] } }),
);
fs.writeFileSync(
  path.join(root, '.codex', 'rules', 'default.rules'),
  'prefix_rule(pattern = ["mkdir", "-p"], decision = "forbidden")\n',
);
// Registers the Claude Code rules, then the Codex one, with every bash tool of this process.
policyRules({ workspace: root });

const tools = [bashTool({ root, sandbox: 'bubblewrap', approval: 'auto' })];
const run = async (command: string) => (await call(tools, 'bash', { command }, session())).text;
const created = (name: string) => fs.existsSync(path.join(root, name));
const TOUCH_DENIED = 'sluice: touch is denied by "Bash(touch:*)" (.claude/settings.json), so it did not run';

describe('a denied program in the sandbox', () => {
  it.each([
    ['coproc', 'coproc touch D; wait'],
    ['a script piped to bash -', "echo 'touch D' | bash -"],
    ['a script piped to sh /dev/stdin', "echo 'touch D' | sh /dev/stdin"],
    ['env --split-string', "env --split-string='touch D'"],
    ['env -S', "env -S 'touch D'"],
    ['xargs sh -c', "echo 'touch D' | xargs -I{} sh -c {}"],
    ['hash -p under another name', 'hash -p /usr/bin/touch ls; ls D'],
    ['sg -c', 'sg "$(id -gn)" -c "touch D"'],
    ['its absolute path', '/usr/bin/touch D'],
    ['the /bin spelling', '/bin/touch D'],
    ['the /proc/self/root spelling', '/proc/self/root/usr/bin/touch D'],
    ['exec in a subshell', '(exec touch D)'],
    ['python3 os.execv on the real path', `python3 -c "import os; os.execv('/usr/bin/touch', ['touch', 'D'])"`],
    ['the dynamic loader', 'ld=$(ls /lib64/ld-linux-* /lib/ld-linux-* 2>/dev/null | head -1); "$ld" /usr/bin/touch D'],
    ['a copy made inside the sandbox', 'cp /usr/bin/touch ./t2 && ./t2 D'],
  ])('never runs, started by %s, and the output names the rule', async (_form, command) => {
    const text = await run(command);
    expect(created('D'), text).toBe(false);
    // sg and the loader fail before or instead of the wrapper on some systems; the file is what counts.
    if (!/^(sg|ld=)/.test(command)) expect(text).toContain(TOUCH_DENIED);
  });

  it('never runs through any nesting of launchers (generated)', async () => {
    const launchers: ((c: string) => string)[] = [
      (c) => `bash -c ${q(c)}`,
      (c) => `sh -c ${q(c)}`,
      (c) => `env ${c}`,
      (c) => `command ${c}`,
      (c) => `nice ${c}`,
      (c) => `timeout 60 ${c}`,
      (c) => `echo ${q(c)} | bash`,
      (c) => `eval ${q(c)}`,
      (c) => `f() { ${c}; }; f`,
      (c) => `x=${q(c)}; $x`,
    ];
    const touches = ['touch D', '/usr/bin/touch D', 'env -S "touch D"', 'p=tou; ${p}ch D'];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...touches),
        fc.array(fc.constantFrom(...launchers), { maxLength: 3 }),
        async (start, wrap) => {
          const command = wrap.reduce((c, w) => w(c), start);
          const text = await run(command);
          expect(created('D'), `${command}\n${text}`).toBe(false);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('runs the other programs, and what a rule on some arguments leaves', async () => {
    expect(await run('echo ok; ls -d .claude; git --version | cut -c1-11')).toMatch(/^ok\n\.claude\ngit version\n/);
    const push = await run('cd /tmp && git init -q r && cd r && git push origin HEAD; echo "exit $?"');
    expect(push).toContain('sluice: this run of git is denied by "Bash(git push:*)" (.claude/settings.json)');
    expect(push).toContain('exit 126');
    // Codex `forbidden` on ["mkdir", "-p"]: `mkdir -p` is refused, `mkdir` alone runs.
    const mkdir = await run('mkdir -p a/b; mkdir c; ls -d a c 2>&1');
    expect(mkdir).toContain('denied by "prefix_rule(pattern = [\\"mkdir\\", \\"-p\\"]');
    expect(created('a')).toBe(false);
    expect(created('c')).toBe(true);
  });

  it('holds against BASH_ENV and exported functions in the wrapper', async () => {
    fs.writeFileSync(path.join(root, 'hijack.sh'), 'exec /usr/bin/env true\n');
    const text = await run(
      `BASH_ENV=$PWD/hijack.sh touch D; printf -v f '%s' x; env 'BASH_FUNC_printf%%=() { exit 0; }' touch D`,
    );
    expect(created('D')).toBe(false);
    expect(text.split(TOUCH_DENIED).length - 1).toBe(2);
  });

  it('cannot be unmounted or written over from inside', async () => {
    const text = await run(
      'umount /usr/bin/touch; unshare -Urm sh -c "umount /usr/bin/touch" ; echo x > /tmp/.sluice-exec/bash; mv /tmp/.sluice-exec /tmp/gone; touch D',
    );
    expect(created('D')).toBe(false);
    expect(text).toContain(TOUCH_DENIED);
  });
});

describe('what exec-time enforcement cannot hold (docs/tools.md)', () => {
  it('a copy of the program the sandbox never masked runs under its own name', async () => {
    // A binary already in the workspace (checked in, downloaded earlier): not a masked file.
    fs.copyFileSync('/usr/bin/touch', path.join(root, 't'));
    fs.chmodSync(path.join(root, 't'), 0o755);
    await run('./t D');
    expect(created('D')).toBe(true);
    fs.rmSync(path.join(root, 'D'));
  });

  it("an interpreter's own file writes are not a program run", async () => {
    await run(`python3 -c "open('E', 'w').close()"`);
    expect(created('E')).toBe(true);
  });

  it('a program a rule denies only some arguments of is reachable by path in the hidden folder', async () => {
    const text = await run('ls /tmp/.sluice-exec');
    expect(text.split('\n')).toContain('bash');
  });

  it('without the sandbox, a command is refused unless the judgment alone is accepted', async () => {
    const fallback = [bashTool({ root, sandbox: 'none', approval: 'auto' })];
    const r = await call(fallback, 'bash', { command: 'echo hi' }, session());
    expect(r).toMatchObject({ isError: true, code: 'SANDBOX_FAILED' });
    expect(r.text).toContain('"Bash(touch:*)" in .claude/settings.json');
    expect(r.text).toContain("denyWithoutSandbox: 'judgment'");
    const judged = [bashTool({ root, sandbox: 'none', approval: 'auto', denyWithoutSandbox: 'judgment' })];
    const ran = await call(judged, 'bash', { command: "echo 'touch F' | bash -" }, session());
    expect(ran.text).toBe('(no output)\n[exit code: 0]');
    expect(created('F')).toBe(true);
  });
});

describe('the rules the sandbox holds', () => {
  it('takes the program of each Claude Code deny Bash rule, whole or by its arguments', () => {
    const settings = path.join(base, 'formats', '.claude', 'settings.json');
    fs.mkdirSync(path.dirname(settings), { recursive: true });
    fs.writeFileSync(
      settings,
      JSON.stringify({
        permissions: { deny: ['Bash(rm:*)', 'Bash(curl *)', 'Bash(npm publish)', 'Bash(*secret*)', 'Bash'] },
      }),
    );
    const rules = permissionRules({ workspace: path.dirname(path.dirname(settings)) }).rules;
    expect(claudeExecDenies(rules).map((r) => [r.program, r.whole])).toEqual([
      ['rm', true],
      ['curl', true],
      ['npm', false],
    ]);
    expect(execDenyRules().some((r) => r.rule === 'Bash(npm publish)')).toBe(true);
  });

  it('quotes the rule text so no pattern or message is read as shell', () => {
    const script = wrapperScript(
      '/x/bash',
      [{ program: 'git', patterns: [`'git push'`], whole: false, rule: `Bash(git push:*) $(touch D) '`, file: 'a' }],
      { passOn: '/x/0', name: 'git' },
    );
    expect(script).toContain(
      `'sluice: this run of git is denied by "Bash(git push:*) $(touch D) '\\''" (a), so it did not run'`,
    );
    expect(script.startsWith('#!/x/bash -p\n')).toBe(true);
  });
});

function q(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
