// Reading a Bash command the way bash will run it, for the permission rules: every simple command
// anywhere in it (inside `( … )`, `$( … )`, backquotes, `bash -c '…'`, `eval`, after wrappers such
// as `env`, `timeout 5` or `xargs`), and what Sluice cannot know before it runs.
//
// The grammar is tree-sitter's Bash grammar (WASM, no native build). tree-sitter recovers from
// errors and was written for editors, so its tree is not taken on trust: every word is read again
// from its source text with bash's quoting rules, the text between tokens must be blanks, comments
// must start where bash starts one, and here-documents must end where bash ends them. Anything
// that does not check out, and anything that turns data into code at run time (arithmetic on
// variables, `$'…'` command names, a shell reading its input), is "unknown": a command whose text
// is a hole, which every deny and ask rule could match (permission-rules.ts).
import * as path from 'node:path';
import { Language, type Node, Parser } from '@vscode/tree-sitter-wasm';

/** A piece of a word: literal text, or `null` for text only known when the command runs. */
export type Piece = string | null;

export interface ShellCommand {
  /** The words as bash will see them (name first); `null` pieces are unknown text. */
  words: Piece[][];
  /** As written, from the name to the last argument. */
  source: string;
  /** `X=1 cmd`: the command runs with a changed environment (PATH, LD_PRELOAD, ...). */
  assigns: boolean;
  /**
   * Found inside another command rather than written as one: the code of `bash -c`, `eval` or
   * `trap`, what follows a wrapper (`env`, `timeout 5`, `xargs`, `sudo`, ...), the last part of a
   * path (`/usr/bin/touch` is also `touch`). Deny and ask rules see it; an allow rule need not
   * cover it, since the command that holds it must be allowed as written.
   */
  derived: boolean;
}

export interface ShellReading {
  commands: ShellCommand[];
  /** Why no allow rule can cover the command: anything beyond a list of simple commands. */
  unprovable: string[];
  /** Why Sluice cannot tell every command it runs; each adds an unknown command to `commands`. */
  unknown: string[];
}

/** Programs that run the rest of their arguments as a command (or pick one from them). */
const WRAPPERS = new Set([
  'env',
  'timeout',
  'nice',
  'nohup',
  'xargs',
  'sudo',
  'doas',
  'command',
  'exec',
  'builtin',
  'time',
  'stdbuf',
  'ionice',
  'chrt',
  'taskset',
  'setsid',
  'unshare',
  'nsenter',
  'chroot',
  'flock',
  'watch',
  'parallel',
  'strace',
  'ltrace',
  'valgrind',
  'busybox',
  'find',
  'fakeroot',
  'unbuffer',
  'caffeinate',
  'runuser',
  'su',
  'script',
]);
/** Shells: `-c CODE` is parsed as a command; with no operand they run their input, unknown. */
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'yash', 'fish', 'rbash']);
/** Programs whose `-c CODE` option is shell code. */
const DASH_C = new Set(['su', 'runuser', 'script', 'flock']);
/**
 * Variables whose value bash runs or reads as code, or that change what a name runs: setting one
 * (`PS4='$(cmd)'; set -x`, `BASH_ENV=/dev/stdin bash`, `BASH_CMDS[ls]=…`) hides a command.
 */
const HOOK_VARS = new Set([
  'BASH_ENV',
  'ENV',
  'PS0',
  'PS1',
  'PS2',
  'PS3',
  'PS4',
  'PROMPT_COMMAND',
  'BASH_CMDS',
  'BASH_ALIASES',
  'SHELLOPTS',
  'BASHOPTS',
  'BASH_LOADABLES_PATH',
  'EXECIGNORE',
]);

/** Programs that run a command Sluice cannot see: the code comes from input, a file or a table at run time. */
const HIDDEN = new Map([
  ['coproc', 'coproc runs a command in the background that Sluice does not follow'],
  ['source', 'it sources a file, whose commands Sluice cannot see'],
  ['.', 'it sources a file, whose commands Sluice cannot see'],
  ['hash', 'hash can make a command name run another program'],
  ['enable', 'enable can load or turn off builtins, changing what a name runs'],
  ['fc', 'fc runs commands from the history'],
  ['let', 'let evaluates arithmetic, which can run commands hidden in variables'],
]);
/** Bash's reserved words: never a command name to bash (when unquoted, which tree-sitter does not tell). */
const RESERVED = new Set([
  'if',
  'then',
  'elif',
  'else',
  'fi',
  'case',
  'esac',
  'for',
  'select',
  'while',
  'until',
  'do',
  'done',
  'in',
  'function',
  'time',
  '{',
  '}',
  '!',
  '[[',
  ']]',
  'coproc',
]);
/** Builtins that declare variables, when written as a plain command (`'declare'`, `\\export`). */
const DECLARERS = new Set(['declare', 'typeset', 'local', 'export', 'readonly']);
/** Programs that run a shell reading its input unless given a command (`-c`). */
const SHELL_RUNNERS = new Set(['su', 'runuser', 'script']);
/** Files that are a shell's input, not a script on disk. */
const STDIN_FILES = /^(\/dev\/(stdin|tty|fd\/\d+)|\/proc\/[^/]+\/fd\/\d+)$/;
/** Builtins that take variable names, where `a[…]` is arithmetic bash evaluates (and can run commands in). */
const NAME_TAKERS = new Set(['read', 'unset', 'mapfile', 'readarray', 'getopts', 'wait', 'printf', 'test', '[']);
/** Wrappers whose wrapped command gets words only known when it runs (input lines, file names). */
const RUNTIME_ARGS = new Set(['xargs', 'parallel', 'find']);

/**
 * Limits that keep one judgment short: a model chooses the command, and the judgment runs on the
 * worker's event loop. Past any of them the command is unknown (fails closed).
 */
const MAX_SOURCE = 100_000;
/** Brackets (`(`, `{`, `[`, which also open `$(`, `${`, `$[`) open at once, counted before parsing. */
const MAX_NESTING = 64;
/** Words and operators (a cheap count, quoted text included) a command may have before it is parsed. */
const MAX_TOKENS = 20_000;
/** Tree nodes one parse may hold (checked before any walk), and the reading may visit in all. */
const MAX_STEPS = 10_000;
/** Characters of command text (words, found commands included) one reading may hold for matching. */
const MAX_TEXT = 2 * MAX_SOURCE;
const MAX_DEPTH = 6;
/** Words of a wrapper (`env`, `xargs`, `find`, `watch`) each of which may start the command it runs. */
const WRAPPED_WORDS = 64;
const MAX_COMMANDS = 2_000;

let parser: Parser | undefined;
let loadError: string | undefined;
let loading: Promise<void> | undefined;

