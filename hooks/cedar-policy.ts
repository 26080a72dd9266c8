// Cedar policies (`.cedar/*.cedar`, with the schema `.cedar/*.cedarschema`) as a Sluice policy
// source, evaluated by the official engine (@cedar-policy/cedar-wasm), never by a rewrite of it.
//
// The request Sluice sends for a call:
//
//   principal  Sluice::Session::"<session id>"
//   action     Action::"<tool name>"            (as the workspace schema declares it, in its namespace)
//   resource   Sluice::Tool::"<tool name>"      { name, aliases, server? (for mcp__<server>__<tool>) }
//   context    { args, workspace, session }     (only the keys the action's context declares)
//
// `session` holds the session facts `.cedar/facts.json` declares (pipeline/facts.ts), folded from
// the calls the workflow recorded before this one; the facts read go on record with the decision.
// A record that reaches only the batch (a `runBatch` without a `factsScope`, a session started
// without `sessionFacts`) cannot answer a fact, whose window always reaches past the batch: a call
// whose policies read one is denied, saying so, rather than judged on an undercount. A batch that
// names a facts scope reads the scope's calls from the fact store (activities/facts-scope.ts); a
// store it cannot reach leaves the record short, and the call is denied with the store named.
//
// Sluice declares `Sluice::Session` and `Sluice::Tool` itself; the workspace schema declares the
// actions (one per tool a policy is about) with the shape of their arguments. Every policy is
// validated against that schema when the worker starts: one that does not validate (a misspelt
// argument, an optional one read without `has`) stops the worker with the file and line, since a
// forbid that can never match is a rule that silently lets everything through.
//
// Outcomes: a satisfied `forbid` denies (forbid wins, as in Cedar); a satisfied `permit` annotated
// `@ask` asks a person; any other satisfied permit allows. Cedar's implicit deny (no policy
// satisfied) is no opinion, as a file without a matching rule is for every other format: write a
// `forbid` to deny. A forbid that errors while evaluated denies (Cedar would skip it).
import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as Cedar from '@cedar-policy/cedar-wasm/nodejs';
import { beyondReach, checkFactSpecs, type Facts, type FactSpecs, factsFor } from '../pipeline/facts';
import { requireOptional } from '../support/optional';
import { labelOf, readPolicyFile } from './codex-rules';
import { digestOf } from './pin';
import {
  type PolicyCall,
  type PolicyDecision,
  type PolicyFile,
  PolicyFileError,
  type PolicyRuleRef,
  type PolicySource,
  type SourceVerdict,
  lineAt,
} from './policy-types';

export interface CedarPolicyOptions {
  workspace: string;
  /** Policy files or folders of `*.cedar` files; default the workspace's `.cedar` folder (skipped when missing). */
  sources?: string[];
  /** The schema file; default the one `*.cedarschema` in the first folder of `sources`. */
  schema?: string;
  /** The session facts' declarations (JSON); default `facts.json` beside the schema, when there. */
  facts?: string;
}

/** A Cedar policy as Sluice shows and records it: `@id` when it has one, else file and line. */
interface CedarRule extends PolicyRuleRef {
  /** The id the policy set is evaluated under: unique, `<file>:<line>` (and `#n` for a second on a line). */
  setId: string;
  effect: 'permit' | 'forbid';
}

/** The context keys Sluice can fill; an action's context declares the ones its policies read. */
const CONTEXT_KEYS = ['args', 'workspace', 'session'] as const;

/** What Sluice itself declares; the workspace schema refers to these from its actions. */
export const SLUICE_CEDAR_SCHEMA = `namespace Sluice {
  entity Session;
  entity Tool { name: String, aliases: Set<String>, server?: String };
}`;

/** The engine, loaded once and only when a workspace has Cedar policies. */
let engine: typeof Cedar | undefined;
function cedar(): typeof Cedar {
  engine ??= requireOptional(
    '@cedar-policy/cedar-wasm',
    'Cedar policies (.cedar/*.cedar)',
    () => require('@cedar-policy/cedar-wasm/nodejs') as typeof Cedar,
  );
  return engine;
}

