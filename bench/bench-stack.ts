// What bench/run.ts and bench/drain-scale.ts run on: a dev server of their own (or one given), the
// workflow bundles, and one worker process (bench/worker.ts: the Sluice worker and the bare-Temporal
// worker on two task queues, driven over IPC so its memory is read apart from the load generator);
// and the retry of the errors a loaded dev server gives now and then.
import { type BundleOptions, bundleWorkflowCode, NativeConnection } from '@temporalio/worker';
import { type ChildProcess, execSync, fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type DevServer, type DevServerOptions, freePort, startDevServer } from '../temporal/dev-server';
import { preloadSluiceWorkflows, WORKFLOWS_PATH } from '../worker/worker';
import type { MemoryDetail, WorkerArgs, WorkerReply, WorkerRequest } from './worker';

export const SLUICE_QUEUE = `bench-sluice-${process.pid}`;
export const BARE_QUEUE = `bench-bare-${process.pid}`;
export const MiB = 1024 * 1024;

export interface BenchStackOptions {
  /** A Temporal server to use instead of starting one. */
  address?: string;
  /** `file` (SQLite in the run's temp folder, as the embedded server keeps it) or `memory`. */
  db?: string;
  dynamicConfig?: DevServerOptions['dynamicConfig'];
  /** Both workers' sticky cache size and eager activity reservations per workflow task; Temporal's defaults when unset. */
  maxCached?: number;
  eager?: number;
  log: (line: string) => void;
}

export interface BenchStack {
  server: Pick<DevServer, 'address' | 'cli' | 'stop'>;
  worker: WorkerProcess;
  connection: NativeConnection;
  /** A temp folder for this run, removed by stop(). */
  runDir: string;
  sluiceBundle: string;
  bareBundle: string;
  stop(): Promise<void>;
}

