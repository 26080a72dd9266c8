// What a durable session costs per step on this machine, against the same loop run by hand (call
// the model in the caller's process, run each batch with client.runBatch), and how much history
// a step adds at step 10, 100 and 300. The model is scripted and answers at once, so the figures
// are Sluice's own overhead. Run: `npx tsx bench/session.ts [steps=50] [long=300]`.
//
// Beside the wall time per step it reports what does not swing with the machine's load: this
// process's CPU per step (worker and client run here; the dev server is another process), and
// where a step's time goes, from the histories of the last round: every gap between two
// consecutive events, by the pair of event types, per step (the session's own history, then
// its batches' against the hand loop's batches), and how many events and workflow tasks a step
// takes in each.
//
// Env: BENCH_FAST_QUEUE=1 starts the dev server with its transfer queue polled at up to 1,000 a
// second instead of 20 (TRANSFER_QUEUE_FAST: each hop through the server costs about 1 ms, not up
// to 50); BENCH_TIMELINE=1 also prints one step's events, the session's and its batch's merged,
// in ms from the model step's scheduling.
//
// Each round runs the session twice: its model step an activity (the default), and a local
// activity (`modelCall: { local: true }`); the breakdown and the timeline are printed for both.
// Either way a step's batch is started and awaited by the session's activity (sluiceSessionBatch),
// with the model step an activity run first as a local activity: the session's history shows its
// marker where it once showed a child (and the activity's three events when the batch ran past the
// local wait).
import * as fs from 'node:fs';
import * as os from 'node:os';
import type { temporal } from '@temporalio/proto';
import type { scriptedModel } from '../agent/adapters/scripted';
import type { SluiceClient } from '../client/client';
import { startSession } from '../client/session';
import type { AgentMessage } from '../pipeline/session';
import type { SessionState } from '../pipeline/types';
import { readSessionLog } from '../stores/sink';
import { counts, eventMs, eventType, fetchEvents, gaps, printGaps } from './history-gaps';
import { FAST_QUEUE, startSessionBench } from './session-bench';
import { batchWorkflowId } from '../workflows/definitions';
import { sessionWorkflowId } from '../workflows/session-definitions';

/** The session's activity that starts and awaits a step's batch (worker/session-batch.ts). */
const BATCH_ACTIVITY = 'sluiceSessionBatch';
const STEPS = Number(process.argv[2] ?? 50);
const LONG = Number(process.argv[3] ?? 300);
const ROUNDS = 3;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const { stateDir, server, client, model, close } = await startSessionBench('session');
  const serverCpuMs = () => {
    try {
      const f = fs.readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
    } catch {
      return Number.NaN;
    }
  };
  const tag = Date.now().toString(36);
  try {
    // warm-up: bundles loaded, connections open
    await byHand(client, `warm-hand-${tag}`, 3, model);
    await bySession(client, `warm-session-${tag}`, 3);
    await bySession(client, `warm-local-${tag}`, 3, undefined, true);

    const hand: number[] = [];
    const session: number[] = [];
    const handCpu: number[] = [];
    const sessionCpu: number[] = [];
    const handServer: number[] = [];
    const sessionServer: number[] = [];
    const local: number[] = [];
    const localCpu: number[] = [];
    const localServer: number[] = [];
    const cpuMs = () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    };
    const load0 = os.loadavg()[0];
    for (let r = 0; r < ROUNDS; r++) {
      let t = performance.now();
      let c = cpuMs();
      let sc = serverCpuMs();
      await byHand(client, `hand-${tag}-${r}`, STEPS, model);
      hand.push((performance.now() - t) / (STEPS + 1));
      handCpu.push((cpuMs() - c) / (STEPS + 1));
      handServer.push((serverCpuMs() - sc) / (STEPS + 1));
      t = performance.now();
      c = cpuMs();
      sc = serverCpuMs();
      await bySession(client, `session-${tag}-${r}`, STEPS);
      session.push((performance.now() - t) / (STEPS + 1));
      sessionCpu.push((cpuMs() - c) / (STEPS + 1));
      sessionServer.push((serverCpuMs() - sc) / (STEPS + 1));
      t = performance.now();
      c = cpuMs();
      sc = serverCpuMs();
      await bySession(client, `local-${tag}-${r}`, STEPS, undefined, true);
      local.push((performance.now() - t) / (STEPS + 1));
      localCpu.push((cpuMs() - c) / (STEPS + 1));
      localServer.push((serverCpuMs() - sc) / (STEPS + 1));
    }
    const h = median(hand);
    const s = median(session);
    const hc = median(handCpu);
    const sc = median(sessionCpu);
    const l = median(local);
    const lc = median(localCpu);
    console.log(
      `per step (${STEPS} steps of one tool call + the answer, median of ${ROUNDS} rounds; dev server transfer queue ${FAST_QUEUE ? 'fast (TRANSFER_QUEUE_FAST)' : 'at its default'}; load average ${load0.toFixed(1)} → ${os.loadavg()[0].toFixed(1)}): by hand ${h.toFixed(1)} ms (model call in process + client.runBatch), as a session ${s.toFixed(1)} ms; the session adds ${(s - h).toFixed(1)} ms a step (${(s / h).toFixed(2)}x); with modelCall.local ${l.toFixed(1)} ms, ${(l - h).toFixed(1)} ms a step added (${(l / h).toFixed(2)}x)`,
    );
    console.log(
      `CPU of this process (worker + client) per step: by hand ${hc.toFixed(2)} ms, as a session ${sc.toFixed(2)} ms (${(sc / hc).toFixed(2)}x), with modelCall.local ${lc.toFixed(2)} ms (${(lc / hc).toFixed(2)}x); of the dev server: by hand ${median(handServer).toFixed(2)} ms, as a session ${median(sessionServer).toFixed(2)} ms, with modelCall.local ${median(localServer).toFixed(2)} ms`,
    );
    console.log('\n## the session, model step as an activity');
    await breakdown(client, `hand-${tag}-${ROUNDS - 1}`, `session-${tag}-${ROUNDS - 1}`, STEPS);
    if (process.env.BENCH_TIMELINE === '1')
      await timeline(client, `session-${tag}-${ROUNDS - 1}`, Math.ceil(STEPS / 2));
    console.log('\n## the session, modelCall.local');
    await breakdown(client, `hand-${tag}-${ROUNDS - 1}`, `local-${tag}-${ROUNDS - 1}`, STEPS);
    if (process.env.BENCH_TIMELINE === '1') await timeline(client, `local-${tag}-${ROUNDS - 1}`, Math.ceil(STEPS / 2));

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
    await close();
  }
}

