// `npx tsx bench/hook.ts`: how long `sluice hook` takes to answer an allowed call (no ask), from
// the harness writing the payload to the answer being read, with a warm worker
// (docs/performance.md, "Hook decisions"). Not a test: it prints figures.
//
//   serve          POST to `sluice hook serve` (Claude Code's http hook type): one process, one
//                  Temporal connection for all requests
//   command (dist) a command hook as an installed package runs it: `node` + dist/cli/hook.js,
//                  a new process and connection per call (run `npm run build` first; skipped without dist/)
//   command (tsx)  the same from a checkout: bin/sluice.js through tsx
//   in-process     answer() with a shared client: the Sluice part alone (batch start → decision)
// The first call of each command form is the cold start (reported apart); the p50 is over the rest.
//
// Settings (env): BENCH_HOOK_CALLS calls per form (default 30), BENCH_ADDRESS a Temporal server to
// use instead of starting one.
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { answer, sharedClient } from '../servers/hook';
import { freePort } from '../temporal/dev-server';
import { benchServer, postHook, startBenchWorker, waitForOutput } from './child';
import { percentile, round } from './stats';

const ROOT = path.join(__dirname, '..');
const BIN = path.join(ROOT, 'bin', 'sluice.js');
const CALLS = Number(process.env.BENCH_HOOK_CALLS ?? 30);
const FIXTURE = JSON.parse(
  fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'hook', 'claude-pre-tool-use.json'), 'utf8'),
);

let n = 0;
/** A fresh allowed call each time: its own command and tool_use_id, so no batch is reused. */
function payload(session: string): string {
  n++;
  return JSON.stringify({
    ...FIXTURE,
    session_id: session,
    tool_use_id: `toolu_bench_${n}`,
    tool_input: { ...FIXTURE.tool_input, command: `npm test -- --shard ${n}` },
  });
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-hook-bench-'));
  const server = await benchServer(ROOT, dir);
  const { address } = server;
  const taskQueue = `hook-bench-${process.pid}`;
  const configFile = path.join(dir, 'hook.config.ts');
  fs.writeFileSync(
    configFile,
    `import { defineConfig } from ${JSON.stringify(path.join(ROOT, 'define', 'config'))};\nimport { harnessTools } from ${JSON.stringify(path.join(ROOT, 'hooks'))};\nexport default defineConfig({ tools: harnessTools() });\n`,
  );
  const children: ChildProcess[] = [];
  try {
    const worker = await startBenchWorker({ root: ROOT, configFile, taskQueue, address, stateDir: dir });
    children.push(worker);
    const opts = { timeoutMs: 60_000, address, taskQueue };
    const session = `bench-${Date.now()}`;
    const load = () => os.loadavg()[0].toFixed(1);
    console.log(`[bench] hook decisions, allowed call, warm worker; ${CALLS} calls per form; load ${load()} at start`);

    // In-process: the Sluice part alone, on one shared connection.
    const shared = sharedClient(opts);
    for (let i = 0; i < 5; i++) await answer('claude', payload(session), opts, Date.now() + 60_000, shared);
    report(
      'in-process answer() (shared connection)',
      await timeEach(CALLS, async () => {
        const r = await answer('claude', payload(session), opts, Date.now() + 60_000, shared);
        check(r.stdout);
      }),
    );

    // serve: Claude Code's http hook type.
    const port = await freePort();
    const serve = spawn(
      process.execPath,
      [BIN, 'hook', 'serve', '--port', String(port), '--address', address, '--task-queue', taskQueue],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.push(serve);
    await waitForOutput(serve, 'serving http hooks', 120_000);
    for (let i = 0; i < 5; i++) check(await postHook(port, payload(session)));
    report(
      'sluice hook serve (POST /claude)',
      await timeEach(CALLS, async () => check(await postHook(port, payload(session)))),
    );

    // A command hook that forwards to the server (Codex and Gemini CLI have no http hook type).
    const curl = ['-sSf', '--max-time', '50', '--data-binary', '@-', `http://127.0.0.1:${port}/claude`];
    if (
      await runFile('curl', ['--version'], '').then(
        () => true,
        () => false,
      )
    ) {
      const run = () => runFile('curl', curl, payload(session)).then(check);
      const cold = await timeEach(1, run);
      report('command hook `curl … /claude || exit 2` to sluice hook serve', await timeEach(CALLS, run), cold[0]);
    } else console.log('[bench] no curl: the forwarding command hook is skipped');

    // Command hooks: a process per call, as the harness runs them.
    const dist = path.join(ROOT, 'dist', 'cli', 'hook.js');
    const forms: [string, string[]][] = [];
    if (fs.existsSync(dist))
      forms.push([
        'command hook, installed package (node + dist)',
        [
          '-e',
          `require(${JSON.stringify(dist)}).hookMain(process.argv.slice(1)).then((c) => process.exit(c))`,
          '--',
          'claude',
        ],
      ]);
    else console.log('[bench] no dist/ (run `npm run build`): the installed-package form is skipped');
    forms.push(['command hook, checkout (bin/sluice.js through tsx)', [BIN, 'hook', 'claude']]);
    for (const [label, argv] of forms) {
      const run = () => runCommand([...argv, '--address', address, '--task-queue', taskQueue], payload(session));
      const cold = await timeEach(1, run);
      const warm = await timeEach(CALLS, run);
      report(label, warm, cold[0]);
    }
    // What a process per call costs before any Sluice work: node itself, then loading the Temporal client.
    report('bare `node -e 0` (process start alone)', await timeEach(10, () => runPlain(['-e', '0'])));
    report(
      '`node -e "require(\'@temporalio/client\')"` (process + Temporal client)',
      await timeEach(10, () => runPlain(['-e', "require('@temporalio/client')"])),
    );
    console.log(`[bench] load ${load()} at the end`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await server.stop();
  }
}

function check(stdout: string) {
  const doc = JSON.parse(stdout);
  if (doc.hookSpecificOutput?.permissionDecision !== 'allow') throw new Error(`expected an allow, got ${stdout}`);
}

async function timeEach(count: number, fn: () => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = process.hrtime.bigint();
    await fn();
    out.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return out;
}

function report(label: string, ms: number[], cold?: number) {
  const sorted = [...ms].sort((a, b) => a - b);
  console.log(
    `[bench] ${label}: p50 ${round(percentile(sorted, 50))} ms, p90 ${round(percentile(sorted, 90))} ms, min ${round(sorted[0])} ms${cold !== undefined ? `; cold start (first call) ${round(cold)} ms` : ''}`,
  );
}

function runCommand(argv: string[], input: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => {
      try {
        if (code !== 0) throw new Error(`exit ${code}: ${err}`);
        check(out);
        resolve();
      } catch (e) {
        reject(e);
      }
    });
    child.stdin.end(input);
  });
}

function runFile(file: string, argv: string[], input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${file}: exit ${code}`))));
    child.stdin.end(input);
  });
}

function runPlain(argv: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { cwd: ROOT, stdio: 'ignore' });
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`node ${argv.join(' ')}: exit ${code}`))));
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
