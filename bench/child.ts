// What the benches that drive Sluice's own processes (hook serve, the gateway) share: a POST to
// `sluice hook serve`, and waiting for a child process to print that it is ready.
import { type ChildProcess, spawn } from 'node:child_process';
import * as http from 'node:http';
import * as path from 'node:path';
import { freePort, startDevServer } from '../temporal/dev-server';

/** POSTs one hook payload to `sluice hook serve` on the loopback; resolves to the answer's body. */
export function postHook(port: number, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/claude', method: 'POST' }, (res) => {
      let data = '';
      res.on('data', (d) => (data += d));
      res.on('end', () => resolve(data));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Resolves once the child printed `text` (stdout or stderr); rejects when it exits first or after `ms`. */
export function waitForOutput(child: ChildProcess, text: string, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const t = setTimeout(() => reject(new Error(`no "${text}" within ${ms} ms:\n${seen}`)), ms);
    const on = (d: Buffer) => {
      seen += d.toString();
      if (seen.includes(text)) {
        clearTimeout(t);
        resolve();
      }
    };
    child.stdout?.on('data', on);
    child.stderr?.on('data', on);
    child.once('exit', (code) => reject(new Error(`exited (${code}) before "${text}":\n${seen}`)));
  });
}

/**
 * A `sluice worker` process from the checkout (through tsx) on `taskQueue`, resolved once it printed
 * its ready line: that line names the tools, while `sluice worker: <error>` is a worker that failed.
 */
export async function startBenchWorker(o: {
  root: string;
  configFile: string;
  taskQueue: string;
  address: string;
  stateDir: string;
}): Promise<ChildProcess> {
  const worker = spawn(
    process.execPath,
    [
      '--require',
      'tsx/cjs',
      path.join(o.root, 'worker', 'main.ts'),
      '--config',
      o.configFile,
      '--task-queue',
      o.taskQueue,
      '--address',
      o.address,
      '--state-dir',
      o.stateDir,
    ],
    { cwd: o.root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await waitForOutput(worker, 'tool(s) on task queue', 180_000);
  return worker;
}

/**
 * The Temporal server a bench runs against: BENCH_ADDRESS when given, else a headless dev server
 * of its own with its database in `dir`. `stop` stops only a server this started.
 */
export async function benchServer(root: string, dir: string): Promise<{ address: string; stop(): Promise<void> }> {
  if (process.env.BENCH_ADDRESS) return { address: process.env.BENCH_ADDRESS, stop: async () => undefined };
  const server = await startDevServer({
    stateDir: path.join(root, '.sluice'),
    port: await freePort(),
    headless: true,
    dbFile: path.join(dir, 'temporal.db'),
    log: () => undefined,
  });
  return { address: server.address, stop: () => server.stop() };
}