/**
 * One step of a session as it happened: its events and its batch's, merged, in ms from the model
 * step's scheduling (a local model step has no event of its own: from the previous batch's end).
 */
async function timeline(client: SluiceClient, sessionId: string, step: number) {
  const session = (await client.temporal.workflow.getHandle(sessionWorkflowId(sessionId)).fetchHistory()).events ?? [];
  const batch =
    (await client.temporal.workflow.getHandle(batchWorkflowId(sessionId, 1, step)).fetchHistory()).events ?? [];
  // The model steps' activities, and each batch's end: a child's completion (a run recorded before
  // the batch activity), or the completion of the activity that started and awaited it.
  const activity = new Map(
    session
      .filter((e) => eventType(e) === 'activity_task_scheduled')
      .map((e) => [String(e.eventId), e.activityTaskScheduledEventAttributes?.activityType?.name]),
  );
  const scheduled = session.filter(
    (e) => eventType(e) === 'activity_task_scheduled' && activity.get(String(e.eventId)) !== BATCH_ACTIVITY,
  );
  const ended = session.filter(
    (e) =>
      eventType(e) === 'child_workflow_execution_completed' ||
      localBatchEnd(e) ||
      (eventType(e) === 'activity_task_completed' &&
        activity.get(String(e.activityTaskCompletedEventAttributes?.scheduledEventId)) === BATCH_ACTIVITY),
  );
  const from = eventMs(scheduled.length ? scheduled[step - 1] : ended[step - 2]);
  const to = eventMs(scheduled.length ? scheduled[step] : ended[step - 1]);
  const rows = [
    ...session.map((e) => ({ ms: eventMs(e), who: 'session', e })),
    ...batch.map((e) => ({ ms: eventMs(e), who: 'batch', e })),
  ]
    .filter((r) => r.ms >= from && r.ms <= to)
    .sort((a, b) => a.ms - b.ms);
  console.log(`\nstep ${step} of ${sessionId}, ms from the model step's scheduling (+ the gap to the line before):`);
  let last = from;
  for (const r of rows) {
    console.log(
      `  ${(r.ms - from).toFixed(1).padStart(7)} +${(r.ms - last).toFixed(1).padStart(6)}  ${r.who.padEnd(8)} ${r.e.eventId} ${eventType(r.e)}`,
    );
    last = r.ms;
  }
}

/** The marker of the batch activity run as a local activity, with the batch's output (not that it still runs). */
function localBatchEnd(e: temporal.api.history.v1.IHistoryEvent): boolean {
  const marker = e.markerRecordedEventAttributes;
  if (marker?.markerName !== 'core_local_activity') return false;
  const text = (k: string) => Buffer.from(marker.details?.[k]?.payloads?.[0]?.data ?? []).toString();
  return text('data').includes(`"activity_type":"${BATCH_ACTIVITY}"`) && !text('result').includes('"stillRunning"');
}

/** Where a step's time goes: the session's history, its batches, and the hand loop's batches. */
async function breakdown(client: SluiceClient, handId: string, sessionId: string, steps: number) {
  const batches = (id: string) => Array.from({ length: steps }, (_, i) => batchWorkflowId(id, 1, i + 1));
  const table = (title: string, m: Map<string, number>) => printGaps(title, 'step', m);
  const session = await fetchEvents(client, [sessionWorkflowId(sessionId)]);
  const children = await fetchEvents(client, batches(sessionId));
  const hand = await fetchEvents(client, batches(handId));
  console.log(`\nper step: the session workflow ${counts(session, steps + 1)}`);
  console.log(`  its batch ${counts(children, steps)}`);
  console.log(`  the hand loop's batch (client.runBatch) ${counts(hand, steps)}`);
  table('the session workflow, between consecutive events', gaps(session, steps + 1));
  table("the session's batches", gaps(children, steps));
  table("the hand loop's batches (client.runBatch)", gaps(hand, steps));
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

async function bySession(client: SluiceClient, sessionId: string, n: number, canAfter?: number, local = false) {
  const s = await startSession(client, {
    sessionId,
    model: 'bench',
    ...(local ? { modelCall: { local: true } } : {}),
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
