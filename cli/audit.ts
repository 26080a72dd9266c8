// `sluice audit <target>`: the timeline of a batch or a session, from workflow histories, checked
// against the session's log.
import { auditHistories, type SessionAudit } from '../client/audit';
import { UsageError } from '../support/errors';
import { renderAudit } from '../client/render';
import { canonicalJson } from '../pipeline/json';
import type { Json, SessionEvent } from '../pipeline/types';
import type { SluiceStores } from '../stores/stores';
import { defineCommand, type Values } from './command';
import { CONNECTION_FLAGS, CONNECTION_OPTIONS, STORE_FLAGS, STORE_OPTIONS, withHistories, withStores } from './shared';

const AUDIT_FLAGS = { json: { type: 'boolean' }, ...STORE_FLAGS, ...CONNECTION_FLAGS } as const;

export const auditCommand = defineCommand({
  name: 'audit',
  synopsis: 'audit <target>',
  summary: 'Timeline of a batch or session from workflow histories (--json)',
  flags: AUDIT_FLAGS,
  help: `Usage: npx sluice audit <target>... [options]

The timeline of a batch or a session from its workflow histories: every call, who decided each
approval and why, refusals, grants, reconciliations. A session's log in the workers' store is
checked against the events its batches recorded. <target> is a batch's workflow id, a session id
(all of its batches), a history .json file, or a folder of them.

Options:
  --json                  Print the audit as JSON
${STORE_OPTIONS}
${CONNECTION_OPTIONS}`,
  run: ({ values, positionals, out }) => audit(values, positionals, out),
});

async function audit(v: Values<typeof AUDIT_FLAGS>, targets: string[], out: (s: string) => void): Promise<number> {
  if (targets.length === 0)
    throw new UsageError('audit needs a batch workflow id, a session id or a history .json file');
  return withHistories(v, targets, async (histories) => {
    const result = auditHistories(histories);
    const logs = await withStores(v, (stores) => checkSessionLogs(stores, result));
    out(v.json ? JSON.stringify({ ...result, logs }, null, 2) : renderAudit(result));
    if (!v.json) for (const l of logs) out(logLine(l));
    return 0;
  });
}

/**
 * One line per session log, saying what each finding means: an event written again with another
 * time is the same event (an attempt lost with its worker wrote it first, the log keeps the first
 * write), nothing to do; a missing or changed event is a log that does not hold what happened.
 */
function logLine(l: SessionLogCheck): string {
  const head = `session ${l.sessionId} log (${l.store}): ${l.logged} event(s)`;
  const found = [
    l.missing.length &&
      `missing seqs ${l.missing.join(', ')} that the batches recorded (the log lacks them: read them from the history, \`--json\` prints them)`,
    l.retimed.length &&
      `seqs ${l.retimed.join(', ')} differ from the batches' events in their time only (the same event, written first by an attempt that was lost, e.g. with a killed worker: nothing to do)`,
    l.differing.length &&
      `seqs ${l.differing.join(', ')} differ from the batches' events in what they say (the history is the record: something else wrote or changed the log; compare with \`--json\`)`,
    l.conflicts && `${l.conflicts} event(s) kept aside as conflicts (${l.conflictsWhere})`,
  ].filter((x): x is string => typeof x === 'string');
  return found.length ? `${head}; ${found.join('; ')}` : `${head}, every event of the completed batches in it`;
}

export interface SessionLogCheck {
  sessionId: string;
  store: string;
  /** Events the store holds for the session. */
  logged: number;
  /** Seqs the completed batches recorded that the store lacks. */
  missing: number[];
  /** Seqs whose stored event differs from the batch's in its time only: the same event, written again. */
  retimed: number[];
  /** Seqs whose stored event says something else than the batch's. */
  differing: number[];
  conflicts: number;
  conflictsWhere: string;
}

/** The session's log in the store against the events the completed batches recorded in history. */
async function checkSessionLogs(stores: SluiceStores, audit: SessionAudit): Promise<SessionLogCheck[]> {
  const out: SessionLogCheck[] = [];
  for (const sessionId of new Set(audit.batches.map((b) => b.sessionId))) {
    if (!(await stores.hasSession(sessionId))) continue;
    const logged = new Map((await stores.events(sessionId)).map((e) => [e.seq, e]));
    const recorded = audit.batches.filter((b) => b.sessionId === sessionId).flatMap((b) => b.events);
    const conflicts = await stores.conflicts(sessionId);
    const changed = recorded.filter((e) => logged.has(e.seq) && !sameEvent(logged.get(e.seq), e));
    out.push({
      sessionId,
      store: `${stores.kind}: ${stores.where}`,
      logged: logged.size,
      missing: recorded.filter((e) => !logged.has(e.seq)).map((e) => e.seq),
      retimed: changed.filter((e) => sameEvent(logged.get(e.seq), e, 'but time')).map((e) => e.seq),
      differing: changed.filter((e) => !sameEvent(logged.get(e.seq), e, 'but time')).map((e) => e.seq),
      conflicts: conflicts.count,
      conflictsWhere: conflicts.where,
    });
  }
  return out;
}

function sameEvent(a: SessionEvent | undefined, b: SessionEvent, but?: 'but time'): boolean {
  const of = (e: SessionEvent | undefined) => canonicalJson((but && e ? { ...e, time: '' } : e) as unknown as Json);
  return of(a) === of(b);
}
