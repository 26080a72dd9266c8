// Dogwood policies enforced: a pre-execute hook that judges each call with the reference
// interpreter (hooks/dogwood.ts) over the session's durable record, and puts its verdict on record
// in `policy/decided` (source `dogwood`) as the policy files' sources do. It is a hook of its own,
// not a source of `policyRules`, because those answer synchronously and the reference answers from
// another process; the hook is marked long-running, so its stage runs as a regular activity.
//
//   const dogwood = dogwoodPolicy({ dir: '.dogwood', scope: { namespace: 'Agent', principal, resource, actions } });
//   defineConfig({ tools, preExecute: [...policy.preExecute, dogwood] });
//
// It fails closed: a set that does not load, a reference that is missing, crashes or does not
// answer in time, and a record that does not reach the session (a temporal condition always
// reaches past the batch) each deny the call, saying what to install or fix.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { PreExecuteHandler, StageContext } from '../define/config';
import type { CallRecord, JsonObject } from '../pipeline/types';
import { type DogwoodPolicySet, type DogwoodScope, decideDogwood, loadDogwoodPolicySet } from './dogwood';
import { digestOf } from './pin';
import { lineAt } from './policy-types';

export type { DogwoodScope } from './dogwood';

export interface DogwoodPolicyOptions {
  /** The policy set's folder: every `*.dw`, the one `*.cedarschema`, an optional `*.dwschema`. */
  dir: string;
  /** How a call becomes a Dogwood request event. With `actions`, only the tools it maps are judged. */
  scope: DogwoodScope;
  /** Where `dir` and the recorded file names start; default the process's working directory. */
  workspace?: string;
  /** How long one decision may take before the call is denied; default 60 s. */
  timeoutMs?: number;
}

/** A policy of the set with an `@id`, as `policy/decided` names it. */
interface DogwoodRule {
  policyId: string;
  file: string;
  line: number;
  /** The actions its head names; empty when it names none (then it is about every action). */
  actions: string[];
  /** The head, one line: what a card shows. */
  text: string;
}