/** The workspace's Cedar policies as a PolicySource; none (and no engine loaded) when there are no files. */
export function cedarPolicy(opts: CedarPolicyOptions): PolicySource {
  const workspace = path.resolve(opts.workspace);
  const { policyPaths, schemaPath } = findFiles(workspace, opts);
  if (!policyPaths.length) return sourceOf([], [], () => ({ decision: 'none', matched: [] }), []);
  if (!schemaPath)
    throw new PolicyFileError(
      labelOf(workspace, policyPaths[0]),
      1,
      'there is no Cedar schema (a *.cedarschema file beside the policies, or `schema` in the options): Sluice validates Cedar policies against a schema so that a misspelt attribute cannot make a forbid silently never match',
    );
  const schema = readPolicyFile(workspace, schemaPath, 'cedar');
  const schemaText = `${SLUICE_CEDAR_SCHEMA}\n${schema.text}`;
  checkSchema(schemaText, schema.file.label, schema.text);
  const files: PolicyFile[] = [schema.file];
  const rules: CedarRule[] = [];
  const warnings: string[] = [];
  for (const abs of policyPaths) {
    const { file, text } = readPolicyFile(workspace, abs, 'cedar');
    files.push(file);
    warnings.push(...validateFile(text, file.label, schemaText));
    rules.push(...rulesOf(text, file));
  }
  const facts = readFacts(workspace, opts.facts ?? path.join(path.dirname(schemaPath), 'facts.json'), !!opts.facts);
  if (facts) files.push(facts.file);
  const actions = declaredActions(schemaText);
  const setId = digestOf(files.map((f) => `${f.label}\0${f.digest}`).join('\n'));
  preparse(setId, schemaText, rules, schema.file.label);
  const schemaRef = { ...schema.file, text: schema.text };
  const factsRef = facts && { ...facts.file, text: facts.text, read: rules, specs: facts.specs };
  const prepared = { setId, workspace, actions, rules, schema: schemaRef, facts: facts?.specs ?? {}, factsRef };
  const judge = (call: PolicyCall) => judgeCall(prepared, call);
  return { ...sourceOf(files, rules, judge, warnings), readsFacts: (tool) => factsReadBy(prepared, tool).length > 0 };
}

function sourceOf(
  files: PolicyFile[],
  rules: CedarRule[],
  evaluate: (call: PolicyCall) => SourceVerdict,
  warnings: string[],
): PolicySource {
  return {
    format: 'cedar',
    files,
    rules,
    warnings,
    evaluate,
    examples: () => ({ ran: 0, failures: [], matched: new Set<string>() }),
  };
}

/** The declared facts a policy that may apply to a call of `tool` reads: none when its action has no `session`. */
function factsReadBy(p: Prepared, tool: string): string[] {
  const action = p.actions.get(tool);
  return p.factsRef && action?.context.has('session') ? factsReadFor(p.factsRef, tool) : [];
}

/** The `*.cedar` files named (folders read in name order) and the schema beside them. */
function findFiles(workspace: string, opts: CedarPolicyOptions): { policyPaths: string[]; schemaPath?: string } {
  const given = opts.sources !== undefined;
  const sources = (opts.sources ?? ['.cedar']).map((s) => path.resolve(workspace, s));
  const policyPaths: string[] = [];
  const schemas: string[] = [];
  for (const abs of sources) {
    if (!fs.existsSync(abs)) {
      if (given) throw new PolicyFileError(labelOf(workspace, abs), 1, 'does not exist');
      continue;
    }
    if (!fs.statSync(abs).isDirectory()) {
      policyPaths.push(abs);
      continue;
    }
    const names = fs.readdirSync(abs).sort();
    policyPaths.push(...names.filter((n) => n.endsWith('.cedar')).map((n) => path.join(abs, n)));
    if (schemas.length === 0)
      schemas.push(...names.filter((n) => n.endsWith('.cedarschema')).map((n) => path.join(abs, n)));
  }
  if (opts.schema) return { policyPaths, schemaPath: path.resolve(workspace, opts.schema) };
  if (schemas.length > 1)
    throw new PolicyFileError(
      labelOf(workspace, schemas[1]),
      1,
      `a second Cedar schema beside ${labelOf(workspace, schemas[0])}; keep one *.cedarschema per policy folder, or name the one to use (\`schema\`)`,
    );
  return { policyPaths, schemaPath: schemas[0] };
}

