// A misspelt key in the harness settings Sluice reads must not drop rules or hooks in silence
// (hooks/settings-keys.ts): `{"permissions": {"Deny": [...]}}` once loaded with a warning and
// `rm -rf /srv/data` matched nothing. Now such a file stops the worker with the file, the key and
// the key it was meant to be; the keys Claude Code knows and other tools' settings still load.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { permissionRules } from '../../hooks/permissions';
import { loadHooks } from '../../hooks/settings';
import { CLAUDE_PERMISSION_KEYS, nearestKey } from '../../hooks/settings-keys';
import { shellParserReady } from '../../hooks/shell';

let ws: string;
function settings(doc: object, file = '.claude/settings.json'): string {
  fs.rmSync(path.join(ws, '.claude'), { recursive: true, force: true });
  fs.rmSync(path.join(ws, '.codex'), { recursive: true, force: true });
  fs.rmSync(path.join(ws, '.gemini'), { recursive: true, force: true });
  fs.mkdirSync(path.dirname(path.join(ws, file)), { recursive: true });
  fs.writeFileSync(path.join(ws, file), JSON.stringify(doc));
  return file;
}
const rules = () => permissionRules({ workspace: ws, home: ws });
const bash = (command: string) => ({ toolName: 'bash', aliases: ['Bash'], args: { command } });
const hook = { hooks: [{ type: 'command', command: 'exit 0' }] };

beforeAll(async () => {
  ws = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-keys-'));
  await shellParserReady();
});

describe('Claude Code permissions', () => {
  it('"Deny" stops the worker naming the file, the key and "deny"; spelt right, rm -rf is denied', () => {
    settings({ permissions: { Deny: ['Bash(rm:*)'] } });
    expect(rules).toThrow(/\.claude\/settings\.json: permissions has the key "Deny".*did you mean deny\?/);
    settings({ permissions: { deny: ['Bash(rm:*)'] } });
    expect(rules().evaluate(bash('rm -rf /srv/data')).kind).toBe('deny');
  });

  it('every misspelling of a permissions key stops the worker; the keys Claude Code knows load', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 24 }), (key) => {
        fc.pre(!(CLAUDE_PERMISSION_KEYS as readonly string[]).includes(key));
        settings({ permissions: { [key]: ['Bash(rm:*)'] } });
        expect(rules).toThrow(/permissions has the key/);
      }),
      { numRuns: 60 },
    );
    settings({
      permissions: {
        deny: [],
        additionalDirectories: ['../x'],
        defaultMode: 'plan',
        disableBypassPermissionsMode: 'disable',
      },
    });
    expect(rules().warnings).toHaveLength(3);
  });

  it('a misspelt "permissions" stops the worker; other settings beside it do not', () => {
    for (const key of ['Permissions', 'permission', 'permisions', 'PERMISSIONS'])
      expect(() => {
        settings({ [key]: { deny: ['Bash(rm:*)'] } });
        rules();
      }).toThrow(new RegExp(`the top level has the key "${key}".*did you mean permissions\\?`));
    settings({ env: {}, model: 'x', statusLine: {}, permissions: { deny: ['Bash(rm:*)'] } });
    expect(rules().rules).toHaveLength(1);
  });
});

describe('hook settings', () => {
  it('a misspelt "hooks" or gated event stops the worker; other harness events are read past', () => {
    settings({ Hooks: { PreToolUse: [hook] } });
    expect(() => loadHooks(ws)).toThrow(/the top level has the key "Hooks".*did you mean hooks\?/);
    settings({ hooks: { preToolUse: [hook] } });
    expect(() => loadHooks(ws)).toThrow(/hooks has the key "preToolUse".*did you mean PreToolUse\?/);
    settings({ hooks: { PreToolUse: [hook], SessionStart: [hook], PermissionRequest: [hook] } });
    const loaded = loadHooks(ws);
    expect(loaded.hooks).toHaveLength(1);
    expect(loaded.warnings).toHaveLength(2);
    settings({ hooks: { BeforeTol: [hook] } }, '.gemini/settings.json');
    expect(() => loadHooks(ws)).toThrow(/did you mean BeforeTool\?/);
    settings({ hooks: { BeforeTool: [hook], BeforeToolSelection: [hook], enabled: true } }, '.gemini/settings.json');
    expect(loadHooks(ws).hooks).toHaveLength(1);
  });

  it('the nearest known key, only when it is near', () => {
    expect(nearestKey('Deny', CLAUDE_PERMISSION_KEYS)).toBe('deny');
    expect(nearestKey('alow', CLAUDE_PERMISSION_KEYS)).toBe('allow');
    expect(nearestKey('default_mode', CLAUDE_PERMISSION_KEYS)).toBe('defaultMode');
    expect(nearestKey('zzzzzzzzzzzz', CLAUDE_PERMISSION_KEYS)).toBeUndefined();
  });
});
