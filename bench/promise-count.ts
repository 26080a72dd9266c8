// Preloaded into the bench worker by bench/cpu-profile.ts (`--require`, with
// BENCH_PROMISE_COUNT_DIR set): counts the promises each workflow thread's workflows create, by
// the workflow functions that created them. The SDK's promise hook records a stack trace for every
// one of them (for its stack trace query), so their number is a large and load-independent part
// of a call's worker CPU. Wraps the hook the SDK installs and, after it ran, counts a promise it
// tagged as a workflow's (`runId`). Writes <dir>/<pid>-<thread id>.json every second.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as v8 from 'node:v8';
import { isMainThread, threadId } from 'node:worker_threads';

const dir = process.env.BENCH_PROMISE_COUNT_DIR;
if (dir && !isMainThread) {
  const bySite = new Map<string, number>();
  let bundle = '';
  // The frames from the stack's text: under tsx a `prepareStackTrace` of its own formats it, so
  // V8's call sites are not to be had.
  const framesOf = (stack: string) =>
    stack
      .split('\n')
      .slice(1)
      .map((line) => {
        const m = /at (?:(\S+) \()?(.*?):(\d+):\d+\)?$/.exec(line.trim());
        return { file: m?.[2] ?? '', name: m?.[1] ?? `(anonymous):${m?.[3] ?? '?'}` };
      });
  const siteOf = (): string => {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 30;
    const stack = new Error().stack ?? '';
    Error.stackTraceLimit = limit;
    const inBundle = framesOf(stack).filter((f) => f.file.endsWith('-bundle.js'));
    bundle ||= path.basename(inBundle[0]?.file ?? '');
    return (
      inBundle
        .slice(0, 3)
        .map((f) => f.name)
        .join(' < ') || '(outside the bundle)'
    );
  };
  // Each promise once: the SDK's hook is not the only one. A workflow that enters a cancellation
  // scope's `run` enables the SDK's AsyncLocalStorage, and with it Node's async_hooks installs a
  // promise hook of its own in that thread, which this wrapper would count again.
  const counted = new WeakSet<object>();
  const createHook = v8.promiseHooks.createHook.bind(v8.promiseHooks);
  v8.promiseHooks.createHook = (hooks) => {
    const init = hooks.init;
    return createHook({
      ...hooks,
      init(promise, parent) {
        init?.(promise, parent);
        if ((promise as { runId?: string }).runId === undefined || counted.has(promise)) return;
        counted.add(promise);
        const site = siteOf();
        bySite.set(site, (bySite.get(site) ?? 0) + 1);
      },
    });
  };
  setInterval(() => {
    const sites = [...bySite].sort((a, b) => b[1] - a[1]);
    const total = sites.reduce((n, [, c]) => n + c, 0);
    fs.writeFileSync(path.join(dir, `${process.pid}-${threadId}.json`), JSON.stringify({ bundle, total, sites }));
  }, 1_000).unref();
}
