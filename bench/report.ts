// The bench result as markdown tables: what `npm run bench` prints and docs/performance.md quotes.
import type { HopFigures } from './hops';
import type { BenchResult, Cell, ClientLatencyFigures, ClientSystem, ContentionFigures } from './result';

const f = (x: number | undefined, digits = 1) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(digits));

export function markdownReport(r: BenchResult, before?: BenchResult): string {
  const lines: string[] = [];
  lines.push(
    `Run ${r.meta.date} at ${r.meta.commit}${r.meta.label ? ` (${r.meta.label})` : ''}: node ${r.meta.node}, ${r.meta.cpus} cores, load average ${r.meta.loadAvgStart[0]} at start, ${r.meta.batchesPerCell} batches per cell and system (at most ${r.meta.maxCallsPerCell} calls, at least the number in flight; the batches column says how many ran), maxParallel ${r.meta.maxParallel}, worker sticky cache ${r.meta.maxCachedWorkflows} workflows, ${r.meta.eagerActivitiesPerTask ?? 3} eager activities per workflow task, ${r.meta.durationSec} s in all.`,
  );
  lines.push('');
  lines.push(
    '| calls/batch | in flight | batches | Sluice p50 / p99 ms | bare p50 / p99 ms | in-process p50 ms | Sluice batches/s | bare batches/s | in-process batches/s | events/call Sluice / bare | history bytes/call Sluice / bare | worker CPU ms/call Sluice / bare | worker RSS MiB (peak) | p50 Sluice/bare | throughput Sluice/bare | CPU/call Sluice/bare |',
  );
  lines.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const c of r.grid) {
    lines.push(
      `| ${c.batchSize} | ${c.concurrency} | ${c.batches} | ${f(c.sluice.p50Ms)} / ${f(c.sluice.p99Ms)} | ${f(c.bare.p50Ms)} / ${f(c.bare.p99Ms)} | ${f(c.inProcess.p50Ms, 3)} | ${f(c.sluice.batchesPerSec)} | ${f(c.bare.batchesPerSec)} | ${f(c.inProcess.batchesPerSec, 0)} | ${f(c.sluice.eventsPerCall)} / ${f(c.bare.eventsPerCall)} | ${f(c.sluice.historyBytesPerCall, 0)} / ${f(c.bare.historyBytesPerCall, 0)} | ${f(c.sluice.workerCpuMsPerCall, 2)} / ${f(c.bare.workerCpuMsPerCall, 2)} | ${f(c.sluice.workerRssMiB, 0)} (${f(c.sluice.workerPeakRssMiB, 0)}) | ${f(c.ratio.p50, 2)} | ${f(c.ratio.throughput, 2)} | ${f(c.ratio.workerCpuPerCall, 2)} |`,
    );
  }
  lines.push(...hopsReport('Hops per batch in the grid', r.grid));
  if (r.contention) lines.push(...contentionReport(r.contention));
  if (r.approval) {
    const a = r.approval;
    lines.push('');
    lines.push('| approval path | figure |');
    lines.push('|---|---:|');
    lines.push(
      `| decision by signal → batch result, p50 / p99 (${a.signalToResult.samples} batches, one at a time) | ${f(a.signalToResult.p50Ms)} / ${f(a.signalToResult.p99Ms)} ms |`,
    );
    if (a.bare)
      lines.push(
        `| the same for a bare workflow waiting on a signal (alternating with Sluice's), p50 / p99 | ${f(a.bare.signalToResult.p50Ms)} / ${f(a.bare.signalToResult.p99Ms)} ms (Sluice/bare ${f(a.signalToResultRatio, 2)}) |`,
      );
    lines.push(
      `| decision by update → batch result, p50 / p99 (${a.updateToResult.samples} batches) | ${f(a.updateToResult.p50Ms)} / ${f(a.updateToResult.p99Ms)} ms |`,
    );
    lines.push(
      `| ${a.bulk.batches} batches started / all awaiting approval after | ${f(a.bulk.startMs, 0)} / ${f(a.bulk.allPendingMs, 0)} ms |`,
    );
    lines.push(
      `| worker RSS idle → with ${a.bulk.batches} awaiting | ${f(a.bulk.workerRssIdleMiB, 0)} → ${f(a.bulk.workerRssAwaitingMiB, 0)} MiB (${a.bulk.workerRssAboveIdleMiB !== undefined ? `+${f(a.bulk.workerRssAboveIdleMiB, 0)}` : '–'}) |`,
    );
    if (a.bulk.evictedSignalToResult?.samples)
      lines.push(
        `| decision by signal → batch result on a batch out of the sticky cache (replays first), p50 / p99 (${a.bulk.evictedSignalToResult.samples} of the first bulk batches, one at a time) | ${f(a.bulk.evictedSignalToResult.p50Ms)} / ${f(a.bulk.evictedSignalToResult.p99Ms)} ms |`,
      );
    if (a.bulk.workerRssAwaitingAfterGcMiB !== undefined)
      lines.push(
        `| with ${a.bulk.batches} awaiting, after a full GC: worker RSS / workflow threads' heap (idle ${f(a.bulk.workflowHeapIdleMiB, 0)}) / main heap | ${f(a.bulk.workerRssAwaitingAfterGcMiB, 0)} / ${f(a.bulk.workflowHeapAwaitingAfterGcMiB, 0)} / ${f(a.bulk.mainHeapAwaitingAfterGcMiB, 0)} MiB |`,
      );
    lines.push(
      `| bulk approve by signal: signals sent / all ${a.bulk.batches} results in | ${f(a.bulk.signalsSentMs, 0)} / ${f(a.bulk.drainMs, 0)} ms (${f(a.bulk.drainBatchesPerSec)} batches/s) |`,
    );
    lines.push(`| worker peak RSS while draining | ${f(a.bulk.workerPeakRssDrainMiB, 0)} MiB |`);
    if (a.bare?.bulk)
      lines.push(
        `| the same bulk approve of ${a.bare.bulk.batches} bare workflows waiting on a signal: signals sent / all results in | ${f(a.bare.bulk.signalsSentMs, 0)} / ${f(a.bare.bulk.drainMs, 0)} ms (${f(a.bare.bulk.drainBatchesPerSec)} batches/s) |`,
      );
  }
  if (r.localBodies) {
    const l = r.localBodies;
    lines.push('');
    lines.push(
      `| local bodies (\`local_echo\`, ${l.batches} batches of ${l.batchSize}, one in flight) | Sluice | bare |`,
    );
    lines.push('|---|---:|---:|');
    lines.push(
      `| p50 / p99 ms | ${f(l.sluice.p50Ms)} / ${f(l.sluice.p99Ms)} | ${f(l.bare.p50Ms)} / ${f(l.bare.p99Ms)} |`,
    );
    lines.push(
      `| history events / bytes per call | ${f(l.sluice.eventsPerCall, 2)} / ${f(l.sluice.historyBytesPerCall, 0)} | (grid) |`,
    );
    lines.push(
      `| worker CPU ms per call | ${f(l.sluice.workerCpuMsPerCall, 2)} | ${f(l.bare.workerCpuMsPerCall, 2)} (Sluice/bare ${f(l.workerCpuRatio, 2)}) |`,
    );
  }
  if (r.codeMode) {
    const m = r.codeMode;
    lines.push('');
    lines.push('| Code Mode | figure |');
    lines.push('|---|---:|');
    lines.push(
      `| trivial program (\`return 1\`) in run_code's body, p50 / p99 (${m.trivialInBody.samples} runs, warm pool) | ${f(m.trivialInBody.p50Ms)} / ${f(m.trivialInBody.p99Ms)} ms |`,
    );
    lines.push(
      `| the same as a one-call batch, start to result, p50 (a one-call batch of serial_echo: ${f(m.trivialBatch.toolBatchP50Ms)} ms) | ${f(m.trivialBatch.p50Ms)} ms |`,
    );
    lines.push(
      `| ${m.subCalls.calls} sub-calls of serial_echo in one program / ${m.subCalls.calls} direct calls in one batch, per call (${m.subCalls.rounds} rounds each) | ${f(m.subCalls.subCallMsPerCall)} / ${f(m.subCalls.directMsPerCall)} ms (${f(m.subCalls.ratio, 2)}×) |`,
    );
  }
  if (r.clientLatency) lines.push(...clientReport(r.clientLatency));
  lines.push('');
  lines.push('| target | value | limit | met |');
  lines.push('|---|---:|---|---|');
  for (const t of r.targets) lines.push(`| ${t.name} | ${f(t.value, 2)} | ${t.limit} | ${t.met ? 'yes' : '**no**'} |`);
  if (r.meta.sections?.length) {
    lines.push('');
    lines.push('| section | seconds | load average (1 min) at start → end |');
    lines.push('|---|---:|---:|');
    for (const s of r.meta.sections)
      lines.push(`| ${s.name} | ${f(s.seconds)} | ${f(s.loadAvgStart, 2)} → ${f(s.loadAvgEnd, 2)} |`);
  }
  if (before) lines.push(...changeReport(r, before));
  if (before) {
    lines.push('');
    lines.push(`Before (${before.meta.commit}, ${before.meta.date}) → after:`);
    lines.push('');
    lines.push(
      '| calls/batch | in flight | Sluice p50 ms | p50 Sluice/bare | throughput Sluice/bare | events/call | history bytes/call |',
    );
    lines.push('|---:|---:|---:|---:|---:|---:|---:|');
    for (const c of r.grid) {
      const b = before.grid.find((x) => x.batchSize === c.batchSize && x.concurrency === c.concurrency);
      lines.push(
        `| ${c.batchSize} | ${c.concurrency} | ${pair(b?.sluice.p50Ms, c.sluice.p50Ms)} | ${pair(b?.ratio.p50, c.ratio.p50, 2)} | ${pair(b?.ratio.throughput, c.ratio.throughput, 2)} | ${pair(b?.sluice.eventsPerCall, c.sluice.eventsPerCall)} | ${pair(b?.sluice.historyBytesPerCall, c.sluice.historyBytesPerCall, 0)} |`,
      );
    }
    if (before.approval && r.approval) {
      const [b, a] = [before.approval, r.approval];
      lines.push('');
      lines.push('| approval path | before → after |');
      lines.push('|---|---:|');
      lines.push(
        `| signal → result p50 / p99 ms | ${pair(b.signalToResult.p50Ms, a.signalToResult.p50Ms)} / ${pair(b.signalToResult.p99Ms, a.signalToResult.p99Ms)} |`,
      );
      lines.push(
        `| worker RSS with ${a.bulk.batches} awaiting, MiB | ${pair(b.bulk.workerRssAwaitingMiB, a.bulk.workerRssAwaitingMiB, 0)} |`,
      );
      lines.push(`| drain after bulk approve, ms | ${pair(b.bulk.drainMs, a.bulk.drainMs, 0)} |`);
      lines.push(
        `| drain after bulk approve, batches/s | ${pair(b.bulk.drainBatchesPerSec, a.bulk.drainBatchesPerSec)} |`,
      );
      if (a.signalToResultRatio !== undefined)
        lines.push(`| signal → result p50, Sluice/bare | ${pair(b.signalToResultRatio, a.signalToResultRatio, 2)} |`);
    }
  }
  lines.push('');
  lines.push(
    "Where Sluice's history events come from (per call, one sampled batch of each size, most concurrent cell):",
  );
  lines.push('');
  const sizes = [...new Set(r.grid.map((c) => c.batchSize))];
  const sample = sizes.map((s) => r.grid.filter((c) => c.batchSize === s).at(-1)!) as Cell[];
  const types = [...new Set(sample.flatMap((c) => Object.keys(c.sluice.eventTypesPerCall ?? {})))].sort();
  lines.push(`| event type | ${sample.map((c) => `${c.batchSize} call(s)`).join(' | ')} |`);
  lines.push(`|---|${sample.map(() => '---:').join('|')}|`);
  for (const t of types)
    lines.push(`| ${t} | ${sample.map((c) => f(c.sluice.eventTypesPerCall?.[t] ?? 0, 2)).join(' | ')} |`);
  lines.push(...bytesReport(r));
  return `${lines.join('\n')}\n`;
}

