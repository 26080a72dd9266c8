// Batches per second with 1, 2 and 3 Sluice worker processes on one task queue, sharing the
// PostgreSQL stores, in one run against one embedded Temporal dev server and one throw-away
// PostgreSQL:   npx tsx bench/workers.ts   (BENCH_BATCHES, BENCH_SESSIONS, BENCH_WORKERS=1,2,3).
// With TEMPORAL_ADDRESS and SLUICE_DATABASE_URL set it runs against those instead (a cluster, your
// database: run `npx sluice setup` there first).
// Each session runs its batches one after another (each starts at the previous nextSeq); the
// sessions run concurrently. Prints a Markdown table and writes bench/results/workers.json.
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SluiceClient } from '../client/client';
import { startPostgres } from '../test/postgres';
import { freePort, startDevServer } from '../temporal/dev-server';
import { PostgresStores } from '../stores/postgres';
import { publishedWorkflowBundle } from './bench-stack';

const BATCHES = Number(process.env.BENCH_BATCHES ?? 300);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 30);
const COUNTS = (process.env.BENCH_WORKERS ?? '1,2,3').split(',').map(Number);
const CONFIG = path.join(__dirname, '..', 'test', 'fixtures', 'scale.config.ts');

interface Row {
  workers: number;
  batches: number;
  seconds: number;
  batchesPerSecond: number;
  workerCpuSeconds: number;
}

function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks of 1/100 s
  } catch {
    return 0;
  }
}

async function main() {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-workers-'));
  const pg = process.env.SLUICE_DATABASE_URL ? undefined : await startPostgres();
  const url = process.env.SLUICE_DATABASE_URL ?? (await pg!.createDatabase('sluice_bench'));
  if (pg) {
    const setup = new PostgresStores(url);
    await setup.migrate();
    await setup.close();
  }
  const server = process.env.TEMPORAL_ADDRESS
    ? undefined
    : await startDevServer({
        stateDir: path.resolve('.sluice'),
        port: await freePort(),
        headless: true,
        dbFile: path.join(dir, 'temporal.db'),
      });
  const address = server?.address ?? process.env.TEMPORAL_ADDRESS!;
  const bundlePath = path.join(dir, 'bundle.js');
  fs.writeFileSync(bundlePath, (await publishedWorkflowBundle()).code);
  const connection = await NativeConnection.connect({ address });
  const rows: Row[] = [];
  try {
    for (const n of COUNTS) {
      const taskQueue = `bench-workers-${n}-${Date.now()}`;
      const procs = Array.from({ length: n }, (_, i) => {
        const stateDir = path.join(dir, `${taskQueue}-${i}`);
        fs.mkdirSync(stateDir, { recursive: true });
        const child = spawn(
          process.execPath,
          [
            '--require',
            'tsx/cjs',
            path.join(__dirname, '..', 'worker', 'main.ts'),
            ...['--config', CONFIG, '--task-queue', taskQueue, '--address', address],
            ...['--state-dir', stateDir, '--workflow-bundle', bundlePath],
          ],
          { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, SLUICE_DATABASE_URL: url } },
        );
        const ready = new Promise<void>((resolve, reject) => {
          child.stdout!.on('data', (d: Buffer) => d.toString().includes('sluice worker:') && resolve());
          child.once('exit', (code) => reject(new Error(`worker exited (${code})`)));
        });
        return { child, ready };
      });
      await Promise.all(procs.map((p) => p.ready));
      const client = new SluiceClient({ connection, taskQueue });
      const cpuBefore = procs.reduce((a, p) => a + cpuSeconds(p.child.pid!), 0);
      const started = process.hrtime.bigint();
      const perSession = Math.ceil(BATCHES / SESSIONS);
      await Promise.all(
        Array.from({ length: SESSIONS }, async (_, s) => {
          const sessionId = `${taskQueue}-s${s}`;
          let startSeq = 0;
          for (let step = 1; step <= perSession; step++) {
            const out = await client.runBatch({
              sessionId,
              turn: 1,
              step,
              startSeq,
              calls: [0, 1, 2].map((i) => ({
                id: `c${i}`,
                name: 'work',
                arguments: JSON.stringify({ ms: 10, n: i }),
              })),
            });
            startSeq = out.nextSeq;
          }
        }),
      );
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const cpu = procs.reduce((a, p) => a + cpuSeconds(p.child.pid!), 0) - cpuBefore;
      for (const p of procs) p.child.kill('SIGTERM');
      await Promise.all(
        procs.map((p) => new Promise((r) => (p.child.exitCode !== null ? r(0) : p.child.once('exit', r)))),
      );
      const batches = perSession * SESSIONS;
      rows.push({
        workers: n,
        batches,
        seconds: Number(seconds.toFixed(2)),
        batchesPerSecond: Number((batches / seconds).toFixed(2)),
        workerCpuSeconds: Number(cpu.toFixed(1)),
      });
      console.error(`${n} worker(s): ${batches} batches in ${seconds.toFixed(1)} s`);
    }
  } finally {
    await connection.close();
    await server?.stop();
    await pg?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const base = rows[0].batchesPerSecond;
  const table = [
    `| worker processes | batches | seconds | batches/s | vs 1 worker | worker CPU s (all) |`,
    `|---|---|---|---|---|---|`,
    ...rows.map(
      (r) =>
        `| ${r.workers} | ${r.batches} | ${r.seconds} | ${r.batchesPerSecond} | ${(r.batchesPerSecond / base).toFixed(2)}x | ${r.workerCpuSeconds} |`,
    ),
  ].join('\n');
  console.log(`${table}\n\n${os.cpus().length} CPU(s), ${SESSIONS} sessions, 3 calls per batch`);
  fs.writeFileSync(
    path.join(__dirname, 'results', 'workers.json'),
    `${JSON.stringify({ cpus: os.cpus().length, sessions: SESSIONS, rows }, null, 2)}\n`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
