// `sluice result <ref>`: a stored result (the ref a truncated result names), as JSON.
import * as path from 'node:path';
import { NotFoundError, UsageError } from '../support/errors';
import { storedResultOf } from '../stores/claim-check';
import { PG_RESULT_REF } from '../stores/postgres';
import { defineCommand } from './command';
import { STORE_FLAGS, STORE_OPTIONS, withStores } from './shared';

export const result = defineCommand({
  name: 'result',
  synopsis: 'result <ref>',
  summary: `Print a stored result (the ref a truncated result names) as JSON:
{content, isError, error?, value?, meta?} (--text: its text only)`,
  flags: { text: { type: 'boolean' }, ...STORE_FLAGS },
  help: `Usage: npx sluice result <ref> [options]

Prints a stored result as JSON ({content, isError, error?, value?, meta?}): a result too large for
the history is kept in the workers' store, and the truncated result names it (sluice-result:... in
the state folder, sluice-pg-result:... in PostgreSQL).

Options:
  --text                  Print only its text
${STORE_OPTIONS}`,
  async run({ values: v, positionals: [ref], out }) {
    if (!ref)
      throw new UsageError(
        'result needs the reference a truncated result names (sluice-result:... or sluice-pg-result:...), from its note or meta.storedResult.ref',
      );
    return withStores(v, async (stores) => {
      const value = await stores.results.get(ref);
      if (value === undefined) {
        const hint = ref.startsWith(PG_RESULT_REF)
          ? stores.kind === 'postgresql'
            ? 'the database has no result under that key'
            : "it is stored in PostgreSQL: set SLUICE_DATABASE_URL (or --database-url) to the workers' database"
          : stores.kind === 'postgresql'
            ? `it was stored in a worker's state folder; unset SLUICE_DATABASE_URL and give that folder with --state-dir`
            : `no such result in ${path.join(stores.where, 'results')}; give the workers' state folder with --state-dir`;
        throw new NotFoundError(
          `no stored result ${ref}: ${hint} (stored results are kept for the config's resultRetention, 30 days by default)`,
        );
      }
      const stored = storedResultOf(value);
      if (v.text) out(stored.content.map((b) => (b.type === 'text' ? b.text : `[image ${b.mimeType}]`)).join(''));
      else out(JSON.stringify(stored, null, 2));
      return 0;
    });
  },
});
