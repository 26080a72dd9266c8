// The pure parts of command hooks (matchers, settings, output parsing, merging) and the runner.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hookInput, interpretRun, parseHookStdout, type HookVerdict } from '../hooks/dialects';
import { compileMatcher, matchesAny } from '../hooks/matcher';
import { mergePost, mergePre } from '../hooks/merge';
import { runHookCommand, type HookRun } from '../hooks/run';
import { dialectOf, loadHooks, MAX_TIMEOUT_SEC, parseHookFile, type LoadedHooks } from '../hooks/settings';

describe('matcher', () => {
  const m = (matcher: string | undefined, ...names: string[]) => matchesAny(compileMatcher(matcher), names);

  it('empty, missing and * match every tool', () => {
    expect(m(undefined, 'anything')).toBe(true);
    expect(m('', 'anything')).toBe(true);
    expect(m('*', 'anything')).toBe(true);
  });

  it('letters, digits, _ and | are exact alternatives', () => {
    expect(compileMatcher('Edit|Write')).toEqual({ kind: 'names', names: ['Edit', 'Write'] });
    expect(m('Edit|Write', 'Write')).toBe(true);
    expect(m('Edit|Write', 'TodoWrite')).toBe(false);
    expect(m('Write', 'write')).toBe(false);
    expect(m('mcp__memory', 'mcp__memory__create')).toBe(false);
  });

  it('anything else is an unanchored regex', () => {
    expect(compileMatcher('Notebook.*').kind).toBe('regex');
    expect(m('Write.*', 'TodoWrite')).toBe(true);
    expect(m('^Bash$', 'BashOutput')).toBe(false);
    expect(m('^Bash', 'BashOutput')).toBe(true);
    expect(m('mcp__.*__write', 'mcp__fs__write_file')).toBe(true);
  });

  it('matches when any of the names a call goes by is selected', () => {
    expect(m('Write', 'write', 'write', 'Write')).toBe(true);
    expect(m('Read', 'write', 'Write')).toBe(false);
  });

  it('an invalid regex is an error that says what to write instead', () => {
    expect(() => compileMatcher('Edit(')).toThrow(/not a valid regular expression.*"\*" for every tool/);
  });
});

