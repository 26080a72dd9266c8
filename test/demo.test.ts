// `npm start` end to end, without a terminal: its own dev server, the scripted session, the ask
// denied by the deny timeout.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { freePort } from '../temporal/dev-server';
import { readSessionLog } from '../stores/sink';

describe('the demo agent session (npm start)', () => {
  it('runs allow, deny, ask, retry, rewrite and context to completion', async () => {
    const stateDir = fs.mkdtempSync(path.join(inject('runDir'), 'demo-'));
    const port = await freePort();
    const root = path.join(__dirname, '..');
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(root, 'scripts', 'demo.ts')], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      // no model key: the scripted model needs none
      env: {
        ...withoutKeys(process.env),
        SLUICE_PORT: String(port),
        SLUICE_STATE_DIR: stateDir,
        SLUICE_DEMO_APPROVAL_TIMEOUT_MS: '1500',
        SLUICE_INBOX_PORT: '0',
        TEMPORAL_CLI: inject('temporalCli'),
      },
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect(code, out).toBe(0);
    expect(out).toContain(`Temporal Web UI: http://127.0.0.1:${port + 1000}`);
    expect(out).toMatch(/Approval inbox: http:\/\/127\.0\.0\.1:\d+\//);
    expect(out).toMatch(/✓ get_weather \(t1-weather-lisbon\)/);
    expect(out).toMatch(/✓ fetch_quote \(t1-quote\): .*"attempt": 2/); // flaky, succeeded on retry
    expect(out).toMatch(/"apiKey": "\[REDACTED\]"/); // post-execute rewrite
    expect(out).toMatch(/\+ context \(post-execute handler redactSecrets\)/); // injected context
    expect(out).toMatch(/✗ delete_files \(t3-delete\): Error: deleting files is not allowed/); // deny
    expect(out).toMatch(/┌ approval [0-9a-f-]{36}\n│ Send email to ada@example.com/); // the pending card
    expect(out).toMatch(/✗ send_email \(t3-email\): Error: approval was required but not given/); // ask → deny timeout
    const session = /Session (demo-\d+)\./.exec(out)![1];
    // a durable agent session: the model's text in order, then the session ends when idle
    expect(out).toContain(`durable agent session (workflow sluice-session:${session})`);
    const said = [
      'model: Let me check',
      "model: Now the customer's record.",
      "model: I'll clean up",
      'model: All done.',
    ];
    const at = said.map((x) => out.indexOf(x));
    expect(at.every((i) => i >= 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(out).toContain('(the session ended: idle)');
    // Without a terminal the ask says how else it is decided, and when it ends by itself.
    expect(out).toMatch(
      /\(waiting for a decision, not asked here: `npx sluice approve [0-9a-f-]{36}` or `deny` from another shell; denied at \S+Z when its deny timeout ends\)/,
    );
    // The server it started is stopped by its last lines: they say how to serve it again first.
    const tail = out.slice(out.indexOf('(the session ended: idle)'));
    expect(tail).toContain(
      `The demo's Temporal server has stopped; its database stays in ${stateDir}. To look at the session, serve it again with \`npx sluice dev --state-dir ${stateDir}\``,
    );
    expect(tail.indexOf('has stopped')).toBeLessThan(tail.indexOf(`npx sluice audit ${session}`));
    const events = await readSessionLog(stateDir, session);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.type === 'tool/result')).toHaveLength(6);
    expect(events.filter((e) => e.type === 'model/message')).toHaveLength(4);
    expect(events[events.length - 1]).toMatchObject({ type: 'session/ended', data: { reason: 'idle', turns: 1 } });
  });
});

function withoutKeys(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const copy = { ...env };
  for (const k of Object.keys(copy)) if (/_API_KEY$/.test(k)) delete copy[k];
  return copy;
}
