// The bench result as one SVG, written by hand: p50 latency, throughput and history events per
// call for each grid cell, Sluice beside bare Temporal (and Sluice before, when a before.json exists).
import type { BenchResult, Cell } from './result';

interface Series {
  name: string;
  color: string;
  values: (number | undefined)[];
}

const W = 900;
const PANEL_H = 230;
const M = { left: 70, right: 20, top: 34, bottom: 44 };

export function plotSvg(r: BenchResult, before?: BenchResult): string {
  const groups = r.grid.map((c) => `${c.batchSize}×${c.concurrency}`);
  const prior = (pick: (c: Cell) => number | undefined) =>
    before
      ? r.grid.map((c) => {
          const b = before.grid.find((x) => x.batchSize === c.batchSize && x.concurrency === c.concurrency);
          return b ? pick(b) : undefined;
        })
      : undefined;
  const series = (pick: (c: Cell) => number | undefined, barePick: (c: Cell) => number | undefined): Series[] => [
    ...(before ? [{ name: 'Sluice before', color: '#c9a0dc', values: prior(pick)! }] : []),
    { name: 'Sluice', color: '#7b3fa0', values: r.grid.map(pick) },
    { name: 'bare Temporal', color: '#2a7ab0', values: r.grid.map(barePick) },
  ];
  const panels = [
    panel(
      'p50 latency per batch (ms, log scale)',
      groups,
      series(
        (c) => c.sluice.p50Ms,
        (c) => c.bare.p50Ms,
      ),
      true,
    ),
    panel(
      'batches per second (log scale)',
      groups,
      series(
        (c) => c.sluice.batchesPerSec,
        (c) => c.bare.batchesPerSec,
      ),
      true,
    ),
    panel(
      'history events per call',
      groups,
      series(
        (c) => c.sluice.eventsPerCall,
        (c) => c.bare.eventsPerCall,
      ),
      false,
    ),
  ];
  const height = 40 + panels.length * (PANEL_H + 20);
  const body = panels.map((p, i) => `<g transform="translate(0, ${40 + i * (PANEL_H + 20)})">${p}</g>`).join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" viewBox="0 0 ${W} ${height}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="white"/>
<text x="${W / 2}" y="22" text-anchor="middle" font-size="14" font-weight="bold">Sluice vs bare Temporal: ${esc(r.meta.date.slice(0, 16))} at ${esc(r.meta.commit)} — cells are calls per batch × batches in flight</text>
${body}
</svg>
`;
}

function panel(title: string, groups: string[], series: Series[], log: boolean): string {
  const all = series
    .flatMap((s) => s.values)
    .filter((v): v is number => v !== undefined && Number.isFinite(v) && v > 0);
  const max = Math.max(...all, 1e-9);
  const min = Math.min(...all, max);
  const lo = log ? 10 ** Math.floor(Math.log10(min)) : 0;
  const hi = log ? 10 ** Math.ceil(Math.log10(max)) : niceCeil(max);
  const plotW = W - M.left - M.right;
  const plotH = PANEL_H - M.top - M.bottom;
  const y = (v: number) =>
    M.top + plotH - (log ? (Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) : v / hi) * plotH;
  const out: string[] = [`<text x="${M.left}" y="18" font-size="12" font-weight="bold">${esc(title)}</text>`];

  const ticks = log
    ? Array.from({ length: Math.round(Math.log10(hi / lo)) + 1 }, (_, i) => lo * 10 ** i)
    : Array.from({ length: 5 }, (_, i) => (hi / 4) * i);
  for (const t of ticks) {
    out.push(
      `<line x1="${M.left}" x2="${W - M.right}" y1="${y(Math.max(t, lo)).toFixed(1)}" y2="${y(Math.max(t, lo)).toFixed(1)}" stroke="#ddd"/>`,
    );
    out.push(`<text x="${M.left - 6}" y="${(y(Math.max(t, lo)) + 4).toFixed(1)}" text-anchor="end">${fmt(t)}</text>`);
  }
  const groupW = plotW / groups.length;
  const barW = (groupW * 0.75) / series.length;
  groups.forEach((g, gi) => {
    const x0 = M.left + gi * groupW + groupW * 0.125;
    series.forEach((s, si) => {
      const v = s.values[gi];
      if (v === undefined || !Number.isFinite(v) || v <= 0) return;
      const top = y(Math.max(v, lo));
      const x = x0 + si * barW;
      out.push(
        `<rect x="${x.toFixed(1)}" y="${top.toFixed(1)}" width="${(barW - 1).toFixed(1)}" height="${(M.top + plotH - top).toFixed(1)}" fill="${s.color}"><title>${esc(`${s.name} ${g}: ${fmt(v)}`)}</title></rect>`,
      );
      out.push(
        `<text x="${(x + barW / 2).toFixed(1)}" y="${(top - 3).toFixed(1)}" text-anchor="middle" font-size="8">${fmt(v)}</text>`,
      );
    });
    out.push(
      `<text x="${(M.left + gi * groupW + groupW / 2).toFixed(1)}" y="${M.top + plotH + 16}" text-anchor="middle">${esc(g)}</text>`,
    );
  });
  out.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${M.top + plotH}" y2="${M.top + plotH}" stroke="#333"/>`);
  series.forEach((s, si) => {
    const lx = M.left + si * 150;
    out.push(
      `<rect x="${lx}" y="${PANEL_H - 16}" width="10" height="10" fill="${s.color}"/><text x="${lx + 14}" y="${PANEL_H - 7}">${esc(s.name)}</text>`,
    );
  });
  return out.join('\n');
}

function niceCeil(x: number): number {
  const p = 10 ** Math.floor(Math.log10(x));
  return [1, 2, 4, 8, 10].map((m) => m * p).find((v) => v >= x)!;
}

function fmt(v: number): string {
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1).replace(/\.0$/, '');
  return v.toPrecision(2).replace(/\.?0+$/, '');
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