/** Where each byte of history goes, for the batch size the target is set at (10) or the nearest. */
function bytesReport(r: BenchResult): string[] {
  const sizes = [...new Set(r.grid.map((c) => c.batchSize))];
  if (sizes.length === 0) return [];
  const size = sizes.reduce((a, b) => (Math.abs(b - 10) < Math.abs(a - 10) ? b : a));
  const c = r.grid.filter((x) => x.batchSize === size).at(-1)!;
  if (!c.sluice.eventBytesPerCall || !c.bare.eventBytesPerCall) return [];
  const lines: string[] = [
    '',
    `Where the history bytes go, per call (one sampled batch of ${size} calls, ${c.concurrency} in flight; encoded protobuf bytes; "payload" is the part inside payloads):`,
    '',
  ];
  const types = [...new Set([...Object.keys(c.sluice.eventBytesPerCall), ...Object.keys(c.bare.eventBytesPerCall)])];
  lines.push('| event type | Sluice events | Sluice bytes (payload) | bare events | bare bytes (payload) |');
  lines.push('|---|---:|---:|---:|---:|');
  const cellOf = (x: { bytes: number; payloadBytes: number } | undefined) =>
    x ? `${f(x.bytes, 0)} (${f(x.payloadBytes, 0)})` : '–';
  for (const t of types)
    lines.push(
      `| ${t} | ${f(c.sluice.eventTypesPerCall?.[t] ?? 0, 2)} | ${cellOf(c.sluice.eventBytesPerCall[t])} | ${f(c.bare.eventTypesPerCall?.[t] ?? 0, 2)} | ${cellOf(c.bare.eventBytesPerCall[t])} |`,
    );
  lines.push(
    `| all | ${f(c.sluice.eventsPerCall, 2)} | ${f(c.sluice.historyBytesPerCall, 0)} | ${f(c.bare.eventsPerCall, 2)} | ${f(c.bare.historyBytesPerCall, 0)} |`,
  );
  const top = (m: Record<string, number> | undefined, n: number) => Object.entries(m ?? {}).slice(0, n);
  lines.push('', 'The payloads, per call (bytes):', '', '| payload | Sluice | bare |', '|---|---:|---:|');
  const names = [
    ...new Set([...top(c.sluice.payloadBytesPerCall, 14), ...top(c.bare.payloadBytesPerCall, 14)].map(([k]) => k)),
  ];
  for (const k of names)
    lines.push(`| ${k} | ${f(c.sluice.payloadBytesPerCall?.[k], 1)} | ${f(c.bare.payloadBytesPerCall?.[k], 1)} |`);
  if (c.sluice.payloadKeyBytesPerCall) {
    lines.push(
      '',
      "Inside Sluice's larger payloads, per call (bytes of JSON text by key; `[]` is each item of a list):",
      '',
    );
    lines.push('| payload .key | bytes |', '|---|---:|');
    for (const [k, v] of top(c.sluice.payloadKeyBytesPerCall, 24)) lines.push(`| ${k} | ${f(v, 1)} |`);
  }
  return lines;
}

