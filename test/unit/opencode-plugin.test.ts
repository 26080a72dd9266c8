// OpenCode's way into Sluice (client/hook/opencode-plugin.ts): the plugin `sluice hook install
// opencode` writes, loaded as OpenCode loads it and run against a stand-in for `sluice hook` that
// answers whatever a case says. Only an exit 0 with `{"decision":"allow"}` lets a call run; every
// other answer, a hook that cannot start, throws (OpenCode then runs nothing). The dialect maps
// OpenCode's tools to the names the rules use, and `sluice hook doctor opencode` finds the plugin.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { answerBody, parseHookPayload } from '../../client/hook/dialects';
import { doctor, renderFindings } from '../../client/hook/doctor';
import { hookMain } from '../../cli/hook';
import { PLUGIN_MARK, pluginPath, writePlugin } from '../../client/hook/opencode-plugin';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'hook');
const fixture = (f: string) => fs.readFileSync(path.join(FIXTURES, f), 'utf8');

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-opencode-'));
});

type Hooks = Record<string, (input: object, output: object) => Promise<void>>;

/** The plugin with `command`, loaded as OpenCode loads a file in .opencode/plugin/. */
async function loadPlugin(name: string, command: string[]): Promise<Hooks> {
  const file = path.join(dir, name, '.opencode', 'plugin', 'sluice.js');
  writePlugin(file, { command, timeoutS: 30 });
  // OpenCode's Bun reads .js as a module; node needs the .mjs name for it.
  const mjs = file.replace(/\.js$/, '.mjs');
  fs.copyFileSync(file, mjs);
  const mod = await import(pathToFileURL(mjs).href);
  return mod.Sluice({ directory: path.join(dir, name) });
}

/** A stand-in hook: prints FAKE_OUT, exits FAKE_CODE, and keeps the payload it was sent. */
const STAND_IN = ['/bin/sh', '-c', 'cat > "$FAKE_SEEN"; printf %s "$FAKE_OUT"; exit "$FAKE_CODE"'];

const before = (hooks: Hooks, command: string) =>
  hooks['tool.execute.before']({ tool: 'bash', sessionID: 'ses_1', callID: 'call_1' }, { args: { command } });

describe('the plugin', () => {
  it('lets a call run only on exit 0 with decision allow; any other answer throws (fast-check)', async () => {
    const hooks = await loadPlugin('answers', STAND_IN);
    const seen = path.join(dir, 'seen.json');
    const answer = fc.oneof(
      fc.constant('{"decision":"allow"}'),
      fc.constant('{"decision":"allow"}\n'),
      fc
        .record({ decision: fc.constantFrom('allow', 'deny', 'ask', 'Allow', ''), reason: fc.string() })
        .map((o) => JSON.stringify(o)),
      fc.string(),
      fc.jsonValue().map((v) => JSON.stringify(v)),
    );
    await fc.assert(
      fc.asyncProperty(answer, fc.constantFrom(0, 0, 1, 2, 7), async (out, code) => {
        Object.assign(process.env, { FAKE_OUT: out, FAKE_CODE: String(code), FAKE_SEEN: seen });
        let allowed: boolean;
        try {
          await before(hooks, 'npm test');
          allowed = true;
        } catch (err) {
          allowed = false;
          expect((err as Error).message).toBeTruthy();
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(out);
        } catch {
          parsed = undefined;
        }
        expect(allowed).toBe(code === 0 && (parsed as { decision?: unknown } | null)?.decision === 'allow');
        expect(JSON.parse(fs.readFileSync(seen, 'utf8'))).toMatchObject({
          hook_event_name: 'tool.execute.before',
          session_id: 'ses_1',
          tool_name: 'bash',
          tool_use_id: 'call_1',
          tool_input: { command: 'npm test' },
        });
      }),
      { numRuns: 60 },
    );
  });

  it("a deny's reason, or the hook's stderr, is the error OpenCode shows the model", async () => {
    const hooks = await loadPlugin('reasons', STAND_IN);
    Object.assign(process.env, {
      FAKE_OUT: JSON.stringify({ decision: 'deny', reason: 'Sluice: denied by Bash(rm:*)' }),
      FAKE_CODE: '0',
      FAKE_SEEN: path.join(dir, 'seen2.json'),
    });
    await expect(before(hooks, 'rm -rf /')).rejects.toThrow('Sluice: denied by Bash(rm:*)');
    const stderr = [
      process.execPath,
      '-e',
      'process.stderr.write("sluice hook: the payload is bad\\n");process.exit(2)',
    ];
    await expect(before(await loadPlugin('stderr', stderr), 'x')).rejects.toThrow(/^the payload is bad$/);
  });

  it('a hook that cannot be started refuses the call', async () => {
    const hooks = await loadPlugin('missing', [path.join(dir, 'no-such-node'), 'sluice.js', 'hook', 'opencode']);
    await expect(before(hooks, 'npm test')).rejects.toThrow(/could not start/);
  });

  it("install leaves a plugin folder file that is not Sluice's alone, and says so", () => {
    const file = path.join(dir, 'foreign', '.opencode', 'plugin', 'sluice.js');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, 'export const Mine = async () => ({})\n');
    expect(() => writePlugin(file, { command: ['node'], timeoutS: 1 })).toThrow(
      /is not Sluice's plugin: move it aside/,
    );
    expect(fs.readFileSync(file, 'utf8')).not.toContain(PLUGIN_MARK);
  });
});