/** Where an engine error points in a text that follows `skip` characters of Sluice's own. */
function lineOf(err: Cedar.DetailedError, text: string, skip = 0): number {
  const at = err.sourceLocations?.[0]?.start;
  return at === undefined ? 1 : lineAt(text, Math.max(0, at - skip));
}

function describe(err: Cedar.DetailedError): string {
  return `${err.message}${err.help ? ` (${err.help})` : ''}`;
}

function checkSchema(schemaText: string, label: string, userText: string): void {
  const answer = cedar().checkParseSchema(schemaText);
  if (answer.type === 'success') return;
  const err = answer.errors[0];
  const dup = /duplicate namespace id: `Sluice`/.test(err.message)
    ? '; Sluice declares the namespace Sluice itself (Sluice::Session, Sluice::Tool): declare your actions outside it'
    : '';
  throw new PolicyFileError(
    label,
    lineOf(err, userText, SLUICE_CEDAR_SCHEMA.length + 1),
    `not a Cedar schema: ${describe(err)}${dup}`,
  );
}

/** Parses and validates one policy file; its first error stops the worker with the line. */
function validateFile(text: string, label: string, schemaText: string): string[] {
  const answer = cedar().validate({ schema: schemaText, policies: { staticPolicies: text } });
  if (answer.type === 'failure') {
    const err = answer.errors[0];
    throw new PolicyFileError(label, lineOf(err, text), `not valid Cedar: ${describe(err)}`);
  }
  if (answer.validationErrors.length) {
    const [first, ...more] = answer.validationErrors;
    const also = more.length
      ? `; and ${more.length} more: ${more.map((e) => `line ${lineOf(e.error, text)}: ${e.error.message}`).join('; ')}`
      : '';
    throw new PolicyFileError(
      label,
      lineOf(first.error, text),
      `does not validate against the Cedar schema: ${describe(first.error)}${also}`,
    );
  }
  return answer.validationWarnings.map((w) => `${label}:${lineOf(w.error, text)}: ${w.error.message}`);
}

/** Every policy of a validated file, with its line, effect and annotations. */
function rulesOf(text: string, file: PolicyFile): CedarRule[] {
  const parts = cedar().policySetTextToParts(text);
  if (parts.type === 'failure')
    throw new PolicyFileError(file.label, lineOf(parts.errors[0], text), describe(parts.errors[0]));
  if (parts.policy_templates.length)
    throw new PolicyFileError(file.label, 1, 'holds a policy template; Sluice evaluates static policies only');
  let cursor = 0;
  const onLine = new Map<number, number>();
  return parts.policies.map((policy) => {
    const at = text.indexOf(policy, cursor);
    if (at >= 0) cursor = at + policy.length;
    const line = at >= 0 ? lineAt(text, at) : 1;
    const nth = (onLine.get(line) ?? 0) + 1;
    onLine.set(line, nth);
    const json = cedar().policyToJson(policy);
    if (json.type === 'failure') throw new PolicyFileError(file.label, line, describe(json.errors[0]));
    const notes = json.json.annotations ?? {};
    const setId = `${file.label}:${line}${nth > 1 ? `#${nth}` : ''}`;
    const decision: PolicyDecision = json.json.effect === 'forbid' ? 'deny' : 'ask' in notes ? 'ask' : 'allow';
    return {
      id: setId,
      setId,
      format: 'cedar',
      file: file.label,
      digest: file.digest,
      line,
      text: oneLine(policy),
      decision,
      effect: json.json.effect,
      ...(typeof notes.id === 'string' ? { policyId: notes.id } : {}),
      ...(typeof notes.reason === 'string' ? { message: notes.reason } : {}),
    };
  });
}

