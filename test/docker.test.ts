// The Docker image without a Docker engine: the Dockerfile's steps run in a clean folder as a
// build would run them (each stage a folder of its own standing for its file system, WORKDIR a
// folder in it, COPY a copy from the build context minus .dockerignore or from an earlier stage,
// RUN a shell in the working folder with the stage's ENV), then the runtime stage's CMD starts a
// worker against the test server and a batch runs through it. docker-compose.yml is checked for
// the order its services start in and for the config its workers load.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { SluiceClient } from '../client/client';
import { connect } from '../temporal/connection';
import { eventually } from './eventually';

const exec = promisify(execFile);
const repo = path.resolve(__dirname, '..');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-docker-'));

interface Stage {
  name: string;
  root: string;
  cwd: string;
  env: Record<string, string>;
  cmd?: string[];
}

/** The Dockerfile's instructions, continuation lines joined and comments dropped. */
function instructions(text: string): { op: string; args: string }[] {
  const joined = text.replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const [op, ...rest] = l.split(/\s+/);
      return { op: op.toUpperCase(), args: rest.join(' ') };
    });
}

/** The build context as Docker sends it: the checkout minus what .dockerignore names. */
function contextFilter(): (rel: string) => boolean {
  const ignored = fs
    .readFileSync(path.join(repo, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const globs = ignored.map((p) => new RegExp(`^${p.replace(/\./g, '\\.').replace(/\*/g, '[^/]*')}(/|$)`));
  return (rel) => !globs.some((g) => g.test(rel));
}

function copyInto(from: string, to: string, keep: (rel: string) => boolean = () => true, base = from) {
  const stat = fs.statSync(from);
  if (stat.isDirectory()) {
    fs.mkdirSync(to, { recursive: true });
    for (const name of fs.readdirSync(from)) {
      const rel = path.relative(base, path.join(from, name));
      if (keep(rel)) copyInto(path.join(from, name), path.join(to, name), keep, base);
    }
  } else fs.copyFileSync(from, to);
}

let runtime: Stage;
let worker: ChildProcess | undefined;
let workerLog = '';
const steps: string[] = [];

beforeAll(async () => {
  const stages: Stage[] = [];
  const inContext = contextFilter();
  let stage: Stage | undefined;
  const env = {
    ...process.env,
    // As fast as the npm cache allows; the registry only for what it lacks.
    npm_config_prefer_offline: 'true',
    npm_config_loglevel: 'error',
  };
  for (const { op, args } of instructions(fs.readFileSync(path.join(repo, 'Dockerfile'), 'utf8'))) {
    if (op === 'FROM') {
      const name = args.match(/\bAS\s+(\S+)/i)?.[1] ?? `stage-${stages.length}`;
      const root = path.join(work, name);
      fs.mkdirSync(root, { recursive: true });
      stage = { name, root, cwd: root, env: {} };
      stages.push(stage);
      continue;
    }
    if (!stage) throw new Error(`${op} before FROM`);
    const s = stage;
    steps.push(`${s.name}: ${op} ${args}`);
    if (op === 'WORKDIR') {
      s.cwd = path.join(s.root, args);
      fs.mkdirSync(s.cwd, { recursive: true });
    } else if (op === 'ENV') {
      const [k, ...v] = args.split('=');
      s.env[k] = v.join('=');
    } else if (op === 'COPY') {
      // Docker's rules: a folder's contents go into dest; a file goes into dest when dest is a
      // folder (ends in /, is ., or takes several sources), else becomes dest.
      const parts = args.split(/\s+/);
      const from = parts[0].startsWith('--from=') ? parts.shift()!.slice('--from='.length) : undefined;
      const dest = parts.pop()!;
      const to = path.isAbsolute(dest) ? path.join(s.root, dest) : path.join(s.cwd, dest);
      const intoFolder = dest.endsWith('/') || dest === '.' || parts.length > 1;
      const source = from ? stages.find((x) => x.name === from) : undefined;
      if (from && !source) throw new Error(`COPY --from=${from}: no such stage`);
      for (const src of parts) {
        const abs = source ? path.join(source.root, src) : path.join(repo, src);
        const keep = source ? () => true : (rel: string) => inContext(path.relative(repo, path.join(abs, rel)));
        if (fs.statSync(abs).isDirectory()) copyInto(abs, to, keep);
        else {
          const file = intoFolder ? path.join(to, path.basename(src)) : to;
          fs.mkdirSync(path.dirname(file), { recursive: true });
          fs.copyFileSync(abs, file);
        }
      }
    } else if (op === 'RUN') {
      try {
        await exec('sh', ['-c', args], {
          cwd: s.cwd,
          env: { ...env, ...s.env },
          maxBuffer: 64 * 1024 * 1024,
        });
      } catch (err) {
        const e = err as { stdout?: string; stderr?: string; message: string };
        throw new Error(`${s.name}: RUN ${args} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
      }
    } else if (op === 'CMD') {
      s.cmd = JSON.parse(args);
    } else throw new Error(`the test does not know the Dockerfile instruction ${op}: teach it, or do without`);
  }
  runtime = stages.at(-1)!;
}, 1_500_000);

afterAll(async () => {
  worker?.kill('SIGTERM');
  // Fresh apps' node_modules take minutes to remove on a loaded machine.
  await fs.promises.rm(work, { recursive: true, force: true });
}, 900_000);

describe('the Dockerfile, step by step in a clean folder', () => {
  it('builds in two stages: the runtime holds dist/ and production dependencies, no sources or devDependencies', () => {
    expect(steps.some((l) => l.startsWith('build: RUN') && l.includes('npm run build'))).toBe(true);
    const sluice = path.join(runtime.cwd, 'node_modules', 'sluice');
    expect(fs.existsSync(path.join(sluice, 'dist', 'index.js'))).toBe(true);
    expect(fs.existsSync(path.join(sluice, 'worker', 'worker.ts'))).toBe(false);
    for (const dev of ['typescript', 'vitest', '@biomejs/biome'])
      expect(fs.existsSync(path.join(runtime.cwd, 'node_modules', dev)), dev).toBe(false);
    for (const part of ['@temporalio/worker', 'pg', 'prom-client', 'tsx'])
      expect(fs.existsSync(path.join(runtime.cwd, 'node_modules', part)), part).toBe(true);
  });

  it("the image's CMD starts a worker with the config SLUICE_CONFIG names, and a batch runs through it", async () => {
    const compose = parseYaml(fs.readFileSync(path.join(repo, 'docker-compose.yml'), 'utf8'));
    const config: string = compose.services['sluice-worker'].environment.SLUICE_CONFIG;
    expect(config.startsWith('/')).toBe(true);
    // The path is the image's own: it exists in the runtime stage's file system.
    const configFile = path.join(runtime.root, config);
    expect(fs.existsSync(configFile)).toBe(true);
    const taskQueue = `docker-${process.pid}-${Date.now()}`;
    const [cmd, ...args] = runtime.cmd!;
    worker = spawn(cmd, [...args, '--task-queue', taskQueue], {
      cwd: runtime.cwd,
      env: {
        ...process.env,
        ...runtime.env,
        SLUICE_CONFIG: configFile,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        SLUICE_DATABASE_URL: '',
        SLUICE_METRICS_PORT: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    worker.stdout!.on('data', (d) => (workerLog += d));
    worker.stderr!.on('data', (d) => (workerLog += d));
    const c = await connect({ address: inject('temporalAddress') });
    const client = new SluiceClient({ connection: c.connection, namespace: c.namespace, taskQueue });
    const out = await eventually(
      `a batch through the image's worker (its log: ${workerLog})`,
      async () => {
        if (worker!.exitCode !== null) throw new Error(`the worker exited: ${workerLog}`);
        return client.runBatch({
          sessionId: `docker-${taskQueue}`,
          turn: 1,
          step: 1,
          calls: [{ id: 'w1', name: 'get_weather', arguments: { city: 'Oslo' } }],
        });
      },
      { timeoutMs: 180_000 },
    );
    expect(out.results[0].result.isError).toBe(false);
    expect(JSON.stringify(out.results[0].result.content)).toContain('Oslo');
    await c.connection.close();
  }, 300_000);
});

describe('docker-compose.yml', () => {
  const compose = parseYaml(fs.readFileSync(path.join(repo, 'docker-compose.yml'), 'utf8'));
  const services: Record<string, { depends_on?: unknown; healthcheck?: unknown; command?: string[] }> =
    compose.services;

  it('every service waits for what it needs: a condition on each dependency, a health check behind each service_healthy', () => {
    for (const [name, s] of Object.entries(services)) {
      if (!s.depends_on) continue;
      expect(Array.isArray(s.depends_on), `${name}: depends_on with conditions, not a list`).toBe(false);
      for (const [dep, how] of Object.entries(s.depends_on as Record<string, { condition: string }>)) {
        expect(['service_healthy', 'service_completed_successfully']).toContain(how.condition);
        if (how.condition === 'service_healthy')
          expect(services[dep].healthcheck, `${dep} has a health check`).toBeTruthy();
      }
    }
    // The order: database, then Temporal, then the one-off setup, then the workers.
    expect((services.temporal.depends_on as Record<string, unknown>).postgresql).toBeTruthy();
    expect((services['sluice-setup'].depends_on as Record<string, unknown>).temporal).toBeTruthy();
    expect(
      (services['sluice-worker'].depends_on as Record<string, { condition: string }>)['sluice-setup'].condition,
    ).toBe('service_completed_successfully');
  });
});
