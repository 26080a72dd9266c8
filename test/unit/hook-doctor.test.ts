// `sluice hook doctor`, pure file reading: for each harness, a set-up whose hook runs, and each
// condition under which the harness silently skips it (no deciding hook line, an untrusted
// project, hooks turned off), said plainly with exit 1. Also what identifies a call: Codex's
// PermissionRequest `description` is not part of it, any other tool's `description` is.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { callInput, parseHookPayload } from '../../client/hook/dialects';
import type { JsonObject } from '../../pipeline/types';
import { type DoctorOptions, doctor, renderFindings } from '../../client/hook/doctor';
import { hookMain } from '../../cli/hook';

let o: DoctorOptions;

beforeEach(() => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hook-doctor-'));
  o = { project: path.join(root, 'project'), home: path.join(root, 'home') };
  fs.mkdirSync(o.project, { recursive: true });
  fs.mkdirSync(o.home, { recursive: true });
});

const line = (command: string) => [{ matcher: '*', hooks: [{ type: 'command', command }] }];
function write(file: string, doc: unknown) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, typeof doc === 'string' ? doc : JSON.stringify(doc));
}
const verdict = (d: 'claude' | 'codex' | 'gemini') => renderFindings(d, doctor(d, o));

describe('Claude Code', () => {
  const hooks = {
    PreToolUse: line('npx sluice hook claude --task-queue harness'),
    PermissionRequest: line('npx sluice hook claude --task-queue harness'),
    PostToolUse: line('npx sluice hook claude'),
    PostToolUseFailure: line('npx sluice hook claude'),
  };

  it('user settings with every event: the hook runs (exit 0), nothing to warn about', () => {
    write(path.join(o.home, '.claude', 'settings.json'), { hooks });
    const v = verdict('claude');
    expect(v.exitCode).toBe(0);
    expect(v.text).not.toMatch(/warn|FAIL/);
  });

  it('no PreToolUse line, or disableAllHooks: FAIL, exit 1', () => {
    write(path.join(o.home, '.claude', 'settings.json'), { hooks: { PostToolUse: hooks.PostToolUse } });
    expect(verdict('claude')).toMatchObject({ exitCode: 1, text: expect.stringMatching(/no PreToolUse hook/) });
    write(path.join(o.home, '.claude', 'settings.json'), { hooks, disableAllHooks: true });
    expect(verdict('claude')).toMatchObject({ exitCode: 1, text: expect.stringMatching(/disableAllHooks/) });
  });

  it("project hooks: the project's trust in ~/.claude.json is reported", () => {
    write(path.join(o.project, '.claude', 'settings.json'), { hooks });
    expect(verdict('claude').text).toMatch(/has not been trusted/);
    write(path.join(o.home, '.claude.json'), { projects: { [o.project]: { hasTrustDialogAccepted: true } } });
    expect(verdict('claude').text).toMatch(/is trusted/);
  });

  it("another harness's dialect is not Claude Code's hook", () => {
    write(path.join(o.home, '.claude', 'settings.json'), { hooks: { PreToolUse: line('npx sluice hook codex') } });
    expect(verdict('claude').exitCode).toBe(1);
  });
});

describe('Codex', () => {
  const hooks = {
    PreToolUse: line('npx sluice hook codex --task-queue harness'),
    PermissionRequest: line('curl -sSf --data-binary @- http://127.0.0.1:8788/codex || exit 2'),
    PostToolUse: line('npx sluice hook codex'),
  };

  it("a project's hooks in an untrusted project: FAIL; trusted: the review it cannot check is said", () => {
    write(path.join(o.project, '.codex', 'hooks.json'), { hooks });
    const untrusted = verdict('codex');
    expect(untrusted.exitCode).toBe(1);
    expect(untrusted.text).toMatch(/not trusted/);
    write(path.join(o.home, '.codex', 'config.toml'), `[projects."${o.project}"]\ntrust_level = "trusted"\n`);
    const trusted = verdict('codex');
    expect(trusted.exitCode).toBe(0);
    expect(trusted.text).toMatch(/\/hooks/);
    expect(trusted.text).toMatch(/cannot compare/);
  });

  it('CODEX_HOME is where the user hooks are', () => {
    o.codexHome = path.join(o.home, 'elsewhere');
    write(path.join(o.home, '.codex', 'hooks.json'), { hooks });
    expect(verdict('codex').exitCode).toBe(1);
    write(path.join(o.codexHome, 'hooks.json'), { hooks });
    expect(verdict('codex').exitCode).toBe(0);
  });
});

describe('Gemini CLI', () => {
  const hooks = { BeforeTool: line('npx sluice hook gemini'), AfterTool: line('npx sluice hook gemini') };

  it('project settings in an untrusted folder: FAIL; trusted (or its parent): runs; hooksConfig off: FAIL', () => {
    write(path.join(o.project, '.gemini', 'settings.json'), { hooks });
    expect(verdict('gemini')).toMatchObject({ exitCode: 1, text: expect.stringMatching(/not in .*trustedFolders/) });
    write(path.join(o.home, '.gemini', 'trustedFolders.json'), { [path.join(o.project, 'x')]: 'TRUST_PARENT' });
    expect(verdict('gemini').exitCode).toBe(0);
    write(path.join(o.home, '.gemini', 'settings.json'), { hooksConfig: { enabled: false } });
    expect(verdict('gemini')).toMatchObject({ exitCode: 1, text: expect.stringMatching(/hooksConfig/) });
  });

  it('no AfterTool: a warning that identical calls within 30 s share a decision', () => {
    write(path.join(o.home, '.gemini', 'settings.json'), { hooks: { BeforeTool: hooks.BeforeTool } });
    const v = verdict('gemini');
    expect(v.exitCode).toBe(0);
    expect(v.text).toMatch(/no AfterTool hook.*shares its decision/);
  });
});

it('the command: `sluice hook doctor` with no harness is a usage error naming the harnesses', async () => {
  let err = '';
  const code = await hookMain(['doctor'], {
    stdin: process.stdin,
    stdout: () => undefined,
    stderr: (s) => {
      err += s;
    },
  });
  expect(code).toBe(2);
  expect(err).toMatch(/sluice hook doctor claude/);
});

describe('what identifies a call', () => {
  it("Codex's Bash: `description` is left out, the rest kept; other tools and harnesses keep it", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.string(),
        fc.constantFrom('claude', 'gemini') as fc.Arbitrary<'claude' | 'gemini'>,
        (rest, description, other) => {
          const input = { ...rest, description } as JsonObject;
          const { description: _d, ...without } = input;
          expect(callInput('codex', 'Bash', input)).toEqual(without);
          expect(callInput('codex', 'mcp__github__create_issue', input)).toEqual(input);
          expect(callInput(other, 'Bash', input)).toEqual(input);
        },
      ),
    );
  });

  it("Codex's PermissionRequest and PreToolUse for one command read as the same input", () => {
    const base = { session_id: 's', tool_name: 'Bash', tool_input: { command: 'git push' } };
    const pre = parseHookPayload(
      'codex',
      JSON.stringify({ ...base, hook_event_name: 'PreToolUse', tool_use_id: 'c1' }),
    );
    const perm = parseHookPayload(
      'codex',
      JSON.stringify({
        ...base,
        hook_event_name: 'PermissionRequest',
        tool_input: { command: 'git push', description: 'push it' },
      }),
    );
    expect(perm.toolInput).toEqual(pre.toolInput);
  });
});
