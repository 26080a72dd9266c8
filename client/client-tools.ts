// Client tools, the client's side: the key a session's client makes when the session starts, and
// serveClientTools, which runs the bodies of the session's `runsOn: 'client'` tools in this process
// (an app, `sluice chat --client-tools`). It polls the session's client task queue with a Temporal
// worker that registers only the client activity, runs the body, and signs what the body returned
// with the key, so the session's worker accepts it as this client's and nobody else's.
import { generateKeyPairSync } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DataConverter } from '@temporalio/common';
import type { ToolDefinition } from '../define/config';
import { type ClientBinding, clientKeyId, clientTaskQueue } from '../pipeline/client-tools';
import { InvalidInputError } from '../support/errors';
import type { SessionHandle } from './session';

/**
 * A session's client key: `binding` (its public half) goes into the session's start
 * (`batch: { client: key.binding }`), the private half stays with the client. Keep it as long as
 * the session lives: a client that comes back after a crash needs the same key to take its calls.
 */
export interface ClientKey {
  binding: ClientBinding;
  /** The private half, an Ed25519 JWK. */
  privateKey: JsonWebKey;
}

/** A new key for a session's client. */
export function createClientKey(): ClientKey {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const x = String(publicKey.export({ format: 'jwk' }).x);
  return {
    binding: { keyId: clientKeyId(x), publicKey: { kty: 'OKP', crv: 'Ed25519', x } },
    privateKey: privateKey.export({ format: 'jwk' }),
  };
}

/** Writes a key where only this user can read it. */
export function saveClientKey(file: string, key: ClientKey): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.writeFileSync(file, `${JSON.stringify(key)}\n`, { mode: 0o600 });
}

/** Reads a key saveClientKey wrote; a clear error for a missing or damaged one. */
export function loadClientKey(file: string): ClientKey {
  let key: ClientKey;
  try {
    key = JSON.parse(fs.readFileSync(file, 'utf8')) as ClientKey;
  } catch (err) {
    throw new InvalidInputError(
      `the session's client key could not be read from ${file} (${(err as Error).message}): only the client that started the session holds it, so its client tools can be served only from where it was saved`,
    );
  }
  if (typeof key?.binding?.publicKey?.x !== 'string' || key.binding.keyId !== clientKeyId(key.binding.publicKey.x))
    throw new InvalidInputError(`${file} is not a session client key (it has no binding whose keyId matches its key)`);
  return key;
}

/**
 * A NativeConnection from @temporalio/worker, typed by its shape: sluice/client's declarations name
 * no worker package, which a client-only app does not install.
 */
interface WorkerConnection {
  close(): Promise<void>;
}

export interface ServeClientToolsOptions {
  /** The bodies to run: tools with `runsOn: 'client'`, the same definitions as the worker's config. */
  tools: ToolDefinition[];
  key: ClientKey;
  /**
   * A worker connection (NativeConnection from @temporalio/worker); default the session's client's
   * own connection when it is one.
   */
  connection?: WorkerConnection;
  /** The data converter the workers use (their payload codec), when they use one. */
  dataConverter?: DataConverter;
}

/** A client serving its session's client tools: `stop()` ends it (a body running then is let finish). */
export interface ClientToolServer {
  readonly taskQueue: string;
  /** Resolves when it has stopped; rejects when its worker failed. */
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs the session's client tools here until stopped: calls that wait for the user's device are
 * taken, including those that waited while no client was attached.
 */
export async function serveClientTools(
  session: Pick<SessionHandle, 'sessionId' | 'client'>,
  opts: ServeClientToolsOptions,
): Promise<ClientToolServer> {
  // Loaded here, so sluice/client loads no worker runtime until a client serves tools.
  const { NativeConnection, Worker } = await import('@temporalio/worker');
  const { toCandidate } = await import('../activities/execute');
  const { clientActivity } = await import('./client-tool-body');
  const connection = opts.connection ?? session.client.temporal.connection;
  if (!(connection instanceof NativeConnection))
    throw new InvalidInputError(
      "serveClientTools needs a worker connection: pass connection: await NativeConnection.connect({ address }) from @temporalio/worker (sluice/client's connect() makes a plain client connection, which cannot poll)",
    );
  for (const t of opts.tools)
    if (t.runsOn !== 'client')
      throw new InvalidInputError(`tool ${t.name} runs on the worker: serve only tools defined with runsOn: 'client'`);
  const taskQueue = clientTaskQueue(session.sessionId, opts.key.binding.keyId);
  const worker = await Worker.create({
    connection,
    namespace: session.client.temporal.options.namespace,
    taskQueue,
    activities: { runClientTool: clientActivity(session.sessionId, opts, toCandidate) },
    ...(opts.dataConverter ? { dataConverter: opts.dataConverter } : {}),
  });
  const done = worker.run();
  return {
    taskQueue,
    done,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}
