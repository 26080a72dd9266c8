// The positive list of hooks/shell.ts: an allow rule applies only to a line made of plain words,
// quoted strings with nothing expanded inside, `;` `&&` `||` `|` and three harmless redirections.
// Judged under Claude Code rules, OpenCode permissions, Codex `.rules` and a Gemini CLI policy
// written from one rule set: the `$_` family and the programs the tree does not show are never
// allowed, and where a deny rule exists they are never "no opinion". A fast-check property
// generates lines from a grammar of bash constructs and checks every allowed one against an
// independent reading of the same positive list; the limits of 4.4 are checked on the inputs
// that stalled a worker.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { openCodeWildcard } from '../../hooks/opencode-permissions';
import { type PolicyRules, policyRules } from '../../hooks/policy';
import { readShell, shellParserReady, tooBig } from '../../hooks/shell';
import { wildcard } from '../../hooks/wildcard';

const FORMATS = ['claude', 'codex', 'gemini', 'opencode'] as const;
type Rules = { allow: string[]; deny: string[]; ask: string[] };

/** The four policy files saying what `rules` (Claude Code's `Bash(x:*)` form) says. */
function workspaceWith(rules: Rules): string {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-shell-simple-'));
  const each = <T>(f: (program: string, kind: keyof Rules) => T): T[] =>
    (['allow', 'deny', 'ask'] as const).flatMap((kind) =>
      rules[kind].map((r) => f(/^Bash\((\S+?):\*\)$/.exec(r)![1], kind)),
    );
  const codex = { allow: 'allow', deny: 'forbidden', ask: 'prompt' };
  const gemini = { allow: 'allow', deny: 'deny', ask: 'ask_user' };
  const files: Record<string, string> = {
    '.claude/settings.json': JSON.stringify({ permissions: rules }),
    '.codex/rules/t.rules': each(
      (p, k) => `prefix_rule(pattern = [${JSON.stringify(p)}], decision = "${codex[k]}")`,
    ).join('\n'),
    '.gemini/policies/t.toml': each(
      (p, k) =>
        `[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = ${JSON.stringify(p)}\ndecision = "${gemini[k]}"\npriority = 100\n`,
    ).join('\n'),
    'opencode.json': JSON.stringify({ permission: { bash: Object.fromEntries(each((p, k) => [`${p} *`, k])) } }),
  };
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    fs.writeFileSync(path.join(ws, rel), text);
  }
  return ws;
}

/** Each format's answer, and the answer of all four together (what every surface uses). */
function judge(policy: PolicyRules, command: string): Record<(typeof FORMATS)[number] | 'all', string> {
  const call = { toolName: 'bash', aliases: ['Bash'], args: { command } };
  const out = Object.fromEntries(
    FORMATS.map((f) => [f, policy.sources.find((s) => s.format === f)!.evaluate(call).decision]),
  );
  return { ...out, all: policy.explain(call).decision } as Record<(typeof FORMATS)[number] | 'all', string>;
}

// The README's layout: echo allowed, touch denied, rm asks (issue section 1).
const README: Rules = { allow: ['Bash(echo:*)'], deny: ['Bash(touch:*)'], ask: ['Bash(rm:*)'] };
// Every program the forms name is allowed; nothing denies: the allow must still not apply.
const ALLOW_ALL: Rules = {
  allow: ['echo', 'printf', 'ls', 'coproc', 'bash', 'sh', 'env', 'xargs', 'hash', 'source', 'exec', 'read', 'find'].map(
    (p) => `Bash(${p}:*)`,
  ),
  deny: [],
  ask: [],
};
const DENY_ONLY: Rules = { allow: [], deny: ['Bash(touch:*)'], ask: [] };

