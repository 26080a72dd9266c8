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
export async function loadConfig(file = process.env.SLUICE_CONFIG ?? DEFAULT_CONFIG_FILE): Promise<SluiceConfig> {
  const resolved = path.resolve(file);
  if (!fs.existsSync(resolved)) {
    throw new Error(
      `no Sluice config at ${file}. Write one (see sluice.config.ts in the Sluice repository) or pass --config <file>.`,
    );
  }
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
