// The public surface, one list per entry point: every name each entry of package.json's exports
// map gives, whether it is a value or a type, and the source file it is declared in. Written to
// docs/api-report.md and checked by test/api-report.test.ts, so a change to the surface shows in
// review as a diff of that file (as api-extractor's reports do).
//   npx tsx scripts/api-report.ts          # rewrite docs/api-report.md
//   npx tsx scripts/api-report.ts --check  # exit 1 when the file is out of date
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..');
export const REPORT = path.join(ROOT, 'docs', 'api-report.md');

export interface ExportRow {
  entry: string;
  name: string;
  kind: 'value' | 'type';
  /** What the name is: class, function, const, interface, type, enum. */
  what: string;
  /** The source file declaring it, relative to the checkout. */
  from: string;
}

/** The package's entry points and their source files (from the exports map's `types`). */
export function entries(): { entry: string; file: string }[] {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  return Object.entries(pkg.exports as Record<string, string | { types?: string }>)
    .filter(([, v]) => typeof v === 'object' && v.types)
    .map(([k, v]) => ({
      entry: k === '.' ? 'sluice' : `sluice/${k.slice(2)}`,
      file: path.join(ROOT, (v as { types: string }).types.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts')),
    }));
}

/**
 * The names a module exports as values, following its `export … from` declarations: a name that
 * reaches the entry only through `export type` (or `export type *`) is a type there.
 */
function valueNames(program: ts.Program, file: string, seen = new Set<string>()): Set<string> {
  const names = new Set<string>();
  if (seen.has(file)) return names;
  seen.add(file);
  const source = program.getSourceFile(file);
  if (!source) return names;
  const resolve = (spec: string) =>
    ts.resolveModuleName(spec, file, program.getCompilerOptions(), ts.sys).resolvedModule?.resolvedFileName;
  for (const st of source.statements) {
    if (ts.isExportDeclaration(st)) {
      if (st.isTypeOnly) continue;
      const target =
        st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier) ? resolve(st.moduleSpecifier.text) : undefined;
      if (!st.exportClause) {
        if (target) for (const n of valueNames(program, target, seen)) names.add(n);
      } else if (ts.isNamespaceExport(st.exportClause)) names.add(st.exportClause.name.text);
      else for (const el of st.exportClause.elements) if (!el.isTypeOnly) names.add(el.name.text);
    } else if (ts.canHaveModifiers(st) && ts.getModifiers(st)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) {
      if (ts.isVariableStatement(st))
        for (const d of st.declarationList.declarations) ts.isIdentifier(d.name) && names.add(d.name.text);
      else if ((ts.isFunctionDeclaration(st) || ts.isClassDeclaration(st) || ts.isEnumDeclaration(st)) && st.name)
        names.add(st.name.text);
    }
  }
  return names;
}

function describe(
  checker: ts.TypeChecker,
  symbol: ts.Symbol,
  values: Set<string>,
): { kind: 'value' | 'type'; what: string; from: string } {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  const decl = target.declarations?.[0];
  const f = target.flags;
  const what =
    f & ts.SymbolFlags.Class
      ? 'class'
      : f & ts.SymbolFlags.Function
        ? 'function'
        : f & ts.SymbolFlags.Enum
          ? 'enum'
          : f & ts.SymbolFlags.Variable
            ? 'const'
            : f & ts.SymbolFlags.Interface
              ? 'interface'
              : f & ts.SymbolFlags.TypeAlias
                ? 'type'
                : 'other';
  const kind = values.has(symbol.name) && f & ts.SymbolFlags.Value ? 'value' : 'type';
  const from = decl ? path.relative(ROOT, decl.getSourceFile().fileName) : '?';
  return { kind, what, from };
}

export function collect(): ExportRow[] {
  const list = entries();
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  )!;
  const program = ts.createProgram(
    list.map((e) => e.file),
    config.options,
  );
  const checker = program.getTypeChecker();
  const rows: ExportRow[] = [];
  for (const { entry, file } of list) {
    const source = program.getSourceFile(file);
    if (!source) throw new Error(`${entry}: ${file} is not in the program`);
    const moduleSymbol = checker.getSymbolAtLocation(source);
    if (!moduleSymbol) continue;
    const values = valueNames(program, source.fileName);
    for (const s of checker.getExportsOfModule(moduleSymbol))
      rows.push({ entry, name: s.name, ...describe(checker, s, values) });
  }
  return rows;
}

export function render(rows: ExportRow[]): string {
  const lines = [
    '# API report',
    '',
    'Every name each entry point exports, generated by `npx tsx scripts/api-report.ts` from the',
    "sources of the entries in package.json's `exports`; `test/api-report.test.ts` fails when this",
    'file is out of date, so a change to the public surface shows in review. Do not edit by hand.',
    '',
  ];
  for (const { entry } of entries()) {
    const mine = rows.filter((r) => r.entry === entry).sort((a, b) => a.name.localeCompare(b.name));
    const values = mine.filter((r) => r.kind === 'value').length;
    lines.push(`## ${entry}`, '', `${mine.length} names: ${values} values, ${mine.length - values} types.`, '');
    lines.push('| name | kind | declared in |', '|---|---|---|');
    for (const r of mine)
      lines.push(`| \`${r.name}\` | ${r.kind === 'value' ? r.what : `type (${r.what})`} | ${r.from} |`);
    lines.push('');
  }
  return lines.join('\n');
}

if (require.main === module) {
  const text = render(collect());
  if (process.argv.includes('--check')) {
    const now = fs.existsSync(REPORT) ? fs.readFileSync(REPORT, 'utf8') : '';
    if (now !== text) {
      console.error('docs/api-report.md is out of date: run npx tsx scripts/api-report.ts and review the diff');
      process.exit(1);
    }
  } else fs.writeFileSync(REPORT, text);
}
