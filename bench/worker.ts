// The bench's one worker process: the Sluice worker and the bare-Temporal worker side by side on
// their own task queues, so worker RSS is measured apart from the load generator. Driven over IPC.
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createSluiceWorker } from '../worker/worker';
import { bareActivities } from './bare-activities';
import config from './config';

export type WorkerRequest = { kind: 'memory' } | { kind: 'stop' };
export type WorkerReply =
  | { kind: 'ready'; maxCachedWorkflows: number }
  | { kind: 'memory'; rss: number; peakRss: number }
  | { kind: 'failed'; error: string };

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
      send({ kind: 'memory', rss, peakRss: Math.max(peak, rss) });
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
  send({ kind: 'ready', maxCachedWorkflows: sluice.options.maxCachedWorkflows });
  await running;
}

function send(reply: WorkerReply): void {
  process.send!(reply);
}

main(JSON.parse(process.argv[2]) as WorkerArgs).catch((err) => {
  send({ kind: 'failed', error: String(err?.stack ?? err) });
  process.exit(1);
});