describe('hook output', () => {
  const pre = (stdout: string) => parseHookStdout(stdout, 'PreToolUse', 'h1');
  const post = (stdout: string) => parseHookStdout(stdout, 'PostToolUse', 'h1');
  const json = (v: object) => JSON.stringify(v);

  it('empty stdout and plain text decide nothing; plain text is noted', () => {
    expect(pre('')).toEqual({ decision: 'none', warnings: [] });
    expect(pre('all good\n')).toMatchObject({
      decision: 'none',
      warnings: [expect.stringMatching(/not JSON.*all good/)],
    });
    expect(pre('[1, 2]')).toMatchObject({ decision: 'none', warnings: [expect.stringMatching(/not an object/)] });
  });

  it('broken JSON is a non-blocking error', () => {
    expect(pre('{"hookSpecificOutput": {')).toMatchObject({
      decision: 'error',
      error: expect.stringMatching(/looks like JSON/),
    });
  });

  it('reads permissionDecision allow, deny and ask with their reasons', () => {
    expect(
      pre(json({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'allow' } })),
    ).toMatchObject({ decision: 'allow' });
    expect(
      pre(
        json({
          hookSpecificOutput: {
            hookEventName: 'PreToolUse',
            permissionDecision: 'deny',
            permissionDecisionReason: 'no',
          },
        }),
      ),
    ).toMatchObject({ decision: 'deny', reason: 'no' });
    expect(
      pre(json({ hookSpecificOutput: { permissionDecision: 'ask', permissionDecisionReason: 'look' } })),
    ).toMatchObject({ decision: 'ask', reason: 'look' });
  });

  it('a deny without a reason still denies, with a reason naming the hook', () => {
    expect(pre(json({ hookSpecificOutput: { permissionDecision: 'deny' } }))).toMatchObject({
      decision: 'deny',
      reason: 'the PreToolUse hook h1 denied the call',
    });
  });

  it('reads the legacy decision approve/block; permissionDecision wins over it', () => {
    expect(pre(json({ decision: 'approve' }))).toMatchObject({ decision: 'allow' });
    expect(pre(json({ decision: 'block', reason: 'legacy' }))).toMatchObject({ decision: 'deny', reason: 'legacy' });
    expect(pre(json({ decision: 'block', hookSpecificOutput: { permissionDecision: 'ask' } }))).toMatchObject({
      decision: 'ask',
    });
  });

  it('drops the hook-specific fields of another event', () => {
    const v = pre(
      json({
        hookSpecificOutput: { hookEventName: 'PostToolUse', permissionDecision: 'deny', additionalContext: 'x' },
      }),
    );
    expect(v.decision).toBe('none');
    expect(v.context).toBeUndefined();
    expect(v.warnings[0]).toMatch(/"PostToolUse", but the hook ran for PreToolUse/);
  });

  it('ignores updatedInput with a warning, keeping the decision', () => {
    const v = pre(json({ hookSpecificOutput: { permissionDecision: 'allow', updatedInput: { command: 'rm -rf /' } } }));
    expect(v.decision).toBe('allow');
    expect(v.warnings).toEqual([expect.stringMatching(/updatedInput was ignored/)]);
  });

  it('unknown decisions are ignored with a warning', () => {
    expect(pre(json({ hookSpecificOutput: { permissionDecision: 'defer' } }))).toMatchObject({
      decision: 'none',
      warnings: [expect.stringMatching(/"defer"/)],
    });
  });

  it('continue:false denies a pre call (fail closed) and is only noted after one', () => {
    expect(pre(json({ continue: false, stopReason: 'stop now' }))).toMatchObject({
      decision: 'deny',
      reason: 'stop now',
    });
    expect(post(json({ continue: false }))).toMatchObject({
      decision: 'none',
      warnings: [expect.stringMatching(/continue:false/)],
    });
  });

  it('reads additionalContext and systemMessage', () => {
    const v = post(
      json({
        systemMessage: 'formatted',
        hookSpecificOutput: { hookEventName: 'PostToolUse', additionalContext: 'ran prettier' },
      }),
    );
    expect(v).toMatchObject({ decision: 'none', context: 'ran prettier', systemMessage: 'formatted' });
  });

  it('post: decision block blocks with its reason; output rewrites are ignored', () => {
    expect(post(json({ decision: 'block', reason: 'leaked a key' }))).toMatchObject({
      decision: 'block',
      reason: 'leaked a key',
    });
    expect(post(json({ decision: 'block' }))).toMatchObject({
      decision: 'block',
      reason: 'the PostToolUse hook h1 blocked the result',
    });
    expect(post(json({ hookSpecificOutput: { updatedMCPToolOutput: 'x' } })).warnings[0]).toMatch(
      /updatedMCPToolOutput was ignored/,
    );
  });
});

describe('exit status', () => {
  const run = (r: Partial<HookRun>): HookRun => ({
    exitCode: 0,
    signal: null,
    stdout: '',
    stderr: '',
    durationMs: 1,
    timedOut: false,
    ...r,
  });
  const hook = { id: 'h1', event: 'PreToolUse' as const, timeoutSec: 5 };

  it('exit 2 blocks with stderr, even past JSON on stdout', () => {
    expect(interpretRun(run({ exitCode: 2, stderr: 'nope\n', stdout: '{"decision":"approve"}' }), hook)).toMatchObject({
      decision: 'deny',
      reason: 'nope',
    });
    expect(interpretRun(run({ exitCode: 2 }), { ...hook, event: 'PostToolUse' })).toMatchObject({
      decision: 'block',
      reason: expect.stringMatching(/without giving a reason/),
    });
  });

  it('other exits, signals, timeouts and failed starts are non-blocking errors', () => {
    expect(interpretRun(run({ exitCode: 1, stdout: '{"decision":"block"}' }), hook)).toMatchObject({
      decision: 'error',
      error: expect.stringMatching(/code 1/),
    });
    expect(interpretRun(run({ exitCode: null, signal: 'SIGSEGV' }), hook)).toMatchObject({
      decision: 'error',
      error: expect.stringMatching(/SIGSEGV/),
    });
    expect(interpretRun(run({ exitCode: null, timedOut: true }), hook)).toMatchObject({
      decision: 'error',
      error: expect.stringMatching(/5s timeout/),
    });
    expect(interpretRun(run({ exitCode: null, spawnError: 'spawn ENOENT' }), hook)).toMatchObject({
      decision: 'error',
      error: expect.stringMatching(/could not be started/),
    });
  });
});

