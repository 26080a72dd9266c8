// What a follower sees when many sessions stream at once (issue 28's figures): N sessions (1, 10,
// 50) each answer one message from a local fake provider that streams a long answer at a fixed
// rate, and one follower per session reads the live channel. Reported per N: the pieces per
// second each follower sees (p50 over followers; the provider's own rate is the ceiling), the
// pieces all followers see together over the run (from the messages sent to the last piece), the worker's CPU per piece (worker and followers share this
// process), and the history bytes of a streamed step against the same step not streamed (the
// scripted model gives the same text whole). With PostgreSQL installed the same runs go through
// the PostgreSQL store (LISTEN/NOTIFY), each follower with its own connection pool.
//   npx tsx bench/stream-scale.ts [sessions, comma-separated: 1,10,50] [pieces per answer: 200]
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { scriptedModel } from '../agent/adapters/scripted';
import type { LiveEvent } from '../pipeline/live';
import { SluiceClient } from '../client/client';
import { startSession } from '../client/session';
import { followSessionEvents, type SessionEventSource } from '../client/session-events';
import { defineConfig } from '../define/config';
import type { SessionEvent } from '../pipeline/types';
import { PostgresStores } from '../stores/postgres';
import { postgresStores, type SluiceStores } from '../stores/stores';
import { freePort, startDevServer } from '../temporal/dev-server';
import { createSluiceWorker } from '../worker/worker';
import { startPostgres } from '../test/postgres';
import { startStreamProvider } from '../test/stream-provider';
import { publishedWorkflowBundle } from './bench-stack';

const PIECE_MS = 10;
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? Number.NaN;

interface Row {
  store: string;
  sessions: number;
  perFollowerP50: number;
  perFollowerMin: number;
  allFollowers: number;
  cpuMsPerPiece: number;
  seconds: number;
}

