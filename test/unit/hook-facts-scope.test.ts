// `sluice hook --facts-scope <id>` (cli/hook.ts): the scope a harness's calls count in, default the
// harness session's (`harness:<session id>`). The batch a hook starts names it, decision and
// result alike; `hook install opencode` carries it into the plugin's command; a scope that is not
// one printable line blocks the call, saying what to fix.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SluiceClient } from '../../client/client';
import { hookMain } from '../../cli/hook';
import { pluginPath } from '../../client/hook/opencode-plugin';
import { answer } from '../../servers/hook';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hook-facts-scope-'));
let xdg: string | undefined;
beforeAll(() => {
  // The hook's call key is kept under the person's config folder: this test's own.
  xdg = process.env.XDG_CONFIG_HOME;
  process.env.XDG_CONFIG_HOME = path.join(dir, '.config');
});
afterAll(() => {
  if (xdg === undefined) delete process.env.XDG_CONFIG_HOME;
  else process.env.XDG_CONFIG_HOME = xdg;
  fs.rmSync(dir, { recursive: true, force: true });
});

function io() {
  const out = { stdout: '', stderr: '' };
  return {
    out,
    io: {
      stdin: process.stdin,
      stdout: (s: string) => void (out.stdout += s),
      stderr: (s: string) => void (out.stderr += s),
    },
  };
}

/** A client that has no batch yet and records the batches started (then fails: there is no server). */
function recordingClient(started: { factsScope?: string; calls: { name: string }[] }[]) {
  return async () => ({
    sluice: {
      taskQueue: 'q',
      temporal: {
        workflow: {
          getHandle: (id: string) => ({
            describe: async () => {
              throw new WorkflowNotFoundError('not found', id, undefined);
            },
          }),
        },
      },
      startBatch: async (request: { factsScope?: string; calls: { name: string }[] }) => {
        started.push(request);
        throw new Error('no server in this test');
      },
    } as unknown as SluiceClient,
    release: () => undefined,
  });
}

const payload = (event: string, extra: object = {}) =>
  JSON.stringify({
    hook_event_name: event,
    session_id: 'ses-1',
    tool_name: 'Bash',
    tool_input: { command: 'ls' },
    ...extra,
  });

describe('sluice hook --facts-scope', () => {
  it('the batches a hook starts name the scope given, else the harness session', async () => {
    const started: { factsScope?: string; calls: { name: string }[] }[] = [];
    const client = recordingClient(started);
    const o = { timeoutMs: 10_000 };
    await answer('claude', payload('PreToolUse'), { ...o, factsScope: 'user:alice' }, Date.now() + 10_000, client);
    await answer(
      'claude',
      payload('PostToolUse', { tool_response: 'ok' }),
      { ...o, factsScope: 'user:alice' },
      Date.now() + 10_000,
      client,
    );
    await answer('claude', payload('PreToolUse'), o, Date.now() + 10_000, client);
    expect(started.map((r) => [r.calls[0].name, r.factsScope])).toEqual([
      ['Bash', 'user:alice'],
      ['harness_result', 'user:alice'],
      ['Bash', 'harness:ses-1'],
    ]);
  });

  it('install opencode carries it into the plugin; a scope that is not one printable line blocks, saying so', async () => {
    const project = fs.mkdtempSync(path.join(dir, 'project-'));
    const { io: sink } = io();
    expect(await hookMain(['install', 'opencode', '--project', project, '--facts-scope', 'user:alice'], sink)).toBe(0);
    expect(fs.readFileSync(pluginPath({ project }), 'utf8')).toContain('"--facts-scope","user:alice"');
    for (const [bad, why] of [
      ['a\nb', /--facts-scope: .*control character/],
      ['', /--facts-scope: .*non-empty/],
    ] as const) {
      const { out, io: sink } = io();
      expect(await hookMain(['claude', '--facts-scope', bad], sink)).toBe(2);
      expect(out.stderr).toMatch(why);
    }
  });
});
