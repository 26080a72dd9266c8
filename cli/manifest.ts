// `sluice manifest`: the config's model-facing tool schemas as JSON.
import * as fs from 'node:fs';
import { toolManifest } from '../define/config';
import { loadConfig } from '../worker/load-config';
import { defineCommand } from './command';

export const manifest = defineCommand({
  name: 'manifest',
  synopsis: 'manifest',
  summary: `Print the config's model-facing tool schemas as JSON (--out FILE), for an agent
process that should not import the tool bodies`,
  flags: { config: { type: 'string' }, out: { type: 'string', short: 'o' } },
  help: `Usage: npx sluice manifest [options]

Prints the model-facing schemas of the config's tools as JSON, for an agent process (or
\`npx sluice gateway --manifest FILE\`) that should not import the tool bodies.

Options:
  --config FILE           Sluice config module (default sluice.config.ts)
  --out FILE, -o FILE     Write it to FILE (default: stdout)`,
  async run({ values: v, out }) {
    const json = JSON.stringify(toolManifest(await loadConfig(v.config)), null, 2);
    if (v.out) fs.writeFileSync(v.out, `${json}\n`);
    else out(json);
    return 0;
  },
});
