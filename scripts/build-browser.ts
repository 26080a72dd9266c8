// Builds sluice/browser (browser/index.ts) for browsers, as part of `npm run build`: an ES module
// (dist/browser/sluice-browser.mjs, the package entry and the inbox's /assets/sluice-browser.js)
// and a classic script that sets `SluiceBrowser` (dist/browser/sluice-browser.iife.js, which the
// inbox inlines in its session page, whose content security policy runs inline scripts only).
// Refuses a bundle that reaches for a Node module: the browser has none.
//   npx tsx scripts/build-browser.ts          # write both, print their sizes
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { build } from 'esbuild';

const ROOT = path.resolve(__dirname, '..');
export const ENTRY = path.join(ROOT, 'browser', 'index.ts');
export const OUT_DIR = path.join(ROOT, 'dist', 'browser');
export const FILES = { esm: 'sluice-browser.mjs', iife: 'sluice-browser.iife.js' } as const;

export type BundleFormat = keyof typeof FILES;

/** The bundle's code, minified; refused when it imports anything (a Node module above all). */
export async function bundleBrowser(format: BundleFormat): Promise<string> {
  const out = await build({
    entryPoints: [ENTRY],
    bundle: true,
    write: false,
    minify: true,
    format,
    ...(format === 'iife' ? { globalName: 'SluiceBrowser' } : {}),
    platform: 'browser',
    target: 'es2020',
    legalComments: 'none',
    logLevel: 'silent',
  });
  const code = out.outputFiles[0].text;
  const problem = bundleProblem(code);
  if (problem) throw new Error(`sluice/browser: ${problem}`);
  return code;
}

/** What is wrong with a bundle for a browser page: an import left in it, or a script end inside it. */
export function bundleProblem(code: string): string | undefined {
  const imported = /\bimport\s*\(|\bimport[\s{*][^;]*?\bfrom\s*["']|\brequire\s*\(|["']node:[a-z_/]+["']/.exec(code);
  if (imported)
    return `the bundle still imports (${JSON.stringify(imported[0])}): browser/ may import only what esbuild bundles, never a Node module`;
  // Inlined in the session page: a `</script` in it would end the page's script there, and a
  // `<!--` or `<script` would keep the next `</script>` from ending it.
  const markup = /<\/script|<!--|<script/i.exec(code);
  if (markup)
    return `the bundle holds ${JSON.stringify(markup[0])}, which would change where the page script it is inlined in ends`;
  return undefined;
}

/** Bytes minified and gzipped, as a page downloads it. */
export function sizes(code: string): { minified: number; gzipped: number } {
  return { minified: Buffer.byteLength(code), gzipped: zlib.gzipSync(code, { level: 9 }).length };
}

async function main(): Promise<void> {
  fs.mkdirSync(OUT_DIR, { recursive: true });
  for (const format of Object.keys(FILES) as BundleFormat[]) {
    const code = await bundleBrowser(format);
    fs.writeFileSync(path.join(OUT_DIR, FILES[format]), code);
    const { minified, gzipped } = sizes(code);
    // stderr: `npm pack --json` runs this build and reads its stdout as the pack's JSON.
    process.stderr.write(
      `sluice/browser: dist/browser/${FILES[format]} ${minified} bytes minified, ${gzipped} gzipped\n`,
    );
  }
}

if (require.main === module)
  main().catch((err) => {
    console.error((err as Error).message);
    process.exit(1);
  });
