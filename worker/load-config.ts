// Loading the user's config module (`sluice.config.ts` by default), and the message a first run
// without one gets: what to write and where the package's own docs say more.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { defineConfig, type SluiceConfig } from '../define/config';

export const DEFAULT_CONFIG_FILE = 'sluice.config.ts';

/** What a config module may export (default, or as `config`). */
export type ConfigExport = SluiceConfig | Promise<SluiceConfig> | (() => SluiceConfig | Promise<SluiceConfig>);

/**
 * Loads a user's config module. It may export the config, a promise of it, or a function that
 * returns one, so tools can be discovered at start (an MCP server's list, a registry). TypeScript
 * configs load through tsx when no TypeScript loader is registered; plain JavaScript needs none.
 */
export async function loadConfig(file = process.env.SLUICE_CONFIG || DEFAULT_CONFIG_FILE): Promise<SluiceConfig> {
  const resolved = path.resolve(file);
  requireConfigFile(file);
  const mod = await importModule(resolved);
  let exported = (typeof mod === 'function' ? mod : (mod.default ?? mod.config)) as ConfigExport | undefined;
  if (typeof exported === 'function') exported = exported();
  const config = await exported;
  if (!config || !Array.isArray(config.tools)) {
    throw new Error(
      `${file} must export (default) defineConfig({ tools: [...] , ... }), a promise of it, or a function returning it`,
    );
  }
  // A config built without defineConfig (or assembled at start) gets the same checks.
  return defineConfig(config);
}

/**
 * Throws the first-run message when the config module is missing: `sluice dev` calls it before it
 * fetches or starts anything, so a folder without a config fails at once.
 */
export function requireConfigFile(file = process.env.SLUICE_CONFIG || DEFAULT_CONFIG_FILE): void {
  if (!fs.existsSync(path.resolve(file))) throw new Error(missingConfigMessage(file));
}

function missingConfigMessage(file: string): string {
  // The docs ship in the package: from dist/worker/ or the checkout's worker/, the package root is
  // the nearest folder up with a docs/getting-started.md.
  let root = __dirname;
  while (!fs.existsSync(path.join(root, 'docs', 'getting-started.md')) && path.dirname(root) !== root)
    root = path.dirname(root);
  const docs = path.join(root, 'docs', 'getting-started.md');
  const near = path.relative(process.cwd(), docs);
  const guide = near.startsWith('..') ? docs : near; // node_modules/sluice/docs/… in an app
  return `no Sluice config at ${path.resolve(file)}. Write one there (it lists the tools your agent may call), for example:

  // ${path.basename(file)}
  import { defineConfig, defineTool } from 'sluice';
  import { z } from 'zod';

  export default defineConfig({
    tools: [
      defineTool({
        name: 'echo',
        description: 'Says the text back',
        input: z.object({ text: z.string() }),
        execute: ({ text }) => text,
      }),
    ],
  });

or pass --config <file> (or set SLUICE_CONFIG). A TypeScript config needs tsx (npm install tsx).
More in ${guide}, "Use Sluice in your project".`;
}

async function importModule(file: string): Promise<Record<string, unknown>> {
  if (/\.[cm]?ts$/.test(file) && !require.extensions['.ts']) registerTypeScript(file);
  try {
    return require(file);
  } catch (err) {
    if ((err as { code?: string }).code !== 'ERR_REQUIRE_ESM') throw err;
    // An ES module config: import() kept as import() (a CommonJS build would turn it into require).
    const load = new Function('url', 'return import(url)') as (url: string) => Promise<Record<string, unknown>>;
    return load(require('node:url').pathToFileURL(file).href);
  }
}

function registerTypeScript(file: string): void {
  try {
    require('tsx/cjs/api').register();
  } catch {
    throw new Error(
      `${file} is TypeScript and no TypeScript loader is available: install tsx (npm install tsx) or compile the config to JavaScript`,
    );
  }
}
