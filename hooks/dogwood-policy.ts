// Dogwood policies enforced: each call judged by the reference interpreter (hooks/dogwood.ts) over
// the session's durable record, its verdict on record in `policy/decided` (source `dogwood`) as the
// policy files' sources do. The reference answers from another process, so a set is judged after
// the synchronous sources, and the stage runs as a regular activity (long-running).
//
// Two ways in. Beside the policy files, as one of policyRules' sources (`dogwood: {dir, scope}`,
// or a `.dogwood` folder with a `scope.json`): the set's files are in the digest an ask is bound
// to, so an approval given under one text of the set is judged again under another, and
// `sluice policy explain` / `check` read it. Or alone, as its own pre-execute hook:
//
//   const dogwood = dogwoodPolicy({ dir: '.dogwood', scope: { namespace: 'Agent', principal, resource, actions } });
//   defineConfig({ tools, preExecute: [dogwood] });
//
// It fails closed: a set that does not load, a reference that is missing, crashes or does not
// answer in time, and a record that does not reach the session (a temporal condition always
// reaches past the batch) each deny the call, saying what to install or fix.
import { existsSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { PreExecuteHandler, StageContext } from '../define/config';
import type { SessionRecord } from '../pipeline/facts';
import type { CallRecord, JsonObject } from '../pipeline/types';
import {
  type DogwoodFile,
  type DogwoodRead,
  type DogwoodScope,
  decideDogwood,
  readDogwoodPolicySet,
  validateDogwoodPolicySet,
} from './dogwood';
import { digestOf } from './pin';
import { lineAt, type PolicyFile } from './policy-types';

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
  /** The policy's own words for the person or the model: its `@hint` (the reference's examples) or `@reason`. */
  message?: string;
  /** Annotated `@ask`: a call it lets through asks a person first. */
  ask: boolean;
}