/** Loads the grammar once per process; resolves (never rejects) when reading can start. */
export function shellParserReady(): Promise<void> {
  loading ??= (async () => {
    try {
      const dir = path.dirname(require.resolve('@vscode/tree-sitter-wasm'));
      await Parser.init({ locateFile: (file: string) => path.join(dir, file) });
      const bash = await Language.load(path.join(dir, 'tree-sitter-bash.wasm'));
      const p = new Parser();
      p.setLanguage(bash);
      parser = p;
    } catch (err) {
      loadError = (err as Error).message;
    }
  })();
  return loading;
}

/** The last few readings: one call is judged by several rule sets, each reading the same line. */
const recent = new Map<string, ShellReading>();

/** Reads one command line. Before the grammar has loaded, everything is unknown. */
export function readShell(command: string): ShellReading {
  const known = recent.get(command);
  if (known) return known;
  const reader = new Reader();
  reader.code(command, 0, false);
  const reading = { commands: reader.commands, unprovable: [...reader.unprovable], unknown: [...reader.unknown] };
  if (parser) {
    if (recent.size >= 8) recent.delete(recent.keys().next().value as string);
    recent.set(command, reading);
  }
  return reading;
}

/**
 * Why the text is too big to parse, checked in one pass before tree-sitter sees it: its length,
 * and how deeply brackets nest (quoted ones too: counting them only errs towards unknown).
 */
export function tooBig(text: string): string | undefined {
  const size = sizeOf(text);
  return typeof size === 'string' ? size : undefined;
}

/** The text's count of words and operators, or why it is too big to parse. */
function sizeOf(text: string): number | string {
  if (text.length > MAX_SOURCE) return `a command longer than ${MAX_SOURCE} characters`;
  let depth = 0;
  let tokens = 0;
  let blank = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 40 || c === 123 || c === 91) {
      if (++depth > MAX_NESTING) return `brackets nested more than ${MAX_NESTING} deep`;
    } else if ((c === 41 || c === 125 || c === 93) && depth > 0) depth--;
    // Parsing costs by the token: words (a blank then something) and the characters that start one.
    const isBlank = c === 32 || c === 9 || c === 10;
    if ((blank && !isBlank) || c === 59 || c === 38 || c === 124 || c === 36 || c === 96 || c === 60 || c === 62)
      if (++tokens > MAX_TOKENS) return `a command of more than ${MAX_TOKENS} words and operators`;
    blank = isBlank;
  }
  return tokens;
}

class Reader {
  commands: ShellCommand[] = [];
  unprovable = new Set<string>();
  unknown = new Set<string>();
  private src = '';
  private depth = 0;
  private derived = false;
  private steps = MAX_STEPS;
  private tokens = MAX_TOKENS;
  private text = MAX_TEXT;

  /** Parses `text` as shell code and reads it; `derived` marks everything found in it. */
  code(text: string, depth: number, derived: boolean): undefined {
    if (this.unknown.size) return;
    if (!parser)
      return this.fail(
        loadError ? `the shell parser did not load (${loadError})` : 'the shell parser is still loading',
      );
    if (depth > MAX_DEPTH) return this.fail('commands nested too deeply to follow');
    const size = sizeOf(text);
    if (typeof size === 'string') return this.fail(size);
    // Code found inside code (`bash -c`, `watch`, `eval`) is parsed too: all of it shares one budget.
    this.tokens -= size;
    if (this.tokens < 0) return this.fail('a command too large to follow');
    const tree = parser.parse(text);
    if (!tree) return this.fail('a command the shell parser could not read');
    const outer = { src: this.src, depth: this.depth, derived: this.derived };
    Object.assign(this, { src: text, depth, derived });
    try {
      const root = tree.rootNode;
      if (root.hasError) this.fail('text bash would not parse as a complete command (unbalanced quotes or brackets?)');
      else if (root.descendantCount > this.steps) this.fail('a command too large to follow');
      else {
        // The positive list is the only way to an allow: the line as written, not code found in it.
        if (depth === 0) for (const why of simpleReasons(root, text)) this.unprovable.add(why);
        this.sequence(root, true);
      }
    } finally {
      Object.assign(this, outer);
      tree.delete();
    }
  }

  /** Something Sluice cannot follow: a command whose text is unknown stands for it. */
  private fail(why: string): undefined {
    // One unknown command stands for them all: every deny and ask rule could match it.
    if (!this.unknown.size) this.commands.push({ words: [[null]], source: '', assigns: false, derived: true });
    this.unknown.add(why);
    this.unprovable.add(why);
  }

  private push(cmd: Omit<ShellCommand, 'derived'>, derived = this.derived): undefined {
    if (this.spent()) return;
    if (this.commands.length >= MAX_COMMANDS) return this.fail('too many commands to follow');
    // Every rule is matched against every command's text: their total is bounded too.
    for (const w of cmd.words) for (const p of w) this.text -= p === null ? 1 : p.length;
    if (this.text < 0) return this.fail('a command too large to follow');
    this.commands.push({ ...cmd, derived });
    this.expand(cmd.words);
  }

  /** Statements separated by `;`, `&` and newlines (a program, `{ … }`, `( … )`, `do … done`). */
  private sequence(node: Node, outermost = false, open: string[] = [], close: string[] = []): undefined {
    const list = kids(node);
    let prev = node.startIndex;
    list.forEach((k, i) => {
      this.gap(prev, k.startIndex, true);
      prev = k.endIndex;
      if (!k.isNamed) {
        const ok =
          [';', '&', '\n'].includes(k.type) ||
          (i === 0 && open.includes(k.type)) ||
          (i === list.length - 1 && close.includes(k.type));
        if (!ok) this.fail(`\`${k.type}\` where Sluice expected a command`);
        return;
      }
      this.statement(k);
    });
    this.gap(prev, outermost ? this.src.length : node.endIndex, true);
  }

  /** Text tree-sitter skipped between two tokens: blanks only (and newlines between statements). */
  private gap(from: number, to: number, newlines: boolean): undefined {
    if (to <= from) return;
    const text = this.src.slice(from, to);
    const blanks = newlines ? /^(?:[ \t\n\r]|\\\n)*$/ : /^(?:[ \t]|\\\n)*$/;
    if (!blanks.test(text)) this.fail(`text the parser skipped: ${JSON.stringify(text.slice(0, 40))}`);
    // `a\<newline>b` is one word to bash: a gap of line continuations alone joins its neighbours.
    else if (text.includes('\\\n') && !/[ \t\n\r]/.test(text.replace(/\\\n/g, '')))
      this.fail('a line continuation inside a word');
  }

