// Session facts: what a session already did, folded from its recorded events, for policies that
// look back ("at most 5 emails an hour", "refunds at most 500 a day", "pay only an account an
// earlier call created and a person approved", "no git push after a failed test run this turn").
// Pure: the workflow hands in the events it holds (the batch's own, calls still in flight
// included, and the session's earlier batches), the pre-execute stage gets the facts as input,
// and the decision records them, so a replay and an auditor read the same facts.
//
// A team declares the facts its policies read, by name:
//
//   facts: {
//     emailsLastHour: { count: { tool: 'send_email', window: '1h' } },
//     refundedToday: { total: { tool: 'refund', arg: 'amount', window: '1d' } },
//     accountApproved: { exists: { tool: 'create_account', match: { account: 'account' }, decidedBy: 'person', outcome: ['ok'] } },
//     testsFailedThisTurn: { exists: { tool: 'bash', where: { command: { like: 'npm test*' } }, window: 'turn', outcome: ['failed'] } },
//   }
//
// Calls still in flight (recorded, not yet settled) count, as Dogwood counts them: three
// concurrent 2,000 transfers against a 5,000-an-hour limit, and the third sees 4,000 already.
import { MAX_JSON_DEPTH, nestsDeeperThan } from './json';
import type { CallOutcome, CallRecord, Json, JsonObject, SessionEvent } from './types';

export type { CallOutcome, CallRecord };

/** The calls recorded before a call, and the workflow time its facts are taken at. */
export interface SessionRecord {
  calls: CallRecord[];
  /** Workflow time, ms since the epoch: the end of every window. */
  now: number;
  /**
   * How far back `calls` reaches. `session`: a session that carries its calls (started with
   * `sessionFacts: true`), said even before it has any, so it is never inferred from an empty
   * list. `batch`: only the batch's own calls (a `runBatch`, a harness hook's call, a session
   * started without `sessionFacts`). Every fact's window (a time, `turn`, the session) reaches
   * past a batch, so a fact folded from a `batch` record would undercount: see `beyondReach`.
   * `scope`: the calls of every batch and session that named the same facts scope (`factsScope`),
   * read from the fact store the deployment's workers share (stores/fact-store.ts), in flight too.
   */
  reach: 'session' | 'batch' | 'scope';
  /**
   * Why the batch's facts scope could not be read (the fact store unreachable): the record is then
   * the batch's own, and a policy that reads a fact denies with this reason.
   */
  unreadable?: string;
  /**
   * The facts as the decision on record read them (its `policy/decided` event's facts): a replay of
   * a facts-scope batch (`sluice policy replay`) holds only the batch's calls, not the scope's,
   * so it judges with these, by name, and a fact they lack is beyond its reach.
   */
  facts?: Facts;
}

/** A condition on an earlier call's argument: equal to a value, or a `*` glob for text. */
type ArgCondition = Json | { like: string };

interface Selection {
  tool: string;
  /** `1h`, `30m`, `1d`, `7d`; `turn` (this turn's calls); absent: the whole session. */
  window?: string;
  /** Earlier calls whose argument (a dotted path) meets each condition. */
  where?: Record<string, ArgCondition>;
  /** Earlier calls whose argument equals this call's: `{ <earlier path>: <this call's path> }`. */
  match?: Record<string, string>;
  /** Outcomes that count; default every one but `denied` and `not-run` (in-flight calls count). */
  outcome?: CallOutcome[];
  /** Only calls a person (or a policy rule) let run. */
  decidedBy?: 'person' | 'policy';
}

type FactSpec = { count: Selection } | { total: Selection & { arg: string } } | { exists: Selection };

export type FactSpecs = Record<string, FactSpec>;

/** Facts as a policy reads them: whole numbers and booleans, by name. */
export type Facts = Record<string, number | boolean>;

/** How far back a session keeps its calls for facts, and a facts scope reads them: 7 days. */
export const RECORD_KEEP_MS = 7 * 86_400_000;

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const COUNTED: readonly CallOutcome[] = ['pending', 'ok', 'failed'];

/** A window in ms, `turn`, or undefined (the whole session); a bad one is a clear error. */
export function windowOf(w: string | undefined): number | 'turn' | undefined {
  if (w === undefined || w === 'session') return undefined;
  if (w === 'turn') return 'turn';
  const m = /^(\d+)\s*([smhd])$/.exec(w);
  if (!m || Number(m[1]) <= 0)
    throw new Error(`the fact window ${JSON.stringify(w)} is not understood: write 30m, 1h, 1d, 7d, turn or session`);
  return Number(m[1]) * UNIT_MS[m[2]];
}

