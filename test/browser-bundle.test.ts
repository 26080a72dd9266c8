// sluice/browser as a page gets it (scripts/build-browser.ts): built by `npm run build` and
// published as the package's `sluice/browser` entry; small (a limit it may not grow past, minified
// and gzipped); made of browser/ and pipeline/ alone, with nothing left for a browser to import and
// no Node module anywhere in it; and safe to inline in the session page's script.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { type BundleFormat, bundleBrowser, bundleProblem, ENTRY, FILES, sizes } from '../scripts/build-browser';

/** What the bundle may weigh: today about 10.2 KB minified, 3.9 KB gzipped (client tools served from a page included). */
const LIMIT = { minified: 12_000, gzipped: 5_000 };
const repo = path.resolve(__dirname, '..');

describe('the sluice/browser bundle', () => {
  it.each(['esm', 'iife'] as BundleFormat[])(
    '%s: under the size limit, with no import and no script end left in it',
    async (format) => {
      const code = await bundleBrowser(format);
      const size = sizes(code);
      console.log(`sluice/browser ${FILES[format]}: ${size.minified} bytes minified, ${size.gzipped} gzipped`);
      expect(size.minified).toBeLessThan(LIMIT.minified);
      expect(size.gzipped).toBeLessThan(LIMIT.gzipped);
      expect(bundleProblem(code)).toBeUndefined();
      if (format === 'esm') expect(code).toMatch(/export\s*\{[^}]*\bconnectSession\b/);
      else expect(code).toMatch(/^("use strict";)?var SluiceBrowser=/);
    },
  );

  it('is made of browser/ and pipeline/ files alone, none of which imports a Node module', async () => {
    const out = await build({
      entryPoints: [ENTRY],
      bundle: true,
      write: false,
      metafile: true,
      platform: 'browser',
      format: 'esm',
      logLevel: 'silent',
    });
    const inputs = Object.keys(out.metafile.inputs);
    expect(inputs).toContain('browser/session.ts');
    expect(inputs.filter((f) => !/^(browser|pipeline)\/[\w-]+\.ts$/.test(f))).toEqual([]);
    for (const f of inputs) expect(fs.readFileSync(path.join(repo, f), 'utf8'), f).not.toMatch(/from '(node:|fs|path)/);
  });

  it('refuses a bundle that imports a Node module, or holds a script end', async () => {
    expect(bundleProblem('import*as f from"node:fs";f.readFileSync("x")')).toMatch(/imports .*never a Node module/);
    expect(bundleProblem('const f=require("fs")')).toMatch(/imports/);
    expect(bundleProblem('x="</script><script>alert(1)"')).toMatch(/where the page script .* ends/);
    expect(bundleProblem('x="<!--"')).toMatch(/where the page script .* ends/);
    // esbuild itself refuses a browser bundle of a module that needs Node's.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-browser-'));
    try {
      fs.writeFileSync(
        path.join(dir, 'entry.ts'),
        "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n",
      );
      await expect(
        build({
          entryPoints: [path.join(dir, 'entry.ts')],
          bundle: true,
          write: false,
          platform: 'browser',
          logLevel: 'silent',
        }),
      ).rejects.toThrow(/node:fs/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is the session page's only way to the session: its own script opens no stream and fetches nothing", () => {
    const page = fs.readFileSync(path.join(repo, 'servers', 'inbox', 'session.html'), 'utf8');
    // The bundle goes in at the marker, before the page's script, which connects through it.
    expect(page.indexOf('<!--sluice:browser-->')).toBeGreaterThan(page.indexOf('<!--sluice:cards-->'));
    const script = page.slice(page.indexOf('<!--sluice:browser-->'));
    expect(script).toContain('SluiceBrowser.connectSession(');
    expect(script).not.toMatch(/\bEventSource\b|\bfetch\(|XMLHttpRequest|\/api\//);
  });

  it('is the package entry sluice/browser, built by npm run build', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8'));
    expect(pkg.exports['./browser']).toEqual({
      types: './dist/browser/index.d.ts',
      default: `./dist/browser/${FILES.esm}`,
    });
    expect(pkg.scripts.build).toBe('node scripts/build.js');
    expect(fs.readFileSync(path.join(repo, 'scripts', 'build.js'), 'utf8')).toContain("'build-browser.ts'");
    expect(pkg.files).toContain('dist');
  });
});