/** The client-latency section: the four systems side by side, then where their time went. */
/**
 * The grid under contention (issue 49): per cell, each repetition's Sluice/bare ratios in the order
 * run, and the worst of them, which is the cell's figure; then the hops of each cell.
 */
function contentionReport(c: ContentionFigures): string[] {
  const list = (xs: number[], digits = 2) => xs.map((x) => f(x, digits)).join(' · ');
  const lines = [
    '',
    `Under contention: the grid with ${c.busyLoops} busy loop(s) beside it (started and stopped by the bench, the same for both systems), ${c.reps} repetition(s), Sluice and bare alternating within each. Each repetition's figure in the order run; the cell's figure is its worst repetition.`,
    '',
    '| calls/batch | in flight | batches/rep | load avg | Sluice p50 / p95 ms | bare p50 / p95 ms | worker CPU ms/call Sluice / bare | p50 Sluice/bare | p95 Sluice/bare | throughput Sluice/bare | CPU/call Sluice/bare | worst p50 / throughput / CPU |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const cell of c.cells) {
    const reps = cell.reps;
    lines.push(
      `| ${cell.batchSize} | ${cell.concurrency} | ${cell.batches} | ${list(
        reps.map((x) => x.loadAvg),
        1,
      )} | ${reps.map((x) => `${f(x.sluice.p50Ms, 0)} / ${f(x.sluice.p95Ms, 0)}`).join(' · ')} | ${reps.map((x) => `${f(x.bare.p50Ms, 0)} / ${f(x.bare.p95Ms, 0)}`).join(' · ')} | ${reps.map((x) => `${f(x.sluice.workerCpuMsPerCall, 2)} / ${f(x.bare.workerCpuMsPerCall, 2)}`).join(' · ')} | ${list(reps.map((x) => x.ratio.p50))} | ${list(reps.map((x) => x.ratio.p95))} | ${list(reps.map((x) => x.ratio.throughput))} | ${list(reps.map((x) => x.ratio.workerCpuPerCall))} | **${f(cell.worst.p50, 2)}** / **${f(cell.worst.throughput, 2)}** / **${f(cell.worst.workerCpuPerCall, 2)}** |`,
    );
  }
  return [...lines, ...hopsReport('Hops per batch under contention', c.cells)];
}