describe('merge', () => {
  const v = (decision: HookVerdict['decision'], reason?: string): HookVerdict => ({
    decision,
    warnings: [],
    ...(reason ? { reason } : {}),
  });

  it('deny > ask > allow, reasons in config order', () => {
    expect(mergePre([v('allow'), v('ask', 'a'), v('deny', 'd1'), v('deny', 'd2')])).toEqual({
      kind: 'deny',
      reason: 'd1; d2',
    });
    expect(mergePre([v('allow'), v('ask', 'a1'), v('error'), v('ask', 'a2')])).toEqual({
      kind: 'ask',
      reason: 'a1; a2',
    });
    expect(mergePre([v('ask')])).toEqual({ kind: 'ask' });
    expect(mergePre([v('none'), v('allow')])).toEqual({ kind: 'allow' });
    expect(mergePre([v('none'), v('error')])).toBeUndefined();
  });

  it('any block blocks', () => {
    expect(mergePost([v('none'), v('block', 'b1'), v('block', 'b2')])).toEqual({ action: 'block', feedback: 'b1\nb2' });
    expect(mergePost([v('none'), v('error')])).toBeUndefined();
  });
});

describe('stdin', () => {
  const base = {
    sessionId: 's1',
    turn: 3,
    cwd: '/ws',
    toolName: 'Write',
    toolInput: { file_path: 'a' },
    toolUseId: 'c1',
  };

  it('gives Claude Code fields, and Codex its turn_id', () => {
    expect(hookInput({ ...base, dialect: 'claude', event: 'PreToolUse' })).toEqual({
      session_id: 's1',
      transcript_path: null,
      cwd: '/ws',
      permission_mode: 'default',
      hook_event_name: 'PreToolUse',
      tool_name: 'Write',
      tool_input: { file_path: 'a' },
      tool_use_id: 'c1',
    });
    expect(hookInput({ ...base, dialect: 'codex', event: 'PreToolUse', transcriptPath: '/log' })).toMatchObject({
      turn_id: '3',
      transcript_path: '/log',
    });
  });

  it('gives post hooks the response: the value when there is one, else the text', () => {
    expect(
      hookInput({
        ...base,
        dialect: 'claude',
        event: 'PostToolUse',
        result: { content: [{ type: 'text', text: 'ok' }], value: { n: 1 }, isError: false },
      }).tool_response,
    ).toEqual({ n: 1 });
    expect(
      hookInput({
        ...base,
        dialect: 'claude',
        event: 'PostToolUse',
        result: { content: [{ type: 'text', text: 'ok' }], isError: false },
      }).tool_response,
    ).toBe('ok');
    expect(
      hookInput({
        ...base,
        dialect: 'claude',
        event: 'PostToolUseFailure',
        result: { content: [], isError: true, error: { message: 'boom' } },
      }).error,
    ).toBe('boom');
  });
});

