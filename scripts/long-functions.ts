// Functions over a length limit (80 lines by default), by the TypeScript compiler's own parse: every
// function declaration, method, accessor, constructor, arrow function and function expression in
// every code file of the checkout (the files scripts/import-graph.ts walks: every folder with a
// layer, tests aside), longest first, with the 10 largest files. test/unit/import-graph.test.ts
// holds the limit.
//
//   npx tsx scripts/long-functions.ts [--limit 80] [--under workflows] [--json]
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';
import { sourceFiles as importGraphFiles } from './import-graph';

const ROOT = path.join(__dirname, '..');

export interface LongFunction {
  file: string;
  name: string;
  line: number;
  lines: number;
}

/** The checkout's code files, or those under the folders named. */
export function sourceFiles(under: string[] = []): string[] {
  const all = importGraphFiles();
  return under.length ? all.filter((f) => under.some((u) => f === u || f.startsWith(`${u}/`))) : all;
}

function nameOf(node: ts.Node, sf: ts.SourceFile): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (named.name) return named.name.getText(sf);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  // An arrow or function expression takes the name it is bound to, if any.
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText(sf);
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText(sf);
  if (parent && ts.isPropertyDeclaration(parent)) return parent.name.getText(sf);
  if (parent && ts.isCallExpression(parent)) return `(argument of ${parent.expression.getText(sf).slice(0, 40)})`;
  return '(anonymous)';
}

/** Every function in the files longer than `limit` lines, longest first. */
export function longFunctions(files: string[], limit = 80): LongFunction[] {
  const out: LongFunction[] = [];
  for (const file of files) {
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      if (ts.isFunctionLike(node) && (node as ts.FunctionLikeDeclaration).body) {
        const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
        const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
        const lines = end - start + 1;
        if (lines > limit) out.push({ file, name: nameOf(node, sf), line: start + 1, lines });
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return out.sort((a, b) => b.lines - a.lines);
}

export function largestFiles(files: string[], n = 10): { file: string; lines: number }[] {
  return files
    .map((file) => ({ file, lines: fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n').length }))
    .sort((a, b) => b.lines - a.lines)
    .slice(0, n);
}

function main(argv: string[]) {
  const at = argv.indexOf('--limit');
  const limit = at >= 0 ? Number(argv[at + 1]) : 80;
  const under = argv.flatMap((a, i) => (argv[i - 1] === '--under' ? [a] : []));
  const files = sourceFiles(under);
  const long = longFunctions(files, limit);
  const big = largestFiles(files);
  if (argv.includes('--json')) {
    console.log(JSON.stringify({ limit, files: files.length, long, largest: big }, null, 2));
    return;
  }
  const total = files.reduce((n, f) => n + fs.readFileSync(path.join(ROOT, f), 'utf8').split('\n').length, 0);
  console.log(`${files.length} files, ${total} lines`);
  console.log('\n10 largest files:');
  for (const f of big) console.log(`  ${String(f.lines).padStart(5)}  ${f.file}`);
  console.log(`\nfunctions over ${limit} lines: ${long.length}`);
  for (const f of long) console.log(`  ${String(f.lines).padStart(5)}  ${f.file}:${f.line} ${f.name}`);
}

if (require.main === module) main(process.argv.slice(2));
