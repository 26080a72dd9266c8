// Connection settings follow Temporal's own conventions (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_API_KEY, TEMPORAL_TLS*, TEMPORAL_PROFILE, config files), so the same code reaches the
// embedded dev server, a self-hosted cluster or Temporal Cloud.
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { NativeConnection } from '@temporalio/worker';
import { ServerError } from './errors';

export interface ConnectOptions {
  /** host:port; overrides TEMPORAL_ADDRESS and the profile. */
  address?: string;
  namespace?: string;
  profile?: string;
}

export interface Connected {
  connection: NativeConnection;
  namespace: string;
  address: string;
}

export async function connect(opts: ConnectOptions = {}): Promise<Connected> {
  const cfg = loadClientConnectConfig(opts.profile ? { profile: opts.profile } : {});
  const address = opts.address ?? cfg.connectionOptions.address ?? 'localhost:7233';
  const namespace = opts.namespace ?? cfg.namespace ?? 'default';
  try {
    const connection = await NativeConnection.connect({ ...cfg.connectionOptions, address });
    return { connection, namespace, address };
  } catch (err) {
    throw new ServerError(
      `cannot reach a Temporal server at ${address} (${(err as Error).message}). ` +
        'Start one with `npx sluice dev`, or point TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TLS settings) at yours.',
    );
  }
}