/** The forms: `$_` re-read as code, and programs started where the tree does not show them. */
const HIDDEN_FORMS = [
  "echo '$(touch F)'; echo ${_@P}",
  "echo 'a[$(rm -f victim.txt)]'; echo ${HOME:_}",
  "echo 'a[$(touch F)]'; echo ${!_}",
  'echo "a[$(touch F)]"; echo ${HOME:0:$_}',
  'coproc touch D',
  "echo 'touch D' | bash -",
  "echo 'touch D' | sh /dev/stdin",
  "echo 'touch D' | sh -s",
  "echo 'touch D' | bash",
  "env --split-string='touch D'",
  "env -S 'touch D'",
  "echo 'touch D' | xargs -I{} sh -c {}",
  "echo 'touch D' | xargs sh -c",
  'hash -p /usr/bin/touch ls; ls D',
  'source ./setup.sh',
  '. ./setup.sh',
  "exec 0<<<'touch D'; bash",
  'enable -f ./x.so touch',
  "printf -v 'a[$(touch D)]' x",
  "printf -v'a[$(touch D)]' x",
  'printf -v PATH /tmp/tool; ls',
  "read 'a[$(touch D)]' <<< 1",
  "declare -n r='a[$(touch D)]'; echo $r",
  "PS4='$(touch D)'; set -x; echo",
  "BASH_ENV=/dev/stdin bash true <<< 'touch D'",
  'find . -exec bash <<< "touch D" \\;',
  "echo >&'a[$(touch D)]'",
];
/** Forms whose code Sluice reads (the wrapper's code is a literal string): the deny rule finds touch in it. */
const SEEN_FORMS = [
  'sg "$(id -gn)" -c "touch D"',
  "sg staff 'touch D'",
  "script -qc'touch D'",
  "flock /tmp -c 'touch D'",
];

describe('the $_ family and programs the tree does not show, in all four formats', () => {
  const policies: Record<string, PolicyRules> = {};
  beforeAll(async () => {
    await shellParserReady();
    for (const [name, rules] of Object.entries({ README, ALLOW_ALL, DENY_ONLY }))
      policies[name] = policyRules({ workspace: workspaceWith(rules) });
  });

  it.each(HIDDEN_FORMS)('%s: never allowed; where a deny rule exists, denied or asked by every format', (command) => {
    expect(readShell(command).unknown).not.toEqual([]);
    for (const name of ['README', 'ALLOW_ALL', 'DENY_ONLY']) {
      const got = judge(policies[name], command);
      for (const [format, decision] of Object.entries(got)) expect(decision, `${name} ${format}`).not.toBe('allow');
      if (name !== 'ALLOW_ALL')
        for (const [format, decision] of Object.entries(got))
          expect(['ask', 'deny'], `${name} ${format}`).toContain(decision);
    }
  });

  it.each(SEEN_FORMS)(
    '%s: the code inside is read, and the deny rule on touch denies it in every format',
    (command) => {
      expect(readShell(command).commands.some((c) => c.words[0][0] === 'touch')).toBe(true);
      for (const name of ['README', 'DENY_ONLY'])
        expect(Object.values(judge(policies[name], command)), name).toEqual(['deny', 'deny', 'deny', 'deny', 'deny']);
    },
  );

  it('the plain commands around them are still allowed by every format', () => {
    for (const command of ['echo hi', 'echo \'a b\' "c d" && echo x=1 | echo -n, ; echo', 'echo hi 2>/dev/null >&2'])
      expect(Object.values(judge(policies.README, command))).toEqual(['allow', 'allow', 'allow', 'allow', 'allow']);
  });
});