/** A policy as one line for a card or a log: comments dropped, blanks collapsed. */
function oneLine(policy: string): string {
  return policy
    .split('\n')
    .map((l) => l.replace(/^\s*\/\/.*$/, ''))
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Each declared action: its entity uid and the context keys Sluice fills for it. */
interface ActionShape {
  uid: Cedar.TypeAndId;
  context: Set<string>;
}

function declaredActions(schemaText: string): Map<string, ActionShape> {
  const answer = cedar().schemaToJson(schemaText);
  if (answer.type === 'failure') throw new Error(`the Cedar schema cannot be read back: ${describe(answer.errors[0])}`);
  const out = new Map<string, ActionShape>();
  for (const [ns, def] of Object.entries(answer.json))
    for (const [name, action] of Object.entries(def.actions)) {
      if (out.has(name)) continue;
      const keys = contextKeys(action.appliesTo?.context, def.commonTypes ?? {});
      out.set(name, { uid: { type: ns ? `${ns}::Action` : 'Action', id: name }, context: keys });
    }
  return out;
}

/** The top-level context attributes an action declares, through one common-type reference. */
function contextKeys(ctx: unknown, common: Record<string, unknown>): Set<string> {
  let t = ctx as { type?: string; attributes?: Record<string, unknown> } | undefined;
  if (t && t.type !== 'Record' && typeof t.type === 'string' && common[t.type]) t = common[t.type] as typeof t;
  return new Set(Object.keys(t?.attributes ?? {}).filter((k) => (CONTEXT_KEYS as readonly string[]).includes(k)));
}

function preparse(setId: string, schemaText: string, rules: CedarRule[], schemaLabel: string): void {
  const policies = Object.fromEntries(rules.map((r) => [r.setId, r.text]));
  const set = cedar().preparsePolicySet(setId, { staticPolicies: policies });
  if (set.type === 'failure') throw new Error(`the Cedar policies cannot be prepared: ${describe(set.errors[0])}`);
  const schema = cedar().preparseSchema(setId, schemaText);
  if (schema.type === 'failure') throw new PolicyFileError(schemaLabel, 1, describe(schema.errors[0]));
}

interface Prepared {
  setId: string;
  workspace: string;
  actions: Map<string, ActionShape>;
  rules: CedarRule[];
  schema: { label: string; digest: string; text: string };
  facts: FactSpecs;
  /** The facts file and the policies that may read its facts, for a short record's deny. */
  factsRef?: PolicyFile & { text: string; read: CedarRule[]; specs: FactSpecs };
}

/** One call through the engine, and its answer as Sluice's allow / ask / deny / none. */
function judgeCall(p: Prepared, call: PolicyCall): SourceVerdict {
  const action = p.actions.get(call.toolName);
  if (!action) return { decision: 'none', matched: [], note: `the Cedar schema declares no action "${call.toolName}"` };
  const fraction = fractionIn(call.args, 'args');
  if (fraction)
    return misfit(p, call, [
      `${fraction} is a fraction or past 2^53, and Cedar compares whole numbers (Long) only; give the tool a whole-number argument (cents, not dollars)`,
    ]);
  // Folded from a record its scope could not fill (unreadable), the facts would be the batch's own
  // undercount: not reported, so neither the record nor a replay takes them for the scope's.
  const facts = Object.keys(p.facts).length && !call.record?.unreadable ? factsOf(p.facts, call) : undefined;
  const short = beyondReach(factsReadBy(p, call.toolName), call.record);
  if (short.length && p.factsRef)
    return { ...beyondBatch(p.factsRef, short, call.record?.unreadable), ...(facts ? { facts } : {}) };
  const answer = cedar().statefulIsAuthorized({
    principal: { type: 'Sluice::Session', id: call.session ?? '' },
    action: action.uid,
    resource: { type: 'Sluice::Tool', id: call.toolName },
    context: contextOf(action, call, p.workspace, facts),
    preparsedSchemaName: p.setId,
    preparsedPolicySetId: p.setId,
    validateRequest: true,
    entities: entitiesOf(call),
  });
  if (answer.type === 'failure')
    return misfit(
      p,
      call,
      answer.errors.map((e) => e.message),
    );
  return { ...outcomeOf(p, answer.response.diagnostics), ...(facts ? { facts } : {}) };
}

/** Cedar's diagnostics as Sluice's answer: forbid, then a forbid that failed, then @ask, then permit. */
function outcomeOf(p: Prepared, diagnostics: Cedar.Diagnostics): SourceVerdict {
  const { reason, errors } = diagnostics;
  // In the files' order, so the first matching policy of a kind is the one on record.
  const hit = new Set(reason);
  const satisfied = p.rules.filter((r) => hit.has(r.setId));
  const failed = new Set(errors.map((e) => e.policyId));
  const failedForbid = p.rules.find((r) => r.effect === 'forbid' && failed.has(r.setId));
  const forbid = satisfied.find((r) => r.effect === 'forbid');
  if (forbid) return { decision: 'deny', rule: forbid, matched: satisfied };
  if (failedForbid) {
    const err = errors.find((e) => e.policyId === failedForbid.setId)!;
    const note = `the forbid could not be evaluated (${err.error.message}), so it denies`;
    return { decision: 'deny', rule: failedForbid, matched: satisfied, note };
  }
  const rule = satisfied.find((r) => r.decision === 'ask') ?? satisfied[0];
  if (!rule) return { decision: 'none', matched: [] };
  return { decision: rule.decision, rule, matched: satisfied };
}

/**
 * The call's arguments do not fit what the schema declares for its action: no policy can be
 * trusted to have judged it, so it is denied, naming the action's declaration and what to add.
 */
function misfit(p: Prepared, call: PolicyCall, errors: string[]): SourceVerdict {
  const why = `the call does not fit the Cedar schema's action "${call.toolName}" (${errors.join('; ')}); declare every argument the tool takes in the action's context (optional ones with \`?\`)`;
  const at = p.schema.text.search(new RegExp(`action\\s+"?${call.toolName.replace(/[^\w]/g, '\\$&')}\\b`));
  const line = at >= 0 ? lineAt(p.schema.text, at) : 1;
  const rule: PolicyRuleRef = {
    id: `${p.schema.label}:${line}`,
    format: 'cedar',
    file: p.schema.label,
    digest: p.schema.digest,
    line,
    text: `action "${call.toolName}"`,
    decision: 'deny',
    message: why,
  };
  return { decision: 'deny', rule, matched: [], note: why };
}

/**
 * The call's policies read session facts, but its record reaches only its batch: judged on that,
 * a limit is beaten by splitting calls across batches, so the call is denied, naming the first
 * fact and pointing at its declaration, with what to do.
 */
function beyondBatch(ref: PolicyFile & { text: string }, short: string[], unreadable?: string): SourceVerdict {
  const named = short.map((n) => `\`${n}\``).join(', ');
  const why = unreadable
    ? `this policy counts calls across the batch's facts scope (fact ${named}), but ${unreadable}: the call is denied rather than judged on an undercount`
    : `this policy counts calls across the session (fact ${named}), but this batch carries only its own calls, so a limit could be beaten by splitting calls across batches: start the session with \`sessionFacts: true\`, or give the batch a \`factsScope\` (a harness hook's calls have their harness session's)`;
  const at = ref.text.indexOf(JSON.stringify(short[0]));
  const line = at >= 0 ? lineAt(ref.text, at) : 1;
  const rule: PolicyRuleRef = {
    id: `${ref.label}:${line}`,
    format: 'cedar',
    file: ref.label,
    digest: ref.digest,
    line,
    text: `fact ${short[0]}`,
    decision: 'deny',
    message: why,
  };
  return { decision: 'deny', rule, matched: [], note: why };
}

/**
 * The declared facts a policy that may apply to `tool` reads: its name in the policy's text (Cedar
 * reads an attribute by name). A policy scoped to another action (`action == Action::"pay"`)
 * never applies; any other scope (`action`, `action in [...]`) may, and counts.
 */
function factsReadFor(ref: { read: readonly CedarRule[]; specs: FactSpecs }, tool: string): string[] {
  const rules = ref.read.filter((r) => {
    // In the scope only (a condition's `action == ...` does not scope the policy); any form not
    // read here counts, so a miss can only deny more.
    const only = /\b(?:permit|forbid)\s*\(\s*principal\b[^,]*,\s*action\s*==\s*(?:\w+::)*Action::"([^"\\]*)"\s*,/.exec(
      r.text,
    )?.[1];
    return only === undefined || only === tool;
  });
  return Object.keys(ref.specs).filter((name) => {
    const word = new RegExp(`\\b${name}\\b`);
    return rules.some((r) => word.test(r.text));
  });
}

