// What the SDK's promise hook costs a workflow promise, in CPU, and what that cost depends on. The
// hook (@temporalio/worker's vm-shared.ts) runs for every promise workflow code creates: it finds
// the promise's workflow through two `Function(...)` calls and formats a stack trace of up to
// `Error.stackTraceLimit` frames, each frame looked up in the bundle's source map, for the
// `__stack_trace` query. Here the SDK's own hook is installed, Sluice's bundle with its source map
// registered, and promises are made in a vm context under a fake activator, from code placed in
// the bundle's file (its frames are source-mapped) or in another file (they are not), at several
// stack trace limits. CPU time (user + system), so a loaded machine moves it less than wall time.
//
//   npx tsx bench/hook-cost.ts [promises a measure = 20000]
import { globalHandlers } from '@temporalio/worker/lib/workflow/vm-shared';
import * as vm from 'node:vm';
import { publishedWorkflowBundle } from './bench-stack';

const N = Number(process.argv[2] ?? 20_000);
const BUNDLE = '/sluice-bundle.js';

/** The source map inlined at the end of a bundle. */
function sourceMapOf(code: string): object {
  const at = code.lastIndexOf('//# sourceMappingURL=data:');
  const b64 = code.indexOf('base64,', at) + 'base64,'.length;
  return JSON.parse(Buffer.from(code.slice(b64).trimEnd(), 'base64').toString());
}

/** µs of CPU a promise, made `depth` frames deep from code in `filename`, with the context's stack trace limit at `limit`. */
function measure(filename: string, limit: number, depth = 12): number {
  const context = vm.createContext({});
  const store = { promiseToStack: new Map(), childToParent: new Map() };
  context.__TEMPORAL_ACTIVATOR__ = { promiseStackStore: store, info: { runId: 'bench' } };
  vm.runInContext(`Error.stackTraceLimit = ${limit}`, context);
  const make = new vm.Script(
    'function deep(d, n) { if (d > 0) return deep(d - 1, n); for (let i = 0; i < n; i++) Promise.resolve(i); } deep;',
    // Lines far into the bundle, where its source map has mappings.
    { filename, lineOffset: 2000 },
  ).runInContext(context) as (depth: number, n: number) => void;
  make(depth, 2_000); // warm-up
  store.promiseToStack.clear();
  store.childToParent.clear();
  const before = process.cpuUsage();
  make(depth, N);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / N;
}

async function main(): Promise<void> {
  const { code } = await publishedWorkflowBundle();
  globalHandlers.install();
  await globalHandlers.addWorkflowBundle({ filename: BUNDLE, sourceMap: sourceMapOf(code) } as never);
  const rows: string[] = [
    '| frames (stack trace limit) | source-mapped µs a promise | not mapped µs a promise |',
    '|---:|---:|---:|',
  ];
  for (const limit of [10, 7, 5, 3, 0]) {
    const mapped = [0, 1, 2].map(() => measure(BUNDLE, limit));
    const plain = [0, 1, 2].map(() => measure('/elsewhere.js', limit));
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[1].toFixed(1);
    rows.push(`| ${limit} | ${median(mapped)} | ${median(plain)} |`);
  }
  console.log(`The SDK's promise hook, CPU a promise (median of 3 measures of ${N}):\n\n${rows.join('\n')}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
