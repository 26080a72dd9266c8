// `npm pack` and `npm publish`: the package.json in the tarball has no `prepare` script. npm 11
// lists a tarball's `prepare` among the install scripts a user must approve (a tarball is a
// "non-registry source"), though dist/ is built already and nothing is left to prepare. The
// checkout keeps it: `npm install` there, and a git install, build dist/ with it.
// prepack: `strip` (after the build), postpack: `restore`.
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const manifest = path.join(root, 'package.json');
const saved = path.join(root, '.sluice', 'package.json.before-pack');

function restore() {
  // A pack that died between the two steps left its saved copy: it is the checkout's own.
  if (fs.existsSync(saved)) fs.renameSync(saved, manifest);
}

if (process.argv[2] === 'strip') {
  restore();
  const text = fs.readFileSync(manifest, 'utf8');
  const pkg = JSON.parse(text);
  delete pkg.scripts.prepare;
  fs.mkdirSync(path.dirname(saved), { recursive: true });
  fs.writeFileSync(saved, text);
  fs.writeFileSync(manifest, `${JSON.stringify(pkg, null, 2)}\n`);
} else if (process.argv[2] === 'restore') {
  restore();
} else {
  console.error('usage: node scripts/pack-manifest.js strip|restore');
  process.exit(2);
}
