// The layering the package promises, pinned: pipeline/ is pure and self-contained; workflow code
// takes values only from pipeline/, itself and Temporal's workflow-safe packages (anything else
// type-only); sluice/client starts no worker runtime, activities or file-system code.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const repo = path.resolve(__dirname, '..');

interface Import {
  file: string;
  from: string;
  typeOnly: boolean;
}

function importsOf(dir: string): Import[] {
  const out: Import[] = [];
  for (const name of fs.readdirSync(path.join(repo, dir))) {
    if (!name.endsWith('.ts')) continue;
    const file = path.join(dir, name);
    const src = ts.createSourceFile(file, fs.readFileSync(path.join(repo, file), 'utf8'), ts.ScriptTarget.ES2022);
    const visit = (node: ts.Node) => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        const clause = node.importClause;
        const named =
          clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings : undefined;
        const typeOnly =
          !!clause && (clause.isTypeOnly || (!clause.name && !!named && named.elements.every((e) => e.isTypeOnly)));
        out.push({ file, from: node.moduleSpecifier.text, typeOnly });
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        const named = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause : undefined;
        const typeOnly = node.isTypeOnly || (!!named && named.elements.every((e) => e.isTypeOnly));
        out.push({ file, from: node.moduleSpecifier.text, typeOnly });
      } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        out.push({ file, from: (node.arguments[0] as ts.StringLiteral).text, typeOnly: false });
      } else if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'require') {
        out.push({ file, from: (node.arguments[0] as ts.StringLiteral).text, typeOnly: false });
      }
      ts.forEachChild(node, visit);
    };
    visit(src);
  }
  return out;
}

describe('import directions', () => {
  it('pipeline/ imports only itself and the pure wire forms of codec/', () => {
    const pure = ['../codec/output', '../codec/stages'];
    const outside = importsOf('pipeline').filter((i) => !i.from.startsWith('./') && !pure.includes(i.from));
    expect(outside).toEqual([]);
  });

  it('the wire forms the workflow bundles (codec/output.ts, codec/stages.ts) import only pipeline/', () => {
    const bad = importsOf('codec').filter(
      (i) => ['output.ts', 'stages.ts'].includes(path.basename(i.file)) && !i.from.startsWith('../pipeline/'),
    );
    expect(bad).toEqual([]);
  });

  it('workflows/ takes values only from itself, pipeline/ and Temporal’s workflow packages', () => {
    const allowed = (from: string) =>
      from.startsWith('./') ||
      from.startsWith('../pipeline/') ||
      from === '../codec/output' ||
      from === '../codec/stages' ||
      from === '@temporalio/workflow' ||
      from === '@temporalio/common' ||
      // MissingPackageError, for sluice/workflow in an app without @temporalio/workflow: it imports nothing.
      from === '../support/optional';
    const bad = importsOf('workflows').filter((i) => !i.typeOnly && !allowed(i.from));
    expect(bad).toEqual([]);
    // The check sees type-only imports for what they are (activities' interfaces).
    expect(importsOf('workflows').some((i) => i.typeOnly && i.from.startsWith('../activities/'))).toBe(true);
  });

  it('sluice/client loads no worker runtime, activities or file-system code; sluice loads no Temporal', async () => {
    const probe = `
      const loaded = () => Object.keys(require.cache).map((f) => f.split(require('node:path').sep).join('/'));
      require('./index.ts');
      const root = loaded().filter((f) => f.includes('@temporalio'));
      require('./client/index.ts');
      const client = loaded().filter((f) => /@temporalio\\/worker|\\/(activities|tools|hooks)\\/|\\/worker\\/(sink|claim-check|worker|liveness|workflow-sinks)\\.ts$/.test(f));
      console.log(JSON.stringify({ root, client }));`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--require', 'tsx/cjs', '-e', probe], {
      cwd: repo,
    });
    expect(JSON.parse(stdout.trim().split('\n').pop() ?? '')).toEqual({ root: [], client: [] });
  });
});