/**
 * The facts among `names` that `record` cannot answer: all of them unless the record reaches the
 * whole session (no record at all reaches nothing). Every window reaches past the batch — a time
 * window, `turn` and the session alike — so there is no fact a batch-only record answers; a limit
 * folded from one would be beaten by splitting calls across batches.
 */
export function beyondReach(
  names: readonly string[],
  record: Pick<SessionRecord, 'reach' | 'facts'> | undefined,
): string[] {
  const recorded = record?.facts;
  if (recorded) return names.filter((n) => !Object.hasOwn(recorded, n));
  return record?.reach === 'session' || record?.reach === 'scope' ? [] : [...names];
}

/**
 * Every declared fact for a call: folded from its record's calls, or, where the record carries the
 * facts a decision recorded (a replay of a facts-scope batch), those by name; none recorded: zero, false.
 */
export function factsFor(
  specs: FactSpecs,
  call: { callId: string; args: JsonObject; turn: number },
  record: SessionRecord | undefined,
): Facts {
  const folded = foldFacts(specs, call, record?.calls ?? [], record?.now ?? 0);
  const recorded = record?.facts;
  if (!recorded) return folded;
  for (const name of Object.keys(folded)) if (Object.hasOwn(recorded, name)) folded[name] = recorded[name];
  return folded;
}

/** What is wrong with a facts scope (BatchInput.factsScope), if anything: it is a name a person gives, short and on one line. */
export function factsScopeProblem(scope: unknown): string | undefined {
  if (typeof scope !== 'string' || !scope.trim()) return 'factsScope must be a non-empty string, e.g. "user:alice"';
  // Room for a session id (200 characters at most) and a prefix naming what it is.
  if (scope.length > 256) return `factsScope is ${scope.length} characters; keep it to 256 or fewer`;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  if (/[\u0000-\u001f\u007f]/.test(scope)) return 'factsScope holds a control character; keep it to one printable line';
  return undefined;
}

/** Checks a team's fact declarations once, at start, so a typo does not wait for the first call. */
export function checkFactSpecs(specs: FactSpecs): void {
  for (const [name, spec] of Object.entries(specs)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new Error(`the fact name ${JSON.stringify(name)} must be an identifier (letters, digits, _)`);
    const kinds = Object.keys(spec);
    if (kinds.length !== 1 || !['count', 'total', 'exists'].includes(kinds[0]))
      throw new Error(`the fact ${name} must be one of { count }, { total }, { exists }`);
    const sel = selectionOf(spec);
    if (typeof sel.tool !== 'string' || !sel.tool) throw new Error(`the fact ${name} must name a tool`);
    if ('total' in spec && typeof spec.total.arg !== 'string') throw new Error(`the fact ${name} must name its arg`);
    try {
      windowOf(sel.window);
    } catch (err) {
      throw new Error(`the fact ${name}: ${(err as Error).message}`);
    }
  }
}

function selectionOf(spec: FactSpec): Selection {
  return 'count' in spec ? spec.count : 'total' in spec ? spec.total : spec.exists;
}

/** The value at a dotted path of an object. */
function at(obj: Json | undefined, dotted: string): Json | undefined {
  let v: Json | undefined = obj;
  for (const key of dotted.split('.')) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    v = (v as JsonObject)[key];
  }
  return v;
}

function globMatches(glob: string, text: string): boolean {
  const re = new RegExp(
    `^${glob
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('[\\s\\S]*')}$`,
  );
  return re.test(text);
}

function meets(value: Json | undefined, cond: ArgCondition): boolean {
  if (cond !== null && typeof cond === 'object' && !Array.isArray(cond) && typeof cond.like === 'string')
    return typeof value === 'string' && globMatches(cond.like, value);
  return JSON.stringify(value) === JSON.stringify(cond);
}

/** The earlier calls a selection picks for `call` at `now` (the call itself never), from the calls of its tool. */
function picked(
  sel: Selection,
  call: { callId: string; args: JsonObject; turn: number },
  ofTool: readonly CallRecord[],
  now: number,
): CallRecord[] {
  const window = windowOf(sel.window);
  const outcomes = new Set(sel.outcome ?? COUNTED);
  const where = Object.entries(sel.where ?? {});
  // This call's side of each match, read once: a call without the argument matches nothing.
  const match = Object.entries(sel.match ?? {}).map(([p, q]) => [p, JSON.stringify(at(call.args, q))] as const);
  if (match.some(([, mine]) => mine === undefined)) return [];
  return ofTool.filter(
    (r) =>
      r.callId !== call.callId &&
      outcomes.has(r.outcome) &&
      (window === undefined || (window === 'turn' ? r.turn === call.turn : r.at > now - window)) &&
      (!sel.decidedBy || r.decider?.kind === sel.decidedBy) &&
      where.every(([p, c]) => meets(at(r.args, p), c)) &&
      match.every(([p, mine]) => JSON.stringify(at(r.args, p)) === mine),
  );
}

