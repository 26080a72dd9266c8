// What the packed tarball holds, and whether npm would publish it (issue 23, item 8: the tarball
// lacked the docs the README links to, the scripted chat example, LICENSE and a license field, and
// `"private": true` made `npm publish` fail). Reads the tarball `npm pack` made, not the checkout's
// `files` list, so a file the list names but the build or npm leaves out fails here.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { packSluice, REPO, sh } from './fresh-app';

let tarball = '';
/** The tarball's files, relative to its `package/` folder. */
let files = new Set<string>();
/** The tarball unpacked: its package.json and a folder to publish from. */
let unpacked = '';

beforeAll(async () => {
  tarball = await packSluice(inject('runDir'));
  const { stdout } = await sh('tar', ['-tzf', tarball], REPO);
  files = new Set(
    stdout
      .split('\n')
      .filter((l) => l.startsWith('package/') && !l.endsWith('/'))
      .map((l) => l.slice('package/'.length)),
  );
  unpacked = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-contents-'));
  await sh('tar', ['-xzf', tarball, '-C', unpacked], REPO);
}, 900_000);

afterAll(() => fs.rmSync(unpacked, { recursive: true, force: true }));

/** Relative link targets in a Markdown file (no scheme, no bare anchor), without their anchors. */
function relativeLinks(markdown: string): string[] {
  const targets = [...markdown.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1])
    .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t) && !t.startsWith('#'))
    .map((t) => t.split('#')[0]);
  return [...new Set(targets)];
}

/** Every string target of package.json `exports`, however nested. */
function exportTargets(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(exportTargets);
  return [];
}

describe('the packed tarball', () => {
  it('ships README, LICENSE, CHANGELOG and SECURITY', () => {
    for (const f of ['README.md', 'LICENSE', 'CHANGELOG.md', 'SECURITY.md', 'package.json'])
      expect(files, `${f} in ${tarball}`).toContain(f);
  });

  it('ships every file the README links to (docs/*.md and the rest)', () => {
    const links = relativeLinks(fs.readFileSync(path.join(REPO, 'README.md'), 'utf8'));
    // The README links to a dozen docs pages; far fewer means the link pattern broke, not the docs.
    expect(links.filter((l) => l.startsWith('docs/')).length).toBeGreaterThanOrEqual(10);
    const missing = links.map((l) => path.posix.normalize(l)).filter((l) => !files.has(l));
    expect(missing, 'README links whose target is not in the tarball').toEqual([]);
  });

  it('every relative link in every Markdown file it ships resolves to a file it ships', () => {
    const docs = [...files].filter((f) => f.endsWith('.md'));
    expect(docs.length).toBeGreaterThanOrEqual(15);
    const broken = docs.flatMap((doc) =>
      relativeLinks(fs.readFileSync(path.join(unpacked, 'package', doc), 'utf8'))
        .map((l) => path.posix.normalize(path.posix.join(path.posix.dirname(doc), l)))
        .filter((l) => !files.has(l))
        .map((l) => `${doc} -> ${l}`),
    );
    expect(broken, 'links that lead nowhere in an install').toEqual([]);
  });

  it('ships every file the docs tell a user to run from node_modules/sluice/ (the scripted chat example)', () => {
    const docs = ['README.md', ...[...files].filter((f) => f.startsWith('docs/') && f.endsWith('.md'))];
    const named = new Set<string>();
    for (const doc of docs)
      for (const m of fs.readFileSync(path.join(REPO, doc), 'utf8').matchAll(/node_modules\/sluice\/([\w./-]+\w)/g))
        named.add(m[1]);
    expect([...named]).toContain('examples/chat-script.json');
    expect([...named].filter((f) => !files.has(f))).toEqual([]);
    // The example parses: `sluice chat --script` reads it as JSON.
    JSON.parse(fs.readFileSync(path.join(unpacked, 'package', 'examples', 'chat-script.json'), 'utf8'));
  });

  it('ships the built file of every exports target, the bin, main and types', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(unpacked, 'package', 'package.json'), 'utf8'));
    const targets = [
      ...exportTargets(pkg.exports),
      pkg.main,
      pkg.types,
      ...Object.values(pkg.bin as Record<string, string>),
    ].map((t) => path.posix.normalize(t));
    expect(targets).toContain('dist/client/index.js');
    expect(targets.filter((t) => !files.has(t))).toEqual([]);
    // Compiled JavaScript only: no TypeScript sources beside the declarations.
    expect([...files].filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
  });

  it('has a publishable package.json: no private flag, a license that matches LICENSE', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(unpacked, 'package', 'package.json'), 'utf8'));
    expect(pkg.private).toBeUndefined();
    expect(pkg.license).toBe('MIT');
    expect(fs.readFileSync(path.join(unpacked, 'package', 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
    expect(pkg.name).toBe('sluice');
    expect(pkg.version).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('asks a user to approve no install script; the checkout keeps its `prepare`', () => {
    // npm 11 asks about a tarball's `prepare` too, a "non-registry source" (scripts/pack-manifest.js).
    const pkg = JSON.parse(fs.readFileSync(path.join(unpacked, 'package', 'package.json'), 'utf8'));
    for (const script of ['preinstall', 'install', 'postinstall', 'prepare'])
      expect(pkg.scripts[script]).toBeUndefined();
    const own = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));
    expect(own.scripts.prepare).toBe('npm run build');
    expect(fs.existsSync(path.join(REPO, '.sluice', 'package.json.before-pack'))).toBe(false);
  });

  it('npm publish --dry-run of the unpacked tarball succeeds', async () => {
    // `--dry-run` does not check `private` (an unpacked copy with `"private": true` passes it too:
    // tried with npm 11), so the test above is what catches EPRIVATE; this one catches what npm
    // does check (name, version, a package.json it can read, files it can pack). `--ignore-scripts`:
    // the tarball holds dist/ already and no tsc; offline, npm only warns that it needs a login.
    const { stdout, stderr } = await sh(
      'npm',
      ['publish', '--dry-run', '--ignore-scripts', '--loglevel=notice'],
      path.join(unpacked, 'package'),
      { timeoutMs: 120_000 },
    );
    const out = `${stdout}\n${stderr}`;
    expect(out).not.toMatch(/EPRIVATE|npm error/i);
    expect(out).toMatch(/\+ sluice@\d/);
  }, 180_000);
});
