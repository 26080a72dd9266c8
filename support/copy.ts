// Which copy of Sluice this process runs: its version and folder, and whether from the TypeScript
// source or the compiled dist/. The CLI runs the copy the config's `import … from 'sluice'`
// resolves to (bin/sluice.js), which is not always the one `npx` found first: a worker's first line
// and `npx sluice --version` name it, so "which Sluice is this?" has an answer that does not need
// a debugger.
import * as fs from 'node:fs';
import * as path from 'node:path';

interface SluiceCopy {
  version: string;
  /** The package's folder (links resolved). */
  root: string;
  /** `source` when running the checkout's TypeScript through tsx, else `dist`. */
  form: 'source' | 'dist';
}

let found: SluiceCopy | undefined;

/** This copy: the nearest package.json named `sluice` above this file. */
function sluiceCopy(): SluiceCopy {
  if (found) return found;
  let dir = __dirname;
  for (;;) {
    const file = path.join(dir, 'package.json');
    const pkg = fs.existsSync(file)
      ? (JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string })
      : undefined;
    if (pkg?.name === 'sluice') {
      found = {
        version: pkg.version ?? 'unknown',
        root: fs.realpathSync(dir),
        form: __filename.endsWith('.ts') ? 'source' : 'dist',
      };
      return found;
    }
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`no package.json of sluice above ${__dirname}: reinstall the package`);
    dir = up;
  }
}

/** `sluice 1.0.0 (dist) at /app/node_modules/sluice` */
export function describeCopy(c: SluiceCopy = sluiceCopy()): string {
  return `sluice ${c.version} (${c.form}) at ${c.root}`;
}
