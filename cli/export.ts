// `sluice export <workflowId>`: a batch's history as JSON (a replay fixture, an attachment to a report).
import * as fs from 'node:fs';
import { UsageError } from '../support/errors';
import { historyToJson } from '../client/history';
import { defineCommand } from './command';
import { client, CONNECTION_FLAGS, CONNECTION_OPTIONS } from './shared';

export const exportCommand = defineCommand({
  name: 'export',
  synopsis: 'export <workflowId>',
  summary: "Write a batch's history JSON (--out FILE, default stdout)",
  flags: { out: { type: 'string', short: 'o' }, ...CONNECTION_FLAGS },
  help: `Usage: npx sluice export <workflowId> [options]

Writes a batch's workflow history as JSON, the form \`sluice replay\` and \`sluice audit\` read.

Options:
  --out FILE, -o FILE     Write it to FILE (default: stdout)
${CONNECTION_OPTIONS}`,
  async run({ values: v, positionals: [workflowId], out }) {
    if (!workflowId)
      throw new UsageError('export needs a batch workflow id (see `npx sluice audit <session>` for the ids)');
    const { sluice, close } = await client(v);
    try {
      const json = historyToJson(await sluice.temporal.workflow.getHandle(workflowId).fetchHistory());
      if (v.out) {
        fs.writeFileSync(v.out, json);
        out(`wrote ${v.out}`);
      } else out(json.trimEnd());
      return 0;
    } finally {
      await close();
    }
  },
});
