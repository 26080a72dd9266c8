// The Docker image's runtime stage is a worker app like any other: it installs the packed Sluice
// and the optional parts a worker of docker-compose.yml uses, each at the version this checkout's
// lockfile tested. Writes that app's package.json beside the tarball:
//   node scripts/worker-app.js <folder holding sluice.tgz>
const fs = require('node:fs');
const path = require('node:path');

// The worker runtime; PostgreSQL stores (SLUICE_DATABASE_URL); metrics and traces
// (SLUICE_METRICS_PORT, OTEL_EXPORTER_OTLP_ENDPOINT); tsx for the TypeScript config; zod, which
// the config imports itself.
const WORKER_PARTS = [
  '@temporalio/worker',
  '@temporalio/interceptors-opentelemetry',
  'pg',
  'prom-client',
  '@opentelemetry/api',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/exporter-trace-otlp-http',
  'tsx',
  'zod',
];

const root = path.join(__dirname, '..');
const out = process.argv[2];
if (!out) throw new Error('usage: node scripts/worker-app.js <folder holding sluice.tgz>');
const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')).packages;
const dependencies = { sluice: 'file:sluice.tgz' };
for (const name of WORKER_PARTS) {
  const version = lock[`node_modules/${name}`]?.version;
  if (!version) throw new Error(`${name} is not in package-lock.json`);
  dependencies[name] = version;
}
fs.writeFileSync(
  path.join(out, 'package.json'),
  `${JSON.stringify({ name: 'sluice-worker', version: '1.0.0', private: true, dependencies }, null, 2)}\n`,
);
