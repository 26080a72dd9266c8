// A harness hook's real outcome in the fact store (stores/fact-store.ts `ran`, `harnessReports`), in
// the file store and in PostgreSQL: a hook's decision batch runs nothing, so its own result says only
// that the call was let through; the `harness_result` batch PostToolUse (PostToolUseFailure,
// AfterTool, tool.execute.after) records is what counts, and stays so when the decision batch's
// events reach the sink again (a replay). A result batch of another session speaks for nothing.
// And pruning in both stores: a call past PRUNE_AFTER_MS goes, a younger one stays.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECORD_KEEP_MS } from '../pipeline/facts';
import type { SessionEvent } from '../pipeline/types';
import { type FactStore, fileFactStore, PRUNE_AFTER_MS, withFactOutcomes } from '../stores/fact-store';
import { PostgresStores } from '../stores/postgres';
import type { EventSink } from '../stores/sink';
import { startPostgres, type TestPostgres } from './postgres';

const NOW = Date.now();
let seq = 0;
function event(type: string, data: SessionEvent['data']): SessionEvent {
  return { seq: seq++, time: new Date(NOW).toISOString(), type, data };
}

const quiet: EventSink = { append: async () => undefined };

describe.each(['files', 'postgresql'] as const)("a harness call's outcome in the %s store", (kind) => {
  let store: FactStore;
  let pg: TestPostgres | undefined;
  let stores: PostgresStores | undefined;
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'facts-harness-'));
  const run = `${process.pid}-${NOW}`;

  beforeAll(async () => {
    if (kind === 'postgresql') {
      pg = await startPostgres();
      stores = new PostgresStores(await pg.createDatabase('sluice_facts_harness'));
      await stores.migrate();
      store = stores.facts;
    } else store = fileFactStore(scratch);
  });
  afterAll(async () => {
    await stores?.close();
    await pg?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  /** A hook's decision batch of `session`, its call let through: written and settled as the stages and sink do. */
  async function decided(
    session: string,
    step: number,
    callId: string,
  ): Promise<{ workflowId: string; events: SessionEvent[] }> {
    const workflowId = `sluice-batch:${session}:1:${step}`;
    const scope = `harness:${session}`;
    await store.write(scope, workflowId, { callId, tool: 'Bash', args: {}, at: NOW, turn: 1, outcome: 'pending' });
    const events = [
      event('tool/call', { callId, name: 'Bash', arguments: '{}', turn: 1 }),
      event('tool/result', { callId, isError: false }),
    ];
    await withFactOutcomes(quiet, store, () => undefined).append(session, events, workflowId);
    return { workflowId, events };
  }

  /** The harness_result batch PostToolUse records for `decisionBatch`, through the sink. */
  async function reported(session: string, step: number, decisionBatch: string, error?: string): Promise<void> {
    const args = { tool_name: 'Bash', decision_batch: decisionBatch, ...(error ? { error } : {}) };
    const events = [
      event('tool/call', { callId: `r${step}`, name: 'harness_result', arguments: JSON.stringify(args), turn: 1 }),
    ];
    await withFactOutcomes(quiet, store, () => undefined).append(session, events, `sluice-batch:${session}:1:${step}`);
  }

  const outcomes = async (session: string) =>
    Object.fromEntries(
      (await store.read(`harness:${session}`, 'a reader', 0)).map((c) => [c.callId.split('/')[1], c.outcome]),
    );

  it('PostToolUseFailure makes the call failed, PostToolUse ok; a replay of the decision batch changes neither', async () => {
    const session = `hs-${kind}-${run}`;
    const a = await decided(session, 1, 'a');
    const b = await decided(session, 2, 'b');
    const c = await decided(session, 3, 'c');
    expect(await outcomes(session)).toEqual({ a: 'ok', b: 'ok', c: 'ok' });
    await reported(session, 11, a.workflowId, 'exit status 1');
    await reported(session, 12, b.workflowId);
    expect(await outcomes(session)).toEqual({ a: 'failed', b: 'ok', c: 'ok' });
    // The decision batches' events again, after the report: the report still stands.
    for (const d of [a, b])
      await withFactOutcomes(quiet, store, () => undefined).append(session, d.events, d.workflowId);
    expect(await outcomes(session)).toEqual({ a: 'failed', b: 'ok', c: 'ok' });
    expect(c.workflowId).toMatch(/:3$/);
  });

  it('a prune removes the calls past PRUNE_AFTER_MS and keeps the rest', async () => {
    const scope = `prune-${kind}-${run}`;
    const call = (callId: string, at: number) => ({
      callId,
      tool: 'Bash',
      args: {},
      at,
      turn: 1,
      outcome: 'pending' as const,
    });
    await store.write(scope, 'sluice-batch:p:1:1', call('old', NOW - PRUNE_AFTER_MS - 2 * 86_400_000));
    await store.write(scope, 'sluice-batch:p:1:2', call('young', NOW - RECORD_KEEP_MS));
    expect((await store.read(scope, 'a reader', 0)).map((c) => c.callId)).toEqual([
      'sluice-batch:p:1:1/old',
      'sluice-batch:p:1:2/young',
    ]);
    await store.prune(scope, NOW);
    expect((await store.read(scope, 'a reader', 0)).map((c) => c.callId)).toEqual(['sluice-batch:p:1:2/young']);
  });

  it("a result batch of another session does not speak for this session's calls", async () => {
    const session = `hs-own-${kind}-${run}`;
    const a = await decided(session, 1, 'a');
    await reported(`hs-other-${kind}-${run}`, 11, a.workflowId, 'forged');
    expect(await outcomes(session)).toEqual({ a: 'ok' });
  });
});