  /**
   * Whether a wrapper's k-th word may still start the wrapped command: past WRAPPED_WORDS the
   * command is unknown. Once anything is unknown, reading stops: every deny and ask rule already
   * matches the unknown command, and no allow rule applies.
   */
  private open(k: number): boolean {
    if (k > WRAPPED_WORDS) this.fail(`a wrapper with more than ${WRAPPED_WORDS} words before its command`);
    return !this.unknown.size;
  }

  /** One more node read; past the budget the command is unknown. Stops once anything is. */
  private spent(): boolean {
    if (this.unknown.size) return true;
    if (--this.steps >= 0) return false;
    if (this.steps === -1) this.fail('a command too large to follow');
    return true;
  }

  private statement(n: Node): undefined {
    if (this.spent()) return;
    switch (n.type) {
      case 'command':
        return this.command(n);
      case 'comment':
        return this.comment(n);
      case 'list':
        return this.operands(n, ['&&', '||']);
      case 'pipeline':
        return this.operands(n, ['|', '|&']);
      case 'negated_command':
        return this.operands(n, ['!']);
      case 'subshell':
        return this.sequence(n, false, ['('], [')']);
      case 'compound_statement':
        return this.sequence(n, false, ['{'], ['}']);
      case 'redirected_statement':
        return this.redirected(n);
      case 'variable_assignment':
      case 'variable_assignments':
        this.unprovable.add('it sets shell variables');
        for (const k of named(n)) if (k.type === 'variable_assignment') this.assignment(k);
        if (n.type === 'variable_assignment') this.assignment(n);
        return;
      case 'declaration_command':
      case 'unset_command':
        return this.declaration(n);
      case 'function_definition':
        this.unprovable.add('it defines a function');
        for (const k of named(n)) if (k.type !== 'word') this.statement(k);
        return;
      case 'if_statement':
      case 'elif_clause':
      case 'else_clause':
      case 'while_statement':
      case 'for_statement':
      case 'case_statement':
      case 'case_item':
      case 'do_group':
        return this.control(n);
      case 'test_command':
        return this.test(n);
      default:
        return this.fail(`shell syntax Sluice does not follow (${n.type})`);
    }
  }

  /** `a && b`, `a | b`, `! a`: the operands are statements, the operators the given tokens. */
  private operands(n: Node, ops: string[]): undefined {
    let prev = n.startIndex;
    for (const k of kids(n)) {
      this.gap(prev, k.startIndex, true);
      prev = k.endIndex;
      if (k.isNamed) this.statement(k);
      else if (!ops.includes(k.type)) this.fail(`\`${k.type}\` where Sluice expected ${ops.join(' or ')}`);
    }
  }

