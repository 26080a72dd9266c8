// What installing Sluice weighs, for three kinds of app: a client-only app (runs batches and
// decides approvals), a worker app (hosts Sluice: adds what a worker needs), and everything (every
// optional part and every model SDK). Each is a fresh app outside the checkout, installed from a
// tarball (the checkout packed now, or the path given), measured by packages under node_modules
// and their size on disk. The optional parts are installed at the versions this checkout's
// lockfile tested (the newest of some, OpenTelemetry 2 for one, is outside Sluice's ranges).
//   npx tsx scripts/install-size.ts [sluice.tgz]
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freshApp, installWeight, packSluice, REPO } from '../test/fresh-app';

const KINDS: Record<string, string[]> = {
  'client-only': [],
  worker: ['@temporalio/worker'],
  everything: [
    '@temporalio/worker',
    '@temporalio/testing',
    '@temporalio/interceptors-opentelemetry',
    'pg',
    '@opentelemetry/api',
    '@opentelemetry/exporter-trace-otlp-http',
    '@opentelemetry/resources',
    '@opentelemetry/sdk-trace-base',
    'prom-client',
    '@modelcontextprotocol/sdk',
    'quickjs-emscripten-core',
    '@jitl/quickjs-wasmfile-release-sync',
    'tsx',
    'ai',
    'openai',
    '@anthropic-ai/sdk',
  ],
};

async function main() {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-size-'));
  const tarball = process.argv[2] ? path.resolve(process.argv[2]) : await packSluice(work);
  const lock = JSON.parse(fs.readFileSync(path.join(REPO, 'package-lock.json'), 'utf8')).packages;
  const pinned = (name: string) => `${name}@${lock[`node_modules/${name}`].version}`;
  const rows: string[] = [];
  for (const [kind, extra] of Object.entries(KINDS)) {
    const app = await freshApp({ tarball, name: kind, parent: work, with: extra.map(pinned) });
    const { packages, mb } = installWeight(app.dir);
    rows.push(`${kind.padEnd(12)} ${String(packages).padStart(4)} packages ${String(mb).padStart(4)} MB`);
    console.log(rows.at(-1));
  }
  fs.rmSync(work, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
