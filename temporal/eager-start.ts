// Eager start and worker versioning do not mix: the server hands an eagerly started batch to the
// worker of this process that asked, whatever its deployment version, so a new batch could be
// pinned to a version that is no longer current. Workers that use versioning say so here (a
// process-wide set, keyed on globalThis so two copies of the package agree), and a client in the
// same process then starts batches on their task queue the plain way.
const KEY = Symbol.for('sluice.versionedTaskQueues');

function versioned(): Set<string> {
  const g = globalThis as { [KEY]?: Set<string> };
  g[KEY] ??= new Set();
  return g[KEY];
}

export function markVersionedWorker(namespace: string, taskQueue: string): void {
  versioned().add(`${namespace}\u0000${taskQueue}`);
}

export function hasVersionedWorker(namespace: string, taskQueue: string): boolean {
  return versioned().has(`${namespace}\u0000${taskQueue}`);
}
