// `npm run build`: dist/ from the sources (tsc, the assets tsc does not copy, the browser bundle),
// skipped when nothing it is built from changed since the last build. `npm ci` builds dist/ (the
// `prepare` script) and `npm pack` builds it again (`prepack`): the test suite packs right after
// an install, and the second tsc run was 16 CPU-s of it for the same output. What it is built from:
// every file of the folders tsconfig.build.json compiles (their assets too), the tsconfigs, the
// manifest and lockfile (the compiler's and the dependencies' versions), and the build's scripts.
// Their digest is kept in dist/.build-inputs, written last, so a build that failed or was cut
// short leaves none and the next one runs. --force builds whatever the digest says.
const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const stamp = path.join(root, 'dist', '.build-inputs');

/** Every file under `rel` (a file or a folder), sorted, as paths from the root. */
function filesUnder(rel) {
  const abs = path.join(root, rel);
  if (!fs.existsSync(abs)) return [];
  if (!fs.statSync(abs).isDirectory()) return [rel];
  return fs
    .readdirSync(abs)
    .sort()
    .flatMap((name) => filesUnder(path.join(rel, name)));
}

function inputsDigest() {
  const tsconfig = JSON.parse(fs.readFileSync(path.join(root, 'tsconfig.build.json'), 'utf8'));
  const inputs = [
    ...tsconfig.include,
    'tsconfig.json',
    'tsconfig.build.json',
    'package.json',
    'package-lock.json',
    'scripts/build.js',
    'scripts/copy-assets.js',
    'scripts/build-browser.ts',
  ].flatMap(filesUnder);
  const hash = crypto.createHash('sha256');
  for (const file of inputs)
    hash
      .update(`${file}\0`)
      .update(fs.readFileSync(path.join(root, file)))
      .update('\0');
  return hash.digest('hex');
}

const digest = inputsDigest();
if (!process.argv.includes('--force') && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === digest) {
  // stderr: `npm pack --json` runs this build and reads its stdout as the pack's JSON.
  process.stderr.write('dist/ is up to date with its sources (npm run build -- --force builds it anyway)\n');
  process.exit(0);
}
fs.rmSync(stamp, { force: true });
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' });
run(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json']);
run(process.execPath, [path.join(__dirname, 'copy-assets.js')]);
run(process.execPath, [require.resolve('tsx/cli'), path.join(__dirname, 'build-browser.ts')]);
fs.writeFileSync(stamp, digest);