  private control(n: Node): undefined {
    this.unprovable.add('it uses if, while, for or case');
    const keywords = [
      'if',
      'then',
      'fi',
      'elif',
      'else',
      'while',
      'until',
      'do',
      'done',
      'for',
      'select',
      'in',
      'case',
      'esac',
      ';;',
      ';&',
      ';;&',
      '|',
      '(',
      ')',
      ';',
      '&',
      '\n',
    ];
    for (const k of kids(n)) {
      if (!k.isNamed) {
        if (!keywords.includes(k.type)) this.fail(`\`${k.type}\` in ${n.type}`);
      } else if (k.type === 'variable_name') {
        // the loop variable
      } else if (n.type === 'case_item' && k.type === 'extglob_pattern') {
        if (/[$`]/.test(k.text)) this.fail('a case pattern with expansions');
      } else if (WORDISH.has(k.type)) {
        this.word(k);
      } else {
        this.statement(k);
      }
    }
  }

  /** `[ … ]` and `[[ … ]]`: read for substitutions; `[[`'s numeric tests evaluate variables as code. */
  private test(n: Node): undefined {
    this.unprovable.add('it uses a test');
    const first = n.child(0)?.type;
    if (first !== '[' && first !== '[[') return this.fail('arithmetic (( … )), which bash may run as code');
    if (first === '[[' && /\s-(eq|ne|lt|le|gt|ge|v|R)\s/.test(n.text))
      return this.fail('a [[ … ]] numeric or -v test, which evaluates variables as code');
    // `[ -v 'a[…]' ]` evaluates the subscript as arithmetic, which can run commands.
    if (/\s-v\s/.test(n.text)) return this.fail('a -v test, which evaluates an array subscript as code');
    this.scan(n);
  }

  private declaration(n: Node): undefined {
    this.unprovable.add('it declares or exports variables');
    for (const k of named(n)) {
      if (k.type === 'variable_assignment') this.assignment(k);
      else if (k.type === 'variable_name') continue;
      else if (WORDISH.has(k.type)) {
        const w = this.word(k);
        // declare -i makes every later assignment arithmetic, which can run commands; -n makes
        // a name a reference, whose target (`a[$(cmd)]`) bash evaluates when it is used.
        if (w.some((p) => p === null) || /^-[a-zA-Z]*[in]/.test(w.join('')))
          this.fail('declare -i, -n or a dynamic declaration');
        else if (w.join('').includes('['))
          this.fail('a variable name with an array subscript, which bash evaluates as arithmetic');
        else if (HOOK_VARS.has(w.join(''))) this.fail(`${w.join('')}, which bash runs as code`);
      } else this.fail(`${k.type} in a declaration`);
    }
  }

  private assignment(n: Node): undefined {
    for (const k of named(n)) {
      if (k.type === 'variable_name') {
        if (HOOK_VARS.has(k.text)) this.fail(`it sets ${k.text}, which bash runs as code or reads commands from`);
        continue;
      }
      if (k.type === 'subscript') this.fail('an array subscript, which bash evaluates as arithmetic');
      else if (k.type === 'array') for (const e of named(k)) this.word(e);
      else this.word(k);
    }
  }

  private comment(n: Node): undefined {
    this.unprovable.add('it has a comment');
    const before = n.startIndex === 0 ? ' ' : this.src[n.startIndex - 1];
    // bash starts a comment only at the start of a word; tree-sitter must agree, or text hides.
    // `\ #`: an escaped blank is part of the word, so bash reads `#` on as part of it too.
    let slashes = 0;
    while (this.src[n.startIndex - 2 - slashes] === '\\') slashes++;
    if (!/[ \t\n;&|()]/.test(before) || slashes % 2 === 1 || n.text.includes('\n'))
      this.fail('a comment bash would not read as one');
    const after = this.src[n.endIndex];
    if (after !== undefined && after !== '\n') this.fail('text after a comment on the same line');
  }

  private redirected(n: Node): undefined {
    let prev = n.startIndex;
    kids(n).forEach((k, i) => {
      this.gap(prev, k.startIndex, false);
      prev = k.endIndex;
      if (i === 0 && k.isNamed && !REDIRECTS.has(k.type)) this.statement(k);
      else if (REDIRECTS.has(k.type)) this.redirect(k);
      else this.fail(`${k.type} after a redirection`);
    });
  }

  private redirect(n: Node): undefined {
    if (n.type === 'heredoc_redirect') return this.heredoc(n);
    if (n.type === 'herestring_redirect') {
      this.unprovable.add('it has a here-string');
      for (const k of named(n)) this.word(k);
      return;
    }
    const op = kids(n).find((k) => !k.isNamed)?.type ?? '';
    const targets = named(n).filter((k) => k.type !== 'file_descriptor');
    // `xargs>/dev/null touch`: tree-sitter hangs the next words on the redirection; bash does not.
    if (targets.length > 1) return this.fail('words after a redirection that Sluice cannot place');
    const values = targets.map((t) => this.word(t));
    const joined = values.length === 1 && values[0].every((p) => p !== null) ? values[0].join('') : undefined;
    // `{name}>file` stores a descriptor in name, whose subscript bash evaluates as arithmetic.
    if (this.src[n.startIndex - 1] === '}')
      return this.fail('a {name}> redirection, which can run code in a subscript');
    if (op === '>&' || op === '<&') {
      if (joined !== undefined && /^(\d+|-)$/.test(joined)) return;
      // bash reads the target as a descriptor number first, evaluating it.
      return this.fail(`a ${op} redirection to something other than a descriptor number`);
    }
    if (joined === '/dev/null' && op !== '<') return;
    this.unprovable.add('it redirects to or from a file');
  }

  /** A here-document: its body is data, unless unquoted, when `$( … )` inside it runs. */
  private heredoc(n: Node): undefined {
    this.unprovable.add('it has a here-document');
    const start = named(n).find((k) => k.type === 'heredoc_start');
    const body = named(n).find((k) => k.type === 'heredoc_body');
    const end = named(n).find((k) => k.type === 'heredoc_end');
    if (!start || !end) return this.fail('a here-document without an end');
    const quoted = /['"\\]/.test(start.text);
    const delimiter = start.text.replace(/['"\\]/g, '');
    const strip = kids(n).some((k) => k.type === '<<-');
    const line = (s: string) => (strip ? s.replace(/^\t+/, '') : s);
    // bash ends the body at the first line that is the delimiter; tree-sitter must end it there too.
    const bodyLines = (body?.text ?? '').split('\n');
    const endLine = this.src.slice(this.src.lastIndexOf('\n', end.startIndex - 1) + 1, end.startIndex);
    const after = this.src[end.endIndex];
    if (
      end.text !== delimiter ||
      !(endLine === '' || (strip && /^\t+$/.test(endLine))) ||
      (after !== undefined && after !== '\n') ||
      bodyLines.slice(0, -1).some((l) => line(l) === delimiter)
    )
      return this.fail('a here-document whose end Sluice cannot place');
    for (const k of kids(n)) {
      if (k.type === 'heredoc_start' || k.type === 'heredoc_end' || ['<<', '<<-'].includes(k.type)) continue;
      if (k.type === 'heredoc_body') {
        if (quoted) continue;
        // tree-sitter leaves some bodies (`<<-`, backquotes) as plain text: what it did not read is unknown.
        if (/[`]/.test(k.text) || (/\$/.test(k.text) && !named(k).length))
          return this.fail('a here-document with substitutions Sluice cannot read');
        this.scan(k);
      } else if (REDIRECTS.has(k.type)) this.redirect(k);
      else if (k.type === 'pipeline' || k.type === 'list') {
        // `cat <<EOF | sh` or `cat <<EOF && b`: tree-sitter hangs the rest of the line here.
        this.operands(k, ['|', '|&', '&&', '||']);
      } else this.fail(`${k.type} in a here-document`);
    }
  }

  private command(n: Node): undefined {
    let name: Piece[] | undefined;
    const args: Piece[][] = [];
    let assigns = false;
    let from = -1;
    let to = -1;
    let prev = n.startIndex;
    let prevWord = false;
    for (const k of kids(n)) {
      this.gap(prev, k.startIndex, false);
      const isWord = k.type === 'variable_assignment' || k.type === 'command_name' || WORDISH.has(k.type);
      // Two words with nothing between them are one word to bash.
      if (isWord && prevWord && k.startIndex === prev) return this.fail('two words with nothing between them');
      prevWord = isWord;
      prev = k.endIndex;
      if (k.type === 'variable_assignment') {
        assigns = true;
        this.assignment(k);
      } else if (REDIRECTS.has(k.type)) {
        this.redirect(k);
      } else if (k.type === 'command_name') {
        const inner = named(k);
        if (inner.length !== 1 || inner[0].startIndex !== k.startIndex || inner[0].endIndex !== k.endIndex)
          return this.fail('a command name Sluice cannot read');
        name = this.word(inner[0]);
        // `r${IFS}ead 'a[…]'`: bash splits an unquoted expansion into words, so the program and
        // its first arguments are only known when it runs.
        if (splits(inner[0])) return this.fail('a command name bash splits into words only known when it runs');
        from = k.startIndex;
        to = k.endIndex;
      } else if (k.isNamed && WORDISH.has(k.type) && name) {
        args.push(this.word(k));
        to = k.endIndex;
      } else {
        return this.fail(`\`${k.type}\` in a command`);
      }
    }
    if (!name) {
      this.unprovable.add('it redirects without a command');
      return;
    }
    // `exec 0<file`, `exec > >(…)`: what the rest of the line reads and writes changes.
    if (literal(name) === 'exec' && kids(n).some((k) => REDIRECTS.has(k.type)))
      return this.fail('exec with redirections, which changes what the rest of the line reads');
    this.push({ words: [name, ...args].map(tidy), source: this.src.slice(from, to), assigns });
  }

  /** A word's value; substitutions in it are read as commands of their own. */
  private word(n: Node): Piece[] {
    if (this.spent()) return [null];
    switch (n.type) {
      case 'word':
        return braces(n.text) ? [null] : this.unquoted(n.text, true);
      case 'number':
        return /^\d+$/.test(n.text) ? [n.text] : this.unquoted(n.text, true);
      case 'raw_string':
        if (!/^'[^']*'$/.test(n.text)) return this.bad(`a quoted string Sluice cannot read`);
        return [n.text.slice(1, -1)];
      case 'string':
        return this.doubleQuoted(n);
      case 'concatenation': {
        const out: Piece[] = [];
        let prev = n.startIndex;
        for (const k of kids(n)) {
          if (k.startIndex !== prev || !k.isNamed) return this.bad('a word Sluice cannot read');
          prev = k.endIndex;
          out.push(...(k.type === 'word' ? this.unquoted(k.text, k.startIndex === n.startIndex) : this.word(k)));
        }
        // A brace expansion makes several words of one; a glob anywhere, file names for all of it.
        const unquoted = kids(n)
          .map((k) => (k.type === 'word' ? k.text : '_'))
          .join('');
        return braces(unquoted) || /[*?[]/.test(unquoted.replace(/\\./g, '_')) ? [null] : out;
      }
      case 'simple_expansion':
        if (!/^\$([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])$/.test(n.text))
          return this.bad('an expansion Sluice cannot read');
        return [null];
      case 'expansion':
        this.scan(n);
        return [null];
      case 'command_substitution':
        this.substitution(n);
        return [null];
      case 'process_substitution':
        this.unprovable.add('it has a process substitution <( … )');
        this.sequence(n, false, ['<(', '>('], [')']);
        return [null];
      case 'ansi_c_string':
        this.unprovable.add("it has $'…' quoting");
        return [null];
      case 'arithmetic_expansion':
        if (
          n.descendantsOfType(['variable_name', 'simple_expansion', 'expansion', 'command_substitution', 'subscript'])
            .length
        )
          return this.bad('arithmetic on variables, which bash may run as code');
        return [null];
      case 'brace_expression':
        return [null];
      default:
        return this.bad(`${n.type} where Sluice expected a word`);
    }
  }

  private bad(why: string): Piece[] {
    this.fail(why);
    return [null];
  }

  /** An unquoted word's text, with bash's backslash rules; globs make it unknown. */
  private unquoted(text: string, wordStart: boolean): Piece[] {
    let out = '';
    if (wordStart && text.startsWith('#')) return this.bad('a word bash would read as a comment');
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (c === '\\') {
        const next = text[++i];
        if (next === undefined) out += '\\';
        else if (next !== '\n') out += next;
      } else if (c === '*' || c === '?' || c === '[') {
        // A pathname pattern: bash replaces it with the names of matching files.
        return [null];
      } else if (/[\s;&|()<>'"`$]/.test(c)) {
        return this.bad(`a word the parser split differently from bash: ${JSON.stringify(text.slice(0, 40))}`);
      } else out += c;
    }
    return [out];
  }

  private doubleQuoted(n: Node): Piece[] {
    const list = kids(n);
    if (list[0]?.type !== '"' || list[list.length - 1]?.type !== '"' || list.length < 2)
      return this.bad('a quoted string Sluice cannot read');
    const out: Piece[] = [];
    let prev = list[0].endIndex;
    const plain = (text: string) => {
      let s = '';
      for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (c === '\\' && i + 1 < text.length && '$`"\\\n'.includes(text[i + 1])) {
          if (text[++i] !== '\n') s += text[i];
        } else if (c === '$' || c === '`' || c === '"') {
          return this.bad('a quoted string Sluice cannot read');
        } else s += c;
      }
      return [s];
    };
    for (const k of list.slice(1, -1)) {
      out.push(...plain(this.src.slice(prev, k.startIndex)));
      prev = k.endIndex;
      if (k.type === 'string_content') out.push(...plain(k.text));
      else if (k.type === '$' && this.src[k.endIndex] === '"') out.push('$');
      else if (k.isNamed) out.push(...this.word(k));
      else out.push(...this.bad(`\`${k.type}\` in a quoted string`));
    }
    out.push(...plain(this.src.slice(prev, list[list.length - 1].startIndex)));
    return out;
  }

  private substitution(n: Node): undefined {
    if (n.text.startsWith('`')) {
      // Inside backquotes bash removes backslashes before parsing again; tree-sitter does not.
      if (n.text.includes('\\')) return this.fail('backquotes with backslashes inside');
      return this.sequence(n, false, ['`'], ['`']);
    }
    this.sequence(n, false, ['$('], [')']);
  }

  /** Every substitution below a node whose own value does not matter (a test, an expansion). */
  private scan(n: Node): undefined {
    if (this.spent()) return;
    if (n.type === 'expansion') {
      const hazard = expansionHazard(n);
      if (hazard) return this.fail(hazard);
    }
    for (const k of named(n)) {
      if (k.type === 'command_substitution' || k.type === 'process_substitution' || k.type === 'arithmetic_expansion')
        this.word(k);
      else if (k.type === 'subscript') this.fail('an array subscript, which bash evaluates as arithmetic');
      else if (k.type === 'ansi_c_string') this.unprovable.add("it has $'…' quoting");
      else this.scan(k);
    }
  }

  /** What a command runs besides itself: wrapped commands, shell code in its arguments. */
  private expand(words: Piece[][]): undefined {
    const name = literal(words[0]);
    if (name === undefined) return this.unknownPath(words);
    const derived = (rest: Piece[][]) => {
      if (this.depth >= MAX_DEPTH) return this.fail('commands nested too deeply to follow');
      const outer = this.depth;
      this.depth++;
      this.push({ words: rest, source: '', assigns: false }, true);
      this.depth = outer;
    };
    const codeIn = (piece: Piece[] | undefined) => {
      if (!piece) return;
      const text = literal(piece);
      if (text === undefined) return this.fail('shell code only known when it runs');
      this.code(text, this.depth + 1, true);
    };
    const base = name.includes('/') ? path.posix.basename(name) : name;
    // `/usr/bin/touch` is `touch` too; that command is read (and expanded) in its turn.
    if (base !== name) return derived([[base], ...words.slice(1)]);
    const args = words.slice(1);
    // `time { if …; fi }`: a keyword where tree-sitter read a command name means it read the line
    // differently from bash.
    if (name === 'time' ? args.some((a) => RESERVED.has(literal(a) ?? '')) : RESERVED.has(name))
      return this.fail(`\`${name}\` read as a command, where bash reads shell syntax`);
    const hidden = hiddenRun(base, args);
    if (hidden) return this.fail(hidden);
    if (SHELLS.has(base)) return this.shell(args, codeIn);
    if (base === 'eval') return codeIn(joinWords(args));
    if (base === 'trap') return codeIn(args.find((a) => !literal(a)?.startsWith('-')));
    if (base === 'alias') return this.alias(args);
    if (DASH_C.has(base)) {
      // `script -qc\mkdir${IFS}D`: a word only known when it runs may be `-c` and its code.
      if (args.some((a) => literal(a) === undefined)) return this.fail(`${base} with options only known when it runs`);
      const i = args.findIndex((a) => /^(-[a-zA-Z]*c|--command)$/.test(literal(a) ?? ''));
      if (i >= 0) codeIn(args[i + 1]);
      // `-qc'code'`: the option's value written in the same word
      for (const a of args) {
        const joined = /^-[a-zA-Z]*?c(.+)$/s.exec(literal(a) ?? '');
        if (joined) codeIn([joined[1]]);
      }
      for (const a of args) if (literal(a)?.startsWith('--command=')) codeIn([literal(a)!.slice(10)]);
    }
    if (base === 'sg') {
      const code = sgCommands(args);
      if (!code.length) return this.fail('sg without a command runs a shell reading its input');
      for (const c of code) codeIn(c);
      return;
    }
    if (base === 'mapfile' || base === 'readarray' || base === 'compgen') codeIn(optionValue(args, '-C'));
    if (base === 'watch') for (let k = 0; k < args.length && this.open(k); k++) codeIn(joinWords(args.slice(k)));
    if (RUNTIME_ARGS.has(base)) {
      // xargs and parallel add input lines as words; all three put them where `{}` (or -I's string) is.
      const marks = replaceStrings(args);
      const known = (w: Piece[]) => {
        const t = literal(w);
        return t === undefined || marks.some((m) => t.includes(m)) ? [null] : w;
      };
      const input: Piece[][] = base === 'find' ? [] : [[null]];
      // find's -exec command ends at `;` or `+`.
      const ends = (w: Piece[]) => base === 'find' && (literal(w) === ';' || literal(w) === '+');
      for (let k = 1; k < words.length && this.open(k); k++) {
        const end = words.findIndex((w, i) => i > k && ends(w));
        derived([...words.slice(k, end < 0 ? undefined : end).map(known), ...input]);
      }
      return;
    }
    if (WRAPPERS.has(base)) for (let k = 1; k < words.length && this.open(k); k++) derived(words.slice(k));
  }

  /**
   * `$DIR/touch`, `/usr/bin/tou$X`: a path only partly known runs the program its last part
   * names, which is found as a command of its own (unknown when text after the last `/` is).
   */
  private unknownPath(words: Piece[][]): undefined {
    const name = words[0];
    let last = -1;
    name.forEach((p, i) => {
      if (p?.includes('/')) last = i;
    });
    if (last < 0) return;
    const after = name.slice(last + 1);
    const tail = (name[last] as string).slice((name[last] as string).lastIndexOf('/') + 1);
    const base = after.includes(null) ? [null] : [tail, ...after];
    if (this.depth >= MAX_DEPTH) return this.fail('commands nested too deeply to follow');
    this.depth++;
    this.push({ words: [tidy(base), ...words.slice(1)], source: '', assigns: false }, true);
    this.depth--;
  }

  private alias(args: Piece[][]): undefined {
    for (const a of args) {
      const text = literal(a);
      if (text === undefined) this.fail('an alias only known when it runs');
      // A here-document or a second line in an alias reads lines of the script after it, not its own.
      else if (/\n|<</.test(text)) this.fail('an alias whose lines bash reads from the rest of the script');
      else if (text.includes('=')) this.code(text.slice(text.indexOf('=') + 1), this.depth + 1, true);
    }
  }

  /** `bash [options] -c CODE`, `bash script`, or `bash` reading its input (`bash`, `bash -`, `sh -s`, `sh /dev/stdin`). */
  private shell(args: Piece[][], codeIn: (p: Piece[] | undefined) => undefined): undefined {
    let dashC = false;
    let stdin = false;
    let i = 0;
    for (; i < args.length; i++) {
      const a = literal(args[i]);
      if (a === undefined) return this.fail('a shell started with options only known when it runs');
      if (a === '--' || a === '-') {
        i++;
        break;
      }
      if (!/^[-+]./.test(a)) break;
      if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(a)) dashC = true;
      if (/^-[a-zA-Z]*s[a-zA-Z]*$/.test(a)) stdin = true;
      if (/^[-+](o|O)$/.test(a) || a === '--rcfile' || a === '--init-file') i++;
    }
    if (dashC) return args[i] ? codeIn(args[i]) : this.fail('a shell -c without code');
    const operand = args[i] && literal(args[i]);
    if (stdin || !args[i] || operand === undefined || STDIN_FILES.test(operand))
      return this.fail('a shell reading commands from its input or a file only known when it runs');
    // a script file: what it runs is out of sight, as for any program
  }
}

/** Parameter-expansion operators that only change how a value is shown (`${x@Q}`); `@P` runs prompt expansion. */
const SHOWING_OPERATORS = new Set(['Q', 'E', 'A', 'a', 'K', 'k', 'U', 'u', 'L']);

/**
 * Why a `${…}` can run commands hidden in a variable's value, whatever is written here: `${!x}`
 * (indirection: x may hold `a[$(cmd)]`, a subscript bash evaluates), `${x@P}` (prompt expansion
 * runs `$(…)` in the value) and a substring whose offset or length is not a plain number
 * (arithmetic evaluates variables as expressions). `$_` makes any quoted text of the line such a value.
 */
function expansionHazard(n: Node): string | undefined {
  const list = kids(n);
  if (list[1]?.type === '!') return 'an indirect expansion ${!…}, which can run commands hidden in a variable';
  for (let i = 1; i < list.length; i++) {
    const k = list[i];
    if (k.type === '@' && !SHOWING_OPERATORS.has(list[i + 1]?.text ?? ''))
      return 'a ${…@P}-style expansion, which can run commands hidden in a variable';
    if (k.type === ':' && list.slice(i + 1).some((o) => o.isNamed && !/^-?[0-9]+$/.test(o.text)))
      return 'a substring ${x:…} with arithmetic on variables, which can run commands hidden in them';
  }
  return undefined;
}

/**
 * Why a command runs something Sluice cannot see: a program in HIDDEN, `hash -p`, `env -S`
 * (`--split-string`), exported functions (`BASH_FUNC_…`), or a variable name holding an array
 * subscript (`read 'a[$(cmd)]'`, `printf -v`, `test -v`), which bash evaluates as arithmetic.
 */
function hiddenRun(base: string, args: Piece[][]): string | undefined {
  const texts = args.map(literal);
  if (HIDDEN.has(base) && (base !== 'hash' || texts.some((t) => t === undefined || /^-[a-z]*p/.test(t))))
    return HIDDEN.get(base);
  if (base === 'env' && texts.some((t) => t === undefined || /^(-[a-zA-Z0-9]*S|--split-string)/.test(t)))
    return 'env -S splits a string into a command Sluice does not follow';
  if (texts.some((t) => t?.startsWith('BASH_FUNC_')))
    return 'an exported function, which changes what a command name runs';
  // `env BASH_ENV=/dev/stdin bash`, `sudo PS4=… bash -x`
  if (WRAPPERS.has(base) && texts.some((t) => t !== undefined && HOOK_VARS.has(t.split('=')[0]) && t.includes('=')))
    return 'a wrapper setting a variable bash runs as code';
  if (DECLARERS.has(base)) {
    // `'declare' -n …`, `\export PS4=…`: a quoted name is the same builtin to bash.
    for (const t of texts)
      if (t === undefined || /^-[a-zA-Z]*[in]/.test(t) || t.includes('[') || HOOK_VARS.has(t.split('=')[0]))
        return 'declare -i, -n, an array subscript or a variable bash runs as code';
  }
  if (NAME_TAKERS.has(base)) return nameTaken(base, args);
  if (SHELL_RUNNERS.has(base) && !args.some((a) => /^(-[a-zA-Z]*c|--command)/.test(literal(a) ?? '-c')))
    return `${base} without a command runs a shell reading its input`;
  return undefined;
}

/** Why a builtin that takes variable names (`read`, `printf -v`, `test -v`) may run code or change PATH. */
function nameTaken(base: string, args: Piece[][]): string | undefined {
  const flag = base === 'printf' || base === 'test' || base === '[' ? '-v' : base === 'wait' ? '-p' : undefined;
  const subscript = 'a variable name with an array subscript, which bash evaluates as arithmetic';
  for (const w of flag ? flagValues(args, flag) : args) {
    const t = literal(w);
    if (t === undefined || t.includes('[')) return subscript;
    if (t === 'PATH' || HOOK_VARS.has(t)) return `it sets ${t}, which changes what commands run`;
  }
  if (!flag) return undefined;
  // `printf $'\x2dv' NAME`, `printf -v{a,b}'a[…]'`, `[ $X "$_" ]`: a word only known when it runs
  // may be the flag (printf takes it only first), and the word after it the name.
  const open = (w: Piece[] | undefined) => w !== undefined && literal(w) === undefined;
  if (base === 'printf' && open(args[0])) return 'printf whose first word, perhaps -v, is only known when it runs';
  for (let i = 0; i + 1 < args.length; i++)
    if (
      open(args[i]) &&
      (open(args[i + 1]) || /[[]|^PATH$/.test(literal(args[i + 1]) ?? '') || HOOK_VARS.has(literal(args[i + 1]) ?? ''))
    )
      return subscript;
  return undefined;
}

/** The values of an option, written `-v NAME` or `-vNAME`. */
function flagValues(args: Piece[][], flag: string): Piece[][] {
  const out: Piece[][] = [];
  args.forEach((a, i) => {
    const first = a[0];
    if (literal(a) === flag) out.push(args[i + 1] ?? [null]);
    else if (typeof first === 'string' && first.startsWith(flag)) out.push([first.slice(flag.length), ...a.slice(1)]);
  });
  return out;
}

/** Whether a word holds an expansion outside double quotes, which bash splits into words. */
function splits(n: Node): boolean {
  if (n.type === 'string') return false;
  if (['simple_expansion', 'expansion', 'command_substitution', 'arithmetic_expansion'].includes(n.type)) return true;
  return named(n).some(splits);
}

/** The word after an option (`-C cmd`), if the option is there. */
function optionValue(args: Piece[][], option: string): Piece[] | undefined {
  const i = args.findIndex((a) => literal(a) === option);
  return i >= 0 ? (args[i + 1] ?? [null]) : undefined;
}

/**
 * `sg group -c command` or `sg group command`: the command is shell code. sg takes the word after
 * the group as the command unless that word is `-c`, so both readings are judged: a `-c` later
 * in the line does not hide the word sg runs (`sg grp touch x -c 'echo'` runs touch).
 */
function sgCommands(args: Piece[][]): Piece[][] {
  const c = optionValue(args, '-c');
  const operands = args.filter((a) => literal(a) !== '-');
  const after = literal(operands[1]) === '-c' ? undefined : operands[1];
  return [...(c ? [c] : []), ...(after ? [after] : [])];
}

/** The strings xargs, parallel and find replace with words only known when they run. */
function replaceStrings(args: Piece[][]): string[] {
  const marks = ['{'];
  args.forEach((a, i) => {
    const t = literal(a) ?? '';
    if (t === '-I' || t === '-J' || t === '--replace') marks.push(literal(args[i + 1]) ?? '');
    else if (/^-[IiJ]./.test(t)) marks.push(t.slice(2));
    else if (t.startsWith('--replace=')) marks.push(t.slice(10));
  });
  return marks.filter((m) => m !== '');
}

/** Node types that are words (arguments, assignment values, redirection targets). */
const WORDISH = new Set([
  'word',
  'number',
  'raw_string',
  'string',
  'concatenation',
  'simple_expansion',
  'expansion',
  'command_substitution',
  'process_substitution',
  'ansi_c_string',
  'arithmetic_expansion',
  'brace_expression',
  'translated_string',
]);
const REDIRECTS = new Set(['file_redirect', 'heredoc_redirect', 'herestring_redirect']);

function kids(n: Node): Node[] {
  return n.children.filter((k): k is Node => k !== null);
}
function named(n: Node): Node[] {
  return n.namedChildren.filter((k): k is Node => k !== null);
}

/** Whether unquoted text has a brace expansion (`{tou,}ch`, `{1..3}`), which makes words of one. */
function braces(unquoted: string): boolean {
  return /\{[^{}]*(,|\.\.)[^{}]*\}/.test(unquoted.replace(/\\./g, '_'));
}

/** Adjacent literal pieces as one; an empty word stays one empty piece. */
function tidy(word: Piece[]): Piece[] {
  const out: Piece[] = [];
  for (const p of word) {
    if (p === '') continue;
    const last = out.length - 1;
    if (p !== null && last >= 0 && out[last] !== null) out[last] += p;
    else out.push(p);
  }
  return out.length ? out : [''];
}

/** The word as plain text, or undefined when any of it is unknown. */
export function literal(word: Piece[] | undefined): string | undefined {
  if (!word || word.some((p) => p === null)) return undefined;
  return word.join('');
}

function joinWords(words: Piece[][]): Piece[] {
  const out: Piece[] = [];
  words.forEach((w, i) => {
    if (i) out.push(' ');
    out.push(...w);
  });
  return out;
}

/** A command's text for matching: its words joined by single spaces, unknown pieces kept. */
export function commandText(cmd: ShellCommand): Piece[] {
  return joinWords(cmd.words);
}

// ---- The positive list: what an allow rule may vouch for ----------------------------------------

/** Statement kinds a proven-simple line may hold, and the operator tokens between them. */
const SIMPLE_OPERATORS: Record<string, readonly string[]> = {
  program: [';', '\n'],
  list: ['&&', '||'],
  pipeline: ['|'],
};
/** Word kinds a proven-simple command may hold (a concatenation only of the others). */
const SIMPLE_WORDS = new Set(['word', 'number', 'raw_string', 'string', 'concatenation']);
/**
 * An unquoted word that is its own text: letters, digits and `_ . / , : = @ % + ^ -`. Everything
 * else (`$`, backquotes, globs `* ? [`, braces, `~`, backslashes, `!`, `#`, blanks, control
 * characters) is left out, so that what bash might expand, split or read differently never is.
 */
const PLAIN_UNQUOTED = /^[\p{L}\p{N}\p{M}_./,:=@%+^-]+$/u;
/**
 * What bash does to a redirection's target is known when it is one of these, which touch no file:
 * `>/dev/null`, `2>/dev/null`, `&>/dev/null` (and `>>`), `2>&1`, `1>&2`, `>&2`. Any other
 * redirection to or from a named file is `it redirects to or from a file` (Gemini's
 * allowRedirection may allow it); everything else is not simple.
 */
const SAFE_REDIRECT_FDS = new Set(['', '1', '2']);

/**
 * Why the line is not proven simple (empty when it is): every node of the tree must be of a kind
 * on the positive list — program, list, pipeline, command, command_name, a word that is its own
 * text (plain word, number, '…', "…" with nothing bash expands inside, a concatenation of those),
 * the operators `;` `&&` `||` `|` and newlines between commands, and the redirections above.
 * Anything else, including kinds nobody thought of yet, keeps every allow rule from applying.
 */
function simpleReasons(root: Node, src: string): string[] {
  const why = new Set<string>();
  let budget = MAX_STEPS;
  const visit = (n: Node): void => {
    if (--budget < 0) {
      why.add('a command too large to check');
      return;
    }
    // Between the parts only blanks and newlines: no line continuation, nothing tree-sitter skipped.
    let at = n === root ? 0 : n.startIndex;
    for (const k of kids(n)) {
      if (!/^[ \t\n]*$/.test(src.slice(at, k.startIndex))) why.add('text between its parts other than blanks');
      at = k.endIndex;
    }
    if (!/^[ \t\n]*$/.test(src.slice(at, n === root ? src.length : n.endIndex)))
      why.add('text between its parts other than blanks');
    const ops = SIMPLE_OPERATORS[n.type];
    if (ops) {
      for (const k of kids(n)) {
        if (k.isNamed) visit(k);
        else if (!ops.includes(k.type)) why.add(`it uses \`${k.type}\``);
      }
    } else if (n.type === 'redirected_statement') {
      kids(n).forEach((k, i) => {
        if (i === 0 && !REDIRECTS.has(k.type)) visit(k);
        else simpleRedirect(k, why);
      });
    } else if (n.type === 'command') {
      simpleCommand(n, why);
    } else {
      why.add(n.type === 'comment' ? 'it has a comment' : `it holds ${n.type.replace(/_/g, ' ')}`);
    }
  };
  visit(root);
  return [...why];
}

function simpleCommand(n: Node, why: Set<string>): undefined {
  for (const k of kids(n)) {
    if (k.type === 'command_name') {
      const inner = named(k);
      // The name's value too must be a plain word: `'echo $(rm x)'` names no program `echo`.
      if (inner.length !== 1 || !simpleWord(inner[0]) || !PLAIN_UNQUOTED.test(simpleValue(inner[0])))
        why.add('its command name is not plain text');
    } else if (REDIRECTS.has(k.type)) simpleRedirect(k, why);
    else if (!k.isNamed || !SIMPLE_WORDS.has(k.type)) why.add(`it holds ${k.type.replace(/_/g, ' ')}`);
    else if (!simpleWord(k)) why.add('a word bash expands (`$`, backquotes, globs, braces, `~`, escapes)');
  }
}

/** Whether a word is its own text to bash: nothing in it is expanded, split or globbed. */
function simpleWord(n: Node): boolean {
  switch (n.type) {
    case 'word':
      return PLAIN_UNQUOTED.test(n.text);
    case 'number':
      return /^[0-9]+$/.test(n.text);
    case 'raw_string':
      return /^'[^']*'$/.test(n.text);
    case 'string':
      return /^"[^"$`\\]*"$/.test(n.text) && kids(n).every((k) => k.type === '"' || k.type === 'string_content');
    case 'concatenation': {
      let at = n.startIndex;
      for (const k of kids(n)) {
        if (k.startIndex !== at || k.type === 'concatenation' || !SIMPLE_WORDS.has(k.type) || !simpleWord(k))
          return false;
        at = k.endIndex;
      }
      return at === n.endIndex;
    }
    default:
      return false;
  }
}

/** A simple word's value: its text without the quotes (nothing inside them is special). */
function simpleValue(n: Node): string {
  if (n.type === 'raw_string' || n.type === 'string') return n.text.slice(1, -1);
  if (n.type === 'concatenation') return kids(n).map(simpleValue).join('');
  return n.text;
}

function simpleRedirect(n: Node, why: Set<string>): undefined {
  if (n.type === 'heredoc_redirect') {
    const start = named(n).find((k) => k.type === 'heredoc_start');
    const quoted = !!start && /^(['"])[A-Za-z0-9_.-]+\1$/.test(start.text);
    const others = named(n).filter((k) => !['heredoc_start', 'heredoc_body', 'heredoc_end'].includes(k.type));
    // An unquoted here-document's body is expanded; a quoted one is data.
    if (!quoted || others.length || !kids(n).every((k) => k.isNamed || k.type === '<<' || k.type === '<<-'))
      why.add('it has a here-document bash expands, or one with more after it');
    else why.add('it has a here-document');
    return;
  }
  const targets = named(n).filter((k) => k.type !== 'file_descriptor');
  const fd = named(n).find((k) => k.type === 'file_descriptor')?.text ?? '';
  const op = kids(n).find((k) => !k.isNamed)?.type ?? '';
  if (targets.length !== 1 || !simpleWord(targets[0])) {
    why.add('a redirection Sluice cannot vouch for');
    return;
  }
  if (n.type === 'herestring_redirect') {
    why.add('it has a here-string');
    return;
  }
  const target = targets[0].text;
  const safe =
    SAFE_REDIRECT_FDS.has(fd) &&
    (((op === '>' || op === '>>') && target === '/dev/null') ||
      ((op === '&>' || op === '&>>') && fd === '' && target === '/dev/null') ||
      (op === '>&' && (target === '1' || target === '2')));
  if (!safe) why.add('it redirects to or from a file');
}
