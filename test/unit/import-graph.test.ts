// The import graph, held to the layering of docs/architecture.md with no tool but a regex over
// import lines (as zod's no-circular-imports test does): every code file of the checkout in a
// layered folder, no cycles, no import against the layering (up, or sideways within a layer);
// compatibility in one file; and functions a reader can hold. `npx tsx scripts/import-graph.ts`
// prints the graph, `npx tsx scripts/long-functions.ts` the long functions.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  againstLayering,
  cycles,
  folderOf,
  importGraph,
  LAYERS,
  layerOf,
  sourceFiles,
} from '../../scripts/import-graph';
import { longFunctions } from '../../scripts/long-functions';

const ROOT = path.join(__dirname, '..', '..');

describe('the import graph', () => {
  const g = importGraph();

  it('reads the whole source (every folder of the layering, hundreds of imports)', () => {
    expect(g.files.length).toBeGreaterThan(100);
    expect(g.edges.length).toBeGreaterThan(400);
    // Every folder the layering names exists and holds code (a renamed folder fails here, not silently).
    for (const folder of LAYERS.flat())
      expect(
        g.files.some((f) => folderOf(f) === folder),
        `${folder}/ is in LAYERS (scripts/import-graph.ts) but holds no code`,
      ).toBe(true);
    // Every code file outside tests, build output and packages: the CLI's launcher, the benchmarks
    // and the examples too.
    for (const f of [
      'bin/sluice.js',
      'bench/run.ts',
      'examples/chat.config.mjs',
      'index.ts',
      'scripts/import-graph.ts',
    ])
      expect(g.files).toContain(f);
    // The regex sees type-only imports and re-exports too.
    expect(g.edges).toContainEqual(
      expect.objectContaining({ from: 'workflows/batch.ts', to: 'workflows/compat.ts', typeOnly: false }),
    );
    expect(g.edges.some((e) => e.typeOnly)).toBe(true);
  });

  it('has no cycles', () => {
    const found = cycles(g);
    expect(found.map((c) => [...c, c[0]].join(' → '))).toEqual([]);
  });

  it('finds a cycle when there is one (the check can fail)', () => {
    const looped = {
      files: ['pipeline/a.ts', 'pipeline/b.ts', 'pipeline/c.ts'],
      edges: [
        { from: 'pipeline/a.ts', to: 'pipeline/b.ts', line: 1, typeOnly: true },
        { from: 'pipeline/b.ts', to: 'pipeline/c.ts', line: 1, typeOnly: false },
        { from: 'pipeline/c.ts', to: 'pipeline/a.ts', line: 1, typeOnly: false },
      ],
    };
    expect(cycles(looped)).toEqual([['pipeline/a.ts', 'pipeline/b.ts', 'pipeline/c.ts']]);
  });

  it('no import runs against the layering: up, or across to a folder of its own layer', () => {
    expect(
      againstLayering(g).map(
        (e) => `${e.from}:${e.line} → ${e.to} (layer ${layerOf(folderOf(e.from))} → ${layerOf(folderOf(e.to))})`,
      ),
    ).toEqual([]);
  });

  it('finds an import against the layering when there is one (the check can fail)', () => {
    const edge = (from: string, to: string) => ({ from, to, line: 1, typeOnly: true });
    const files = ['define/a.ts', 'activities/b.ts', 'hooks/c.ts', 'pipeline/d.ts'];
    const wrong = [edge('define/a.ts', 'activities/b.ts'), edge('activities/b.ts', 'hooks/c.ts')];
    const right = [edge('activities/b.ts', 'define/a.ts'), edge('define/a.ts', 'pipeline/d.ts')];
    expect(againstLayering({ files, edges: [...wrong, ...right] })).toEqual(wrong);
  });

  it('a folder with code and no layer is an error, not a folder left out', () => {
    expect(() => layerOf('gadgets')).toThrow(/gadgets\/ holds code but has no layer: add it to LAYERS/);
    expect(sourceFiles()).toEqual(g.files);
  });

  it('docs/architecture.md gives every folder the layer LAYERS gives it', () => {
    const doc = fs.readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8');
    const rows = doc.split('\n').filter((l) => /^\| \d+ \| /.test(l));
    LAYERS.forEach((layer, i) => {
      for (const folder of layer.filter((f) => f !== '.'))
        expect(
          rows.some((r) => r.startsWith(`| ${i} | `) && r.split('|')[2].includes(`\`${folder}/\``)),
          `${folder}/ at layer ${i} in docs/architecture.md`,
        ).toBe(true);
    });
  });

  it('only workflows/compat.ts imports patched() or deprecatePatch()', () => {
    const importers = g.files.filter((f) => {
      const src = fs.readFileSync(path.join(ROOT, f), 'utf8');
      return /import\s*{[^}]*\b(patched|deprecatePatch)\b[^}]*}\s*from\s*'@temporalio\/workflow'/.test(src);
    });
    expect(importers).toEqual(['workflows/compat.ts']);
  });

  it('no function of the source runs over 80 lines; the benchmarks have no more long ones than they had', () => {
    const long = longFunctions(g.files, 80).map((f) => `${f.file}:${f.line} ${f.name} (${f.lines} lines)`);
    expect(long.filter((f) => !f.startsWith('bench/'))).toEqual([]);
    // The benchmark drivers are one long script each; a new one is held to the limit.
    expect(long.filter((f) => f.startsWith('bench/')).length).toBeLessThanOrEqual(14);
  });
});
