// Time to first token: through a session (a message posted, the model step scheduled as an
// activity, the provider's first piece published on the live channel and read by a follower)
// against the openai SDK streaming directly, both from one local fake provider that streams.
//   npx tsx bench/stream.ts [rounds]
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import OpenAI from 'openai';
import { SluiceClient } from '../client/client';
import { startSession } from '../client/session';
import { followSessionEvents } from '../client/session-events';
import { defineConfig } from '../define/config';
import { freePort, startDevServer } from '../temporal/dev-server';
import { createSluiceWorker } from '../worker/worker';
import { startStreamProvider } from '../test/stream-provider';
import { publishedWorkflowBundle } from './bench-stack';

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function main() {
  const rounds = Number(process.argv[2] ?? 30);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-stream-'));
  const provider = await startStreamProvider({ pieceMs: 20 });
  process.env.OPENAI_API_KEY = 'sk-bench';
  process.env.OPENAI_BASE_URL = `${provider.base}/v1`;
  const server = await startDevServer({
    stateDir: path.resolve('.sluice'),
    port: await freePort(),
    headless: true,
    dbFile: path.join(stateDir, 'temporal.db'),
  });
  const connection = await NativeConnection.connect({ address: server.address });
  const taskQueue = `bench-stream-${process.pid}`;
  const worker = await createSluiceWorker({
    workflowBundle: await publishedWorkflowBundle(),
    connection,
    taskQueue,
    stateDir,
    config: defineConfig({ tools: [] }),
  });
  const running = worker.run();
  const client = new SluiceClient({ connection, taskQueue });

  const direct: number[] = [];
  const openai = new OpenAI({ maxRetries: 0 });
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    const stream = await openai.chat.completions.create({
      model: 'bench',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    for await (const c of stream)
      if (c.choices[0]?.delta?.content) {
        direct.push(performance.now() - t0);
        break;
      }
  }
  const session: number[] = [];
  const s = await startSession(client, { sessionId: `bench-stream-${process.pid}`, model: 'openai:bench' });
  for (let i = 0; i < rounds; i++) {
    const from = (await s.state()).nextSeq;
    const t0 = performance.now();
    const sent = s.send(`hi ${i}`);
    for await (const e of followSessionEvents(stateDir, s.sessionId, {
      fromSeq: from,
      live: true,
    }))
      if (e.type === 'live/delta' && (e as { turn: number }).turn === i + 1) {
        session.push(performance.now() - t0);
        break;
      }
    await sent;
  }
  const line = (name: string, xs: number[]) =>
    `${name}: p50 ${pct(xs, 50).toFixed(1)} ms, p99 ${pct(xs, 99).toFixed(1)} ms (n=${xs.length})`;
  console.log(line('openai SDK directly', direct));
  console.log(line('through a session  ', session));
  console.log(
    `difference at p50: +${(pct(session, 50) - pct(direct, 50)).toFixed(1)} ms, load ${os.loadavg()[0].toFixed(1)}`,
  );
  await s.cancel();
  worker.shutdown();
  await running;
  await connection.close();
  await provider.close();
  await server.stop?.();
  process.exit(0);
}
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
