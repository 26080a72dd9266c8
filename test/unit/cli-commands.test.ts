// The command line's table of commands: each command parses only its own flags, says which it
// has when given another, and its help (`sluice help <command>`, `sluice <command> --help`) lists
// every flag it takes and names no flag it does not. No server: nothing here gets past parsing.
import { describe, expect, it } from 'vitest';
import { COMMAND_HELP, COMMANDS, HELP } from '../../cli';
import { type Command, isRaw, parseCommand } from '../../cli/command';
import { runCli as cli } from '../run-cli';

const parsed = COMMANDS.filter((c): c is Command => !isRaw(c));

describe('the CLI, a command per file', () => {
  it('lists every command in `sluice --help`, each under its own name', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    expect(r.output).toBe(HELP);
    for (const c of COMMANDS) expect(HELP).toMatch(new RegExp(`\\n  ${c.synopsis.replace(/[|.<>]/g, '\\$&')} `));
    expect(new Set(COMMANDS.map((c) => c.name)).size).toBe(COMMANDS.length);
    // No command: the list, and a usage exit code.
    expect((await cli([])).code).toBe(2);
  });

  it("`sluice help <command>` and `sluice <command> --help` print that command's own help", async () => {
    for (const c of COMMANDS) {
      const viaHelp = await cli(['help', c.name]);
      const viaFlag = await cli([c.name, '--help']);
      expect(viaHelp, c.name).toEqual({ code: 0, output: c.help });
      expect(viaFlag.code, c.name).toBe(0);
      expect(viaFlag.output, c.name).toBe(c.help);
      expect(c.help, c.name).not.toBe(HELP);
      expect(COMMAND_HELP[c.name]).toBe(c.help);
    }
    expect((await cli(['approve', '-h'])).output).toBe(COMMAND_HELP.approve);
  });

  it('a help lists every flag its command takes, and names no flag the command would refuse', () => {
    for (const c of parsed) {
      const takes = new Set([...Object.keys(c.flags), 'help']);
      for (const flag of Object.keys(c.flags))
        expect(c.help, `${c.name} --help lists --${flag}`).toContain(`--${flag}`);
      // `--port + 1000` and `npx sluice approvals --json` are flags too: of this command, or of
      // the command the help points to by name.
      for (const m of c.help.matchAll(/(?:npx sluice ([a-z-]+)[^\n`]*?)?--([a-z][a-z-]*)/g)) {
        const owner = m[1] && m[1] !== c.name ? parsed.find((o) => o.name === m[1]) : c;
        if (!owner) continue;
        const flags = owner === c ? takes : new Set([...Object.keys(owner.flags), 'help']);
        expect(flags.has(m[2]), `${c.name}'s help names --${m[2]}`).toBe(true);
      }
    }
  });

  it('parses each command by its own table: values typed, positionals after the name', () => {
    const approve = parsed.find((c) => c.name === 'approve')!;
    expect(
      parseCommand(approve, [
        'ap-1',
        '--by',
        'ana',
        '--pin',
        'a^=b',
        '--pin',
        'c=1',
        '--signal',
        '--wait-timeout',
        '5',
      ]),
    ).toEqual({
      values: { by: 'ana', pin: ['a^=b', 'c=1'], signal: true, 'wait-timeout': '5' },
      positionals: ['ap-1'],
    });
    const exp = parsed.find((c) => c.name === 'export')!;
    expect(parseCommand(exp, ['wf', '-o', 'h.json']).values).toEqual({ out: 'h.json' });
  });

  it("refuses a flag the command does not take, naming the command's flags; exit code 2", async () => {
    // --by is approve's, not approvals'; --follow is events', not audit's.
    const r = await cli(['approvals', '--by', 'ana']);
    expect(r.code).toBe(2);
    expect(r.output).toMatch(/^sluice approvals: approvals has no option --by; its options are --session, --json, /);
    expect(r.output).toContain('--task-queue');
    expect(r.output).toContain('`npx sluice approvals --help`');
    const audit = await cli(['audit', 'wf-1', '--follow']);
    expect(audit.code).toBe(2);
    expect(audit.output).toContain('audit has no option --follow');
    // A value missing is a usage error too, pointing to the command's help.
    const missing = await cli(['reconcile', 'rc-1', '--evidence']);
    expect(missing.code).toBe(2);
    expect(missing.output).toMatch(/--evidence.*argument missing.*npx sluice reconcile --help/);
  });

  it('an unknown command, or options before the command, is a usage error saying what to run', async () => {
    const r = await cli(['aprove', 'x']);
    expect(r).toEqual({ code: 2, output: expect.stringContaining('unknown command "aprove"') });
    const first = await cli(['--address', 'localhost:7233', 'approvals']);
    expect(first.code).toBe(2);
    expect(first.output).toContain('the command comes first');
  });
});
