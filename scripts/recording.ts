// What the history recorders share: where a release's recorded histories go, a throwaway dev
// server with a Sluice worker on it for the recording, and scrubbing what names the recording
// machine out of a history before it is committed.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SluiceClient } from '../client/client';
import { connect } from '../temporal/connection';
import type { SluiceConfig } from '../define/config';
import { freePort, startDevServer } from '../temporal/dev-server';
import { loadConfig } from '../worker/load-config';
import { createSluiceWorker } from '../worker/worker';

/** One folder per release under here: the histories recorded with that release's workflow code. */
export const FIXTURES = path.join(__dirname, '..', 'test', 'fixtures', 'histories');
/** This checkout's release: package.json's version. */
export const RELEASE: string = require('../package.json').version;

/** A release's recorded history of the given name (`mixed-batch.json`, `agent-session.json`). */
export function fixtureFile(release: string, name: string): string {
  return path.join(FIXTURES, release, name);
}

/** The release a recording script writes for: `--release NAME`, else `unreleased`. */
export function releaseArg(argv: string[]): string {
  const at = argv.indexOf('--release');
  const release = at >= 0 ? argv[at + 1] : 'unreleased';
  if (!release || !/^[\w.-]+$/.test(release)) throw new Error('--release takes a release name such as 1.1.0');
  return release;
}

/**
 * The fixture file to record, refused when it exists without `--force`: a shipped release's
 * histories are what later code must replay, so they are not overwritten by accident.
 */
export function freshFixtureFile(release: string, name: string, argv: string[]): string {
  const file = fixtureFile(release, name);
  if (fs.existsSync(file) && !argv.includes('--force'))
    throw new Error(
      `${path.relative(process.cwd(), file)} exists: pass --force if this release's workflow code really changed before it shipped`,
    );
  return file;
}

/** The demo config (sluice.config.ts) that the recordings run. */
export function demoConfig(): Promise<SluiceConfig> {
  return loadConfig(path.join(__dirname, '..', 'sluice.config.ts'));
}

export interface Recording {
  client: SluiceClient;
}

/**
 * Runs `record` against a fresh in-memory dev server with a worker of `config` on it (its state in
 * a scratch folder), then stops and removes all of it, whether `record` succeeded or not.
 */
export async function withRecordingWorker(
  config: SluiceConfig,
  record: (r: Recording) => Promise<void>,
): Promise<void> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-record-'));
  const server = await startDevServer({
    stateDir: path.resolve('.sluice'),
    port: await freePort(),
    headless: true,
    dbFile: ':memory:',
  });
  const { connection, namespace } = await connect({ address: server.address });
  const taskQueue = 'sluice-record';
  const worker = await createSluiceWorker({ connection, namespace, taskQueue, config, stateDir: scratch });
  const running = worker.run();
  running.catch((err) => console.error(`the worker stopped: ${err.stack ?? err}`));
  try {
    await record({ client: new SluiceClient({ connection, namespace, taskQueue }) });
  } finally {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running.catch(() => undefined);
    await connection.close();
    await server.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Worker identities and sticky queue names name the recording machine (pid@host-...), and stack
 * traces the folder it ran in; they mean nothing here. `tmp` also names the system's temporary
 * folder `<tmp>`.
 */
export function scrubIdentities(value: unknown, { tmp = false }: { tmp?: boolean } = {}): unknown {
  const root = path.resolve(__dirname, '..') + path.sep;
  // In a worktree whose node_modules is a link to another checkout's, stack traces through the
  // packages name that checkout's folder: it is the same <repo>/node_modules.
  const linked = realPath(path.join(root, 'node_modules'));
  const modules = linked && linked !== path.join(root, 'node_modules') ? linked + path.sep : undefined;
  const host = new RegExp(`^\\d+@${os.hostname().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*$`);
  const scrub = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(scrub);
    if (typeof v === 'string') {
      if (host.test(v)) return 'sluice-record';
      const unlinked = modules ? v.split(modules).join('<repo>/node_modules/') : v;
      const rooted = unlinked.split(root).join('<repo>/');
      return tmp ? rooted.split(os.tmpdir()).join('<tmp>') : rooted;
    }
    if (!v || typeof v !== 'object') return v;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, scrub(x)]));
  };
  return scrub(value);
}

function realPath(p: string): string | undefined {
  try {
    return fs.realpathSync(p);
  } catch {
    return undefined;
  }
}

/** Writes a recorded history, scrubbed (see scrubIdentities), and says where. */
export function writeFixture(file: string, json: { events: unknown[] }, scrub: { tmp?: boolean } = {}): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(scrubIdentities(json, scrub), null, 2)}\n`);
  console.log(`wrote ${path.relative(process.cwd(), file)} (${json.events.length} events)`);
}
