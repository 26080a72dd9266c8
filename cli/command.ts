// A command of `sluice`: its name, its flags, its help and what it does, together in one file per
// command (cli/<command>.ts). cli/index.ts lists them and dispatches on the first word; each
// command parses only its own flags, so a flag another command takes is an error here, naming the
// ones this command has.
import { parseArgs } from 'node:util';
import { UsageError } from '../support/errors';

interface FlagSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
}
type Flags = Record<string, FlagSpec>;

/** The values parseArgs gives for a command's flags. */
export type Values<F extends Flags> = {
  [K in keyof F]?: F[K] extends { type: 'boolean' } ? boolean : F[K] extends { multiple: true } ? string[] : string;
};

interface Context<F extends Flags> {
  values: Values<F>;
  /** The arguments after the command's name. */
  positionals: string[];
  /** Prints one line (terminal-safe). */
  out: (s: string) => void;
  /** Writes without ending the line, on a terminal's stdout only (chat streams the model's text there). */
  stream?: (s: string) => void;
}

interface Listed {
  name: string;
  /** How `sluice --help` lists it: the command and its arguments ... */
  synopsis: string;
  /** ... and what it does (lines of at most ~76 characters). */
  summary: string;
  /** The command's own help (`sluice help <name>`, `sluice <name> --help`). */
  help: string;
}

/** A command whose flags the dispatcher parses. Its help lists every one of its flags. */
export interface Command<F extends Flags = Flags> extends Listed {
  flags: F;
  run(ctx: Context<F>): Promise<number>;
}

/** A command that reads its own arguments: another protocol (hook, gateway) or subcommands (policy). */
export interface RawCommand extends Listed {
  raw(argv: string[], out: (s: string) => void): Promise<number>;
}

export type AnyCommand = Command<any> | RawCommand;

export const defineCommand = <F extends Flags>(c: Command<F>): Command<F> => c;

export const isRaw = (c: AnyCommand): c is RawCommand => 'raw' in c;

const HELP_FLAG = { help: { type: 'boolean', short: 'h' } } as const;

/** `--by, --reason, …`: a command's flags as an error lists them. */
function flagList(c: Command<any>): string {
  return [...Object.keys(c.flags), 'help'].map((f) => `--${f}`).join(', ');
}

/**
 * A command's arguments by its own flag table: an unknown flag, or a flag missing its value, is a
 * UsageError that names the command's flags.
 */
export function parseCommand<F extends Flags>(
  c: Command<F>,
  argv: string[],
): { values: Values<F> & { help?: boolean }; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...c.flags, ...HELP_FLAG },
      allowPositionals: true,
      strict: true,
    });
    return { values: values as Values<F> & { help?: boolean }, positionals };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const unknown = /Unknown option '([^']+)'/.exec(e.message)?.[1];
    if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown)
      throw new UsageError(
        `${c.name} has no option ${unknown}; its options are ${flagList(c)} (\`npx sluice ${c.name} --help\` says what each does)`,
      );
    throw new UsageError(`${e.message.split('\n')[0]} (\`npx sluice ${c.name} --help\` lists its options)`);
  }
}
