#!/usr/bin/env node
// One copy of Sluice per process: the CLI runs the copy the config's `import … from 'sluice'`
// resolves to. Two copies (the CLI from a checkout's TypeScript source, the config's tools from
// its dist/, or from another installed copy) each have their own classes, and results, errors and
// schemas built with one would be judged by the other.
//
// - Run from the checkout itself (its own sluice.config.ts, which reaches `sluice` through the
//   tsconfig paths): the TypeScript source through tsx, so edits need no build.
// - Anywhere else (a fresh app, a linked checkout, a workspace): whatever `sluice` resolves to from
//   the config's folder, compiled; this copy's dist/ when that is this package, else the other
//   copy's own CLI. Where nothing resolves `sluice`, a checkout still runs its source.
const fs = require('node:fs');
const { createRequire } = require('node:module');
const path = require('node:path');

// `sluice hook` runs once per harness tool call, on the call's critical path: it loads only the
// hook command (a Temporal client), not the whole CLI with the worker runtime. It loads no config.
const hook = process.argv[2] === 'hook' && !process.argv.includes('--help') && !process.argv.includes('-h');
const entry = hook ? path.join('cli', 'hook') : path.join('cli', 'index');
const root = fs.realpathSync(path.join(__dirname, '..'));
const source = path.join(root, `${entry}.ts`);
const compiled = path.join(root, 'dist', `${entry}.js`);
const args = process.argv.slice(2);

/** The folder of the config the command will load (--config, SLUICE_CONFIG, or the working folder). */
function configFolder() {
  const at = args.indexOf('--config');
  const file =
    at >= 0 ? args[at + 1] : (args.find((a) => a.startsWith('--config='))?.slice(9) ?? process.env.SLUICE_CONFIG);
  return path.dirname(path.resolve(file ?? 'sluice.config.ts'));
}

const inside = (dir, parent) => {
  const rel = path.relative(parent, dir);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

/** The root of the `sluice` package the config's folder resolves to, or undefined. */
function sluiceSeenFrom(dir) {
  let pkg;
  try {
    // As a module in that folder resolves it (require.resolve from here would find this package
    // by its own name, whatever the folder).
    pkg = createRequire(path.join(dir, 'sluice.config.js')).resolve('sluice/package.json');
  } catch {
    return undefined;
  }
  return fs.realpathSync(path.dirname(pkg));
}

function cliFile() {
  if (hook) return fs.existsSync(source) ? { ts: source } : { js: compiled };
  let dir = configFolder();
  try {
    dir = fs.realpathSync(dir);
  } catch {
    // a config that does not exist yet: the CLI says so in its own words
  }
  const fromCheckout = inside(dir, root) && !inside(dir, path.join(root, 'node_modules'));
  if (fromCheckout && fs.existsSync(source)) return { ts: source };
  const seen = sluiceSeenFrom(dir);
  if (seen && seen !== root) {
    // Its CLI: dist/cli/index.js, or dist/client/cli.js in releases before the CLI had its own folder.
    const theirs = [path.join(seen, 'dist', 'cli', 'index.js'), path.join(seen, 'dist', 'client', 'cli.js')].find((f) =>
      fs.existsSync(f),
    );
    if (theirs) return { js: theirs };
  }
  // No config there can import `sluice` by name: no second copy to meet, so as before.
  if (!seen && fs.existsSync(source)) return { ts: source };
  if (fs.existsSync(compiled)) return { js: compiled };
  if (fs.existsSync(source)) {
    console.error(
      `sluice: ${root} has no dist/ yet, and your config loads \`sluice\` from there: run \`npm run build\` in ${root} first (so the CLI and your config share one copy).`,
    );
    process.exit(1);
  }
  console.error(`sluice: ${compiled} is missing; reinstall the package`);
  process.exit(1);
}

async function run() {
  const file = cliFile();
  // The source through tsx, registered as \`node --import tsx\` would: require() and import() both
  // compile TypeScript, so the CLI loads its worker-side modules with a plain import().
  if (file.ts) await import('tsx');
  const cli = require(file.ts ?? file.js);
  return hook ? cli.hookMain(args.slice(1)) : cli.main(args);
}

run().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
