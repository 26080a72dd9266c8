// Client latency of a 1-call batch where eager start applies: an embedded agent, its worker and its
// client in one process over one NativeConnection. Sluice's runBatch against bare Temporal's
// `workflow.execute` as anyone writes it, plus each the other way (Sluice without eager start,
// bare with it), alternating one batch at a time; where the time goes from history timestamps.
import { temporal } from '@temporalio/proto';
import { type NativeConnection, Worker } from '@temporalio/worker';
import { SluiceClient } from '../client/client';
import { createSluiceWorker } from '../worker/worker';
import { bareActivities } from './bare-activities';
import config, { echo } from './config';
import type { ClientLatencyFigures, ClientSystem } from './result';
import { percentile, round } from './stats';

export interface ClientLatencyOptions {
  connection: NativeConnection;
  sluiceBundle: string;
  bareBundle: string;
  stateDir: string;
  samples: number;
  log: (line: string) => void;
}

const SYSTEMS: ClientSystem[] = ['sluice', 'bare', 'sluicePlain', 'bareEager'];

interface Sample {
  workflowId: string;
  /** Wall clock at the call, ms (history event times are wall clock too). */
  t0: number;
  startMs: number;
  totalMs: number;
  eager: boolean;
}

export async function runClientLatency(o: ClientLatencyOptions): Promise<ClientLatencyFigures> {
  const tag = `${process.pid}-${Date.now().toString(36)}`;
  const sluiceQueue = `bench-client-sluice-${tag}`;
  const bareQueue = `bench-client-bare-${tag}`;
  const sluiceWorker = await createSluiceWorker({
    connection: o.connection,
    taskQueue: sluiceQueue,
    config,
    stateDir: o.stateDir,
    workflowBundle: { codePath: o.sluiceBundle },
  });
  const bareWorker = await Worker.create({
    connection: o.connection,
    taskQueue: bareQueue,
    workflowBundle: { codePath: o.bareBundle },
    activities: bareActivities,
  });
  const running = Promise.all([sluiceWorker.run(), bareWorker.run()]);
  const sluice = new SluiceClient({ connection: o.connection, taskQueue: sluiceQueue });
  const sluicePlain = new SluiceClient({ connection: o.connection, taskQueue: sluiceQueue, eagerStart: false });
  const temporalClient = sluice.temporal;

  const one = async (system: ClientSystem, key: string): Promise<Sample> => {
    const text = `${system}-${key}`;
    const t0 = Date.now();
    const s = performance.now();
    if (system === 'sluice' || system === 'sluicePlain') {
      // runBatch is startBatch + result(); the two are timed apart to see the start call's share.
      const handle = await (system === 'sluice' ? sluice : sluicePlain).startBatch({
        sessionId: `bench-client-${tag}-${text}`,
        turn: 1,
        step: 1,
        calls: [{ id: 'c0', name: echo.name, arguments: JSON.stringify({ text }) }],
      });
      const startMs = performance.now() - s;
      const out = await handle.result();
      const first = out.results[0]?.result.content[0];
      if (out.results.length !== 1 || first?.type !== 'text' || first.text !== text)
        throw new Error(`client latency: batch ${text} returned ${JSON.stringify(out.results)}`);
      return {
        workflowId: handle.workflowId,
        t0,
        startMs,
        totalMs: performance.now() - s,
        eager: handle.eagerlyStarted,
      };
    }
    const workflowId = `bench-client-bare-${tag}-${text}`;
    // What any Temporal user writes: execute (= start + result), eager start asked for or not.
    const handle = await temporalClient.workflow.start('bareBatch', {
      taskQueue: bareQueue,
      workflowId,
      args: [{ calls: [{ id: 'c0', arguments: JSON.stringify({ text }) }], maxParallel: 1 }],
      ...(system === 'bareEager' ? { requestEagerStart: true } : {}),
    });
    const startMs = performance.now() - s;
    const out = (await handle.result()) as { content: string }[];
    if (out.length !== 1 || out[0].content !== text)
      throw new Error(`client latency: bare ${text} returned wrong results`);
    return { workflowId, t0, startMs, totalMs: performance.now() - s, eager: handle.eagerlyStarted };
  };

  try {
    o.log(`client latency: ${o.samples} one-call batches per system, one at a time, worker and client in one process`);
    for (let i = 0; i < 3; i++) for (const system of SYSTEMS) await one(system, `warm-${i}`);
    const samples = Object.fromEntries(SYSTEMS.map((s) => [s, [] as Sample[]])) as Record<ClientSystem, Sample[]>;
    for (let i = 0; i < o.samples; i++) {
      // Each system takes each place in the order in turn, so a change in load weighs on all alike.
      for (let k = 0; k < SYSTEMS.length; k++) {
        const system = SYSTEMS[(i + k) % SYSTEMS.length];
        samples[system].push(await one(system, `${i}`));
      }
    }
    const systems = {} as ClientLatencyFigures['systems'];
    for (const system of SYSTEMS) {
      const list = samples[system];
      const phases: Record<string, number[]> = {};
      for (const sample of list) {
        const history = await temporalClient.workflow.getHandle(sample.workflowId).fetchHistory();
        for (const [name, ms] of Object.entries(phasesOf(history, sample))) (phases[name] ??= []).push(ms);
      }
      const totals = list.map((x) => x.totalMs);
      systems[system] = {
        p50Ms: round(percentile(totals, 50), 1),
        p99Ms: round(percentile(totals, 99), 1),
        eagerStarts: list.filter((x) => x.eager).length,
        phasesP50Ms: Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, round(percentile(v, 50), 1)])),
      };
    }
    const figures: ClientLatencyFigures = {
      samples: o.samples,
      systems,
      ratio: round(systems.sluice.p50Ms / systems.bare.p50Ms),
      ratioToBareEager: round(systems.sluice.p50Ms / systems.bareEager.p50Ms),
      ratioPlainToBare: round(systems.sluicePlain.p50Ms / systems.bare.p50Ms),
    };
    o.log(
      `  runBatch p50 ${systems.sluice.p50Ms} ms (eager ${systems.sluice.eagerStarts}/${o.samples}), bare execute ${systems.bare.p50Ms} ms: ${figures.ratio}×; without eager start ${systems.sluicePlain.p50Ms} ms; bare with eager start ${systems.bareEager.p50Ms} ms`,
    );
    return figures;
  } finally {
    sluiceWorker.shutdown();
    bareWorker.shutdown();
    await running;
  }
}

