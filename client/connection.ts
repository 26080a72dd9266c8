// Connection settings follow Temporal's own conventions (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_API_KEY, TEMPORAL_TLS*, TEMPORAL_PROFILE, config files), so the same code reaches the
// embedded dev server, a self-hosted cluster or Temporal Cloud.
//
// Two kinds: a worker needs Core's NativeConnection (@temporalio/worker, loaded only when asked
// for); an agent process that only starts batches and decides approvals needs a plain client
// Connection, and loads no worker runtime.
import { Connection } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { NativeConnection } from '@temporalio/worker';
import { ServerError } from './errors';

export interface ConnectOptions {
  /** host:port; overrides TEMPORAL_ADDRESS and the profile. */
  address?: string;
  namespace?: string;
  profile?: string;
}

export interface Connected<C = NativeConnection> {
  connection: C;
  namespace: string;
  address: string;
}

/** A NativeConnection, for workers (and for clients living in a worker process). */
export function connect(opts: ConnectOptions = {}): Promise<Connected<NativeConnection>> {
  return open(opts, (o) =>
    (require('@temporalio/worker') as typeof import('@temporalio/worker')).NativeConnection.connect(o),
  );
}

/** A client Connection: enough to run batches and decide approvals; no worker runtime. */
export function connectClient(opts: ConnectOptions = {}): Promise<Connected<Connection>> {
  return open(opts, (o) => Connection.connect(o));
}

async function open<C>(
  opts: ConnectOptions,
  make: (o: ReturnType<typeof loadClientConnectConfig>['connectionOptions'] & { address: string }) => Promise<C>,
): Promise<Connected<C>> {
  const cfg = loadClientConnectConfig(opts.profile ? { profile: opts.profile } : {});
  const address = opts.address ?? cfg.connectionOptions.address ?? 'localhost:7233';
  const namespace = opts.namespace ?? cfg.namespace ?? 'default';
  try {
    const connection = await make({ ...cfg.connectionOptions, address });
    return { connection, namespace, address };
  } catch (err) {
    throw new ServerError(
      `cannot reach a Temporal server at ${address} (${(err as Error).message}). ` +
        'Start one with `npx sluice dev`, or point TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TLS settings) at yours.',
    );
  }
}
