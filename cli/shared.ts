// What several commands share: the connection and store flags with their help, the client and
// stores they open, who a decision is recorded under, and how worker-side modules are loaded.
import * as fs from 'node:fs';
import { SluiceClient, SluiceError } from '../client/client';
import { connect, connectClient } from '../temporal/connection';
import { UsageError } from '../support/errors';
import { loadHistories, type LoadedHistory } from '../client/history';
import { codecFromEnv, dataConverterFromEnv, decryptHistory } from '../codec/payload';
import { importOptional } from '../support/optional';
import { DEFAULT_STATE_DIR } from '../stores/session-log-path';
import { openStores, type SluiceStores } from '../stores/stores';
import { DEFAULT_TASK_QUEUE } from '../workflows/definitions';
import type { Values } from './command';

/** The Temporal server and task queue: every command that talks to the server takes them. */
export const CONNECTION_FLAGS = {
  address: { type: 'string' },
  namespace: { type: 'string' },
  'task-queue': { type: 'string' },
} as const;

export const CONNECTION_OPTIONS = `Connection:
  --address host:port     Temporal frontend (default: TEMPORAL_ADDRESS, then localhost:7233)
  --namespace NAME        Temporal namespace (default: TEMPORAL_NAMESPACE, then "default")
  --task-queue NAME       Task queue of the Sluice workers (default "${DEFAULT_TASK_QUEUE}")`;

/** Where the workers keep session events and stored results: their state folder, or PostgreSQL. */
export const STORE_FLAGS = {
  'state-dir': { type: 'string' },
  'database-url': { type: 'string' },
} as const;

export const STORE_OPTIONS = `Stores:
  --state-dir DIR         The workers' state folder: session logs, stored results (default ${DEFAULT_STATE_DIR})
  --database-url URL      The workers' PostgreSQL database instead (default: SLUICE_DATABASE_URL)`;

// Worker-side modules load when a command needs them: an app that installed Sluice for its client
// side has no @temporalio/worker, and `sluice batch`, `approve`, `approvals` … still run there, on
// a plain client connection.
export const hasWorkerRuntime = (): boolean => {
  try {
    require.resolve('@temporalio/worker');
    return true;
  } catch {
    return false;
  }
};

/** `load()` (an import of a worker-side module), or an error naming what `sluice <command>` needs installed. */
export const needsWorker = <T>(command: string, load: () => Promise<T>): Promise<T> =>
  importOptional('@temporalio/worker', `\`sluice ${command}\``, load);

export const connectAny = (opts: { address?: string; namespace?: string }) =>
  hasWorkerRuntime() ? connect(opts) : connectClient(opts);

type ConnectionValues = Values<typeof CONNECTION_FLAGS>;

/** A SluiceClient on the server of --address/--namespace, for the workers of --task-queue. */
export async function client(v: ConnectionValues): Promise<{ sluice: SluiceClient; close: () => Promise<void> }> {
  const c = await connectAny({ address: v.address, namespace: v.namespace });
  return {
    sluice: new SluiceClient({
      connection: c.connection,
      namespace: c.namespace,
      taskQueue: v['task-queue'],
      dataConverter: dataConverterFromEnv(),
    }),
    close: () => c.connection.close(),
  };
}

/** The stores the workers write (PostgreSQL with SLUICE_DATABASE_URL, else the state folder's files). */
export async function withStores<T>(
  v: { 'state-dir'?: string },
  use: (stores: SluiceStores) => Promise<T>,
): Promise<T> {
  const stores = openStores({ stateDir: v['state-dir'] ?? DEFAULT_STATE_DIR });
  try {
    return await use(stores);
  } finally {
    await stores.close();
  }
}

/** Who a decision is recorded under: --by, else SLUICE_APPROVER, else the login name, else `fallback`. */
export function decider(v: { by?: string }, fallback: string): string {
  return v.by ?? process.env.SLUICE_APPROVER ?? process.env.USER ?? fallback;
}

/**
 * Runs a deciding command (approve, deny, reconcile, reassign) with a client: a refusal (a
 * SluiceError, its message saying why and what to do) is printed and exits 1; the connection is
 * closed either way.
 */
export async function withDecidingClient(
  v: ConnectionValues,
  out: (s: string) => void,
  run: (sluice: SluiceClient) => Promise<number>,
): Promise<number> {
  const { sluice, close } = await client(v);
  try {
    return await run(sluice);
  } catch (err) {
    if (err instanceof SluiceError) {
      out(err.message);
      return 1;
    }
    throw err;
  } finally {
    await close();
  }
}

export function positiveInt(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(`${flag} takes a whole number >= 1, not ${JSON.stringify(v)}`);
  return n;
}

/** --wait-timeout in milliseconds (default ten minutes). */
export function waitTimeoutMs(v: { 'wait-timeout'?: string }): number {
  const ms = v['wait-timeout'] !== undefined ? Number(v['wait-timeout']) * 1000 : 10 * 60_000;
  if (!Number.isFinite(ms) || ms < 0)
    throw new UsageError(`--wait-timeout takes seconds, not ${JSON.stringify(v['wait-timeout'])}`);
  return ms;
}

/** A verified approver's JWT: from --token-file, else SLUICE_APPROVER_TOKEN. */
export function approverToken(v: { 'token-file'?: string }): string | undefined {
  if (!v['token-file']) return process.env.SLUICE_APPROVER_TOKEN?.trim();
  try {
    return fs.readFileSync(v['token-file'], 'utf8').trim();
  } catch (err) {
    throw new UsageError(`--token-file ${v['token-file']}: ${(err as Error).message}`);
  }
}

/** Histories for the targets; a server connection only when some target is not a file. */
export async function withHistories<T>(
  v: Values<typeof CONNECTION_FLAGS>,
  targets: string[],
  use: (h: LoadedHistory[]) => Promise<T>,
): Promise<T> {
  const needsServer = targets.some((t) => !t.endsWith('.json') && !fs.existsSync(t));
  const c = needsServer ? await client(v) : undefined;
  try {
    const all = [];
    for (const t of targets) all.push(...(await loadHistories(t, c?.sluice.temporal)));
    const codec = codecFromEnv();
    if (codec) for (const h of all) await decryptHistory(h.history, codec);
    return await use(all);
  } finally {
    await c?.close();
  }
}