/** The `@id` policies of the set's `.dw` files, with the line each starts on and the actions it is about. */
function rulesOf(policies: readonly DogwoodFile[]): DogwoodRule[] {
  const rules: DogwoodRule[] = [];
  for (const { label, text } of policies) {
    const starts = [...text.matchAll(/@id\("([^"]+)"\)/g)];
    starts.forEach((m, i) => {
      const body = text.slice(m.index, starts[i + 1]?.index ?? text.length);
      const head = body.split(/\bwhen\b|;/)[0];
      const message = /@(?:hint|reason)\("((?:[^"\\]|\\.)*)"\)/.exec(head)?.[1];
      rules.push({
        ...(message === undefined ? {} : { message }),
        ask: /@ask\b/.test(head),
        policyId: m[1],
        file: label,
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

/** The set's policies about `action`. */
function aboutAction(rules: readonly DogwoodRule[], action: string): DogwoodRule[] {
  return rules.filter((r) => r.actions.length === 0 || r.actions.includes(action));
}

/** The policies a verdict is attributed to: the deciding one when there is one, else all of them by id. */
function attribution(about: readonly DogwoodRule[], source: string): JsonObject {
  if (about.length === 1) {
    const r = about[0];
    return {
      file: r.file,
      line: r.line,
      rule: r.text,
      policyId: r.policyId,
      ...(r.message ? { message: r.message } : {}),
    };
  }
  return {
    file: source,
    line: 1,
    rule: `the Dogwood set ${source}`,
    ...(about.length ? { policyIds: about.map((r) => r.policyId) } : {}),
  };
}

/** What the set said of a call, as `policy/decided` records it. */
export interface DogwoodVerdict {
  decision: 'allow' | 'ask' | 'deny';
  /** Why it denied without the reference's verdict (it could not judge, or the record is too short). */
  note?: string;
  /** The file, line, rule and policy id(s) the verdict is attributed to. */
  at: JsonObject;
  /** Over every file of the set, by name; absent when the set could not be read. */
  digest?: string;
}

/** The call to judge, as the stage or `sluice policy explain` has it. */
interface DogwoodCall {
  tool: string;
  callId: string;
  args: JsonObject;
  turn: number;
  record?: Readonly<SessionRecord>;
}

/** A Dogwood set ready to judge calls: its files (what a digest is over) and its verdict for a call. */
export interface DogwoodJudge {
  /** The set's folder, relative to the workspace. */
  label: string;
  /** Every file of the set as read (format `dogwood`); empty while it cannot be read. */
  files(): PolicyFile[];
  /** Whether the scope maps the tool (every tool when it maps none). */
  judges(tool: string): boolean;
  decide(call: DogwoodCall): Promise<DogwoodVerdict>;
}

interface Ready {
  read: DogwoodRead;
  rules: DogwoodRule[];
  files: PolicyFile[];
  digest: string;
}

/**
 * The set as read, with the files a digest is over: its own, and the scope (how a call becomes an
 * event changes every verdict as much as a policy does), as its `scope.json` when it has one.
 */
function readyOf(read: DogwoodRead, scope: DogwoodScope, dir: string, label: string): Ready {
  const files: PolicyFile[] = read.files.map((f) => ({
    format: 'dogwood' as const,
    label: f.label,
    path: f.path,
    digest: digestOf(f.text),
  }));
  const scopeFile = join(dir, 'scope.json');
  files.push({
    format: 'dogwood',
    label: existsSync(scopeFile) ? join(label, 'scope.json') : `${label} (scope)`,
    path: scopeFile,
    digest: digestOf(JSON.stringify(scope)),
  });
  return {
    read,
    rules: rulesOf(read.policies),
    files,
    digest: digestOf(files.map((f) => `${f.label}\0${f.digest}`).join('\n')),
  };
}

/**
 * The judge of the Dogwood set `opts.dir`. `eager`: read it now, and throw when it cannot be (a
 * worker does not start with a policy it cannot read); otherwise it is read at the first call and
 * every call is denied until it reads. Either way the reference validates it at the first call.
 */
export function dogwoodJudge(opts: DogwoodPolicyOptions, eager = false): DogwoodJudge {
  const workspace = resolve(opts.workspace ?? process.cwd());
  const dir = resolve(workspace, opts.dir);
  const label = relative(workspace, dir) || '.';
  const readSet = () => readyOf(readDogwoodPolicySet(dir, workspace), opts.scope, dir, label);
  let read: Ready | undefined = eager ? readSet() : undefined;
  let validated: Promise<Ready> | undefined;
  const load = () => {
    validated ??= (async () => {
      read ??= readSet();
      await validateDogwoodPolicySet(read.read, opts.timeoutMs);
      return read;
    })().catch((e) => {
      validated = undefined; // a fixed install or file is read at the next call
      throw e;
    });
    return validated;
  };
  const judges = (tool: string) => !opts.scope.actions || tool in opts.scope.actions;
  const decide = async (call: DogwoodCall): Promise<DogwoodVerdict> => {
    try {
      const { read: r, rules, digest } = await load();
      const about = aboutAction(rules, opts.scope.actions?.[call.tool] ?? call.tool);
      const at = attribution(about, label);
      if (/\btemporal\b/.test(r.set.policy) && call.record?.reach !== 'session') {
        const note = `the Dogwood set ${label} has temporal conditions, which reach past this batch, and the call's record holds only the batch: start the session with \`sessionFacts: true\` (or give runBatch the session's calls with \`reach: 'session'\`)`;
        return { decision: 'deny', note, at, digest };
      }
      const earlier = (call.record?.calls ?? []).filter((c) => judges(c.tool) && c.callId !== call.callId);
      const { decision } = await decideDogwood(r.set, opts.scope, earlier, inFlight(call), opts.timeoutMs);
      // The reference says allow, not which policy permitted: when an `@ask` policy may have, a
      // person is asked (an ask where a plain permit was the one satisfied, never an allow where an ask was).
      const asking = about.filter((x) => x.ask);
      if (decision === 'allow' && asking.length) return { decision: 'ask', at: attribution(asking, label), digest };
      return { decision, at, digest };
    } catch (e) {
      // Fails closed: no verdict from the reference is never an allow.
      return {
        decision: 'deny',
        note: `the Dogwood set ${label} could not judge the call: ${(e as Error).message}`,
        at: { file: label, line: 1, rule: `the Dogwood set ${label}` },
        ...(read ? { digest: read.digest } : {}),
      };
    }
  };
  return { label, files: () => read?.files ?? [], judges, decide };
}

/** The call being judged as the record will hold it: in flight, at the workflow's time of the decision. */
function inFlight(call: DogwoodCall): CallRecord {
  const at = call.record?.now ?? Date.now();
  return { callId: call.callId, tool: call.tool, args: { ...call.args }, at, turn: call.turn, outcome: 'pending' };
}

/** The stage's call as the judge takes it. */
export function dogwoodCallOf(ctx: StageContext): DogwoodCall {
  return {
    tool: ctx.tool?.name ?? ctx.call.name,
    callId: ctx.call.id,
    args: ctx.call.args,
    turn: ctx.turn,
    ...(ctx.record ? { record: ctx.record } : {}),
  };
}

/**
 * The `.dogwood` folder of a workspace as policyRules reads it by default: when it holds a
 * `scope.json` (the DogwoodScope, as JSON), the worker and `sluice policy explain` judge by it.
 */
export function workspaceDogwood(workspace: string): DogwoodPolicyOptions | undefined {
  const file = join(workspace, '.dogwood', 'scope.json');
  if (!existsSync(file)) return undefined;
  let scope: DogwoodScope;
  try {
    scope = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(
      `${file}: not JSON (${(e as Error).message}); it holds the Dogwood scope: {"namespace", "principal", "resource", "actions"}`,
    );
  }
  for (const k of ['namespace', 'principal', 'resource'] as const)
    if (typeof scope?.[k] !== 'string')
      throw new Error(
        `${file}: "${k}" must be a string (the Dogwood scope: {"namespace", "principal", "resource", "actions"})`,
      );
  return { dir: '.dogwood', scope, workspace };
}

/**
 * A pre-execute hook judging every call `scope.actions` maps (every call without it) by the
 * Dogwood set in `dir`, after the session's recorded calls. The set is read and validated by the
 * reference at the first call (a config is built synchronously); a set that fails denies every
 * call until it loads. Beside policy files, give the set to policyRules instead (`dogwood`), so
 * the asks they raise are bound to its text too.
 */
export function dogwoodPolicy(opts: DogwoodPolicyOptions): {
  name: string;
  handler: PreExecuteHandler;
  longRunning: true;
} {
  const judge = dogwoodJudge(opts);
  const handler: PreExecuteHandler = async (ctx) => {
    const call = dogwoodCallOf(ctx);
    if (!judge.judges(call.tool)) return undefined;
    return recordDogwood(ctx, await judge.decide(call));
  };
  return { name: `dogwood ${judge.label}`, handler, longRunning: true };
}

/** Puts the verdict on record, then answers the stage. */
export function recordDogwood(
  ctx: StageContext,
  d: DogwoodVerdict,
): { kind: 'allow' } | { kind: 'ask' | 'deny'; reason: string } {
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
  return { kind: d.decision, reason: dogwoodReason(d) };
}

/** Why a Dogwood verdict denied or asks, for the model and the card, in the policy's own words when it has them. */
export function dogwoodReason(d: DogwoodVerdict): string {
  const by = typeof d.at.policyId === 'string' ? ` (${d.at.policyId})` : '';
  const hint = typeof d.at.message === 'string' ? ` — ${d.at.message}` : '';
  const verb = d.decision === 'ask' ? 'asked' : 'denied';
  return d.note ?? `${verb} by ${String(d.at.file)}${by}: \`${String(d.at.rule)}\`${hint}`;
}
