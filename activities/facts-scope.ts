// A call of a batch that named a facts scope (BatchInput.factsScope), in its pre-execute stage: the
// call is written to the fact store every worker shares, and its record becomes the scope's calls
// from other batches (in flight too) with the batch's own before it. Read here, in an activity,
// never in workflow code; the facts a policy folds from it go on record with its decision
// (policy/decided), so a replay and an auditor read the same facts.
//
// A store that cannot be reached, or no store at all, leaves the record the batch's own and says
// why: a policy that reads a fact then denies with that reason (hooks/cedar-policy.ts). Never allow.
// The scope is read only when an extension that may judge the call reads facts (each says so,
// `readsFacts`; one that does not say may): the call is written all the same, and counts.
import { type CallRecord, factsScopeProblem, RECORD_KEEP_MS } from '../pipeline/facts';
import type { CallRef } from '../pipeline/stages';
import type { StageKit } from './kit';

/**
 * The call written to its batch's facts scope, and, when `reads` (an extension that may judge the
 * call reads facts: `mayReadFacts`), its record the scope's calls: one write and at most one read
 * per stage. Unread, the record stays the batch's own and says so (`unreadable`), so a fact folded
 * from it is never taken for the scope's.
 */
export async function withFactsScope(kit: Pick<StageKit, 'facts'>, ref: CallRef, reads: boolean): Promise<CallRef> {
  const scope = ref.factsScope;
  if (scope === undefined) return ref;
  const own = ref.record?.calls ?? [];
  const now = ref.record?.now ?? Date.now();
  const short = (unreadable: string): CallRef => ({ ...ref, record: { calls: own, now, reach: 'batch', unreadable } });
  const bad = factsScopeProblem(scope);
  if (bad) return short(bad);
  const store = kit.facts;
  if (!store)
    return short(
      `this worker has no fact store to read the facts scope ${JSON.stringify(scope)} from; give the worker a state folder or a PostgreSQL store`,
    );
  const call: CallRecord = {
    callId: ref.callId,
    tool: ref.name,
    args: ref.args,
    at: now,
    turn: ref.turn,
    outcome: 'pending',
  };
  try {
    await store.write(scope, ref.workflowId, call);
    if (!reads) return short(`no extension that judges ${ref.name} reads facts, so the scope was not read`);
    const others = await store.read(scope, ref.workflowId, now - RECORD_KEEP_MS);
    return { ...ref, record: { calls: [...others, ...own], now, reach: 'scope' } };
  } catch (err) {
    return short(
      `the fact store at ${store.where} could not be reached for the facts scope ${JSON.stringify(scope)} (${(err as Error)?.message ?? String(err)}); it can run once the fact store answers`,
    );
  }
}
