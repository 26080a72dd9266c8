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
const DASH_C = new Set(['su', 'runuser', 'script']);

const MAX_SOURCE = 100_000;
const MAX_DEPTH = 6;
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

/** Reads one command line. Before the grammar has loaded, everything is unknown. */
export function readShell(command: string): ShellReading {
  const reader = new Reader();
  reader.code(command, 0, false);
  return { commands: reader.commands, unprovable: [...reader.unprovable], unknown: [...reader.unknown] };
}

class Reader {
  commands: ShellCommand[] = [];
  unprovable = new Set<string>();
  unknown = new Set<string>();
  private src = '';
  private depth = 0;
  private derived = false;

  /** Parses `text` as shell code and reads it; `derived` marks everything found in it. */
  code(text: string, depth: number, derived: boolean): undefined {
    if (!parser)
      return this.fail(
        loadError ? `the shell parser did not load (${loadError})` : 'the shell parser is still loading',
      );
    if (depth > MAX_DEPTH) return this.fail('commands nested too deeply to follow');
    if (text.length > MAX_SOURCE) return this.fail(`a command longer than ${MAX_SOURCE} characters`);
    const tree = parser.parse(text);
    if (!tree) return this.fail('a command the shell parser could not read');
    const outer = { src: this.src, depth: this.depth, derived: this.derived };
    Object.assign(this, { src: text, depth, derived });
    try {
      const root = tree.rootNode;
      if (root.hasError) this.fail('text bash would not parse as a complete command (unbalanced quotes or brackets?)');
      else this.sequence(root, true);
    } finally {
      Object.assign(this, outer);
      tree.delete();
    }
  }

  /** Something Sluice cannot follow: a command whose text is unknown stands for it. */
  private fail(why: string): undefined {
    this.unknown.add(why);
    this.unprovable.add(why);
    this.commands.push({ words: [[null]], source: '', assigns: false, derived: true });
  }

  private push(cmd: Omit<ShellCommand, 'derived'>, derived = this.derived): undefined {
    if (this.commands.length >= MAX_COMMANDS) return this.fail('too many commands to follow');
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

  private statement(n: Node): undefined {
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
    this.scan(n);
  }

  private declaration(n: Node): undefined {
    this.unprovable.add('it declares or exports variables');
    for (const k of named(n)) {
      if (k.type === 'variable_assignment') this.assignment(k);
      else if (k.type === 'variable_name') continue;
      else if (WORDISH.has(k.type)) {
        const w = this.word(k);
        // declare -i makes every later assignment arithmetic, which can run commands.
        if (w.some((p) => p === null) || /^-[a-zA-Z]*i/.test(w.join('')))
          this.fail('declare -i or a dynamic declaration');
      } else this.fail(`${k.type} in a declaration`);
    }
  }

  private assignment(n: Node): undefined {
    for (const k of named(n)) {
      if (k.type === 'variable_name') continue;
      if (k.type === 'subscript') this.fail('an array subscript, which bash evaluates as arithmetic');
      else if (k.type === 'array') for (const e of named(k)) this.word(e);
      else this.word(k);
    }
  }

  private comment(n: Node): undefined {
    this.unprovable.add('it has a comment');
    const before = n.startIndex === 0 ? ' ' : this.src[n.startIndex - 1];
    // bash starts a comment only at the start of a word; tree-sitter must agree, or text hides.
    if (!/[ \t\n;&|()]/.test(before) || n.text.includes('\n')) this.fail('a comment bash would not read as one');
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
    const values = targets.map((t) => this.word(t));
    const joined = values.length === 1 && values[0].every((p) => p !== null) ? values[0].join('') : undefined;
    if ((op === '>&' || op === '<&') && joined !== undefined && /^(\d+|-)$/.test(joined)) return;
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
        if (!quoted) this.scan(k);
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
    this.push({ words: [name, ...args].map(tidy), source: this.src.slice(from, to), assigns });
  }

  /** A word's value; substitutions in it are read as commands of their own. */
  private word(n: Node): Piece[] {
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
        return braces(
          kids(n)
            .map((k) => (k.type === 'word' ? k.text : '_'))
            .join(''),
        )
          ? [null]
          : out;
      }
      case 'simple_expansion':
        if (!/^\$([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])$/.test(n.text))
          return this.bad('an expansion Sluice cannot read');
        return [null];
      case 'expansion':
        if (n.descendantsOfType('subscript').length)
          return this.bad('an array subscript, which bash evaluates as arithmetic');
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
    for (const k of named(n)) {
      if (k.type === 'command_substitution' || k.type === 'process_substitution' || k.type === 'arithmetic_expansion')
        this.word(k);
      else if (k.type === 'expansion' && k.descendantsOfType('subscript').length)
        this.fail('an array subscript, which bash evaluates as arithmetic');
      else if (k.type === 'ansi_c_string') this.unprovable.add("it has $'…' quoting");
      else this.scan(k);
    }
  }

  /** What a command runs besides itself: wrapped commands, shell code in its arguments. */
  private expand(words: Piece[][]): undefined {
    const name = literal(words[0]);
    if (name === undefined) return;
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
    if (SHELLS.has(base)) return this.shell(args, codeIn);
    if (base === 'eval') return codeIn(joinWords(args));
    if (base === 'trap') return codeIn(args.find((a) => !literal(a)?.startsWith('-')));
    if (base === 'alias') {
      for (const a of args) {
        const text = literal(a);
        if (text === undefined) this.fail('an alias only known when it runs');
        else if (text.includes('=')) this.code(text.slice(text.indexOf('=') + 1), this.depth + 1, true);
      }
      return;
    }
    if (DASH_C.has(base)) {
      const i = args.findIndex((a) => /^(-c|--command)$/.test(literal(a) ?? ''));
      if (i >= 0) codeIn(args[i + 1]);
      for (const a of args) if (literal(a)?.startsWith('--command=')) codeIn([literal(a)!.slice(10)]);
    }
    if (base === 'watch') for (let k = 0; k < args.length; k++) codeIn(joinWords(args.slice(k)));
    if (WRAPPERS.has(base)) for (let k = 1; k < words.length; k++) derived(words.slice(k));
  }

  /** `bash [options] -c CODE`, `bash script`, or `bash` reading its input. */
  private shell(args: Piece[][], codeIn: (p: Piece[] | undefined) => undefined): undefined {
    let dashC = false;
    for (let i = 0; i < args.length; i++) {
      const a = literal(args[i]);
      if (a === undefined) return this.fail('a shell started with options only known when it runs');
      if (a === '--') {
        i++;
      } else if (/^[-+]/.test(a) && a.length > 1) {
        if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(a)) dashC = true;
        if (/^[-+](o|O)$/.test(a) || a === '--rcfile' || a === '--init-file') i++;
        if (/^-[a-zA-Z]*s[a-zA-Z]*$/.test(a) && !dashC) return this.fail('a shell reading commands from its input');
        continue;
      }
      if (dashC) return codeIn(args[i]);
      return; // a script file: what it runs is out of sight, as for any program
    }
    this.fail(dashC ? 'a shell -c without code' : 'a shell reading commands from its input');
  }
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
