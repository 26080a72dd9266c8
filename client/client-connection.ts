// A client Connection for an agent process that only starts batches and decides approvals: the
// Temporal client's, no worker runtime. Apart from client/connection.ts (which adds the worker's
// NativeConnection) so sluice/client's declarations never name @temporalio/worker.
import { Connection } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { ServerError } from './errors';

export interface ConnectOptions {
  /** host:port; overrides TEMPORAL_ADDRESS and the profile. */
  address?: string;
  namespace?: string;
  profile?: string;
}

export interface Connected<C = Connection> {
  connection: C;
  namespace: string;
  address: string;
}

/** A client Connection: enough to run batches and decide approvals; no worker runtime. */
export function connectClient(opts: ConnectOptions = {}): Promise<Connected<Connection>> {
  return openConnection(opts, (o) => Connection.connect(o));
}

export async function openConnection<C>(
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
