// Deny rules held over every copy of a denied program's bytes (tools/exec-deny.ts): a file in the
// system folders with the same bytes as the program's real file (as `/usr/lib/git-core/git` is
// `/usr/bin/git`), under another name, behind a link, without executable bits, found after a
// change; and a multi-call program, whose names all carry a rule on one of them. Through the real
// bash tool in bubblewrap. Its own file: the rules and the content index hold for the process, so
// the copies are placed (under /opt, which the sandbox shows read-only) before the first command.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { policyRules } from '../../hooks';
import { bashTool } from '../../tools';
import { denyAtExec } from '../../tools/exec-deny';
import { call, session } from '../tool-context';

const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-exec-copies-')));
const root = path.join(base, 'ws');
fs.mkdirSync(path.join(root, '.claude'), { recursive: true });
fs.writeFileSync(
  path.join(root, '.claude', 'settings.json'),
  JSON.stringify({ permissions: { deny: ['Bash(touch:*)', 'Bash(git push:*)'] } }),
);
policyRules({ workspace: root });

// The system folder the copies live in, made before any command builds the index.
const sys = fs.mkdtempSync('/opt/sluice-exec-copies-');
afterAll(() => fs.rmSync(sys, { recursive: true, force: true }));
const place = (from: string, rel: string, mode = 0o755) => {
  const to = path.join(sys, rel);
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.copyFileSync(from, to);
  fs.chmodSync(to, mode);
  return to;
};
const tch = place(fs.realpathSync('/usr/bin/touch'), 'libexec/tch');
const data = place(fs.realpathSync('/usr/bin/touch'), 'share/touch.bin', 0o644);
const git = place(fs.realpathSync('/usr/bin/git'), 'lib/git-2.99');
fs.mkdirSync(path.join(sys, 'bin'));
fs.symlinkSync('../libexec/tch', path.join(sys, 'bin', 't'));

// A multi-call program of the test's own (its bytes are its alone): it does what the name it was
// started as says, like busybox. Four names on a PATH folder; a rule on some arguments of one.
const multi = place('/dev/null', 'multi/prog');
fs.writeFileSync(multi, `#!/bin/sh\n# ${path.basename(sys)}\necho "\${0##*/} ran: $*"\n`);
const names = path.join(sys, 'names');
fs.mkdirSync(names);
for (const n of ['alpha', 'beta', 'gamma', 'delta']) fs.symlinkSync(multi, path.join(names, n));
denyAtExec([{ program: 'alpha', patterns: [`'alpha go'*`], whole: false, rule: 'Bash(alpha go:*)', file: 'test' }]);

const tools = [
  bashTool({
    root,
    sandbox: 'bubblewrap',
    approval: 'auto',
    env: { PATH: `${names}:/usr/local/bin:/usr/bin:/bin`, HOME: root, LANG: 'C.UTF-8' },
  }),
];
const run = async (command: string) => (await call(tools, 'bash', { command }, session())).text;
const created = (name: string) => fs.existsSync(path.join(root, name));
const TOUCH_DENIED = 'sluice: touch is denied by "Bash(touch:*)" (.claude/settings.json), so it did not run';
const PUSH_DENIED = 'sluice: this run of git is denied by "Bash(git push:*)" (.claude/settings.json)';

describe('a copy of a denied program elsewhere in the system folders', () => {
  // Each form on its own: a file one made is not taken for the next one's.
  afterEach(() => fs.rmSync(path.join(root, 'D'), { force: true }));

  it.each([
    ['under another name in a libexec folder', `${tch} D`],
    ['through a link to that copy', `${sys}/bin/t D`],
    ['found on a PATH the command sets', `PATH=${sys}/libexec:$PATH; tch D`],
    ['without executable bits, copied and marked', `cp ${data} x && chmod +x x && ./x D`],
    [
      'without executable bits, given to the dynamic loader',
      `ld=$(ls /lib64/ld-linux-* /lib/ld-linux-* 2>/dev/null | head -1); "$ld" ${data} D`,
    ],
  ])('never runs, started %s', async (form, command) => {
    const text = await run(command);
    expect(created('D'), text).toBe(false);
    // The loader reads the script bound over the copy and stops; no rule's message then.
    if (!form.includes('loader')) expect(text).toContain(TOUCH_DENIED);
  });

  it("holds a rule on some arguments over the distribution's own copy and over one under a versioned name", async () => {
    for (const copy of ['/usr/lib/git-core/git', git].filter((p) => fs.existsSync(p))) {
      const text = await run(`cd /tmp && git init -q r 2>/dev/null; cd r && ${copy} push origin HEAD; echo "exit $?"`);
      expect(text, copy).toContain(PUSH_DENIED);
      expect(text, copy).toContain('exit 126');
      expect(await run(`${copy} --version | cut -c1-11`), copy).toBe('git version\n[exit code: 0]');
    }
  });

  it("passes the rest on under the program's own name, so a name that picks a subcommand cannot skip the check", async () => {
    // git-push in git's libexec folder links to git there, a masked copy: git runs as `git origin`,
    // not as `git push origin`.
    const linked = '/usr/lib/git-core/git-push';
    const via = fs.existsSync(linked) ? linked : path.join(sys, 'lib', 'git-push');
    if (!fs.existsSync(via)) fs.symlinkSync(git, via);
    const text = await run(`cd /tmp && git init -q r2 2>/dev/null; cd r2 && ${via} origin HEAD 2>&1; echo "exit $?"`);
    expect(text).toContain("'origin' is not a git command");
  });

  it('finds a copy placed after the index was built, once the program itself changed', async () => {
    // A program of the test's own, denied by its path; its copy appears after a first command.
    const own = place('/dev/null', 'late/own');
    fs.writeFileSync(own, `#!/bin/sh\n# ${path.basename(sys)} own\necho own ran\n`);
    denyAtExec([{ program: own, patterns: [], whole: true, rule: `Bash(${own})`, file: 'test' }]);
    expect(await run(own)).toContain(`sluice: ${own} is denied`);
    const later = place(own, 'late/copy');
    // Rewritten as a package upgrade does (same bytes here): its change time is after the walk.
    fs.writeFileSync(own, fs.readFileSync(later));
    const text = await run(later);
    expect(text).not.toContain('own ran');
    expect(text).toContain(`sluice: ${own} is denied`);
  });
});

describe('a multi-call program (docs/tools.md)', () => {
  it('a rule on some arguments of one name is held as a deny of every name, and says why', async () => {
    // The program picks what it does by the name it was started as, which the script in front of
    // it cannot pass on faithfully: so no name of it runs, not even one no rule names.
    const forms = [
      'alpha go',
      'alpha stay',
      'beta x',
      'gamma go',
      `${multi} go`,
      'ln -s "$(command -v delta)" z; ./z go',
    ];
    for (const command of forms) {
      const text = await run(command);
      expect(text, command).not.toContain('ran:');
      expect(text, command).toContain(
        `sluice: ${multi} is denied by "Bash(alpha go:*)" (test): alpha is one of the 4 names of this multi-call program`,
      );
    }
  });
});
