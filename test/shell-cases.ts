// The Bash forms the permission rules must judge as bash runs them (issue 22, item 1), shared by
// the unit test of the judgment (test/unit/shell-rules.test.ts) and the runs through a real worker,
// directly and from run_code (test/shell-rules.test.ts).
//
// Under RULES: `echo`, `printf` and two npm scripts are allowed, `touch` and `curl` denied, `rm`
// asks. `F` in a command stands for a file name unique to the case and the run: a denied or asked
// case must leave no F behind, or (`victim`) must leave the F made beforehand in place.

export const RULES = {
  allow: ['Bash(echo:*)', 'Bash(printf:*)', 'Bash(npm run lint)', 'Bash(npm run build)'],
  deny: ['Bash(touch:*)', 'Bash(curl:*)'],
  ask: ['Bash(rm:*)'],
};

export type Outcome = 'allow' | 'ask' | 'deny';

export interface ShellCase {
  /** What the case is about. */
  name: string;
  command: string;
  expect: Outcome;
  /** F exists before the command runs and must still exist after (an `rm` the rules stop). */
  victim?: boolean;
  /** Judged only: running it needs more than the test workspace has (npm scripts). */
  judgeOnly?: boolean;
}

export const SHELL_CASES: ShellCase[] = [
  // The attacks on the old splitter: quotes read differently from bash.
  {
    name: "$'…' hides a second command from a quote-tracking splitter",
    command: "echo ok $'\\'';echo X > F;#'",
    expect: 'ask',
  },
  { name: 'a comment hides a quote; touch on the next line', command: "echo ok #'\ntouch F", expect: 'deny' },
  { name: 'a comment hides a quote; rm on the next line', command: "echo ok #'\nrm -f F", expect: 'ask', victim: true },
  { name: 'a backslash does not continue a comment', command: 'echo a # \\\ntouch F', expect: 'deny' },
  // Allowed: every simple command is allowed and nothing else is there.
  { name: 'both parts allowed', command: 'npm run lint && npm run build', expect: 'allow', judgeOnly: true },
  { name: 'both parts allowed, run', command: 'echo one && printf two', expect: 'allow' },
  { name: 'a plain allowed command', command: 'echo hello', expect: 'allow' },
  { name: 'output to /dev/null and fd duplication', command: 'echo hi > /dev/null 2>&1', expect: 'allow' },
  // Deny reaches every simple command, wherever it is.
  { name: 'subshell', command: '(touch F)', expect: 'deny' },
  { name: '$( … )', command: 'echo $(touch F)', expect: 'deny' },
  { name: 'backquotes', command: 'echo `touch F`', expect: 'deny' },
  { name: 'bash -c', command: "bash -c 'touch F'", expect: 'deny' },
  { name: 'sh -c with a list', command: "sh -c 'echo a; touch F'", expect: 'deny' },
  { name: 'bash -c inside bash -c', command: `bash -c "bash -c 'touch F'"`, expect: 'deny' },
  { name: 'env', command: 'env touch F', expect: 'deny' },
  { name: 'env with a variable', command: 'env A=1 touch F', expect: 'deny' },
  { name: 'timeout', command: 'timeout 5 touch F', expect: 'deny' },
  { name: 'timeout curl', command: 'timeout 5 curl -s -o F http://127.0.0.1:9/', expect: 'deny' },
  { name: 'nice', command: 'nice -n 5 touch F', expect: 'deny' },
  { name: 'xargs', command: 'echo F | xargs touch', expect: 'deny' },
  { name: 'sudo', command: 'sudo -n touch F', expect: 'deny' },
  { name: 'command', command: 'command touch F', expect: 'deny' },
  { name: 'exec', command: 'exec touch F', expect: 'deny' },
  { name: 'an absolute path', command: '/usr/bin/touch F', expect: 'deny' },
  { name: 'a backslash-escaped name', command: '\\touch F', expect: 'deny' },
  { name: 'a quoted name', command: "'touch' F", expect: 'deny' },
  { name: 'an assignment before the command', command: 'X=1 touch F', expect: 'deny' },
  { name: 'eval', command: "eval 'touch F'", expect: 'deny' },
  { name: 'find -exec', command: 'find . -maxdepth 0 -exec touch F \\;', expect: 'deny' },
  { name: 'inside if', command: 'if true; then touch F; fi', expect: 'deny' },
  { name: 'in a function', command: 'f() { touch F; }; f', expect: 'deny' },
  { name: 'in a here-document substitution', command: 'cat <<EOF\n$(touch F)\nEOF', expect: 'deny' },
  { name: 'in a process substitution', command: 'cat <(touch F)', expect: 'deny' },
  { name: 'after an allowed command', command: 'echo hi; touch F', expect: 'deny' },
  // What the parser does not fully understand fails closed: denied where a deny rule could match.
  { name: "a $'…' command name", command: "$'\\x74ouch' F", expect: 'deny' },
  { name: 'a dynamic command name', command: 'CMD=touch; $CMD F', expect: 'deny' },
  { name: 'a line continuation inside the name', command: 'tou\\\nch F', expect: 'deny' },
  { name: 'unparseable input', command: "echo 'unterminated; touch F", expect: 'deny' },
  { name: 'a shell reading its input', command: 'echo "touch F" | bash', expect: 'deny' },
  { name: 'a shell reading a here-document', command: 'bash <<EOF\ntouch F\nEOF', expect: 'deny' },
  { name: 'bash -c with code only known when it runs', command: 'C="touch F"; bash -c "$C"', expect: 'deny' },
  { name: 'arithmetic on a variable', command: "a='x[$(touch F)]'; echo $((a))", expect: 'deny' },
  // `$_` is the last argument of the command before: quoted text the model wrote, which these
  // expansions run as code. Unknown: denied under any deny rule.
  { name: '$_ through prompt expansion', command: "echo '$(touch F)'; echo ${_@P}", expect: 'deny' },
  {
    name: '$_ as a substring offset',
    command: "echo 'a[$(rm -f F)]'; echo ${HOME:_}",
    expect: 'deny',
    victim: true,
  },
  { name: '$_ through indirection', command: "echo 'a[$(touch F)]'; echo ${!_}", expect: 'deny' },
  { name: 'printf -v into an array subscript', command: "printf -v 'a[$(touch F)]' x", expect: 'deny' },
  { name: 'test -v of an array subscript', command: "[ -v 'a[$(touch F)]' ]", expect: 'deny' },
  // Programs started where the tree does not show them.
  { name: 'coproc', command: 'coproc touch F', expect: 'deny' },
  { name: 'a shell reading its input as `-`', command: "echo 'touch F' | bash -", expect: 'deny' },
  { name: 'a shell reading /dev/stdin', command: "echo 'touch F' | sh /dev/stdin", expect: 'deny' },
  { name: 'sh -s', command: "echo 'touch F' | sh -s", expect: 'deny' },
  { name: 'env --split-string', command: "env --split-string='touch F'", expect: 'deny' },
  { name: 'env -S', command: "env -S 'touch F'", expect: 'deny' },
  { name: 'xargs building sh -c code', command: "echo 'touch F' | xargs -I{} sh -c {}", expect: 'deny' },
  { name: 'hash -p', command: 'hash -p /usr/bin/touch ls; ls F', expect: 'deny' },
  { name: 'sg -c', command: 'sg "$(id -gn)" -c "touch F"', expect: 'deny' },
  { name: 'source of its input', command: "source /dev/stdin <<< 'touch F'", expect: 'deny' },
  { name: 'exec with a redirection', command: "exec 0<<<'touch F'; bash", expect: 'deny' },
  // ... and asks where nothing denies.
  // Outside the positive list (docs/hooks.md): an allow rule does not apply, whatever runs.
  { name: 'a substitution whose command is allowed', command: 'echo "today: $(printf x)"', expect: 'ask' },
  { name: 'an argument brace expansion of an allowed command', command: 'echo {tou,}ch', expect: 'ask' },
  { name: 'a variable in an allowed command', command: 'echo $HOME', expect: 'ask' },
  { name: 'a glob in an allowed command', command: 'echo *', expect: 'ask' },
  { name: 'a tilde in an allowed command', command: 'echo ~', expect: 'ask' },
  { name: 'a background command', command: 'echo hi &', expect: 'ask' },
  { name: 'a here-document writing a file', command: 'cat <<EOF > F\nhi\nEOF', expect: 'ask' },
  { name: 'a redirection to a file', command: 'echo hi > F', expect: 'ask' },
  { name: 'a process substitution', command: 'echo <(printf F)', expect: 'ask' },
  { name: "$'…' in an argument", command: "echo $'a\\tb'", expect: 'ask' },
  { name: 'a comment', command: 'echo hi # F', expect: 'ask' },
  { name: 'an assignment before an allowed command', command: 'PATH=. echo hi', expect: 'ask' },
  // Ask rules reach nested commands too.
  { name: 'rm after an allowed command', command: 'echo hi; rm -f F', expect: 'ask', victim: true },
  { name: 'rm in bash -c', command: "bash -c 'rm -f F'", expect: 'ask', victim: true },
  { name: 'rm through xargs', command: 'echo F | xargs rm -f', expect: 'ask', victim: true },
  { name: 'rm by absolute path', command: '/bin/rm -f F', expect: 'ask', victim: true },
];

/**
 * What a policy format (Codex `.rules`, Gemini CLI policy, OpenCode permissions) may answer for a
 * case under its translation of RULES, where `none` is "no rule decides" (the call then asks or
 * runs as the tool's own approval says, never as allowed by the file). An allow must be allowed
 * (every format reads the same positive list), a deny must be denied; a case an ask rule catches
 * (`victim`) must ask; any other ask may be `none`.
 */
export function formatExpects(c: ShellCase): string[] {
  if (c.expect === 'allow') return ['allow'];
  if (c.expect === 'deny') return ['deny'];
  return c.victim ? ['ask'] : ['ask', 'none'];
}
