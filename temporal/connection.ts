// Connection settings follow Temporal's own conventions (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_API_KEY, TEMPORAL_TLS*, TEMPORAL_PROFILE, config files), so the same code reaches the
// embedded dev server, a self-hosted cluster or Temporal Cloud.
//
// Two kinds: a worker needs Core's NativeConnection (@temporalio/worker, loaded only when asked
// for); an agent process that only starts batches and decides approvals needs a plain client
// Connection, and loads no worker runtime.
import type { NativeConnection } from '@temporalio/worker';
import { type Connected, type ConnectOptions, connectClient, openConnection } from './client-connection';

export { type Connected, type ConnectOptions, connectClient };

/** A NativeConnection, for workers (and for clients living in a worker process). */
export function connect(opts: ConnectOptions = {}): Promise<Connected<NativeConnection>> {
  return openConnection(opts, (o) =>
    (require('@temporalio/worker') as typeof import('@temporalio/worker')).NativeConnection.connect(
      o as import('@temporalio/worker').NativeConnectionOptions,
    ),
  );
}
