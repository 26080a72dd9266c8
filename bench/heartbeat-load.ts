// `npx tsx bench/heartbeat-load.ts`: does a trivial tool body miss its heartbeat timeout on a
// loaded machine (issue 22 item 14)? One embedded dev server, one worker in this process, batches
// of the bench's trivial `echo` body (a regular activity with the default 10 s heartbeat timeout);
// then every batch's history is read for activity attempts that timed out, by kind, and for the
// longest time an attempt ran (started → completed). Load the machine yourself while it runs,
// e.g. eight `node -e 'for(;;){}' &` burners; the script reports the load average it saw.
//
// Settings (env): HB_BATCHES (60), HB_CALLS per batch (10), HB_IN_FLIGHT batches at once (12).
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { NativeConnection } from '@temporalio/worker';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SluiceClient } from '../client/client';
import { freePort, startDevServer } from '../temporal/dev-server';
import { createSluiceWorker } from '../worker/worker';
import { echo } from './config';
import { defineConfig } from '../define/config';
import { pool } from './stats';
import { publishedWorkflowBundle } from './bench-stack';

const EventType = temporal.api.enums.v1.EventType;
const TimeoutType = temporal.api.enums.v1.TimeoutType;
const num = (name: string, d: number) => Number(process.env[name] ?? d);

async function main(): Promise<void> {
  const batches = num('HB_BATCHES', 60);
  const calls = num('HB_CALLS', 10);
  const inFlight = num('HB_IN_FLIGHT', 12);
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-load-'));
  const port = await freePort();
  const server = await startDevServer({ stateDir, port, uiPort: await freePort() });
  const address = `127.0.0.1:${port}`;
  const connection = await NativeConnection.connect({ address });
  const taskQueue = `hb-load-${process.pid}`;
  const worker = await createSluiceWorker({
    workflowBundle: await publishedWorkflowBundle(),
    connection,
    taskQueue,
    stateDir,
    config: defineConfig({ tools: [echo] }),
  });
  const running = worker.run();
  const client = new SluiceClient({ connection: await Connection.connect({ address }), taskQueue });
  const loads: number[] = [];
  const sampler = setInterval(() => loads.push(os.loadavg()[0]), 1000);
  const started = Date.now();
  const timeouts: Record<string, number> = {};
  let attempts = 0;
  let longestMs = 0;
  // Read as each batch ends: a dev server starved for minutes may not outlive the run.
  const tally = async (id: string) => {
    const history = await client.temporal.workflow.getHandle(id).fetchHistory();
    const startedAt = new Map<number, number>();
    for (const e of history.events ?? []) {
      const at = Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);
      if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
        attempts++;
        startedAt.set(Number(e.eventId), at);
      } else if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
        const s = startedAt.get(Number(e.activityTaskCompletedEventAttributes?.startedEventId));
        if (s !== undefined) longestMs = Math.max(longestMs, at - s);
      } else if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT) {
        const kind = TimeoutType[e.activityTaskTimedOutEventAttributes?.failure?.timeoutFailureInfo?.timeoutType ?? 0];
        timeouts[kind] = (timeouts[kind] ?? 0) + 1;
      }
    }
  };
  try {
    await pool(batches, inFlight, async (b) => {
      const handle = await client.startBatch({
        sessionId: `hb-${process.pid}-${b}`,
        turn: 1,
        step: 1,
        calls: Array.from({ length: calls }, (_, i) => ({
          id: `c${i}`,
          name: 'echo',
          arguments: JSON.stringify({ text: `${b}/${i}` }),
        })),
      });
      await handle.result();
      await tally(handle.workflowId);
      // As it goes: a run the machine's load stretches past its time limit still says what it saw.
      console.log(
        JSON.stringify({ batch: b, attempts, timedOut: timeouts, longestAttemptMs: longestMs, load: os.loadavg()[0] }),
      );
    });
  } finally {
    clearInterval(sampler);
  }
  const wall = Date.now() - started;
  const report = {
    batches,
    calls,
    inFlight,
    wallMs: wall,
    loadAverage: { max: Math.max(...loads), mean: loads.reduce((a, b) => a + b, 0) / Math.max(1, loads.length) },
    activityAttempts: attempts,
    timedOut: timeouts,
    longestAttemptMs: longestMs,
  };
  console.log(JSON.stringify(report, null, 2));
  worker.shutdown();
  await running;
  await connection.close();
  await server.stop();
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
