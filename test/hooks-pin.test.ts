// Issue 10 item 1, hooks side: hooks run with a scrubbed environment (secrets planted in the
// worker's environment never reach them), settings are read once with their digest recorded, and
// a hook script rewritten while the worker runs is refused, not run.
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { z } from 'zod';
import { commandHooks, type CommandHooks } from '../hooks';
import type { BatchOutput, SessionEvent } from '../pipeline/types';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';

const PLANTED: Record<string, string> = {
  SLUICE_CODEC_KEYS: 'k1:planted-codec-key-0123456789',
  ANTHROPIC_API_KEY: 'sk-ant-planted-secret',
  OPENAI_API_KEY: 'sk-planted-openai',
  DATABASE_URL: 'postgres://user:planted-password@db/sluice',
  PROBE_PASS_ME: 'passed-on-purpose',
};
const GUARD = '#!/usr/bin/env bash\necho "the guard says no" >&2\nexit 2\n';

let workspace: string;
let outDir: string;
let h: Harness;
let hooks: CommandHooks;
const saved: Record<string, string | undefined> = {};
const settingsFile = () => path.join(workspace, '.claude', 'settings.json');
const guardFile = () => path.join(workspace, '.claude', 'hooks', 'guard.sh');
const sha = (b: string | Buffer) => `sha256:${crypto.createHash('sha256').update(b).digest('hex')}`;

beforeAll(async () => {
  for (const [k, v] of Object.entries(PLANTED)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  workspace = fs.mkdtempSync(path.join(inject('runDir'), 'hooks-pin-ws-'));
  outDir = fs.mkdtempSync(path.join(inject('runDir'), 'hooks-pin-out-'));
  fs.mkdirSync(path.join(workspace, '.claude', 'hooks'), { recursive: true });
  fs.writeFileSync(guardFile(), GUARD, { mode: 0o755 });
  fs.writeFileSync(
    path.join(workspace, '.claude', 'hooks', 'print-env.sh'),
    `#!/usr/bin/env bash\nenv > ${JSON.stringify(path.join(outDir, 'env.txt'))}\n`,
    { mode: 0o755 },
  );
  fs.writeFileSync(
    settingsFile(),
    JSON.stringify({
      hooks: {
        PreToolUse: [
          {
            matcher: 't_guard',
            hooks: [{ type: 'command', command: 'bash "$CLAUDE_PROJECT_DIR/.claude/hooks/guard.sh"' }],
          },
          {
            matcher: 't_env',
            hooks: [{ type: 'command', command: '"$CLAUDE_PROJECT_DIR"/.claude/hooks/print-env.sh' }],
          },
        ],
      },
    }),
  );
  hooks = commandHooks({ workspace, env: { pass: ['PROBE_PASS_ME'] } });
  const probe = (name: string) =>
    defineTool({
      name,
      description: `fixture ${name}`,
      input: z.object({}),
      execute: () => {
        fs.writeFileSync(path.join(outDir, `${name}.ran`), 'x');
        return `${name} ran`;
      },
    });
  h = await startHarness(
    'hooks-pin',
    defineConfig({ tools: [probe('t_guard'), probe('t_env')], preExecute: hooks.preExecute }),
  );
});
afterAll(async () => {
  await h?.close();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

const ofType = (out: BatchOutput, type: string): SessionEvent['data'][] =>
  out.events.filter((e) => e.type === type).map((e) => e.data);
const run1 = (name: string) => h.client.runBatch(batch([{ id: 'c1', name, args: {} }]));

describe('the hook environment', () => {
  it('holds none of the secrets planted in the worker, and what the allowlist passes', async () => {
    const out = await run1('t_env');
    expect(text(out.results[0].result)).toBe('t_env ran');
    const env = fs.readFileSync(path.join(outDir, 'env.txt'), 'utf8');
    for (const [name, value] of Object.entries(PLANTED)) {
      if (name === 'PROBE_PASS_ME') continue;
      expect(env).not.toContain(name);
      expect(env).not.toContain(value);
    }
    const vars = Object.fromEntries(
      env
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    expect(vars.CLAUDE_PROJECT_DIR).toBe(workspace);
    expect(vars.PATH.split(':')).toContain('/usr/bin');
    expect(vars.HOME).toBe(process.env.HOME);
    expect(vars.PROBE_PASS_ME).toBe('passed-on-purpose');
  });
});

describe('settings and scripts pinned at start', () => {
  it('records the settings digest and the script digest on hook/invoked', async () => {
    const out = await run1('t_guard');
    expect(text(out.results[0].result)).toContain('the guard says no');
    const [invoked] = ofType(out, 'hook/invoked');
    expect(invoked).toMatchObject({
      settings: '.claude/settings.json',
      settingsDigest: sha(fs.readFileSync(settingsFile())),
      scripts: [{ path: '.claude/hooks/guard.sh', digest: sha(GUARD) }],
    });
    expect(hooks.sources).toEqual([expect.objectContaining({ label: '.claude/settings.json' })]);
    expect(hooks.scripts.map((s) => path.basename(s.path)).sort()).toEqual(['guard.sh', 'print-env.sh']);
  });

  it('refuses a hook whose script was rewritten at run time, and runs it again once restored', async () => {
    const marker = path.join(outDir, 'swapped-script-ran');
    fs.writeFileSync(guardFile(), `#!/usr/bin/env bash\ntouch ${JSON.stringify(marker)}\nexit 0\n`);
    const out = await run1('t_guard');
    const result = out.results[0].result;
    expect(result.error?.code).toBe('DENIED');
    expect(text(result)).toMatch(/its script \.claude\/hooks\/guard\.sh .* changed since the worker started/);
    expect(fs.existsSync(marker)).toBe(false);
    expect(fs.existsSync(path.join(outDir, 't_guard.ran'))).toBe(false);
    expect(ofType(out, 'hook/result')[0]).toMatchObject({ decision: 'deny', refused: 'script-changed' });

    fs.writeFileSync(guardFile(), GUARD);
    const again = await run1('t_guard');
    expect(text(again.results[0].result)).toContain('the guard says no');
    expect(ofType(again, 'hook/result')[0]).toMatchObject({ decision: 'deny', exitCode: 2 });
  });

  it('keeps running the settings read at start when the file changes, and says so', async () => {
    const before = fs.readFileSync(settingsFile());
    fs.writeFileSync(settingsFile(), JSON.stringify({ hooks: {} }));
    const out = await run1('t_guard');
    expect(text(out.results[0].result)).toContain('the guard says no');
    const [result] = ofType(out, 'hook/result');
    expect((result.warnings as string[]).join('\n')).toMatch(
      /\.claude\/settings\.json changed since the worker started; the worker keeps running the hooks it read at start/,
    );
    expect(ofType(out, 'hook/invoked')[0].settingsDigest).toBe(sha(before));
  });
});
