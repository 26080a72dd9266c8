// Registers the search attributes Sluice uses on a server that lacks them (the embedded dev
// server registers them at start; a cluster or Temporal Cloud needs this once per namespace).
import { temporal } from '@temporalio/proto';

type OperatorService = temporal.api.operatorservice.v1.OperatorService;
import { SEARCH_ATTRIBUTES } from '../pipeline/search-attributes';
import { ServerError } from '../support/errors';

const TYPES: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  Bool: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  Keyword: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  KeywordList: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

/** Returns the names it added; throws a message a person can act on when it may not add them. */
export async function ensureSearchAttributes(
  connection: { operatorService: Pick<OperatorService, 'listSearchAttributes' | 'addSearchAttributes'> },
  namespace: string,
): Promise<string[]> {
  const have = await connection.operatorService.listSearchAttributes({ namespace });
  const known = { ...(have.customAttributes ?? {}), ...(have.systemAttributes ?? {}) };
  const missing = Object.entries(SEARCH_ATTRIBUTES).filter(([name]) => !(name in known));
  if (missing.length === 0) return [];
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map(([n, t]) => [n, TYPES[t]])),
    });
  } catch (err) {
    const cmds = missing
      .map(([n, t]) => `temporal operator search-attribute create --namespace ${namespace} --name ${n} --type ${t}`)
      .join('\n  ');
    throw new ServerError(
      `Sluice needs search attributes this server lacks, and could not add them (${(err as Error).message}). Ask an admin to run:\n  ${cmds}`,
    );
  }
  return missing.map(([n]) => n);
}
