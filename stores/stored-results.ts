// Stored results from outside a batch: read one back by the reference its note and
// `meta.storedResult.ref` name, and delete the old ones (the retention setting, `sluice results
// prune`). Files in the state folder or PostgreSQL, as the workers store them.
import { type ResultStore, type StoredResult, storedResultOf } from './claim-check';
import { openStores, type SluiceStores } from './stores';

export interface StoredResultsOptions {
  /** The workers' state folder (default `.sluice`); ignored when a database URL is set. */
  stateDir?: string;
  /** The workers' PostgreSQL (default SLUICE_DATABASE_URL). */
  databaseUrl?: string;
  /** A store of your own (the config's `resultStore`) instead of either. */
  store?: ResultStore;
}

async function withStore<T>(opts: StoredResultsOptions, use: (store: ResultStore) => Promise<T>): Promise<T> {
  if (opts.store) return use(opts.store);
  const stores: SluiceStores = openStores({ stateDir: opts.stateDir ?? '.sluice', databaseUrl: opts.databaseUrl });
  try {
    return await use(stores.results);
  } finally {
    await stores.close();
  }
}

/**
 * The full result behind a reference (`sluice-result:...`, `sluice-pg-result:...`), as the model
 * would have read it without the size bound; undefined when the store does not have it (never
 * stored there, or deleted by retention).
 */
export async function readStoredResult(
  ref: string,
  opts: StoredResultsOptions = {},
): Promise<StoredResult | undefined> {
  return withStore(opts, async (store) => {
    const stored = await store.get(ref);
    return stored === undefined ? undefined : storedResultOf(stored);
  });
}

/** Deletes the results stored more than `olderThanMs` ago; returns how many and their bytes. */
export async function pruneStoredResults(
  olderThanMs: number,
  opts: StoredResultsOptions = {},
): Promise<{ results: number; bytes: number }> {
  return withStore(opts, async (store) => {
    if (!store.prune)
      throw new Error(
        'this result store cannot delete old results (it has no prune method); clean it up by its own means',
      );
    return store.prune(new Date(Date.now() - olderThanMs));
  });
}
