// The fact store: the calls of every batch and session that named the same facts scope
// (`factsScope`: a person, a team, a harness's session), shared by every worker of a deployment, so
// a policy that counts calls ("at most 5 emails an hour") holds across batches that carry no
// session: a harness hook's calls, each its own batch, and plain runBatch calls.
//
// A call is written when its pre-execute stage first runs (activities/preflight.ts), keyed by its
// batch's workflow id and its call id: a retried activity, a replayed batch or a worker killed
// between the write and the outcome finds its row and writes nothing more, so nothing counts twice.
// Its decider and outcome follow from the batch's events as the worker's event sink writes them
// (`withFactOutcomes`); until then the call is in flight, and counts, as a sibling in the batch does.
// A harness hook's decision batch runs nothing: its result says only that the call was let through,
// so what the harness then reports (a `harness_result` batch) is the call's outcome (`ran`).
//
// The write comes before the read, each its own step: of two calls of one scope judged at once,
// the later read sees the earlier write, so at least one counts the other (both may: a limit may
// deny one call too many, never allow one too many). A call is always written, so it counts for
// the scope's other batches; the scope is read only for a call a policy that reads facts may judge
// (activities/facts-scope.ts).
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Pool } from 'pg';
import { batchOfWorkflowId } from '../pipeline/batch-id';
import { argsObject, type CallOutcome, type CallRecord, RECORD_KEEP_MS, settledBy } from '../pipeline/facts';
import type { SessionEvent } from '../pipeline/types';
import { appendLines, inFolder, parseJsonl } from './jsonl';
import type { EventSink } from './sink';

/** How many of a scope's calls a read returns at most, the newest kept: what a session carries too. */
const MAX_READ = 10_000;

export interface FactStore {
  /** Where, for a person: the folder or the redacted database URL. */
  readonly where: string;
  /** Writes a batch's call into `scope`, once: a second write of the same workflow id and call id keeps the first. */
  write(scope: string, workflowId: string, call: CallRecord): Promise<void>;
  /**
   * The scope's calls of other batches than `workflowId` recorded after `since` (ms since the
   * epoch), each named `<workflow id>/<call id>` so calls of two batches never share a name.
   */
  read(scope: string, workflowId: string, since: number): Promise<CallRecord[]>;
  /** Applies a batch's events to its calls in the store (decider, outcome); a batch that wrote none: nothing. */
  settle(workflowId: string, events: readonly SessionEvent[]): Promise<void>;
  /**
   * What a harness says became of the call of a hook's decision batch `workflowId` (it ran, or ran
   * and failed): the call's outcome from then on, whatever the decision batch's own result said,
   * which is only that it was let through.
   */
  ran(workflowId: string, outcome: 'ok' | 'failed'): Promise<void>;
  /**
   * Removes the scope's calls older than PRUNE_AFTER_MS at `now`: past every read's window (no read
   * reaches back more than RECORD_KEEP_MS), never one a read can still see. `write` runs it now and then.
   */
  prune(scope: string, now: number): Promise<void>;
}

/** A line of a scope's file: a call written, a settle, or a harness's report of a decision batch's call. */
interface FileLine {
  key?: string;
  call?: CallRecord;
  set?: Partial<CallRecord>;
  batch?: string;
  ran?: CallOutcome;
}

/** The calls a store keeps, folded from its lines or rows: the first write of a key wins, settles merge in. */
interface Kept {
  key: string;
  call: CallRecord;
}

function named(workflowId: string, call: CallRecord): CallRecord {
  return { ...call, callId: `${workflowId}/${call.callId}` };
}