describe('the opencode dialect', () => {
  it("maps OpenCode's tools and argument names to the ones the rules use; keeps names it does not know", () => {
    const bash = parseHookPayload('opencode', fixture('opencode-tool-execute-before.json'));
    expect(bash).toMatchObject({ kind: 'decide', toolName: 'Bash', toolUseId: 'call_14830_3' });
    expect(bash.toolInput).toEqual({ command: 'npm test', description: 'Run the test suite' });
    const after = parseHookPayload('opencode', fixture('opencode-tool-execute-after.json'));
    expect(after).toMatchObject({ kind: 'record', toolName: 'Bash', toolResponse: { exit: 0 } });
    const payload = (tool: string, input: object) =>
      JSON.stringify({ hook_event_name: 'tool.execute.before', session_id: 's', tool_name: tool, tool_input: input });
    const edit = parseHookPayload('opencode', payload('edit', { filePath: '.env', oldString: 'a', newString: 'b' }));
    expect(edit).toMatchObject({
      toolName: 'Edit',
      toolInput: { file_path: '.env', old_string: 'a', new_string: 'b' },
    });
    expect(parseHookPayload('opencode', payload('list', { path: '.' })).toolName).toBe('LS');
    expect(parseHookPayload('opencode', payload('github_create_issue', { title: 't' })).toolName).toBe(
      'github_create_issue',
    );
  });

  it('answers allow, or deny with the reason; an ask it cannot wait out is a deny', () => {
    const a = (decision: 'allow' | 'deny' | 'ask') =>
      answerBody('opencode', 'tool.execute.before', { decision, reason: 'why' });
    expect(a('allow')).toEqual({ decision: 'allow' });
    expect(a('deny')).toEqual({ decision: 'deny', reason: 'why' });
    expect(a('ask')).toEqual({ decision: 'deny', reason: 'why' });
  });
});

describe('install and doctor', () => {
  const io = () => {
    const out = { stdout: '', stderr: '' };
    return {
      out,
      io: {
        stdin: process.stdin,
        stdout: (s: string) => void (out.stdout += s),
        stderr: (s: string) => void (out.stderr += s),
      },
    };
  };
  const home = () => fs.mkdtempSync(path.join(dir, 'home-'));

  it('`sluice hook install opencode` writes the plugin doctor finds; no plugin, a moved node or --pure fail', async () => {
    const project = fs.mkdtempSync(path.join(dir, 'project-'));
    const h = home();
    const none = doctor('opencode', { project, home: h, env: {} });
    expect(renderFindings('opencode', none).exitCode).toBe(1);
    expect(none[0].text).toMatch(/no Sluice plugin.*sluice hook install opencode/);
    const { out, io: sink } = io();
    expect(await hookMain(['install', 'opencode', '--project', project, '--task-queue', 'q'], sink)).toBe(0);
    expect(out.stdout).toContain(pluginPath({ project }));
    const text = fs.readFileSync(pluginPath({ project }), 'utf8');
    expect(text).toContain('"--timeout","600"');
    expect(text).toContain('"--task-queue","q"');
    const ok = renderFindings('opencode', doctor('opencode', { project, home: h, env: {} }));
    expect(ok.exitCode).toBe(0);
    expect(ok.text).toMatch(/ok\s+tool\.execute\.before runs sluice hook opencode/);
    expect(ok.text).toMatch(/--pure/);
    const pure = doctor('opencode', { project, home: h, env: { OPENCODE_PURE: '1' } });
    expect(pure.some((f) => f.level === 'fail' && /OPENCODE_PURE/.test(f.text))).toBe(true);
    fs.writeFileSync(pluginPath({ project }), text.replace(process.execPath, path.join(dir, 'gone', 'node')));
    const moved = doctor('opencode', { project, home: h, env: {} });
    expect(moved.some((f) => f.level === 'fail' && /which is not there/.test(f.text))).toBe(true);
  });

  it("--global writes to the person's plugin folder; install names only opencode", async () => {
    const h = home();
    const env = process.env.XDG_CONFIG_HOME;
    process.env.XDG_CONFIG_HOME = path.join(h, '.config');
    try {
      const { io: sink } = io();
      expect(await hookMain(['install', 'opencode', '--global'], sink)).toBe(0);
      expect(fs.existsSync(path.join(h, '.config', 'opencode', 'plugin', 'sluice.js'))).toBe(true);
      const project = fs.mkdtempSync(path.join(dir, 'elsewhere-'));
      expect(doctor('opencode', { project, home: h, env: process.env }).every((f) => f.level === 'ok')).toBe(true);
    } finally {
      if (env === undefined) delete process.env.XDG_CONFIG_HOME;
      else process.env.XDG_CONFIG_HOME = env;
    }
    const { out, io: sink } = io();
    expect(await hookMain(['install', 'claude'], sink)).toBe(2);
    expect(out.stderr).toMatch(/only `opencode` has a plugin to install/);
  });
});
