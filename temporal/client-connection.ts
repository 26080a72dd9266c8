// A client Connection for an agent process that only starts batches and decides approvals: the
// Temporal client's, no worker runtime. Apart from temporal/connection.ts (which adds the worker's
// NativeConnection) so sluice/client's declarations never name @temporalio/worker.
//
// Settings are Temporal's own (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
// TEMPORAL_TLS*, TEMPORAL_PROFILE, the temporal.toml file), read by @temporalio/envconfig. That
// package is an optional peer: npm resolves a missing peer to its newest version, which in an app
// on an older Temporal brings a second copy of @temporalio/common. Without it, the address and
// namespace variables still work; anything only envconfig reads fails at once, naming the package.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Connection } from '@temporalio/client';
import { MissingPackageError } from '../support/optional';
import { ServerError } from '../support/errors';

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

/**
 * What a connect function is given: the address and whatever else the profile sets (TLS, API key,
 * gRPC metadata), in the shape both Connection.connect and NativeConnection.connect take.
 */
type ConnectionSettings = { address: string } & Record<string, unknown>;

/** A client Connection: enough to run batches and decide approvals; no worker runtime. */
export function connectClient(opts: ConnectOptions = {}): Promise<Connected<Connection>> {
  return openConnection(opts, (o) => Connection.connect(o));
}

export async function openConnection<C>(
  opts: ConnectOptions,
  make: (o: ConnectionSettings) => Promise<C>,
): Promise<Connected<C>> {
  const cfg = settings(opts);
  const address = opts.address ?? cfg.address ?? 'localhost:7233';
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

interface Settings {
  address?: string;
  namespace?: string;
  connectionOptions: Record<string, unknown>;
}

/** Environment variables only @temporalio/envconfig reads (everything but address and namespace). */
const ENVCONFIG_ONLY = /^TEMPORAL_(PROFILE|CONFIG_FILE|API_KEY|TLS|GRPC_META_|CODEC_)/;

function settings(opts: ConnectOptions): Settings {
  let envconfig: typeof import('@temporalio/envconfig') | undefined;
  try {
    envconfig = require('@temporalio/envconfig') as typeof import('@temporalio/envconfig');
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND';
    if (
      !missing ||
      !String((err as Error).message)
        .split('\n')[0]
        .includes('@temporalio/envconfig')
    )
      throw err;
  }
  if (envconfig) {
    const cfg = envconfig.loadClientConnectConfig(opts.profile ? { profile: opts.profile } : {});
    return {
      address: cfg.connectionOptions.address,
      namespace: cfg.namespace,
      connectionOptions: cfg.connectionOptions as Record<string, unknown>,
    };
  }
  const needs = [
    ...(opts.profile ? [`the profile '${opts.profile}'`] : []),
    ...Object.keys(process.env).filter((k) => ENVCONFIG_ONLY.test(k)),
    ...configFiles().filter((f) => fs.existsSync(f)),
  ];
  if (needs.length > 0)
    throw new MissingPackageError(
      ['@temporalio/envconfig'],
      `Temporal connection settings beyond TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE (${needs.join(', ')})`,
    );
  return {
    address: process.env.TEMPORAL_ADDRESS || undefined,
    namespace: process.env.TEMPORAL_NAMESPACE || undefined,
    connectionOptions: {},
  };
}

/** Where Temporal's tools look for temporal.toml when TEMPORAL_CONFIG_FILE is not set. */
function configFiles(): string[] {
  const home = os.homedir();
  const dirs = [
    process.env.XDG_CONFIG_HOME || path.join(home, '.config'),
    path.join(home, 'Library', 'Application Support'),
    ...(process.env.APPDATA ? [process.env.APPDATA] : []),
  ];
  return dirs.map((d) => path.join(d, 'temporalio', 'temporal.toml'));
}
