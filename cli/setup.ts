// `sluice setup`: Sluice's search attributes on the server; with a database, its schema.
import { ServerError } from '../support/errors';
import { ensureSearchAttributes } from '../temporal/setup';
import { ensureDatabase, PostgresStores, redactUrl, SCHEMA_VERSION } from '../stores/postgres';
import { databaseUrlFromEnv } from '../stores/stores';
import { defineCommand } from './command';
import { CONNECTION_FLAGS, CONNECTION_OPTIONS, connectAny } from './shared';

export const setup = defineCommand({
  name: 'setup',
  synopsis: 'setup',
  summary: `Register Sluice's search attributes on the target server; with
SLUICE_DATABASE_URL, apply the database's schema migrations`,
  flags: { 'database-url': { type: 'string' }, ...CONNECTION_FLAGS },
  help: `Usage: npx sluice setup [options]

Registers Sluice's search attributes in the namespace (once per server and namespace; workers
also do it when they start). With a database, creates it if it does not exist and applies its
schema migrations.

Options:
  --database-url URL      The database (default: SLUICE_DATABASE_URL); without one, no database is set up
${CONNECTION_OPTIONS}`,
  async run({ values: v, out }) {
    const c = await connectAny({ address: v.address, namespace: v.namespace });
    try {
      const added = await ensureSearchAttributes(c.connection, c.namespace);
      out(added.length ? `registered search attributes: ${added.join(', ')}` : 'search attributes already registered');
      const url = databaseUrlFromEnv();
      if (url) {
        if (await ensureDatabase(url)) out(`created database ${redactUrl(url)}`);
        const pg = new PostgresStores(url);
        try {
          const applied = await pg.migrate();
          out(
            applied.length
              ? `database ${redactUrl(url)}: applied schema migration(s) ${applied.map((m) => `${m.version} (${m.name})`).join(', ')}`
              : `database ${redactUrl(url)}: schema up to date (version ${SCHEMA_VERSION})`,
          );
        } catch (err) {
          throw new ServerError(`could not apply the schema to ${redactUrl(url)}: ${(err as Error).message}`);
        } finally {
          await pg.close();
        }
      }
      return 0;
    } finally {
      await c.connection.close();
    }
  },
});
