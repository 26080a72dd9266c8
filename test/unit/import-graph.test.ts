// The import graph, held to the layering of docs/architecture.md with no tool but a regex over
// import lines (as zod's no-circular-imports test does): no cycles; no import against the layering
// but the known ones, each named with the move that removes it; compatibility in one file; and
// the stage path in functions a reader can hold. `npx tsx scripts/import-graph.ts` prints the graph.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { againstLayering, cycles, folderOf, importGraph, LAYERS, layerOf } from '../../scripts/import-graph';
import { longFunctions } from '../../scripts/long-functions';

const ROOT = path.join(__dirname, '..', '..');

/**
 * Imports from a lower layer into a higher one that are known, and why each still exists; a new
 * import against the layering fails the test. The user's vocabulary (define/), the stores (stores/),
 * the Temporal connection helpers (temporal/) and the optional-package loader (support/) moved out
 * of worker/ and client/, which took 46 of the 49 away.
 */
const KNOWN: { from: RegExp; to: RegExp; why: string }[] = [];

describe('the import graph', () => {
  const g = importGraph();

  it('reads the whole source (every folder of the layering, hundreds of imports)', () => {
    expect(g.files.length).toBeGreaterThan(100);
    expect(g.edges.length).toBeGreaterThan(400);
    for (const folder of LAYERS.flat().filter((f) => f !== '.'))
      expect(
        g.files.some((f) => folderOf(f) === folder),
        folder,
      ).toBe(true);
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

  it('imports against the layering are only the known ones, and no more of them', () => {
    const against = againstLayering(g);
    const unknown = against.filter((e) => !KNOWN.some((k) => k.from.test(e.from) && k.to.test(e.to)));
    expect(
      unknown.map(
        (e) => `${e.from}:${e.line} → ${e.to} (layer ${layerOf(folderOf(e.from))} → ${layerOf(folderOf(e.to))})`,
      ),
    ).toEqual([]);
    // How many, for the note (40 when this test was written, 49 at its most, 3 after the folder moves).
    console.log(`imports against the layering: ${against.length}, all of known kinds`);
    // pipeline/ and workflows/ import nothing above them at all.
    expect(against.filter((e) => /^(pipeline|support|workflows|define|stores|temporal)\//.test(e.from))).toEqual([]);
    expect(against.length).toBeLessThanOrEqual(3);
  });

  it('only workflows/compat.ts imports patched() or deprecatePatch()', () => {
    const importers = g.files.filter((f) => {
      const src = fs.readFileSync(path.join(ROOT, f), 'utf8');
      return /import\s*{[^}]*\b(patched|deprecatePatch)\b[^}]*}\s*from\s*'@temporalio\/workflow'/.test(src);
    });
    expect(importers).toEqual(['workflows/compat.ts']);
  });

  it('no function on the stage path runs over 80 lines', () => {
    const stagePath = [
      'workflows/batch.ts',
      'workflows/call-pipeline.ts',
      'workflows/approval-stage.ts',
      'workflows/admission.ts',
      'workflows/stage-runner.ts',
      'workflows/stage-runners.ts',
      'workflows/look-ahead.ts',
      'workflows/code-calls.ts',
      'workflows/compat.ts',
    ].filter((f) => fs.existsSync(path.join(ROOT, f)));
    expect(stagePath.length).toBeGreaterThan(5);
    expect(longFunctions(stagePath, 80).map((f) => `${f.file}:${f.line} ${f.name} (${f.lines} lines)`)).toEqual([]);
  });
});