/**
 * Where one batch's time went: the client's start call, then from history timestamps the first
 * workflow task's wait and run, the body activity, the last workflow task's wait and run, and the
 * wait from the close event to the client holding the result (wall clock on one machine).
 */
function phasesOf(history: temporal.api.history.v1.IHistory, s: Sample): Record<string, number> {
  const T = temporal.api.enums.v1.EventType;
  const events = history.events ?? [];
  const at = (i: number) => {
    const t = events[i]?.eventTime;
    return t ? Number(t.seconds) * 1000 + (t.nanos ?? 0) / 1e6 : NaN;
  };
  const first = (type: number) => events.findIndex((e) => e.eventType === type);
  const last = (type: number) => events.map((e) => e.eventType).lastIndexOf(type);
  const wftStarted = first(T.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  const wftCompleted = first(T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  const lastStarted = last(T.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  const lastCompleted = last(T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  const scheduled = first(T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
  const completed = first(T.EVENT_TYPE_ACTIVITY_TASK_COMPLETED);
  return {
    'start call': s.startMs,
    'first workflow task: wait': at(wftStarted) - at(wftStarted - 1),
    'first workflow task: run': at(wftCompleted) - at(wftStarted),
    'body activity': at(completed) - at(scheduled),
    'last workflow task: wait': at(lastStarted) - at(lastStarted - 1),
    'last workflow task: run': at(lastCompleted) - at(lastStarted),
    'closed → client': s.t0 + s.totalMs - at(events.length - 1),
    'workflow tasks': events.filter((e) => e.eventType === T.EVENT_TYPE_WORKFLOW_TASK_STARTED).length,
    'history events': events.length,
  };
}
