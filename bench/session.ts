// What a durable session costs per step on this machine, against the same loop run by hand (call
// the model in the caller's process, run each batch with client.runBatch), and how much history
// a step adds at step 10, 100 and 300. The model is scripted and answers at once, so the figures
// are Sluice's own overhead. Run: `npx tsx bench/session.ts [steps=50] [long=300]`.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { z } from 'zod';
import { scriptedModel, type ScriptStep } from '../agent/adapters/scripted';
import type { ModelRequest } from '../agent/models';
import { SluiceClient } from '../client/client';
import { startSession } from '../client/session';
import type { AgentMessage } from '../pipeline/session';
import type { SessionState } from '../pipeline/types';
import { defineConfig, defineTool } from '../worker/config';
import { freePort, startDevServer } from '../worker/dev-server';
import { readSessionLog } from '../worker/sink';
import { createSluiceWorker } from '../worker/worker';

const STEPS = Number(process.argv[2] ?? 50);
const LONG = Number(process.argv[3] ?? 300);
const ROUNDS = 3;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Step s < n: one echo call; step n: the answer. The same for the session and the hand loop. */
const answer =
  (n: number) =>
  (req: { step: number }): ScriptStep =>
    req.step <= n
      ? { text: `step ${req.step}`, calls: [{ id: `c${req.step}`, name: 'echo', args: { n: req.step } }] }
      : { text: 'done' };
const stepsOf = (req: ModelRequest) => {
  const first = req.messages.find((m) => m.role === 'user');
  return Number(first && first.role === 'user' && typeof first.content === 'string' ? first.content : 0);
};

async function main() {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-session-'));
  const server = await startDevServer({
    stateDir: path.resolve('.sluice'),
    port: await freePort(),
    headless: true,
    dbFile: path.join(stateDir, 'temporal.db'),
  });
  const connection = await NativeConnection.connect({ address: server.address });
  const taskQueue = `bench-session-${process.pid}`;
  const model = scriptedModel((req) => answer(stepsOf(req))(req), 'bench');
  const worker = await createSluiceWorker({
    connection,
    taskQueue,
    stateDir,
    config: defineConfig({
      tools: [
        defineTool({
          name: 'echo',
          description: 'echo',
          input: z.object({ n: z.number() }),
          isConcurrencySafe: () => true,
          execute: ({ n }) => n,
        }),
      ],
      models: { bench: model },
    }),
  });
  const running = worker.run();
  const client = new SluiceClient({ connection, taskQueue });
  const tag = Date.now().toString(36);
  try {
    // warm-up: bundles loaded, connections open
    await byHand(client, `warm-hand-${tag}`, 3, model);
    await bySession(client, `warm-session-${tag}`, 3);

    const hand: number[] = [];
    const session: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      let t = performance.now();
      await byHand(client, `hand-${tag}-${r}`, STEPS, model);
      hand.push((performance.now() - t) / (STEPS + 1));
      t = performance.now();
      await bySession(client, `session-${tag}-${r}`, STEPS);
      session.push((performance.now() - t) / (STEPS + 1));
    }
    const h = median(hand);
    const s = median(session);
    console.log(
      `per step (${STEPS} steps of one tool call + the answer, median of ${ROUNDS} rounds): by hand ${h.toFixed(1)} ms (model call in process + client.runBatch), as a session ${s.toFixed(1)} ms; the session adds ${(s - h).toFixed(1)} ms a step (${(s / h).toFixed(2)}x)`,
    );

    // history a step adds, from the historyBytes each model/message event records
    const long = `long-${tag}`;
    await bySession(client, long, LONG, 1_000);
    const events = (await readSessionLog(stateDir, long))
      .filter((e) => e.type === 'model/message')
      .map((e) => e.data as { step: number; run: number; historyBytes: number });
    const delta = new Map<number, number>();
    for (let i = 1; i < events.length; i++)
      if (events[i].run === events[i - 1].run)
        delta.set(events[i].step, events[i].historyBytes - events[i - 1].historyBytes);
    const near = (k: number) => median([...delta].filter(([st]) => Math.abs(st - k) <= 5).map(([, b]) => b));
    const runs = new Set(events.map((e) => e.run)).size;
    console.log(
      `history bytes a step adds (median of the steps within 5): step 10: ${near(10)}, step 100: ${near(100)}, step ${LONG}: ${near(LONG - 5)}; ${LONG + 1} steps in ${runs} run(s) (continue-as-new after 1,000 events)`,
    );
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
    await server.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
}

/** The loop a caller keeps without sessions: model in process, a batch per step, seq and state carried by hand. */
async function byHand(client: SluiceClient, sessionId: string, n: number, model: ReturnType<typeof scriptedModel>) {
  const messages: AgentMessage[] = [{ role: 'user', content: String(n) }];
  let startSeq = 0;
  let state: SessionState = {};
  for (let step = 1; ; step++) {
    const reply = await model.step({
      sessionId,
      turn: 1,
      step,
      messages,
      tools: [],
      signal: new AbortController().signal,
    });
    const calls = reply.calls.map((c) => ({ ...c, id: c.id ?? '' }));
    messages.push({ role: 'assistant', text: reply.text, toolCalls: calls });
    if (!calls.length) return;
    const out = await client.runBatch({ sessionId, turn: 1, step, calls, startSeq, state });
    startSeq = out.nextSeq;
    state = out.state;
    for (const m of out.messages) if (m.role === 'tool') messages.push(m);
  }
}

async function bySession(client: SluiceClient, sessionId: string, n: number, canAfter?: number) {
  const s = await startSession(client, {
    sessionId,
    model: 'bench',
    endWhenIdle: true,
    maxStepsPerTurn: n + 5,
    ...(canAfter ? { continueAsNewAfterEvents: canAfter } : {}),
  });
  await s.post(String(n), { id: 'go' });
  const out = await s.result();
  if (out.lastTurn?.text !== 'done') throw new Error(`the session ended with ${JSON.stringify(out.lastTurn)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
