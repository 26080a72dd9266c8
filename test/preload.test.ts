// Sluice's workflow modules are preloaded: loaded once per workflow thread and shared by every
// workflow in it (worker/worker.ts, preloadSluiceWorkflows). That is only sound while they hold
// no state of their own, so this file checks both: that the bundle a worker builds preloads them,
// and that no module the workflows load keeps mutable state at module level.
import { WorkflowCodeBundler } from '@temporalio/worker/lib/workflow/bundler';
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';
import { describe, expect, inject, it } from 'vitest';
import { importGraph } from '../scripts/import-graph';
import { preloadSluiceWorkflows, SluicePlugin, WORKFLOWS_PATH } from '../worker/worker';

const ROOT = path.resolve(__dirname, '..');

describe('the workflow bundle preloads Sluice’s workflows', () => {
  it('a bundler given SluicePlugin (what Worker.create does) preloads them, beside your own', () => {
    const plugin = new SluicePlugin({
      config: { tools: [] },
      stateDir: fs.mkdtempSync(path.join(inject('runDir'), 'preload-')),
    });
    const preloaded = (b: WorkflowCodeBundler) => (b as unknown as { preloadModules: string[] }).preloadModules;
    const bundler = new WorkflowCodeBundler({ workflowsPath: WORKFLOWS_PATH, plugins: [plugin] });
    expect(preloaded(bundler)).toEqual([WORKFLOWS_PATH]);
    const mine = new WorkflowCodeBundler({
      workflowsPath: WORKFLOWS_PATH,
      preloadModules: ['my-lib'],
      plugins: [plugin],
    });
    expect(preloaded(mine)).toEqual(['my-lib', WORKFLOWS_PATH]);
    expect(preloaded(new WorkflowCodeBundler({ workflowsPath: WORKFLOWS_PATH }))).toEqual([]);
  });

  it('is idempotent', () => {
    const once = preloadSluiceWorkflows({ workflowsPath: WORKFLOWS_PATH });
    expect(preloadSluiceWorkflows(once)).toBe(once);
  });
});

/** Every module of this checkout that the workflows' entry loads (type-only imports load nothing). */
function workflowModules(): string[] {
  const { edges } = importGraph();
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const e of edges) if (e.from === file && !e.typeOnly) visit(e.to);
  };
  visit('workflows/index.ts');
  return [...seen].map((f) => path.join(ROOT, f));
}

/** Read-only lookups at module level, reviewed: nothing adds to them after the module loads. */
const READ_ONLY = new Set(['codec/output.ts PACKED_TYPES', 'pipeline/digest.ts K']);

function moduleState(file: string): string[] {
  const rel = path.relative(ROOT, file);
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const found: string[] = [];
  for (const st of source.statements) {
    if (ts.isVariableStatement(st)) {
      const isConst = (st.declarationList.flags & ts.NodeFlags.Const) !== 0;
      for (const d of st.declarationList.declarations) {
        const name = `${rel} ${d.name.getText(source)}`;
        if (!isConst) found.push(`${name}: a module-level let or var`);
        else if (d.initializer && ts.isNewExpression(d.initializer) && !READ_ONLY.has(name))
          found.push(`${name}: a module-level ${d.initializer.expression.getText(source)}`);
      }
    }
    if (ts.isClassDeclaration(st))
      for (const m of st.members)
        if (
          ts.isPropertyDeclaration(m) &&
          m.modifiers?.some((x) => x.kind === ts.SyntaxKind.StaticKeyword) &&
          !m.modifiers.some((x) => x.kind === ts.SyntaxKind.ReadonlyKeyword)
        )
          found.push(`${rel} ${st.name?.text}.${m.name.getText(source)}: a static field that can change`);
  }
  return found;
}

describe('Sluice’s workflow modules hold no state of their own', () => {
  it('the modules the workflows load', () => {
    const modules = workflowModules().map((f) => path.relative(ROOT, f));
    // The scan follows the real graph: the stages, the batch and the session are in it.
    expect(modules).toEqual(
      expect.arrayContaining(['workflows/batch.ts', 'workflows/session.ts', 'pipeline/stages.ts', 'codec/output.ts']),
    );
    expect(
      modules.every((m) => m.startsWith('workflows/') || m.startsWith('pipeline/') || m.startsWith('codec/')),
    ).toBe(true);
  });

  it('no module-level let, var, mutable container or changeable static field', () => {
    expect(workflowModules().flatMap(moduleState)).toEqual([]);
  });

  it('the scan finds such state where there is some', () => {
    const dir = fs.mkdtempSync(path.join(inject('runDir'), 'preload-'));
    try {
      const file = path.join(dir, 'stateful.ts');
      fs.writeFileSync(
        file,
        'let calls = 0;\nconst seen = new Map<string, number>();\nexport class Counter { static count = 0; static readonly max = 3; }\nexport const count = () => ++calls + seen.size;\n',
      );
      expect(moduleState(file).map((s) => s.replace(/^\S+ /, ''))).toEqual([
        'calls: a module-level let or var',
        'seen: a module-level Map',
        'Counter.count: a static field that can change',
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