/** The `@id` policies of every `.dw` file in `dir`, with the line each starts on and the actions it is about. */
function rulesOf(dir: string, workspace: string): DogwoodRule[] {
  const rules: DogwoodRule[] = [];
  for (const name of readdirSync(dir)
    .filter((n) => n.endsWith('.dw'))
    .sort()) {
    const text = readFileSync(join(dir, name), 'utf8');
    const starts = [...text.matchAll(/@id\("([^"]+)"\)/g)];
    starts.forEach((m, i) => {
      const body = text.slice(m.index, starts[i + 1]?.index ?? text.length);
      const head = body.split(/\bwhen\b|;/)[0];
      rules.push({
        policyId: m[1],
        file: relative(workspace, join(dir, name)),
        line: lineAt(text, m.index ?? 0),
        actions: [...head.matchAll(/Action::"([^"]+)"/g)].map((a) => a[1]),
        text: head
          .replace(/\/\/.*$/gm, '')
          .replace(/\s+/g, ' ')
          .trim(),
      });
    });
  }
  return rules;
}

/** The digest the decisions are bound to: over every file of the set, by name. */
function setDigest(dir: string): string {
  const names = readdirSync(dir)
    .filter((n) => /\.(dw|cedarschema|dwschema)$/.test(n))
    .sort();
  return digestOf(names.map((n) => `${n}\0${digestOf(readFileSync(join(dir, n)))}`).join('\n'));
}

/** The set's policies about `action`: the deciding one when there is one, else all of them by id. */
function attribution(rules: readonly DogwoodRule[], action: string, source: string): JsonObject {
  const about = rules.filter((r) => r.actions.length === 0 || r.actions.includes(action));
  if (about.length === 1) {
    const r = about[0];
    return { file: r.file, line: r.line, rule: r.text, policyId: r.policyId };
  }
  return {
    file: source,
    line: 1,
    rule: `the Dogwood set ${source}`,
    ...(about.length ? { policyIds: about.map((r) => r.policyId) } : {}),
  };
}

/** The call being judged as the record will hold it: in flight, at the workflow's time of the decision. */
function callOf(ctx: StageContext, tool: string, now: number): CallRecord {
  return { callId: ctx.call.id, tool, args: { ...ctx.call.args }, at: now, turn: ctx.turn, outcome: 'pending' };
}

/**
 * A pre-execute hook judging every call `scope.actions` maps (every call without it) by the
 * Dogwood set in `dir`, after the session's recorded calls. The set is read and validated by the
 * reference at the first call (a config is built synchronously); a set that fails denies every
 * call until it loads.
 */
export function dogwoodPolicy(opts: DogwoodPolicyOptions): {
  name: string;
  handler: PreExecuteHandler;
  longRunning: true;
} {
  const workspace = resolve(opts.workspace ?? process.cwd());
  const dir = resolve(workspace, opts.dir);
  const label = relative(workspace, dir) || '.';
  let loading: Promise<{ set: DogwoodPolicySet; rules: DogwoodRule[]; digest: string }> | undefined;
  const load = () => {
    loading ??= loadDogwoodPolicySet(dir, workspace, opts.timeoutMs)
      .then((set) => ({ set, rules: rulesOf(dir, workspace), digest: setDigest(dir) }))
      .catch((e) => {
        loading = undefined; // a fixed install or file is read at the next call
        throw e;
      });
    return loading;
  };
  const judged = (tool: string) => !opts.scope.actions || tool in opts.scope.actions;
  const handler: PreExecuteHandler = async (ctx) => {
    const tool = ctx.tool?.name ?? ctx.call.name;
    if (!judged(tool)) return undefined;
    const record = ctx.record;
    const now = record?.now ?? Date.now();
    let decided: { decision: 'allow' | 'deny'; note?: string; at: JsonObject; digest?: string };
    try {
      const { set, rules, digest } = await load();
      const action = opts.scope.actions?.[tool] ?? tool;
      if (/\btemporal\b/.test(set.policy) && record?.reach !== 'session') {
        decided = {
          decision: 'deny',
          note: `the Dogwood set ${label} has temporal conditions, which reach past this batch, and the call's record holds only the batch: start the session with \`sessionFacts: true\` (or give runBatch the session's calls with \`reach: 'session'\`)`,
          at: attribution(rules, action, label),
          digest,
        };
      } else {
        const earlier = (record?.calls ?? []).filter((c) => judged(c.tool));
        const { decision } = await decideDogwood(set, opts.scope, earlier, callOf(ctx, tool, now), opts.timeoutMs);
        decided = { decision, at: attribution(rules, action, label), digest };
      }
    } catch (e) {
      // Fails closed: no verdict from the reference is never an allow.
      decided = {
        decision: 'deny',
        note: `the Dogwood set ${label} could not judge the call: ${(e as Error).message}`,
        at: { file: label, line: 1, rule: `the Dogwood set ${label}` },
      };
    }
    return recordVerdict(ctx, decided);
  };
  return { name: `dogwood ${label}`, handler, longRunning: true };
}

/** Puts the verdict on record, then answers the stage. */
function recordVerdict(
  ctx: StageContext,
  d: { decision: 'allow' | 'deny'; note?: string; at: JsonObject; digest?: string },
): { kind: 'allow' } | { kind: 'deny'; reason: string } {
  ctx.emit('policy/decided', {
    turn: ctx.turn,
    callId: ctx.call.id,
    decision: d.decision,
    source: 'dogwood',
    ...d.at,
    ...(d.digest ? { digest: d.digest, policyDigest: d.digest } : {}),
    ...(d.note ? { note: d.note } : {}),
  });
  if (d.decision === 'allow') return { kind: 'allow' };
  const by = typeof d.at.policyId === 'string' ? ` (${d.at.policyId})` : '';
  return { kind: 'deny', reason: d.note ?? `denied by ${String(d.at.file)}${by}: \`${String(d.at.rule)}\`` };
}