/** The server, both bundles, the worker process and a client connection; whatever started is stopped if a later part fails. */
export async function startBenchStack(opts: BenchStackOptions): Promise<BenchStack> {
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-'));
  let server: BenchStack['server'] | undefined;
  let worker: WorkerProcess | undefined;
  let connection: NativeConnection | undefined;
  const stop = async () => {
    await worker?.stop();
    await connection?.close();
    await server?.stop();
    fs.rmSync(runDir, { recursive: true, force: true });
  };
  try {
    server = opts.address
      ? { address: opts.address, cli: 'an existing server', stop: async () => undefined }
      : await startDevServer({
          stateDir: path.resolve('.sluice'),
          port: await freePort(),
          headless: true,
          dbFile: opts.db === 'memory' ? ':memory:' : path.join(runDir, 'temporal.db'),
          ...(opts.dynamicConfig ? { dynamicConfig: opts.dynamicConfig } : {}),
          log: opts.log,
        });
    opts.log(`dev server at ${server.address}; bundling workflows`);
    const sluiceBundle = path.join(runDir, 'sluice-bundle.js');
    const bareBundle = path.join(runDir, 'bare-bundle.js');
    fs.writeFileSync(sluiceBundle, (await publishedWorkflowBundle()).code);
    fs.writeFileSync(
      bareBundle,
      (
        await bundleWorkflowCode({
          workflowsPath: path.join(__dirname, 'bare-workflow.ts'),
          logger: quiet,
          webpackConfigHook: publishedTarget,
        })
      ).code,
    );
    worker = await startWorker({
      address: server.address,
      sluiceTaskQueue: SLUICE_QUEUE,
      bareTaskQueue: BARE_QUEUE,
      sluiceBundle,
      bareBundle,
      stateDir: path.join(runDir, 'state'),
      ...(opts.maxCached !== undefined ? { maxCachedWorkflows: opts.maxCached } : {}),
      ...(opts.eager !== undefined ? { maxEagerActivities: opts.eager } : {}),
    });
    connection = await NativeConnection.connect({ address: server.address });
    return { server, worker, connection, runDir, sluiceBundle, bareBundle, stop };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}

/** The commit the worker loads, `+changes` when the pipeline's code differs from it. */
export function gitCommit(): string {
  try {
    const head = execSync('git rev-parse --short HEAD', {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const dirty = execSync('git status --porcelain -- workflows activities pipeline worker', {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return dirty ? `${head}+changes` : head;
  } catch {
    return 'unknown';
  }
}

export interface WorkerProcess {
  maxCachedWorkflows: number;
  /** RSS now and its peak since the last read, and the process's CPU so far (user + system, µs). */
  memory(): Promise<{ rss: number; peakRss: number; cpuUs: number }>;
  /** RSS and each isolate's heap, after a full GC everywhere when `gc`. */
  memoryDetail(gc: boolean): Promise<MemoryDetail>;
  stop(): Promise<void>;
}

type WebpackConfig = Parameters<NonNullable<BundleOptions['webpackConfigHook']>>[0];

/**
 * Both systems' workflows compiled for ES2022, as the published package's JavaScript is (its
 * tsconfig), rather than for the bundler's ES2017. The bundler compiles `.ts` files itself, and a
 * checkout bundles Sluice's TypeScript sources: at ES2017 every object spread, `?.` and `??`
 * becomes a helper call that no installed worker runs (about 0.4 ms of a call's worker CPU in a
 * profile of the batch of 10 × 8: docs/performance.md, "the bench compiles what users run").
 */
export function publishedTarget(config: WebpackConfig): WebpackConfig {
  for (const rule of config.module?.rules ?? []) {
    const use = rule && typeof rule === 'object' ? rule.use : undefined;
    if (use && typeof use === 'object' && !Array.isArray(use) && String(use.loader).includes('swc-loader')) {
      const jsc = (use.options as { jsc?: { target?: string } } | undefined)?.jsc;
      if (jsc) jsc.target = 'es2022';
    }
  }
  return config;
}

/** The bundler's logger, warnings and errors only. */
const quiet = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn: (m: string) => console.warn(m),
  error: (m: string) => console.error(m),
};

let published: Promise<{ code: string }> | undefined;

/**
 * Sluice's workflows bundled as an installed package runs them (`publishedTarget`), once per
 * process: for the benches that start their worker with `createSluiceWorker`, which would
 * otherwise bundle the checkout's TypeScript for ES2017.
 */
export function publishedWorkflowBundle(): Promise<{ code: string }> {
  published ??= bundleWorkflowCode(
    preloadSluiceWorkflows({ workflowsPath: WORKFLOWS_PATH, logger: quiet, webpackConfigHook: publishedTarget }),
  ).then(({ code }) => ({ code }));
  return published;
}

function startWorker(args: WorkerArgs): Promise<WorkerProcess> {
  const child: ChildProcess = fork(path.join(__dirname, 'worker.ts'), [JSON.stringify(args)], {
    execArgv: [
      '--require',
      'tsx/cjs',
      '--expose-gc',
      ...(process.env.BENCH_WORKER_NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean),
    ],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting: ((r: WorkerReply) => void)[] = [];
  child.on('message', (m: WorkerReply) => waiting.shift()?.(m));
  const next = () => new Promise<WorkerReply>((resolve) => waiting.push(resolve));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const request = (m: WorkerRequest) => child.send(m);
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the bench worker exited (${code}) before it was ready`)));
    next().then((first) => {
      if (first.kind !== 'ready')
        return reject(
          new Error(`the bench worker failed to start: ${first.kind === 'failed' ? first.error : first.kind}`),
        );
      resolve({
        maxCachedWorkflows: first.maxCachedWorkflows,
        async memory() {
          const reply = next();
          request({ kind: 'memory' });
          const m = await reply;
          if (m.kind !== 'memory') throw new Error(`unexpected worker reply ${m.kind}`);
          return m;
        },
        async memoryDetail(gc: boolean) {
          const reply = next();
          request({ kind: 'memoryDetail', gc });
          const m = await reply;
          if (m.kind !== 'memoryDetail')
            throw new Error(`the bench worker could not read its memory: ${m.kind === 'failed' ? m.error : m.kind}`);
          return m.detail;
        },
        async stop() {
          if (child.exitCode !== null || child.signalCode !== null) return;
          request({ kind: 'stop' });
          const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
          await exited;
          clearTimeout(timer);
        },
      });
    });
  });
}

/** The worker threads' heaps: the SDK's workflow threads (both workers') and any Code Mode sandbox thread. */
export const heapOf = (d: MemoryDetail, which: 'heapUsed' | 'heapTotal') => d.threads.reduce((a, t) => a + t[which], 0);

export function memoryLine(d: MemoryDetail): string {
  const mib = (x: number) => (x / MiB).toFixed(1);
  return `RSS ${mib(d.rss)} MiB (main heap ${mib(d.mainHeapUsed)}/${mib(d.mainHeapTotal)}, external ${mib(d.external)}, worker threads' heap ${mib(heapOf(d, 'heapUsed'))}/${mib(heapOf(d, 'heapTotal'))} used/total)`;
}

/** The worker's memory after `settleSec` seconds with nothing to do (idle, or every batch waiting). */
export async function settled(worker: WorkerProcess, settleSec: number): Promise<MemoryDetail> {
  const until = performance.now() + settleSec * 1000;
  while (performance.now() < until) await new Promise((r) => setTimeout(r, Math.min(5000, until - performance.now())));
  return worker.memoryDetail(false);
}

/**
 * Errors a loaded dev server gives now and then (issue 22 item 14): a namespace briefly not found
 * (its cache not refreshed in time), a deadline exceeded, resources exhausted, unavailable. One of
 * them aborted a whole run and wrote nothing; they are retried with backoff and counted, and the
 * count is printed at the end (a run with many is a run on a machine too busy to measure).
 */
export const transientErrors: Record<string, number> = {};
const TRANSIENT =
  /NamespaceNotFound|namespace .*not found|deadline exceeded|DEADLINE_EXCEEDED|resource exhausted|RESOURCE_EXHAUSTED|UNAVAILABLE|ECONNRESET/i;

export async function retryTransient<T>(what: string, run: () => Promise<T>, tries = 8): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      const text = `${(err as Error)?.name ?? ''} ${(err as Error)?.message ?? String(err)} ${String((err as { cause?: unknown })?.cause ?? '')}`;
      const kind = TRANSIENT.exec(text)?.[0];
      if (!kind || attempt >= tries) throw err;
      transientErrors[kind] = (transientErrors[kind] ?? 0) + 1;
      const ms = Math.min(10_000, 250 * 2 ** attempt);
      console.error(`[bench] ${what}: transient ${kind} (try ${attempt} of ${tries}); again in ${ms} ms`);
      await new Promise((r) => setTimeout(r, ms));
    }
  }
}

process.on('exit', () => {
  const kinds = Object.entries(transientErrors);
  if (kinds.length)
    console.error(`[bench] transient dev-server errors retried: ${kinds.map(([k, n]) => `${k} ×${n}`).join(', ')}`);
});
