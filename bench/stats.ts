// Small statistics for the bench: nearest-rank percentiles over measured latencies.

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export function round(x: number, digits = 2): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function mean(values: number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN;
}

/** Runs `total` jobs with at most `concurrency` in flight; returns each job's latency (ms) and the wall time. */
export async function pool(
  total: number,
  concurrency: number,
  job: (i: number) => Promise<void>,
): Promise<{ latencies: number[]; wallMs: number }> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, total) }, async () => {
      while (next < total) {
        const i = next++;
        const s = performance.now();
        await job(i);
        latencies.push(performance.now() - s);
      }
    }),
  );
  return { latencies, wallMs: performance.now() - t0 };
}