/** Every declared fact for one call, from the calls recorded before it. */
export function foldFacts(
  specs: FactSpecs,
  call: { callId: string; args: JsonObject; turn: number },
  earlier: readonly CallRecord[],
  now: number,
): Facts {
  // One pass to group by tool: each fact then reads only its tool's calls.
  const byTool = new Map<string, CallRecord[]>();
  for (const r of earlier) {
    const list = byTool.get(r.tool);
    if (list) list.push(r);
    else byTool.set(r.tool, [r]);
  }
  const facts: Facts = {};
  for (const [name, spec] of Object.entries(specs)) {
    const sel = selectionOf(spec);
    const hits = picked(sel, call, byTool.get(sel.tool) ?? [], now);
    if ('count' in spec) facts[name] = hits.length;
    else if ('exists' in spec) facts[name] = hits.length > 0;
    else
      facts[name] = hits.reduce((sum, r) => {
        const v = at(r.args, spec.total.arg);
        return typeof v === 'number' && Number.isFinite(v) ? sum + v : sum;
      }, 0);
  }
  return facts;
}

/** The error codes of a call that never reached its body. A frozen list: workflow modules hold no state. */
const NOT_RUN: readonly string[] = Object.freeze([
  'INVALID_ARGS',
  'UNKNOWN_TOOL',
  'INVALID_CALL_ID',
  'ABORTED_BEFORE_DISPATCH',
]);

/** What a tool/result says became of its call. */
function outcomeOf(data: JsonObject): CallOutcome {
  if (!data.isError) return 'ok';
  const code = (data.error as JsonObject | undefined)?.code;
  if (code === 'DENIED') return 'denied';
  return typeof code === 'string' && NOT_RUN.includes(code) ? 'not-run' : 'failed';
}

function parsedArgs(text: Json | undefined): JsonObject {
  return typeof text === 'string' ? argsObject(text) : {};
}

/**
 * A call's arguments as the facts read them: the object its JSON text holds, else none. Arguments
 * that do not parse, are not an object or nest past MAX_JSON_DEPTH never run (INVALID_ARGS): the
 * call still counts, with no arguments, and its record stays small enough to cross the wire.
 */
export function argsObject(text: string): JsonObject {
  try {
    const v = JSON.parse(text) as Json;
    if (v === null || typeof v !== 'object' || Array.isArray(v) || nestsDeeperThan(v, MAX_JSON_DEPTH)) return {};
    return v;
  } catch {
    return {};
  }
}

/**
 * The model's calls in record order, each with what became of it so far and who decided it:
 * folded from tool/call, policy/decided, approval/decided and tool/result events. A call with
 * no result yet is `pending`: in flight, and counted.
 */
export function callRecords(events: readonly SessionEvent[]): CallRecord[] {
  const byId = new Map<string, CallRecord>();
  for (const e of events) {
    const id = typeof e.data.callId === 'string' ? e.data.callId : undefined;
    if (!id) continue;
    if (e.type === 'tool/call' && !byId.has(id))
      byId.set(id, {
        callId: id,
        tool: String(e.data.name),
        args: parsedArgs(e.data.arguments),
        at: Date.parse(e.time),
        turn: Number(e.data.turn),
        outcome: 'pending',
      });
    const r = byId.get(id);
    if (r) Object.assign(r, settledBy(e));
  }
  return [...byId.values()];
}

/**
 * What one event says of its call's record: who decided it (policy/decided, approval/decided) or
 * what became of it (tool/result); nothing for any other event. The fact store applies the same
 * to the calls it keeps (stores/fact-store.ts), so both read an outcome alike.
 */
export function settledBy(e: SessionEvent): Partial<Pick<CallRecord, 'decider' | 'outcome'>> {
  const d = e.data;
  if (e.type === 'policy/decided' && d.decision !== 'ask')
    return { decider: { kind: 'policy', who: `${String(d.file)}:${String(d.line)}` } };
  if (e.type === 'approval/decided' && !d.expired) {
    const verified = (d.verified as JsonObject | undefined)?.subject;
    const who = verified ?? d.by;
    return { decider: { kind: 'person', ...(typeof who === 'string' ? { who } : {}) } };
  }
  if (e.type === 'tool/result') return { outcome: outcomeOf(d) };
  return {};
}