/**
 * Where a batch's time goes, hop by hop, Sluice beside bare, per cell: how many workflow tasks,
 * activity tasks and local activities it took, and their waits to start and runs summed over the
 * batch (hops that overlap each count), with the batch's own length for scale.
 */
function hopsReport(
  title: string,
  cells: {
    batchSize: number;
    concurrency: number;
    sluice?: { hops?: HopFigures };
    bare?: { hops?: HopFigures };
    hops?: { sluice: HopFigures; bare: HopFigures };
  }[],
): string[] {
  const rows = cells.flatMap((c) => {
    const s = c.hops?.sluice ?? c.sluice?.hops;
    const b = c.hops?.bare ?? c.bare?.hops;
    return s && b ? [{ c, s, b }] : [];
  });
  if (!rows.length) return [];
  const lines = [
    '',
    `${title}, from the sampled histories, Sluice / bare (ms summed over the batch; hops that overlap each count). A hop is a workflow task, an activity task or a local activity: a turn that waits for a core. Local activity time runs inside a workflow task (from the task's start to the activity's completion).`,
    '',
    '| calls/batch | in flight | histories | hops | workflow tasks | workflow task wait ms | workflow task run ms | activity tasks | activity wait ms | activity run ms | local activities (ms) | timers / signals / children | batch ms (first → last event) |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const two = (a: number, b: number, digits = 1) => `${f(a, digits)} / ${f(b, digits)}`;
  for (const { c, s, b } of rows)
    lines.push(
      `| ${c.batchSize} | ${c.concurrency} | ${s.histories} / ${b.histories} | ${two(s.hops, b.hops)} | ${two(s.workflowTasks, b.workflowTasks)} | ${two(s.workflowTaskWaitMs, b.workflowTaskWaitMs)} | ${two(s.workflowTaskRunMs, b.workflowTaskRunMs)} | ${two(s.activityTasks, b.activityTasks)} | ${two(s.activityWaitMs, b.activityWaitMs)} | ${two(s.activityRunMs, b.activityRunMs)} | ${f(s.localActivities)} (${f(s.localActivityMs)}) / ${f(b.localActivities)} (${f(b.localActivityMs)}) | ${f(s.timers, 0)}/${f(s.signals, 0)}/${f(s.childWorkflows, 0)} / ${f(b.timers, 0)}/${f(b.signals, 0)}/${f(b.childWorkflows, 0)} | ${two(s.batchMs, b.batchMs, 0)} |`,
    );
  return lines;
}

function clientReport(c: ClientLatencyFigures): string[] {
  const names: [ClientSystem, string][] = [
    ['sluice', 'Sluice `runBatch` (eager start)'],
    ['bare', 'bare `workflow.execute`'],
    ['sluicePlain', 'Sluice `runBatch`, `eagerStart: false`'],
    ['bareEager', 'bare `workflow.execute`, `requestEagerStart`'],
  ];
  const lines = [
    '',
    `Client latency: one-call batches, one at a time, ${c.samples} per system in turn, the worker in the client's process on one NativeConnection. \`runBatch\` / bare: ${f(c.ratio, 2)}× (against bare with eager start: ${f(c.ratioToBareEager, 2)}×; Sluice without eager start / bare: ${f(c.ratioPlainToBare, 2)}×).`,
    '',
    `| | ${names.map(([, n]) => n).join(' | ')} |`,
    `|---|${names.map(() => '---:').join('|')}|`,
    `| p50 / p99 ms | ${names.map(([k]) => `${f(c.systems[k].p50Ms)} / ${f(c.systems[k].p99Ms)}`).join(' | ')} |`,
    `| started eagerly | ${names.map(([k]) => `${c.systems[k].eagerStarts}/${c.samples}`).join(' | ')} |`,
  ];
  const phases = [...new Set(names.flatMap(([k]) => Object.keys(c.systems[k].phasesP50Ms)))];
  for (const p of phases)
    lines.push(
      `| ${p}, p50${p.includes('tasks') || p.includes('events') ? '' : ' ms'} | ${names.map(([k]) => f(c.systems[k].phasesP50Ms[p])).join(' | ')} |`,
    );
  return lines;
}

/** One figure of two runs, and whether lower or higher is better. */
export interface Change {
  name: string;
  before?: number;
  after?: number;
  better: 'lower' | 'higher';
  /** Each run's noise band as a fraction of the figure; 0 for a counted figure (events, bytes). */
  bandBefore?: number;
  bandAfter?: number;
}

/** How far a figure moved between the rounds of one cell: half the spread, over the mean. */
export function roundBand(values: number[] | undefined): number | undefined {
  if (!values || values.length < 2 || values.some((v) => !Number.isFinite(v))) return undefined;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return mean > 0 ? (Math.max(...values) - Math.min(...values)) / 2 / mean : undefined;
}

/**
 * The band a change is read against: both runs' bands added (a figure can sit at the top of one
 * run's band and the bottom of the other's); with only this run's, it stands for both.
 */
export function combinedBand(c: Pick<Change, 'bandBefore' | 'bandAfter'>): number | undefined {
  if (c.bandAfter === undefined) return c.bandBefore === undefined ? undefined : 2 * c.bandBefore;
  return c.bandAfter + (c.bandBefore ?? c.bandAfter);
}

export function verdict(c: Change): string {
  if (c.before === undefined || c.after === undefined || !Number.isFinite(c.before) || !Number.isFinite(c.after))
    return '–';
  if (c.before === 0) return c.after === 0 ? 'same' : '–';
  const change = (c.after - c.before) / Math.abs(c.before);
  const band = combinedBand(c);
  if (band === undefined) return 'no band';
  if (Math.abs(change) <= band) return band === 0 ? 'same' : 'within noise';
  return change < 0 === (c.better === 'lower') ? 'better' : '**worse**';
}

/** Every figure of both runs side by side: the change, the noise band, and what it means. */
function changeReport(r: BenchResult, before: BenchResult): string[] {
  const rows: Change[] = [];
  for (const c of r.grid) {
    const b = before.grid.find((x) => x.batchSize === c.batchSize && x.concurrency === c.concurrency);
    const at = `${c.batchSize}×${c.concurrency}`;
    rows.push(
      {
        name: `${at} p50 Sluice/bare`,
        before: b?.ratio.p50,
        after: c.ratio.p50,
        better: 'lower',
        bandBefore: roundBand(b?.roundRatios?.p50),
        bandAfter: roundBand(c.roundRatios?.p50),
      },
      {
        name: `${at} throughput Sluice/bare`,
        before: b?.ratio.throughput,
        after: c.ratio.throughput,
        better: 'higher',
        bandBefore: roundBand(b?.roundRatios?.throughput),
        bandAfter: roundBand(c.roundRatios?.throughput),
      },
      {
        name: `${at} worker CPU/call Sluice/bare`,
        before: b?.ratio.workerCpuPerCall,
        after: c.ratio.workerCpuPerCall,
        better: 'lower',
        bandBefore: roundBand(b?.roundRatios?.workerCpuPerCall),
        bandAfter: roundBand(c.roundRatios?.workerCpuPerCall),
      },
      {
        name: `${at} events/call (Sluice)`,
        before: b?.sluice.eventsPerCall,
        after: c.sluice.eventsPerCall,
        better: 'lower',
        bandAfter: 0,
        bandBefore: 0,
      },
      {
        name: `${at} history bytes/call Sluice/bare`,
        before: b?.ratio.historyBytesPerCall,
        after: c.ratio.historyBytesPerCall,
        better: 'lower',
        bandAfter: 0.01,
        bandBefore: 0.01,
      },
    );
  }
  const ratio = (name: string, better: Change['better'], pick: (x: BenchResult) => number | undefined) =>
    rows.push({ name, before: pick(before), after: pick(r), better });
  ratio('local bodies p50 Sluice/bare', 'lower', (x) => x.localBodies?.p50Ratio);
  ratio('local bodies worker CPU/call Sluice/bare', 'lower', (x) => x.localBodies?.workerCpuRatio);
  ratio('Code Mode sub-call / direct call', 'lower', (x) => x.codeMode?.subCalls.ratio);
  ratio('Code Mode trivial program in the body, p50 ms', 'lower', (x) => x.codeMode?.trivialInBody.p50Ms);
  ratio('client runBatch / bare execute p50', 'lower', (x) => x.clientLatency?.ratio);
  ratio('approval signal → result p50 Sluice/bare', 'lower', (x) => x.approval?.signalToResultRatio);
  ratio('approval bulk drain Sluice/bare', 'higher', (x) =>
    x.approval?.bare?.bulk ? x.approval.bulk.drainBatchesPerSec / x.approval.bare.bulk.drainBatchesPerSec : undefined,
  );
  ratio('worker RSS with the bulk waiting, MiB above idle', 'lower', (x) => x.approval?.bulk.workerRssAboveIdleMiB);
  const pct = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : `${(x * 100).toFixed(0)}%`);
  const lines = [
    '',
    `Change against ${before.meta.commit} (${before.meta.date}, load average ${before.meta.loadAvgStart?.[0] ?? '?'} at start; this run ${r.meta.loadAvgStart[0]}). The noise band is how far each run's rounds of a cell moved apart (both runs' added; counted figures are exact); figures measured once have none:`,
    '',
    '| figure | before | after | change | noise band ± | reading |',
    '|---|---:|---:|---:|---:|---|',
  ];
  for (const c of rows) {
    if (c.before === undefined && c.after === undefined) continue;
    const change =
      c.before !== undefined && c.after !== undefined && c.before !== 0
        ? (c.after - c.before) / Math.abs(c.before)
        : undefined;
    lines.push(
      `| ${c.name} | ${f(c.before, 2)} | ${f(c.after, 2)} | ${change === undefined ? '–' : `${change >= 0 ? '+' : ''}${pct(change)}`} | ${pct(combinedBand(c))} | ${verdict(c)} |`,
    );
  }
  return lines;
}

function pair(a: number | undefined, b: number | undefined, digits = 1): string {
  return `${f(a, digits)} → ${f(b, digits)}`;
}