function sha(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** What each call-bearing event of a batch changes in its call's record, keyed `<workflow id>/<call id>`. */
function updatesOf(workflowId: string, events: readonly SessionEvent[]): { key: string; set: Partial<CallRecord> }[] {
  const out: { key: string; set: Partial<CallRecord> }[] = [];
  for (const e of events) {
    const callId = e.data.callId;
    if (typeof callId !== 'string') continue;
    const set = settledBy(e);
    if (Object.keys(set).length) out.push({ key: `${workflowId}/${callId}`, set });
  }
  return out;
}

/**
 * How old a call is pruned: twice the read horizon (RECORD_KEEP_MS). A read's window ends at its
 * stage's time, which is when the workflow scheduled it: a stage a worker picks up late (no worker
 * for days) still finds every call its window reaches, unless it waited more than 7 days.
 */
export const PRUNE_AFTER_MS = 2 * RECORD_KEEP_MS;

/** A day of the file store's scope files: each holds the calls written, and the settles made, that day. */
const DAY_MS = 86_400_000;

/**
 * The file store, for the workers of one machine: per scope a folder under `facts/` in the state
 * folder (named by the scope's sha-256) of JSON-lines files, one per day (UTC, numbered from the
 * epoch): a call is written into the day of its time, a settle into today's, so a settle is never
 * older than its call. Per batch a file naming its scope, so a settle finds the scope, and a batch
 * that named no scope costs one missing-file check. A file written before the days (`<sha>.jsonl`)
 * is read first, as the oldest day.
 *
 * Pruning removes whole days past PRUNE_AFTER_MS, which no read reaches:
 * a file is never rewritten, so an append that races a prune is never lost, and a day is removed
 * only when every call in it is older than any read can see.
 */
export function fileFactStore(stateDir: string): FactStore {
  const dir = path.join(stateDir, 'facts');
  const scopeDir = (scope: string) => path.join(dir, sha(scope));
  const dayFile = (scope: string, at: number) => path.join(scopeDir(scope), `${Math.floor(at / DAY_MS)}.jsonl`);
  const batchFile = (workflowId: string) => path.join(dir, 'batches', sha(workflowId));
  /** The days of a scope on disk, oldest first. */
  const days = (scope: string): number[] => {
    let names: string[];
    try {
      names = fs.readdirSync(scopeDir(scope));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    return names
      .map((n) => /^(\d+)\.jsonl$/.exec(n)?.[1])
      .filter((d): d is string => d !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
  };
  const scopeOf = (workflowId: string): string | undefined => {
    try {
      return fs.readFileSync(batchFile(workflowId), 'utf8');
    } catch {
      return undefined;
    }
  };
  const pruned = new Map<string, number>();
  const store: FactStore = {
    where: dir,
    async write(scope, workflowId, call) {
      const batch = batchFile(workflowId);
      if (!fs.existsSync(batch)) inFolder(batch, () => fs.writeFileSync(batch, scope, { mode: 0o600 }));
      // Appended without reading the file first: a second line of the same key (a retried stage, the
      // guards after an ask) is dropped where the files are read, the first kept.
      appendLines(dayFile(scope, call.at), `${JSON.stringify({ key: `${workflowId}/${call.callId}`, call })}\n`);
      // A day at a time, by the call's own time, so pruning costs one listing a day per scope and process.
      const today = Math.floor(call.at / DAY_MS);
      if (pruned.get(scope) !== today) {
        pruned.set(scope, today);
        await store.prune(scope, call.at);
      }
    },
    async read(scope, workflowId, since) {
      const first = Math.floor(since / DAY_MS);
      const files = [
        path.join(dir, `${sha(scope)}.jsonl`),
        ...days(scope)
          .filter((d) => d >= first)
          .map((d) => path.join(scopeDir(scope), `${d}.jsonl`)),
      ];
      const prefix = `${workflowId}/`;
      return [...foldLines(files.flatMap(linesOf)).values()]
        .filter((k) => !k.key.startsWith(prefix) && k.call.at > since)
        .map((k) => ({ ...k.call, callId: k.key }))
        .slice(-MAX_READ);
    },
    async settle(workflowId, events) {
      const lines = updatesOf(workflowId, events).map((u) => JSON.stringify(u));
      if (!lines.length) return;
      const scope = scopeOf(workflowId);
      if (scope !== undefined) appendLines(dayFile(scope, Date.now()), `${lines.join('\n')}\n`);
    },
    async ran(workflowId, outcome) {
      const scope = scopeOf(workflowId);
      if (scope !== undefined)
        appendLines(dayFile(scope, Date.now()), `${JSON.stringify({ batch: workflowId, ran: outcome })}\n`);
    },
    async prune(scope, now) {
      // A day that ends before the horizon: every call in it is older than any read reaches.
      const last = Math.floor((now - PRUNE_AFTER_MS) / DAY_MS) - 1;
      for (const d of days(scope)) if (d <= last) fs.rmSync(path.join(scopeDir(scope), `${d}.jsonl`), { force: true });
    },
  };
  return store;
}

/**
 * A scope file's lines; a missing file has none. Any other failure (a file that cannot be read) is
 * thrown, never read as no calls: the caller then judges on a short record, which denies.
 */
function linesOf(file: string): FileLine[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return parseJsonl(text) as FileLine[];
}

/** A scope's lines folded into its calls: the first write of a key wins, settles merge in, a harness's report last. */
function foldLines(lines: readonly FileLine[]): Map<string, Kept> {
  const kept = new Map<string, Kept>();
  const sets: { key: string; set: Partial<CallRecord> }[] = [];
  const ran = new Map<string, CallOutcome>();
  for (const line of lines) {
    if (typeof line.ran === 'string' && typeof line.batch === 'string') ran.set(`${line.batch}/`, line.ran);
    if (typeof line.key !== 'string') continue;
    if (line.call && !kept.has(line.key)) kept.set(line.key, { key: line.key, call: line.call });
    else if (line.set) sets.push({ key: line.key, set: line.set });
  }
  for (const { key, set } of sets) {
    const k = kept.get(key);
    if (k) Object.assign(k.call, set);
  }
  // What the harness reported wins over the decision batch's result, whichever line came last
  // (a batch's events reach the sink again on replay).
  for (const [prefix, outcome] of ran)
    for (const k of kept.values()) if (k.key.startsWith(prefix)) k.call.outcome = outcome;
  return kept;
}

/**
 * A pg Pool, typed by its shape: sluice/worker's declarations name no pg, an optional peer an app
 * without PostgreSQL does not install.
 */
interface PgPool {
  query: (...args: never[]) => unknown;
}

/** The PostgreSQL store: the `sluice_fact_calls` table (migration 2, stores/postgres.ts), for workers on many machines. */
export function postgresFactStore(pgPool: PgPool, where: string): FactStore {
  const pool = pgPool as Pool;
  const pruned = new Map<string, number>();
  const store: FactStore = {
    where,
    async write(scope, workflowId, call) {
      await pool.query(
        `INSERT INTO sluice_fact_calls (workflow_id, call_id, scope, at, call)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (workflow_id, call_id) DO NOTHING`,
        [workflowId, call.callId, scope, call.at, JSON.stringify(call)],
      );
      // An hour at a time per scope and process, by the call's own time: one indexed delete.
      const hour = Math.floor(call.at / 3_600_000);
      if (pruned.get(scope) !== hour) {
        pruned.set(scope, hour);
        await store.prune(scope, call.at);
      }
    },
    async prune(scope, now) {
      await pool.query('DELETE FROM sluice_fact_calls WHERE scope = $1 AND at <= $2', [scope, now - PRUNE_AFTER_MS]);
    },
    async read(scope, workflowId, since) {
      const r = await pool.query(
        `SELECT workflow_id, call, outcome, decider FROM (
           SELECT * FROM sluice_fact_calls WHERE scope = $1 AND at > $2 AND workflow_id <> $3
           ORDER BY at DESC LIMIT ${MAX_READ}) newest ORDER BY at`,
        [scope, since, workflowId],
      );
      return r.rows.map((row) => {
        // `ran`: what a harness reported (FactStore.ran), over the batch's own outcome.
        const { ran, ...call } = row.call as CallRecord & { ran?: CallOutcome };
        return named(row.workflow_id, {
          ...call,
          ...(row.outcome ? { outcome: row.outcome } : {}),
          ...(ran ? { outcome: ran } : {}),
          ...(row.decider ? { decider: row.decider } : {}),
        });
      });
    },
    async settle(workflowId, events) {
      const updates = updatesOf(workflowId, events);
      if (!updates.length) return;
      const has = await pool.query('SELECT 1 FROM sluice_fact_calls WHERE workflow_id = $1 LIMIT 1', [workflowId]);
      if (!has.rowCount) return;
      for (const { key, set } of updates)
        await pool.query(
          `UPDATE sluice_fact_calls SET outcome = coalesce($3, outcome), decider = coalesce($4, decider)
           WHERE workflow_id = $1 AND call_id = $2`,
          [
            workflowId,
            key.slice(workflowId.length + 1),
            set.outcome ?? null,
            set.decider ? JSON.stringify(set.decider) : null,
          ],
        );
    },
    async ran(workflowId, outcome) {
      await pool.query(
        `UPDATE sluice_fact_calls SET call = call || jsonb_build_object('ran', $2::text) WHERE workflow_id = $1`,
        [workflowId, outcome],
      );
    },
  };
  return store;
}

/**
 * The harness's reports among a batch's events: each `harness_result` call (hooks/harness-tools.ts:
 * PostToolUse, PostToolUseFailure, AfterTool, tool.execute.after) names its decision batch, and
 * says whether the tool failed. Only a decision batch of the same session: a result batch does not
 * speak for another session's calls.
 */
function harnessReports(
  sessionId: string,
  events: readonly SessionEvent[],
): { decisionBatch: string; outcome: 'ok' | 'failed' }[] {
  const out: { decisionBatch: string; outcome: 'ok' | 'failed' }[] = [];
  for (const e of events) {
    if (e.type !== 'tool/call' || e.data.name !== 'harness_result' || typeof e.data.arguments !== 'string') continue;
    const args = argsObject(e.data.arguments);
    const batch = args.decision_batch;
    if (typeof batch !== 'string' || batchOfWorkflowId(batch)?.sessionId !== sessionId) continue;
    out.push({ decisionBatch: batch, outcome: args.error === undefined ? 'ok' : 'failed' });
  }
  return out;
}

/**
 * The event sink with the fact store fed from it: every chunk a batch's events reach the sink in
 * (at least once, again on replay) settles its calls in the store too. A settle that fails leaves
 * the call in flight, where it still counts; it is said, and never stops the events.
 */
export function withFactOutcomes(sink: EventSink, facts: FactStore, warn: (m: string) => void): EventSink {
  return {
    ...(sink.claim ? { claim: sink.claim.bind(sink) } : {}),
    async append(sessionId, events, batchId) {
      await sink.append(sessionId, events, batchId);
      if (!batchId) return;
      try {
        await facts.settle(batchId, events);
        for (const r of harnessReports(sessionId, events)) await facts.ran(r.decisionBatch, r.outcome);
      } catch (err) {
        warn(
          `the fact store at ${facts.where} could not take the outcomes of batch ${batchId} (${(err as Error).message}); its calls stay in flight there, and count`,
        );
      }
    },
  };
}
