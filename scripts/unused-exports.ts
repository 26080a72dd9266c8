// Exported names of the source that no file imports (tests, benchmarks and scripts included) and no
// entry point of package.json's exports map gives, by the TypeScript compiler's own resolution.
// Each is printed with "local" (its file still uses it: drop the `export`) or "DEAD" (nothing
// uses it: delete it).
//
//   npx tsx scripts/unused-exports.ts
import * as path from 'node:path';
import ts from 'typescript';
import { entries as publicEntries } from './api-report';
import { LAYERS } from './import-graph';
const ROOT = process.cwd();
const cfg = ts.getParsedCommandLineOfConfigFile(
  path.join(ROOT, 'tsconfig.json'),
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
)!;
const extra = ts.sys.readDirectory(
  ROOT,
  ['.ts'],
  ['node_modules', 'dist'],
  ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
);
const program = ts.createProgram([...new Set([...cfg.fileNames, ...extra])], cfg.options);
const checker = program.getTypeChecker();
const rel = (f: string) => path.relative(ROOT, f);
/** The package's source: every layered folder but the checkout's own tools, benchmarks and examples. */
const SRC = LAYERS.flat().filter((f) => !['.', 'bin', 'scripts', 'bench', 'examples'].includes(f));
const isSrc = (f: string) => (SRC.includes(rel(f).split('/')[0]) && !f.endsWith('.d.ts')) || rel(f) === 'index.ts';
const used = new Set<string>();
const key = (s: ts.Symbol) => {
  let t = s;
  while (t.flags & ts.SymbolFlags.Alias) t = checker.getAliasedSymbol(t);
  const d = t.declarations?.[0];
  return d ? `${rel(d.getSourceFile().fileName)}:${t.name}` : undefined;
};
const markAll = (mod: ts.Symbol | undefined) => {
  if (mod)
    for (const e of checker.getExportsOfModule(mod)) {
      const k = key(e);
      if (k) used.add(k);
    }
};
// The public entries, and the workflow bundle's, which the worker loads by path.
const entries = [...publicEntries().map((e) => rel(e.file)), 'workflows/index.ts'];
for (const sf of program.getSourceFiles()) {
  if (sf.fileName.includes('node_modules')) continue;
  const visit = (n: ts.Node) => {
    if (ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) {
      const spec = n.moduleSpecifier;
      if (spec && ts.isStringLiteral(spec)) {
        const mod = checker.getSymbolAtLocation(spec);
        const clause = ts.isImportDeclaration(n) ? n.importClause : undefined;
        if (ts.isExportDeclaration(n)) {
          if (!n.exportClause || ts.isNamespaceExport(n.exportClause)) markAll(mod);
          else
            for (const el of n.exportClause.elements) {
              const s =
                mod && checker.getExportsOfModule(mod).find((e) => e.name === (el.propertyName ?? el.name).text);
              if (s) {
                const k = key(s);
                if (k) used.add(k);
              }
            }
        } else if (clause) {
          if (clause.name) {
            const s = checker.getSymbolAtLocation(clause.name);
            if (s) {
              const k = key(s);
              if (k) used.add(k);
            }
          }
          const nb = clause.namedBindings;
          if (nb && ts.isNamespaceImport(nb)) markAll(mod);
          else if (nb)
            for (const el of nb.elements) {
              const s = checker.getSymbolAtLocation(el.name);
              if (s) {
                const k = key(s);
                if (k) used.add(k);
              }
            }
        }
      }
    }
    if (
      ts.isCallExpression(n) &&
      (n.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(n.expression) && n.expression.text === 'require')) &&
      n.arguments[0] &&
      ts.isStringLiteral(n.arguments[0])
    ) {
      const r = ts.resolveModuleName(n.arguments[0].text, sf.fileName, cfg.options, ts.sys).resolvedModule;
      if (r) {
        const m = program.getSourceFile(r.resolvedFileName);
        if (m) markAll(checker.getSymbolAtLocation(m));
      }
    }
    // typeof import('x').Name and import('x').Name types
    if (ts.isImportTypeNode(n)) {
      const s = n.qualifier && checker.getSymbolAtLocation(n.qualifier);
      if (s) {
        const k = key(s);
        if (k) used.add(k);
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
}
for (const e of entries) {
  const sf = program.getSourceFile(path.join(ROOT, e));
  if (sf) markAll(checker.getSymbolAtLocation(sf));
}
const out: string[] = [];
for (const sf of program.getSourceFiles()) {
  if (!isSrc(sf.fileName)) continue;
  const mod = checker.getSymbolAtLocation(sf);
  if (!mod) continue;
  for (const e of checker.getExportsOfModule(mod)) {
    if (e.flags & ts.SymbolFlags.Alias) continue; // re-exports
    const k = key(e);
    if (k?.startsWith(`${rel(sf.fileName)}:`) && !used.has(k)) {
      const d = e.declarations![0];
      const line = sf.getLineAndCharacterOfPosition(d.getStart()).line + 1;
      // used inside its own file?
      const text = sf.getFullText();
      const count = (text.match(new RegExp(`\\b${e.name}\\b`, 'g')) ?? []).length;
      out.push(`${rel(sf.fileName)}:${line} ${e.name} ${count > 1 ? 'local' : 'DEAD'}`);
    }
  }
}
console.log(out.sort().join('\n'));
console.error(out.length);
