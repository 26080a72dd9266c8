// A throw-away PostgreSQL for one test file: Debian's binaries, a data folder in a temp dir, a
// Unix socket there and a TCP port on 127.0.0.1. PostgreSQL refuses to run as root, so a root
// test runs it as the `postgres` user (or nobody) through setpriv.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort } from '../temporal/dev-server';

export interface TestPostgres {
  /** A database URL for `database` (created on first use by createDatabase). */
  url(database?: string): string;
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
  /** Stops the server (fast shutdown: open connections are cut) and starts it again on the same port. */
  restart(downMs?: number): Promise<void>;
  /** Stops it without starting again; start() brings it back. */
  kill(): Promise<void>;
  start(): Promise<void>;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root)
    ? fs
        .readdirSync(root)
        .filter((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0)
    throw new Error(
      'PostgreSQL is not installed (no /usr/lib/postgresql/<version>/bin/initdb): apt-get install postgresql (.ci/run does it)',
    );
  return path.join(root, versions[0], 'bin');
}

/**
 * Runs as the postgres user when this process is root (PostgreSQL refuses root). setpriv execs the
 * command itself, so the pid spawn returns is PostgreSQL's and a signal reaches it.
 */
function asUser(): { wrap: (cmd: string, args: string[]) => [string, string[]]; user?: string } {
  if (process.getuid?.() !== 0) return { wrap: (cmd, args) => [cmd, args] };
  const user = ['postgres', 'nobody'].find((u) => {
    try {
      execFileSync('id', ['-u', u], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  });
  if (!user) throw new Error('running as root and no postgres or nobody user to run PostgreSQL as');
  const uid = execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim();
  const gid = execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim();
  return {
    wrap: (cmd, args) => ['setpriv', [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', cmd, ...args]],
    user,
  };
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = binDir();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-pg-'));
  const data = path.join(dir, 'data');
  const { wrap, user } = asUser();
  if (user) execFileSync('chown', ['-R', user, dir]);
  fs.chmodSync(dir, 0o755);
  const [cmd, args] = wrap(path.join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'sluice',
    '--auth=trust',
    '--no-sync',
    '-E',
    'UTF8',
    '--locale=C',
  ]);
  execFileSync(cmd, args, { stdio: 'pipe' });
  const port = await freePort();
  let proc: ChildProcess | undefined;
  let output = '';

  const start = async () => {
    const [c, a] = wrap(path.join(bin, 'postgres'), [
      '-D',
      data,
      '-k',
      dir,
      '-p',
      String(port),
      '-h',
      '127.0.0.1',
      '-c',
      'fsync=off',
      '-c',
      'max_connections=200',
    ]);
    output = '';
    const p = spawn(c, a, { stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout?.on('data', (d) => (output += d));
    p.stderr?.on('data', (d) => (output += d));
    proc = p;
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (p.exitCode !== null) throw new Error(`postgres exited (${p.exitCode}): ${output}`);
      try {
        execFileSync(path.join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'sluice'], {
          stdio: 'ignore',
        });
        return;
      } catch {
        if (Date.now() > deadline) throw new Error(`postgres did not start in 30 s: ${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };

  const kill = async () => {
    const p = proc;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    // SIGINT: fast shutdown, every open connection is cut (what a crash looks like to a client).
    p.kill('SIGINT');
    await exited;
    proc = undefined;
  };

  await start();
  const url = (database = 'postgres') => `postgres://sluice@127.0.0.1:${port}/${database}`;
  return {
    url,
    async createDatabase(name) {
      const { Client } = await import('pg');
      const c = new Client({ connectionString: url() });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
      } finally {
        await c.end();
      }
      return url(name);
    },
    kill,
    start,
    async restart(downMs = 500) {
      await kill();
      await new Promise((r) => setTimeout(r, downMs));
      await start();
    },
    async stop() {
      await kill();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
