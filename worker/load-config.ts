import * as fs from 'node:fs';
import * as path from 'node:path';
import type { SluiceConfig } from './config';

export const DEFAULT_CONFIG_FILE = 'sluice.config.ts';

/** Loads a user's config module (TypeScript works: the CLI runs under tsx). */
export function loadConfig(file = process.env.SLUICE_CONFIG ?? DEFAULT_CONFIG_FILE): SluiceConfig {
  const resolved = path.resolve(file);
  if (!fs.existsSync(resolved)) {
    throw new Error(
      `no Sluice config at ${file}. Write one (see sluice.config.ts in the Sluice repository) or pass --config <file>.`,
    );
  }
  const mod = require(resolved);
  const config = (mod.default ?? mod.config) as SluiceConfig | undefined;
  if (!config || !Array.isArray(config.tools)) {
    throw new Error(`${file} must export (default) defineConfig({ tools: [...] , ... })`);
  }
  return config;
}
