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

/** A panel of (x, y) points from 0 on both axes: a line through them, or dots each with a label. */
export interface XyPanel {
  title: string;
  xLabel: string;
  points: [number, number][];
  /** Dots instead of a line (for points that are separate runs, not a series), each with its label. */
  dots?: { labels: string[] };
  /** A dashed horizontal line, such as a target, labelled mid-panel (clear of dots at either end). */
  reference?: { y: number; label: string };
}

/** Panels one under the other, 900 wide (bench/scale.ts, bench/drain-scale.ts). */
export function xyPanelsSvg(panels: XyPanel[]): string {
  const W = 900;
  const H = 220;
  const body = panels
    .map((p, k) => {
      const top = k * (H + 30) + 30;
      const maxX = Math.max(...p.points.map(([x]) => x), 1);
      const maxY = Math.max(...p.points.map(([, y]) => y), p.reference?.y ?? 0, 1) * 1.1;
      const X = (x: number) => 70 + (x / maxX) * (W - 100);
      const Y = (y: number) => top + H - (y / maxY) * H;
      const line = p.points.map(([x, y]) => `${X(x).toFixed(1)},${Y(y).toFixed(1)}`).join(' ');
      // A label reads away from the nearer edge, and below any earlier label it would cover.
      const label = (x: number, y: number, i: number) => {
        const under = p.points.slice(0, i).filter(([ox, oy]) => ox === x && Math.abs(Y(oy) - Y(y)) < 14).length;
        const right = X(x) > W / 2;
        return `<text x="${(X(x) + (right ? -7 : 7)).toFixed(1)}" y="${(Y(y) - 6 + 14 * under).toFixed(1)}" font-size="11"${right ? ' text-anchor="end"' : ''}>${esc(p.dots!.labels[i] ?? '')}</text>`;
      };
      const marks = p.dots
        ? p.points
            .map(
              ([x, y], i) =>
                `<circle cx="${X(x).toFixed(1)}" cy="${Y(y).toFixed(1)}" r="4" fill="#7b3fa0"/>${label(x, y, i)}`,
            )
            .join('\n')
        : `<polyline fill="none" stroke="#7b3fa0" stroke-width="1.2" points="${line}"/>`;
      const reference = p.reference
        ? `\n<line x1="70" y1="${Y(p.reference.y).toFixed(1)}" x2="${W - 30}" y2="${Y(p.reference.y).toFixed(1)}" stroke="#c0392b" stroke-dasharray="6 4"/><text x="${W / 2}" y="${(Y(p.reference.y) - 5).toFixed(1)}" font-size="11" text-anchor="middle" fill="#c0392b">${esc(p.reference.label)}</text>`
        : '';
      return `<text x="70" y="${top - 8}" font-size="13">${p.title}</text>
<line x1="70" y1="${top + H}" x2="${W - 30}" y2="${top + H}" stroke="#999"/><line x1="70" y1="${top}" x2="70" y2="${top + H}" stroke="#999"/>
<text x="64" y="${top + 10}" font-size="11" text-anchor="end">${Math.round(maxY)}</text><text x="64" y="${top + H}" font-size="11" text-anchor="end">0</text>
<text x="${W - 30}" y="${top + H + 14}" font-size="11" text-anchor="end">${maxX}</text><text x="${W / 2}" y="${top + H + 14}" font-size="11" text-anchor="middle">${p.xLabel}</text>
${marks}${reference}`;
    })
    .join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${panels.length * (H + 30) + 20}" font-family="sans-serif">
${body}
</svg>
`;
}