describe('settings', () => {
  const parse = (doc: object, dialect: 'claude' | 'codex' = 'claude') => {
    const out: LoadedHooks = { hooks: [], sources: [], warnings: [] };
    parseHookFile(
      JSON.stringify(doc),
      { label: 'settings.json', path: '/p/settings.json', dialect, digest: 'sha256:x' },
      out,
    );
    return out;
  };

  it('reads groups and handlers with ids, matchers and timeouts', () => {
    const out = parse({
      hooks: {
        PreToolUse: [
          {
            matcher: 'Bash',
            hooks: [
              { type: 'command', command: 'a', timeout: 30 },
              { type: 'command', command: 'b' },
            ],
          },
        ],
        PostToolUse: [{ hooks: [{ type: 'command', command: 'c' }] }],
      },
    });
    expect(out.hooks.map(({ id, matcher, command, timeoutSec }) => ({ id, matcher, command, timeoutSec }))).toEqual([
      { id: 'settings.json:PreToolUse:0:0', matcher: 'Bash', command: 'a', timeoutSec: 30 },
      { id: 'settings.json:PreToolUse:0:1', matcher: 'Bash', command: 'b', timeoutSec: 60 },
      { id: 'settings.json:PostToolUse:0:0', matcher: undefined, command: 'c', timeoutSec: 60 },
    ]);
    expect(out.warnings).toEqual([]);
  });

  it('reads Codex timeoutSec, and warns about events Sluice has no point for', () => {
    const out = parse(
      {
        hooks: {
          PreToolUse: [{ hooks: [{ type: 'command', command: 'a', timeoutSec: 7, statusMessage: 'checking' }] }],
          Stop: [],
          PostToolUseFailure: [],
        },
      },
      'codex',
    );
    expect(out.hooks[0]).toMatchObject({ dialect: 'codex', timeoutSec: 7 });
    expect(out.warnings).toEqual([
      expect.stringMatching(/Stop hooks are ignored/),
      expect.stringMatching(/PostToolUseFailure hooks are ignored/),
    ]);
  });

  it('caps long timeouts below the stage timeout, skips async hooks, notes unsupported fields', () => {
    const out = parse({
      hooks: {
        PreToolUse: [
          {
            hooks: [
              { type: 'command', command: 'a', timeout: 600, if: 'Bash(rm *)' },
              { type: 'command', command: 'b', async: true },
            ],
          },
        ],
      },
    });
    expect(out.hooks).toHaveLength(1);
    expect(out.hooks[0].timeoutSec).toBe(MAX_TIMEOUT_SEC);
    expect(out.warnings.join('\n')).toMatch(/"if" is not supported[\s\S]*capped at 100s[\s\S]*async hooks cannot gate/);
  });

  it('refuses what would silently weaken a gate', () => {
    expect(() => parse({ hooks: { PreToolUse: [{ hooks: [{ type: 'http', url: 'http://x' }] }] } })).toThrow(
      /type "http"; Sluice runs only "command" hooks/,
    );
    expect(() => parse({ hooks: { PreToolUse: [{ matcher: '(', hooks: [] }] } })).toThrow(
      /hooks.PreToolUse\[0\]: matcher "\(" is not a valid regular expression/,
    );
    expect(() => parse({ hooks: { PreToolUse: [{ hooks: [{ type: 'command', command: ' ' }] }] } })).toThrow(
      /non-empty "command"/,
    );
    expect(() => parse({ hooks: { PreToolUse: {} } })).toThrow(/must be an array/);
    expect(() =>
      parse({ hooks: { PreToolUse: [{ hooks: [{ type: 'command', command: 'a', timeout: -1 }] }] } }),
    ).toThrow(/positive number of seconds/);
    const out: LoadedHooks = { hooks: [], sources: [], warnings: [] };
    const file = { label: 'settings.json', path: '/p/settings.json', dialect: 'claude' as const, digest: 'sha256:x' };
    expect(() => parseHookFile('{"hooks": ', file, out)).toThrow(/settings.json are not valid JSON/);
  });

  it('skips missing default files, but not a missing file it was asked for', () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-hooks-'));
    expect(loadHooks(ws)).toEqual({ hooks: [], sources: [], warnings: [] });
    expect(() => loadHooks(ws, ['custom-hooks.json'])).toThrow(/cannot read hook settings .*custom-hooks.json/);
  });

  it('guesses the dialect from the path', () => {
    expect(dialectOf({ path: '.codex/hooks.json' })).toBe('codex');
    expect(dialectOf({ path: 'policy/hooks.json' })).toBe('codex');
    expect(dialectOf({ path: '.claude/settings.json' })).toBe('claude');
    expect(dialectOf({ path: 'hooks.json', dialect: 'claude' })).toBe('claude');
  });
});

describe('runner', () => {
  const opts = { cwd: os.tmpdir(), env: process.env, timeoutMs: 10_000 };

  it('passes stdin and collects stdout, stderr and the exit code', async () => {
    const r = await runHookCommand('read line; echo "got $line"; echo oops >&2; exit 3', { ...opts, stdin: 'hello\n' });
    expect(r).toMatchObject({ exitCode: 3, signal: null, stdout: 'got hello\n', stderr: 'oops\n', timedOut: false });
  });

  it('reports a command that cannot start', async () => {
    const r = await runHookCommand('true', {
      ...opts,
      cwd: path.join(os.tmpdir(), 'no-such-dir-for-sluice-hooks'),
      stdin: '',
    });
    expect(r.exitCode).toBeNull();
    expect(r.spawnError).toMatch(/ENOENT/);
  });

  it("does not run the user's ~/.bashrc (bash reads it for a top-level shell whose stdin is a socket, as Node's pipes are)", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-hook-home-'));
    const marker = path.join(home, 'bashrc-ran');
    fs.writeFileSync(path.join(home, '.bashrc'), `echo ran > ${JSON.stringify(marker)}\n`);
    // The hook environment as hookEnv builds it: an allowlist, so no SHLVL from a parent shell.
    const r = await runHookCommand('echo ok', { ...opts, env: { PATH: process.env.PATH, HOME: home }, stdin: '{}' });
    expect(r).toMatchObject({ exitCode: 0, stdout: 'ok\n' });
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('survives a hook that never reads a large stdin', async () => {
    const r = await runHookCommand('exit 0', { ...opts, stdin: 'x'.repeat(4 << 20) });
    expect(r.exitCode).toBe(0);
  });
});