/** The path of the first number Cedar cannot hold (a fraction, or past 64 bits), if any. */
function fractionIn(v: unknown, at: string): string | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? undefined : at;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const found = fractionIn(v[i], `${at}[${i}]`);
      if (found) return found;
    }
  } else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) {
      const found = fractionIn(x, `${at}.${k}`);
      if (found) return found;
    }
  return undefined;
}

/** The declared facts for this call, from the calls recorded before it (none recorded: zero, false). */
function factsOf(specs: FactSpecs, call: PolicyCall): Facts {
  return factsFor(specs, { callId: call.callId ?? '', args: call.args, turn: call.turn ?? 0 }, call.record);
}

/** `facts.json`: `{ "<name>": { "count" | "total" | "exists": { "tool", "window", ... } } }`, checked at start. */
function readFacts(
  workspace: string,
  abs: string,
  named: boolean,
): { file: PolicyFile; specs: FactSpecs; text: string } | undefined {
  if (!named && !fs.existsSync(abs)) return undefined;
  const { file, text } = readPolicyFile(workspace, abs, 'cedar');
  let specs: FactSpecs;
  try {
    specs = JSON.parse(text) as FactSpecs;
    if (specs === null || typeof specs !== 'object' || Array.isArray(specs))
      throw new Error('expected an object of facts by name');
    checkFactSpecs(specs);
  } catch (err) {
    throw new PolicyFileError(file.label, 1, `the session facts cannot be read: ${(err as Error).message}`);
  }
  return { file, specs, text };
}

function contextOf(action: ActionShape, call: PolicyCall, workspace: string, facts: Facts | undefined): Cedar.Context {
  const all: Record<string, Cedar.CedarValueJson> = {
    args: call.args as Cedar.CedarValueJson,
    workspace,
    session: facts ?? {},
  };
  return Object.fromEntries(Object.entries(all).filter(([k]) => action.context.has(k)));
}

function entitiesOf(call: PolicyCall): Cedar.EntityJson[] {
  const server = /^mcp__(.+?)__/.exec(call.toolName)?.[1];
  return [
    {
      uid: { type: 'Sluice::Tool', id: call.toolName },
      attrs: { name: call.toolName, aliases: [...(call.aliases ?? [])], ...(server ? { server } : {}) },
      parents: [],
    },
    { uid: { type: 'Sluice::Session', id: call.session ?? '' }, attrs: {}, parents: [] },
  ];
}