async function main() {
  const counts = (process.argv[2] ?? '1,10,50').split(',').map(Number);
  const piecesPerAnswer = Number(process.argv[3] ?? 200);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const answer = Array.from({ length: piecesPerAnswer }, (_, i) => (i ? ` w${i}` : 'w0'));
  const provider = await startStreamProvider({ pieceMs: PIECE_MS, answer });
  process.env.OPENAI_API_KEY = 'sk-bench';
  process.env.OPENAI_BASE_URL = `${provider.base}/v1`;
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-stream-scale-'));
  const server = await startDevServer({
    stateDir: path.resolve('.sluice'),
    port: await freePort(),
    headless: true,
    dbFile: path.join(scratch, 'temporal.db'),
  });
  const connection = await NativeConnection.connect({ address: server.address });
  const config = defineConfig({
    tools: [],
    models: { whole: scriptedModel(() => ({ text: answer.join('') })) },
  });
  const rows: Row[] = [];
  let bytes: { streamed: number; whole: number } | undefined;

  const run = async (store: string, stores: SluiceStores | undefined, follower: () => SessionEventSource) => {
    const stateDir = path.join(scratch, store);
    fs.mkdirSync(stateDir, { recursive: true });
    const taskQueue = `bench-stream-scale-${store}-${process.pid}`;
    const worker = await createSluiceWorker({
      workflowBundle: await publishedWorkflowBundle(),
      connection,
      taskQueue,
      stateDir,
      config,
      ...(stores ? { stores } : {}),
    });
    const running = worker.run();
    const client = new SluiceClient({ connection, taskQueue });
    const source = () => (stores ? follower() : stateDir);
    for (const n of counts) {
      const sessions = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          startSession(client, { sessionId: `scale-${store}-${n}-${i}-${process.pid}`, model: 'openai:bench-scale' }),
        ),
      );
      const stop = new AbortController();
      const followers = sessions.map((s) => {
        const times: number[] = [];
        const src = source();
        const done = (async () => {
          for await (const e of followSessionEvents(src, s.sessionId, {
            live: true,
            signal: stop.signal,
          }) as AsyncGenerator<SessionEvent | LiveEvent>) {
            if (e.type === 'live/delta' && (e as { kind?: string }).kind === 'text') times.push(performance.now());
            if (e.type === 'model/message') break;
          }
        })();
        return { times, done, src };
      });
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await Promise.all(sessions.map((s) => s.send('go')));
      await Promise.race([Promise.all(followers.map((f) => f.done)), new Promise((r) => setTimeout(r, 30_000))]);
      const seconds = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      stop.abort();
      await Promise.all(followers.map((f) => f.done.catch(() => undefined)));
      for (const f of followers) await (f.src as { close?: () => Promise<void> }).close?.();
      const rates = followers.map((f) =>
        f.times.length > 1 ? (f.times.length - 1) / ((f.times.at(-1)! - f.times[0]) / 1000) : 0,
      );
      const pieces = followers.reduce((a, f) => a + f.times.length, 0);
      rows.push({
        store,
        sessions: n,
        perFollowerP50: pct(rates, 50),
        perFollowerMin: Math.min(...rates),
        allFollowers: pieces / seconds,
        cpuMsPerPiece: (cpu.user + cpu.system) / 1000 / Math.max(1, pieces),
        seconds,
      });
      console.log(JSON.stringify(rows.at(-1)));
      await Promise.all(sessions.map((s) => s.cancel().catch(() => undefined)));
    }
    if (!bytes) {
      // The same text, streamed by the openai adapter and given whole by the scripted model.
      const sizeOf = async (model: string) => {
        const s = await startSession(client, { sessionId: `bytes-${model.replace(/\W/g, '-')}-${process.pid}`, model });
        await s.send('go');
        const handle = client.temporal.workflow.getHandle(s.workflowId);
        const history = await handle.fetchHistory();
        await s.cancel().catch(() => undefined);
        return temporal.api.history.v1.History.encode(history).finish().length;
      };
      bytes = { streamed: await sizeOf('openai:bench-scale'), whole: await sizeOf('whole') };
    }
    worker.shutdown();
    await running;
  };

  await run('file', undefined, () => '');
  let pgNote = '';
  try {
    const pg = await startPostgres();
    try {
      const url = await pg.createDatabase('sluice_stream_scale');
      const setup = new PostgresStores(url);
      await setup.migrate();
      await setup.close();
      const workerStores = postgresStores(url);
      await run('postgres', workerStores, () => postgresStores(url));
      await workerStores.close();
    } finally {
      await pg.stop();
    }
  } catch (err) {
    pgNote = `PostgreSQL runs skipped: ${(err as Error).message}`;
  }

  console.log(
    `\n${piecesPerAnswer} pieces per answer, one every ${PIECE_MS} ms from the provider (ceiling ${(1000 / PIECE_MS).toFixed(0)} pieces/s per session); load average ${os.loadavg()[0].toFixed(1)} at the end, ${os.cpus().length} cores\n`,
  );
  console.log(
    '| store | sessions | pieces/s per follower, p50 (min) | pieces/s, all followers | CPU ms per piece | s |',
  );
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const r of rows)
    console.log(
      `| ${r.store} | ${r.sessions} | ${r.perFollowerP50.toFixed(1)} (${r.perFollowerMin.toFixed(1)}) | ${r.allFollowers.toFixed(0)} | ${r.cpuMsPerPiece.toFixed(3)} | ${r.seconds.toFixed(1)} |`,
    );
  if (bytes)
    console.log(
      `\nhistory bytes of a one-step session: streamed ${bytes.streamed}, whole ${bytes.whole} (${(bytes.streamed - bytes.whole >= 0 ? '+' : '') + (bytes.streamed - bytes.whole)} bytes)`,
    );
  if (pgNote) console.log(pgNote);
  await connection.close();
  await provider.close();
  await server.stop();
  fs.rmSync(scratch, { recursive: true, force: true });
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