describe('the positive list', () => {
  beforeAll(() => shellParserReady());

  it('proves simple: plain words, quoted strings with nothing expanded, ; && || | and newlines, the safe redirections', () => {
    for (const command of [
      'echo hi',
      "echo 'it''s' \"a b\" a'b'\"c\" -n --x=1 a,b:c@d%e+f^g",
      'echo a && echo b || echo c; echo d | echo e',
      'echo a\necho b',
      'echo é 42',
      'echo hi >/dev/null 2>/dev/null',
      'echo hi &>/dev/null',
      'echo hi >> /dev/null 2>&1',
      'echo hi 1>&2',
    ])
      expect(readShell(command).unprovable, command).toEqual([]);
  });

  it('leaves out every other construct: the allow rule does not apply', () => {
    for (const command of [
      'echo $x',
      'echo "$x"',
      'echo ${x}',
      'echo "a`b`"',
      'echo "a\\"b"',
      'echo a\\ b',
      'echo *',
      'echo a?b',
      'echo [ab]',
      'echo {a,b}',
      'echo ~',
      'echo ~/x',
      'echo hi # note',
      'echo hi &',
      'echo hi |& echo',
      '! echo hi',
      'X=1 echo hi',
      'echo hi > out.txt',
      'echo hi < in.txt',
      'echo hi 3>/dev/null',
      'echo hi >&3',
      'echo hi <<< x',
      "cat <<'EOF'\nhi\nEOF",
      '( echo hi )',
      '{ echo hi; }',
      'if true; then echo; fi',
      'f() { echo; }',
      'echo $(echo)',
      'echo <(echo)',
      "echo $'a'",
      'echo $"a"',
      'echo $((1))',
      'echo a!b',
      "echo 'unterminated",
    ])
      expect(readShell(command).unprovable, command).not.toEqual([]);
  });

  // An independent reading of the positive list: words of plain characters and quoted strings
  // with nothing bash expands, one of the safe redirections, joined by the four operators.
  const WORD = `(?:[A-Za-z0-9_./,:=@%+^-]|'[^']*'|"[^"$\`\\\\]*")+`;
  const REDIRECT = '(?:[12]?>>?[ \\t]*/dev/null|&>>?[ \\t]*/dev/null|[12]?>&[12])';
  const COMMAND = `echo(?:[ \\t]+(?:${REDIRECT}|${WORD}))*`;
  const SIMPLE = new RegExp(`^[ \\t]*${COMMAND}(?:[ \\t]*(?:&&|\\|\\||;|\\||\\n)[ \\t]*${COMMAND})*[ \\t]*;?[ \\t]*$`);

  // Pieces of bash: the plain ones the list admits, and a construct of every other kind.
  const plain = fc.constantFrom('hi', 'a-b', 'x=1', '--flag', "'q $x `y` \\z'", '"dq"', 'a\'b\'"c"', '42', '/dev/null');
  const hostile = fc.constantFrom(
    ...[
      '${x@P}',
      '${!x}',
      '${x:_}',
      '${x:0:$_}',
      '${x:-$(touch D)}',
      '${x#y}',
      '${x/a/b}',
      '${#x}',
      '${x[1]}',
      '$x',
      '$_',
      '"$_"',
      '$(touch D)',
      '`touch D`',
      '"`touch D`"',
      '<(touch D)',
      '>(touch D)',
      '$((1+x))',
      '$[1]',
      '{a,b}',
      '{1..3}',
      '*',
      'a?',
      '[a]',
      '~',
      '~/x',
      'a\\ b',
      '"a\\"b"',
      "$'x'",
      '$"x"',
      '> f',
      '< f',
      '>> f',
      '2> f',
      '>&3',
      '<<< x',
      '&',
      '#c',
      '!',
      '\\\necho',
    ],
  );
  const prefix = fc.constantFrom(
    'x=1 ',
    'if true; then ',
    'while false; do ',
    'for i in 1; do ',
    'f() { ',
    '( ',
    '{ ',
    'coproc ',
    'time ',
    'export X=1; ',
    'declare -n r=x; ',
    '[[ -n x ]] && ',
    '((x)) && ',
    'cat <<EOF\n$(touch D)\nEOF\n',
    'case x in x) ',
  );
  const command = (words: fc.Arbitrary<string>) =>
    fc
      .tuple(fc.option(prefix, { freq: 4 }), fc.array(words, { maxLength: 4 }))
      .map(([pre, args]) => `${pre ?? ''}echo ${args.join(' ')}`);
  const line = (words: fc.Arbitrary<string>) =>
    fc
      .array(fc.tuple(command(words), fc.constantFrom(' && ', ' || ', '; ', ' | ', '\n', ';', '|')), {
        minLength: 1,
        maxLength: 3,
      })
      .map((parts) => parts.map(([c, op], i) => (i ? op : '') + c).join(''));

  let policy: PolicyRules;
  beforeAll(() => {
    policy = policyRules({ workspace: workspaceWith({ allow: ['Bash(echo:*)'], deny: [], ask: [] }) });
  });

  it('property: whatever any format allows under an allow of echo is made of the positive list only', () => {
    fc.assert(
      fc.property(line(fc.oneof(plain, hostile)), (command) => {
        const got = judge(policy, command);
        const allowed = Object.entries(got).filter(([, d]) => d === 'allow');
        if (allowed.length)
          expect(SIMPLE.test(command), `${JSON.stringify(command)}: ${JSON.stringify(got)}`).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('property: and every line of plain words alone is allowed by all four', () => {
    const simple = line(plain).filter(
      (c) => !/^(if|while|for|f\(\)|\(|\{|coproc|time|x=1|export|declare|\[\[|\(\(|cat|case)/m.test(c),
    );
    fc.assert(
      fc.property(simple, (command) => {
        fc.pre(SIMPLE.test(command));
        expect(Object.values(judge(policy, command)), JSON.stringify(command)).toEqual([
          'allow',
          'allow',
          'allow',
          'allow',
          'allow',
        ]);
      }),
      { numRuns: 200 },
    );
  });
});

describe('limits that keep a judgment short (4.4)', () => {
  beforeAll(() => shellParserReady());

  it('refuses a command nested 3,500 deep before parsing it: unknown, so denied under a deny rule, never allowed', () => {
    let deep = 'x';
    for (let i = 0; i < 3_500; i++) deep = `\${x:-${deep}}`;
    expect(tooBig(`echo ${deep}`)).toBe('brackets nested more than 64 deep');
    expect(readShell(`echo ${deep}`).unknown).toEqual(['brackets nested more than 64 deep']);
    const policy = policyRules({ workspace: workspaceWith(README) });
    expect(Object.values(judge(policy, `echo ${deep}`))).toEqual(['deny', 'deny', 'deny', 'deny', 'deny']);
  });

  it('refuses commands of too many words, too many nodes, or longer than 100,000 characters', () => {
    expect(readShell(`git ${'a '.repeat(49_000)}`).unknown).toEqual([
      'a command of more than 20000 words and operators',
    ]);
    expect(readShell(`echo '${'x'.repeat(100_001)}'`).unknown).toEqual(['a command longer than 100000 characters']);
    expect(readShell(`echo ${'"a" '.repeat(9_000)}`).unknown).toEqual(['a command too large to follow']);
    // 64 words of a wrapper may each start its command; past them the command is unknown.
    expect(readShell(`env ${'A=1 '.repeat(70)}touch x`).unknown).toEqual([
      'a wrapper with more than 64 words before its command',
    ]);
    // A quoted body of any size is one node: a large quoted here-document is still read.
    expect(readShell(`cat <<'EOF'\n${'some text here\n'.repeat(5_000)}EOF`).unknown).toEqual([]);
  });

  it('matches wildcards without backtracking, with the answers a regular expression gives', () => {
    const pushes = `git ${'push '.repeat(19_800)}`;
    expect(openCodeWildcard('git * push * --force').test(pushes)).toBe(false);
    expect(openCodeWildcard('git * push * --force').test(`${pushes}x --force`)).toBe(true);
    expect(openCodeWildcard('*a*a*a*a*a*a*a*a*b').test('a'.repeat(50))).toBe(false);
    expect(openCodeWildcard('*a*a*a*a*a*a*a*a*b').test(`${'a'.repeat(50)}b`)).toBe(true);
    expect(openCodeWildcard('git *').test('git')).toBe(true);
    const reference = (p: string) =>
      new RegExp(
        `^${p
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '.*')
          .replace(/\?/g, '.')}$`,
        's',
      );
    fc.assert(
      fc.property(fc.stringMatching(/^[ab*?]{0,8}$/), fc.stringMatching(/^[ab]{0,10}$/), (p, text) => {
        expect(wildcard(p).test(text), `${p} ${text}`).toBe(reference(p).test(text));
      }),
      { numRuns: 2_000 },
    );
  });
});
