// `sluice results prune`: delete old stored results.
import { UsageError } from '../support/errors';
import { parseRetention } from '../define/config';
import { defineCommand } from './command';
import { STORE_FLAGS, STORE_OPTIONS, withStores } from './shared';

export const results = defineCommand({
  name: 'results',
  synopsis: 'results prune',
  summary: 'Delete stored results older than --older-than (default 30d; e.g. 12h, 90m)',
  flags: { 'older-than': { type: 'string' }, ...STORE_FLAGS },
  help: `Usage: npx sluice results prune [--older-than 30d] [options]

Deletes the stored results (results too large for a history) older than a retention.

Options:
  --older-than AGE        How old a result must be to go: 30d (the default), 12h, 90m
${STORE_OPTIONS}`,
  async run({ values: v, positionals: [action], out }) {
    if (action !== 'prune')
      throw new UsageError('results takes one action: `npx sluice results prune [--older-than 30d]`');
    let olderThan: number;
    try {
      olderThan = parseRetention(v['older-than'] ?? '30d');
    } catch (err) {
      throw new UsageError(`--older-than: ${(err as Error).message}`);
    }
    return withStores(v, async (stores) => {
      if (!stores.results.prune) throw new UsageError(`the ${stores.kind} result store cannot delete old results`);
      const gone = await stores.results.prune(new Date(Date.now() - olderThan));
      out(
        `deleted ${gone.results} stored result(s), ${gone.bytes} bytes, older than ${v['older-than'] ?? '30d'} from ${stores.where}`,
      );
      return 0;
    });
  },
});
