// The import graph of Sluice's code, by a regex over import lines (no tooling): each file's
// relative imports, the folders and their layers, the imports that run against the layering, and
// the cycles. test/unit/import-graph.test.ts holds the counts to their targets; run this to see
// them:
//
//   npx tsx scripts/import-graph.ts [--json]
//
// The layers are those of docs/architecture.md ("Layers"): a folder imports itself and the layers
// below its own, never one above, and never a folder beside it in its own layer. Every folder of the
// checkout that holds code has a layer (tests, build output and installed packages are not code of
// the house); a folder with code and no layer is an error, so no folder goes unchecked.
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..');

/**
 * Folders of the checkout, lowest layer first; '.' is the root's own files (the package's main entry,
 * the demo config). Folders of one layer do not import each other.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ['pipeline'],
  ['codec'],
  ['support'],
  ['temporal', 'stores'],
  ['agent'],
  ['define'],
  ['tools'],
  ['hooks', 'activities'],
  ['workflows'],
  ['worker'],
  ['client', 'browser'],
  ['servers'],
  ['cli'],
  ['.', 'bin', 'scripts', 'bench', 'examples'],
];

/** Not code of the house: tests (they import anything), build output, installed packages, state. */
const SKIP = new Set(['node_modules', 'dist', 'test', 'docs', '.sluice', '.git', '.ci']);
const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;

export interface ImportEdge {
  from: string;
  to: string;
  line: number;
  /** `import type` / `export type`: erased at build time, but still a dependency of the design. */
  typeOnly: boolean;
}

export interface ImportGraph {
  files: string[];
  edges: ImportEdge[];
}

/** Every code file of the checkout but the skipped folders', each in a folder with a layer. */
export function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      if (SKIP.has(e.name)) continue;
      const rel = dir === '.' ? e.name : path.posix.join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (CODE.test(e.name) && !/\.d\.[mc]?ts$/.test(e.name)) out.push(rel);
    }
  };
  walk('.');
  for (const f of out) layerOf(folderOf(f));
  return out.sort();
}

const IMPORT =
  /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]|(?:import|require)\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

function resolve(from: string, spec: string, known: Set<string>): string | undefined {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
  const stem = base.replace(/\.js$/, '');
  for (const c of [base, `${stem}.ts`, `${stem}.js`, `${stem}.mjs`, `${base}/index.ts`, `${base}/index.js`])
    if (known.has(c)) return c;
  return undefined;
}

/** Every relative import of every source file, resolved to the file it names. */
export function importGraph(): ImportGraph {
  const files = sourceFiles();
  const known = new Set(files);
  const edges: ImportEdge[] = [];
  for (const from of files) {
    const src = fs.readFileSync(path.join(ROOT, from), 'utf8');
    for (const m of src.matchAll(IMPORT)) {
      const spec = m[3] ?? m[4];
      const to = resolve(from, spec, known);
      if (!to) continue;
      const line = src.slice(0, m.index + (m[0].startsWith('\n') ? 1 : 0)).split('\n').length;
      edges.push({ from, to, line, typeOnly: m[2] !== undefined });
    }
  }
  return { files, edges };
}

/** The folder a file belongs to, as the layers name it ('.' for the root's own files). */
export function folderOf(file: string): string {
  const top = file.includes('/') ? file.split('/')[0] : '.';
  return top;
}

export function layerOf(folder: string): number {
  const at = LAYERS.findIndex((l) => l.includes(folder));
  if (at < 0)
    throw new Error(
      `folder ${folder}/ holds code but has no layer: add it to LAYERS in scripts/import-graph.ts (and to docs/architecture.md)`,
    );
  return at;
}

/** Imports into a higher layer, or into another folder of the importer's own layer. */
export function againstLayering(g: ImportGraph): ImportEdge[] {
  return g.edges.filter((e) => {
    const from = folderOf(e.from);
    const to = folderOf(e.to);
    return from !== to && layerOf(from) <= layerOf(to);
  });
}

/** Each cycle of the file graph once, as the files around it (shortest found from its least file). */
export function cycles(g: ImportGraph): string[][] {
  const next = new Map<string, string[]>();
  for (const e of g.edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const found = new Map<string, string[]>();
  // Strongly connected components (Tarjan), then one cycle per component through its least file.
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const comps: string[][] = [];
  const strong = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of next.get(v) ?? []) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || (next.get(v) ?? []).includes(v)) comps.push(comp.sort());
    }
  };
  for (const f of g.files) if (!idx.has(f)) strong(f);
  for (const comp of comps) {
    const inside = new Set(comp);
    const start = comp[0];
    // Breadth-first back to the start: the shortest cycle through it within the component.
    const prev = new Map<string, string>();
    const queue = [start];
    let closing: string | undefined;
    while (queue.length && !closing) {
      const v = queue.shift()!;
      for (const w of next.get(v) ?? []) {
        if (!inside.has(w)) continue;
        if (w === start) {
          closing = v;
          break;
        }
        if (!prev.has(w)) {
          prev.set(w, v);
          queue.push(w);
        }
      }
    }
    const path_: string[] = [];
    for (let v = closing; v && v !== start; v = prev.get(v)) path_.unshift(v);
    found.set(start, [start, ...path_]);
  }
  return [...found.values()];
}

/** Folder → folder import counts. */
export function folderMatrix(g: ImportGraph): Map<string, Map<string, number>> {
  const m = new Map<string, Map<string, number>>();
  for (const e of g.edges) {
    const a = folderOf(e.from);
    const b = folderOf(e.to);
    if (a === b) continue;
    const row = m.get(a) ?? new Map<string, number>();
    row.set(b, (row.get(b) ?? 0) + 1);
    m.set(a, row);
  }
  return m;
}

function main(argv: string[]) {
  const g = importGraph();
  const against = againstLayering(g);
  const loops = cycles(g);
  if (argv.includes('--json')) {
    console.log(JSON.stringify({ files: g.files.length, edges: g.edges.length, against, cycles: loops }, null, 2));
    return;
  }
  console.log(`${g.files.length} files, ${g.edges.length} relative imports`);
  console.log('\nlayers (lowest first):');
  LAYERS.forEach((l, i) => console.log(`  ${i}  ${l.join(', ')}`));
  console.log('\nfolder → folder imports:');
  for (const [a, row] of [...folderMatrix(g)].sort((x, y) => layerOf(x[0]) - layerOf(y[0])))
    console.log(
      `  ${a.padEnd(11)} → ${[...row]
        .sort((x, y) => layerOf(x[0]) - layerOf(y[0]))
        .map(([b, n]) => `${b} ${n}`)
        .join(', ')}`,
    );
  console.log(`\nimports against the layering: ${against.length}`);
  for (const e of against) console.log(`  ${e.from}:${e.line} → ${e.to}${e.typeOnly ? ' (type only)' : ''}`);
  console.log(`\ncycles: ${loops.length}`);
  for (const c of loops) console.log(`  ${[...c, c[0]].join(' → ')}`);
}

if (require.main === module) main(process.argv.slice(2));
