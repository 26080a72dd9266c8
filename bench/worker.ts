// The bench's one worker process: the Sluice worker and the bare-Temporal worker side by side on
// their own task queues, so worker RSS is measured apart from the load generator. Driven over IPC.
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import * as inspector from 'node:inspector';
import { useCompactHeap, workerHeap } from '../worker/heap';
import { createSluiceWorker } from '../worker/worker';
import { bareActivities } from './bare-activities';
import config from './config';

export type WorkerRequest = { kind: 'memory' } | { kind: 'memoryDetail'; gc: boolean } | { kind: 'stop' };
export type WorkerReply =
  | { kind: 'ready'; maxCachedWorkflows: number }
  | { kind: 'memory'; rss: number; peakRss: number; cpuUs: number }
  | { kind: 'memoryDetail'; detail: MemoryDetail }
  | { kind: 'failed'; error: string };

/** Where the worker process's memory is: what the waiting-batches figures are made of. */
export interface MemoryDetail {
  /** Bytes, after a full GC of every isolate when asked for. */
  rss: number;
  /** The main thread's V8 heap (activities, the worker's bookkeeping). */
  mainHeapUsed: number;
  mainHeapTotal: number;
  /** Buffers and other memory V8 objects hold outside the heap, main thread. */
  external: number;
  /** Each worker thread's V8 heap (the workflow sandboxes run in `workflow` threads), by thread title. */
  threads: { title: string; heapUsed: number; heapTotal: number }[];
}

export interface WorkerArgs {
  address: string;
  sluiceTaskQueue: string;
  bareTaskQueue: string;
  sluiceBundle: string;
  bareBundle: string;
  stateDir: string;
  maxCachedWorkflows?: number;
  maxEagerActivities?: number;
}

async function main(args: WorkerArgs): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  // As `sluice worker` does: SLUICE_WORKER_HEAP=compact before the workflow threads start.
  if (workerHeap() === 'compact') useCompactHeap();
  const connection = await NativeConnection.connect({ address: args.address });
  const cache = args.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: args.maxCachedWorkflows } : {};
  const eager =
    args.maxEagerActivities !== undefined
      ? { maxEagerActivityReservationsPerWorkflowTask: args.maxEagerActivities }
      : {};
  const sluice = await createSluiceWorker({
    connection,
    taskQueue: args.sluiceTaskQueue,
    config,
    stateDir: args.stateDir,
    workflowBundle: { codePath: args.sluiceBundle },
    ...cache,
    ...eager,
  });
  const bare = await Worker.create({
    connection,
    taskQueue: args.bareTaskQueue,
    workflowBundle: { codePath: args.bareBundle },
    activities: bareActivities,
    ...cache,
    ...eager,
  });
  const running = Promise.all([sluice.run(), bare.run()]);

  // Peak RSS between two reads, sampled often enough to catch a cell's high point.
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 100);
  process.on('message', async (m: WorkerRequest) => {
    if (m.kind === 'memory') {
      const rss = process.memoryUsage().rss;
      // User + system CPU of the whole process (every thread: the workflow threads, the SDK's core),
      // in µs: the figure that does not swing with the machine's load as latency does.
      const cpu = process.cpuUsage();
      send({ kind: 'memory', rss, peakRss: Math.max(peak, rss), cpuUs: cpu.user + cpu.system });
      peak = rss;
    } else if (m.kind === 'stop') {
      clearInterval(sampler);
      sluice.shutdown();
      bare.shutdown();
      await running;
      await connection.close();
      process.exit(0);
    }
  });
  const threads = await attachThreads();
  process.on('message', async (m: WorkerRequest) => {
    if (m.kind !== 'memoryDetail') return;
    try {
      send({ kind: 'memoryDetail', detail: await memoryDetail(threads, m.gc) });
    } catch (err) {
      send({ kind: 'failed', error: String((err as Error)?.stack ?? err) });
    }
  });
  send({ kind: 'ready', maxCachedWorkflows: sluice.options.maxCachedWorkflows });
  await running;
}

/**
 * The worker threads' heaps through the inspector protocol (the workflow sandboxes live in the SDK's
 * workflow threads, whose heaps process.memoryUsage() does not see); `HeapProfiler.collectGarbage`
 * forces a full GC there, as `global.gc` (node --expose-gc) does on the main thread.
 */
async function attachThreads() {
  const session = new inspector.Session();
  session.connect();
  const attached = new Map<string, string>(); // sessionId → title
  const waiting = new Map<number, (r: { result?: unknown; error?: { message: string } }) => void>();
  let nextId = 1;
  session.on('NodeWorker.attachedToWorker', (m) => {
    const p = m.params as { sessionId: string; workerInfo: { title: string; url: string } };
    attached.set(p.sessionId, `${p.workerInfo.title || p.workerInfo.url}`);
  });
  session.on('NodeWorker.detachedFromWorker', (m) => attached.delete((m.params as { sessionId: string }).sessionId));
  session.on('NodeWorker.receivedMessageFromWorker', (m) => {
    const msg = JSON.parse((m.params as { message: string }).message) as { id?: number };
    if (msg.id !== undefined) waiting.get(msg.id)?.(msg as never);
    if (msg.id !== undefined) waiting.delete(msg.id);
  });
  await new Promise<void>((resolve, reject) =>
    session.post('NodeWorker.enable', { waitForDebuggerOnStart: false }, (err) => (err ? reject(err) : resolve())),
  );
  const call = (sessionId: string, method: string) =>
    new Promise<Record<string, number>>((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, (r) => (r.error ? reject(new Error(r.error.message)) : resolve(r.result as never)));
      session.post('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id, method }) });
    });
  return { attached, call };
}

async function memoryDetail(threads: Awaited<ReturnType<typeof attachThreads>>, gc: boolean): Promise<MemoryDetail> {
  if (gc) {
    for (const id of threads.attached.keys()) await threads.call(id, 'HeapProfiler.collectGarbage');
    (globalThis as { gc?: () => void }).gc?.();
  }
  const out: MemoryDetail['threads'] = [];
  for (const [id, title] of threads.attached) {
    const u = await threads.call(id, 'Runtime.getHeapUsage');
    out.push({ title, heapUsed: u.usedSize, heapTotal: u.totalSize });
  }
  const m = process.memoryUsage();
  return { rss: m.rss, mainHeapUsed: m.heapUsed, mainHeapTotal: m.heapTotal, external: m.external, threads: out };
}

function send(reply: WorkerReply): void {
  process.send!(reply);
}

main(JSON.parse(process.argv[2]) as WorkerArgs).catch((err) => {
  send({ kind: 'failed', error: String(err?.stack ?? err) });
  process.exit(1);
});
