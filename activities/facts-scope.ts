// A call of a batch that named a facts scope (BatchInput.factsScope), in its pre-execute stage: the
// call is written to the fact store every worker shares, and its record becomes the scope's calls
// from other batches (in flight too) with the batch's own before it. Read here, in an activity,
// never in workflow code; the facts a policy folds from it go on record with its decision
// (policy/decided), so a replay and an auditor read the same facts.
//
// A store that cannot be reached, or no store at all, leaves the record the batch's own and says
// why: a policy that reads a fact then denies with that reason (hooks/cedar-policy.ts). Never allow.
import { type CallRecord, factsScopeProblem, RECORD_KEEP_MS } from '../pipeline/facts';
import type { CallRef } from '../pipeline/stages';
import type { StageKit } from './kit';

export async function withFactsScope(kit: Pick<StageKit, 'facts'>, ref: CallRef): Promise<CallRef> {
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
    const others = await store.record(scope, ref.workflowId, call, now - RECORD_KEEP_MS);
    return { ...ref, record: { calls: [...others, ...own], now, reach: 'scope' } };
  } catch (err) {
    return short(
      `the fact store at ${store.where} could not be reached for the facts scope ${JSON.stringify(scope)} (${(err as Error)?.message ?? String(err)}); it can run once the fact store answers`,
    );
  }
}
