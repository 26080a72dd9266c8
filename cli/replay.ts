// `sluice replay <target>...`: replay histories with the current workflow code.
import * as path from 'node:path';
import { UsageError } from '../support/errors';
import { defineCommand } from './command';
import { CONNECTION_FLAGS, CONNECTION_OPTIONS, needsWorker, withHistories } from './shared';

export const replay = defineCommand({
  name: 'replay',
  synopsis: 'replay <target>...',
  summary: `Replay histories with the current workflow code; exit 1 on a
determinism failure (--workflows FILE to replay another version)`,
  flags: { workflows: { type: 'string' }, json: { type: 'boolean' }, ...CONNECTION_FLAGS },
  help: `Usage: npx sluice replay <target>... [options]

Replays histories (workflow ids, session ids, .json files or folders of them) with the workflow
code and reports each. Exit 0: all replayed; 1: any failed; 2: usage.

Options:
  --workflows FILE        The workflows entry to bundle (default: this copy of Sluice's own workflows)
  --json                  Print the results as JSON (only JSON on stdout; logs go to stderr)
${CONNECTION_OPTIONS}`,
  async run({ values: v, positionals: targets, out }) {
    if (targets.length === 0)
      throw new UsageError('replay needs batch workflow ids, session ids or history .json files');
    return withHistories(v, targets, async (histories) => {
      const { replayHistories } = await needsWorker('replay', () => import('../client/replay'));
      const results = await replayHistories(histories, {
        ...(v.workflows ? { workflowsPath: path.resolve(v.workflows) } : {}),
      });
      if (v.json) out(JSON.stringify(results, null, 2));
      else
        for (const r of results)
          out(
            r.skipped
              ? `skipped ${r.workflowId} (${r.source}): ${r.message}`
              : r.ok
                ? `ok      ${r.workflowId} (${r.source})`
                : `FAILED  ${r.workflowId} (${r.source}): ${r.failure}: ${r.message}`,
          );
      const failed = results.filter((r) => !r.ok).length;
      const unknown = results.filter((r) => r.failure === 'unknown-workflow-type').length;
      const skipped = results.filter((r) => r.skipped).length;
      if (!v.json)
        out(
          !failed
            ? `${results.length - skipped} history(ies) replayed with no determinism failure${skipped ? `, ${skipped} skipped (nothing recorded yet)` : ''}`
            : failed === unknown
              ? `${failed} of ${results.length} history(ies) are of workflow types Sluice's bundle does not have: pass --workflows <file> with your workflows (nothing was found non-deterministic)`
              : `${failed} of ${results.length} replay(s) failed: the workflow code no longer matches these histories. Keep the old behaviour for running batches (patched()), or re-record the fixtures if the change is intended.`,
        );
      return failed ? 1 : 0;
    });
  },
});
