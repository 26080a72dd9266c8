// The bench result as markdown tables: what `npm run bench` prints and docs/performance.md quotes.
import type { BenchResult, Cell } from './result';

const f = (x: number | undefined, digits = 1) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(digits));

export function markdownReport(r: BenchResult, before?: BenchResult): string {
  const lines: string[] = [];
  lines.push(
    `Run ${r.meta.date} at ${r.meta.commit}${r.meta.label ? ` (${r.meta.label})` : ''}: node ${r.meta.node}, ${r.meta.cpus} cores, load average ${r.meta.loadAvgStart[0]} at start, ${r.meta.batchesPerCell} batches per cell and system (at most ${r.meta.maxCallsPerCell} calls, at least the number in flight; the batches column says how many ran), maxParallel ${r.meta.maxParallel}, worker sticky cache ${r.meta.maxCachedWorkflows} workflows, ${r.meta.eagerActivitiesPerTask ?? 3} eager activities per workflow task, ${r.meta.durationSec} s in all.`,
  );
  lines.push('');
  lines.push(
    '| calls/batch | in flight | batches | Sluice p50 / p99 ms | bare p50 / p99 ms | in-process p50 ms | Sluice batches/s | bare batches/s | in-process batches/s | events/call Sluice / bare | history bytes/call Sluice / bare | worker RSS MiB (peak) | p50 Sluice/bare | throughput Sluice/bare |',
  );
  lines.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const c of r.grid) {
    lines.push(
      `| ${c.batchSize} | ${c.concurrency} | ${c.batches} | ${f(c.sluice.p50Ms)} / ${f(c.sluice.p99Ms)} | ${f(c.bare.p50Ms)} / ${f(c.bare.p99Ms)} | ${f(c.inProcess.p50Ms, 3)} | ${f(c.sluice.batchesPerSec)} | ${f(c.bare.batchesPerSec)} | ${f(c.inProcess.batchesPerSec, 0)} | ${f(c.sluice.eventsPerCall)} / ${f(c.bare.eventsPerCall)} | ${f(c.sluice.historyBytesPerCall, 0)} / ${f(c.bare.historyBytesPerCall, 0)} | ${f(c.sluice.workerRssMiB, 0)} (${f(c.sluice.workerPeakRssMiB, 0)}) | ${f(c.ratio.p50, 2)} | ${f(c.ratio.throughput, 2)} |`,
    );
  }
  if (r.approval) {
    const a = r.approval;
    lines.push('');
    lines.push('| approval path | figure |');
    lines.push('|---|---:|');
    lines.push(
      `| decision by signal → batch result, p50 / p99 (${a.signalToResult.samples} batches, one at a time) | ${f(a.signalToResult.p50Ms)} / ${f(a.signalToResult.p99Ms)} ms |`,
    );
    lines.push(
      `| decision by update → batch result, p50 / p99 (${a.updateToResult.samples} batches) | ${f(a.updateToResult.p50Ms)} / ${f(a.updateToResult.p99Ms)} ms |`,
    );
    lines.push(
      `| ${a.bulk.batches} batches started / all awaiting approval after | ${f(a.bulk.startMs, 0)} / ${f(a.bulk.allPendingMs, 0)} ms |`,
    );
    lines.push(
      `| worker RSS idle → with ${a.bulk.batches} awaiting | ${f(a.bulk.workerRssIdleMiB, 0)} → ${f(a.bulk.workerRssAwaitingMiB, 0)} MiB |`,
    );
    lines.push(
      `| bulk approve by signal: signals sent / all ${a.bulk.batches} results in | ${f(a.bulk.signalsSentMs, 0)} / ${f(a.bulk.drainMs, 0)} ms (${f(a.bulk.drainBatchesPerSec)} batches/s) |`,
    );
    lines.push(`| worker peak RSS while draining | ${f(a.bulk.workerPeakRssDrainMiB, 0)} MiB |`);
  }
  lines.push('');
  lines.push('| target | value | limit | met |');
  lines.push('|---|---:|---|---|');
  for (const t of r.targets) lines.push(`| ${t.name} | ${f(t.value, 2)} | ${t.limit} | ${t.met ? 'yes' : '**no**'} |`);
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
  return `${lines.join('\n')}\n`;
}

function pair(a: number | undefined, b: number | undefined, digits = 1): string {
  return `${f(a, digits)} → ${f(b, digits)}`;
}
