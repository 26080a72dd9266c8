// Every policy file a team already keeps, applied together as one pre-execute extension, with the
// rule that decided each call on record:
//
//   Claude Code  .claude/settings.json, .claude/settings.local.json  permissions.allow/ask/deny
//   Codex        .codex/rules/*.rules (prefix_rule), .codex/config.toml approval_policy/sandbox_mode
//   Gemini CLI   .gemini/policies/*.toml ([[rule]] with tiers and priorities)
//   OpenCode     opencode.json  permission
//   Cedar        .cedar/*.cedar with .cedar/*.cedarschema (hooks/cedar-policy.ts)
//
// Each source decides by its own rules (Claude Code: deny > ask > allow; Codex: strictest match;
// Gemini: highest priority; OpenCode: last match; Cedar: forbid > @ask permit > permit); across sources the strictest answer wins
// (deny > ask > allow), the first source in the order above breaking a tie. Files are read once,
// at start; one that cannot be read, or whose embedded examples fail, stops the worker.
//
//   const policy = policyRules({ workspace });
//   defineConfig({
//     tools: [...fsTools({ root }), bashTool({ root, approval: policy.approval('bash') })],
//     preExecute: [...hooks.preExecute, ...policy.preExecute],
//   });
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ToolApproval, JsonObject, PolicyBinding, PreDecision } from '../pipeline/types';
import type { PolicyPreExecute, PolicyRecheck, PreExecuteHandler, StageContext } from '../define/config';
import type { Facts } from '../pipeline/facts';
import { denyAtExec } from '../tools/exec-deny';
import { cedarPolicy, type CedarPolicyOptions } from './cedar-policy';
import { codexRules, type CodexRulesOptions, describeFailures } from './codex-rules';
import {
  type DogwoodJudge,
  type DogwoodPolicyOptions,
  type DogwoodVerdict,
  dogwoodCallOf,
  dogwoodReason,
  dogwoodJudge,
  recordDogwood,
  workspaceDogwood,
} from './dogwood-policy';
import { policyExecDenies } from './exec-deny-rules';
import { geminiPolicy, type GeminiPolicyOptions } from './gemini-policy';
import { openCodePermissions, type OpenCodeOptions } from './opencode-permissions';
import { permissionRules } from './permissions';
import { shellParserReady } from './shell';
import { digestOf } from './pin';
import { shortDigest } from '../pipeline/policy-binding';
import {
  type ExampleFailure,
  type PolicyCall,
  type PolicyDecision,
  type PolicyFile,
  type PolicyFormat,
  type PolicyRuleRef,
  type PolicySource,
  type SourceVerdict,
  STRICTNESS,
  lineAt,
} from './policy-types';

export interface PolicyRulesOptions {
  /** The project the files belong to; every relative path starts here. */
  workspace: string;
  /** Claude Code settings files (default both `.claude/settings*.json`), or false for none. */
  claude?: { sources?: string[]; cwd?: string; home?: string } | false;
  codex?: Omit<CodexRulesOptions, 'workspace'> | false;
  gemini?: Omit<GeminiPolicyOptions, 'workspace'> | false;
  opencode?: Omit<OpenCodeOptions, 'workspace'> | false;
  cedar?: Omit<CedarPolicyOptions, 'workspace'> | false;
  /**
   * A Dogwood set judged after the files (hooks/dogwood-policy.ts), its files in the digest asks
   * are bound to; default the workspace's `.dogwood` folder when it holds a `scope.json`.
   */
  dogwood?: Omit<DogwoodPolicyOptions, 'workspace'> | false;
  /**
   * `refuse` (default): a failing embedded example (a Codex `match` that does not match) stops the
   * worker. `report`: load anyway and let `check()` report it (what `sluice policy check` uses).
   */
  examples?: 'refuse' | 'report';
}

interface SourceExplanation {
  format: PolicyFormat;
  files: { label: string; digest: string }[];
  decision: PolicyDecision | 'none';
  rule?: PolicyRuleRef;
  note?: string;
  /** The session facts the source read (Cedar). */
  facts?: Facts;
}

export interface PolicyExplanation {
  /** The answer that wins across sources; `none` when no source has an opinion. */
  decision: PolicyDecision | 'none';
  winner?: SourceExplanation;
  sources: SourceExplanation[];
}

export interface PolicyTest {
  tool: string;
  args?: JsonObject;
  aliases?: string[];
  expect: PolicyDecision | 'none';
  /** When given: the format whose rule must decide. */
  source?: PolicyFormat;
  /** When given: the text of the rule that must decide. */
  rule?: string;
}

export interface PolicyCheckReport {
  ok: boolean;
  examples: { ran: number; failures: ExampleFailure[] };
  tests: { ran: number; failures: { test: PolicyTest; index: number; got: PolicyExplanation; why: string }[] };
  /** Rules no embedded example and no test call matched. */
  unmatched: PolicyRuleRef[];
}

export interface PolicyRules {
  sources: readonly PolicySource[];
  files: readonly PolicyFile[];
  rules: readonly PolicyRuleRef[];
  warnings: readonly string[];
  /** One digest over every file read (their labels and digests), for the record. */
  digest: string;
  /** The pre-execute extension, with its re-check of asks raised under another policy. */
  preExecute: PolicyPreExecute[];
  explain(call: PolicyCall): PolicyExplanation;
  /** Whether a rule of any source that may apply to a call of `toolName` reads session facts. */
  readsFacts(toolName: string): boolean;
  /**
   * The approval policy that does what an allow rule does in the harness: `auto` when the sources
   * together allow the call, `otherwise` (default `ask`) when they do not. Sluice never lets an
   * extension lower a tool's own `ask`, so this is how an allow rule removes bash's prompt.
   */
  approval(toolName: string, otherwise?: ToolApproval): (args: unknown) => Promise<ToolApproval>;
  check(tests?: readonly PolicyTest[]): PolicyCheckReport;
}

/** Claude Code's rules as a PolicySource, with the line of each rule in its file. */
function claudeSource(workspace: string, opts: { sources?: string[]; cwd?: string; home?: string }): PolicySource {
  const pr = permissionRules({ workspace, ...opts });
  const files: PolicyFile[] = pr.sources.map((s) => ({
    format: 'claude',
    label: s.label,
    path: path.resolve(workspace, s.label),
    digest: s.digest,
  }));
  const texts = new Map(files.map((f) => [f.label, fs.readFileSync(f.path, 'utf8')]));
  const cursor = new Map<string, number>();
  const refs = new Map(
    pr.rules.map((r) => {
      const text = texts.get(r.file) ?? '';
      const at = text.indexOf(JSON.stringify(r.text), cursor.get(r.file) ?? 0);
      if (at >= 0) cursor.set(r.file, at + 1);
      const line = at >= 0 ? lineAt(text, at) : 1;
      const ref: PolicyRuleRef = {
        id: `${r.file}:${line}:${r.kind}:${r.text}`,
        format: 'claude',
        file: r.file,
        digest: files.find((f) => f.label === r.file)?.digest ?? '',
        line,
        text: r.text,
        decision: r.kind,
      };
      return [r, ref] as const;
    }),
  );
  return {
    format: 'claude',
    files,
    rules: [...refs.values()],
    warnings: pr.warnings,
    evaluate(call) {
      const v = pr.evaluate(call);
      if (v.kind === 'none' || !v.rule) return { decision: 'none', matched: [] };
      const ref = refs.get(v.rule)!;
      return { decision: v.kind, rule: ref, matched: [ref] };
    },
    examples: () => ({ ran: 0, failures: [], matched: new Set<string>() }),
  };
}

export function policyRules(opts: PolicyRulesOptions): PolicyRules {
  const workspace = path.resolve(opts.workspace);
  const sources = readSources(workspace, opts);
  // Claude Code's rules registered themselves (permissionRules); these are the other formats'.
  denyAtExec(sources.flatMap(policyExecDenies));
  const dogwood = dogwoodOf(workspace, opts);
  const files = [...sources.flatMap((s) => s.files), ...(dogwood?.files() ?? [])];
  const rules = sources.flatMap((s) => s.rules);
  const warnings = sources.flatMap((s) => s.warnings.map((w) => `${s.format}: ${w}`));
  const digest = digestOf(files.map((f) => `${f.label}\0${f.digest}`).join('\n'));
  const explain = (call: PolicyCall) => explainCall(sources, call);
  // Claude Code's Bash rules read commands with the shell parser, which loads asynchronously.
  const ready = shellParserReady();
  const judge: Judge = { digest, ready, explain, bindingOf: bindingWith(digest, files), dogwood };
  // A Dogwood set reads the session's calls (its trace) for every tool it judges.
  const readsFacts = (toolName: string) =>
    dogwood !== undefined || sources.some((s) => s.readsFacts?.(toolName) === true);
  return {
    sources,
    files,
    rules,
    warnings,
    digest,
    // Always there, rules or none: an ask raised under this policy is bound to its digest, and a
    // worker whose files have no rule left still judges again what another policy asked.
    preExecute: [
      {
        name: 'policy files (Claude Code, Codex, Gemini CLI, OpenCode)',
        handler: policyHandler(judge),
        recheck: policyRecheck(judge),
        // The Dogwood reference answers from another process.
        ...(dogwood ? { longRunning: true } : {}),
        // The recheck judges again only under other files than the ask's.
        readsFacts: (toolName, askedUnder) => askedUnder?.digest !== digest && readsFacts(toolName),
      },
    ],
    explain,
    readsFacts,
    approval(toolName, otherwise = 'ask') {
      return async (args) => {
        await ready;
        return explain({ toolName, args: (args ?? {}) as JsonObject }).decision === 'allow' ? 'auto' : otherwise;
      };
    },
    check: (tests = []) => checkPolicy(sources, rules, explain, tests),
  };
}

/** What the pre-execute handler and the recheck judge a call by. */
interface Judge {
  /** Over every file the sources read: what an ask is bound to. */
  digest: string;
  /** The shell parser loaded. */
  ready: Promise<void>;
  explain: (call: PolicyCall) => PolicyExplanation;
  bindingOf: (x: PolicyExplanation) => PolicyBinding;
  /** The Dogwood set, judged after the files. */
  dogwood?: DogwoodJudge;
}

/** The Dogwood set the options name, or the workspace's; read now, so a worker does not start with one it cannot read. */
function dogwoodOf(workspace: string, opts: PolicyRulesOptions): DogwoodJudge | undefined {
  if (opts.dogwood === false) return undefined;
  const o = opts.dogwood ? { ...opts.dogwood, workspace } : workspaceDogwood(workspace);
  return o ? dogwoodJudge(o, true) : undefined;
}

/** The Dogwood set's verdict on a call the files did not deny (none when no set judges the tool). */
async function dogwoodVerdict(
  judge: Judge,
  ctx: StageContext,
  x: PolicyExplanation,
): Promise<DogwoodVerdict | undefined> {
  const dw = judge.dogwood;
  if (!dw || x.decision === 'deny' || !ctx.tool || !dw.judges(ctx.tool.name)) return undefined;
  return dw.decide(dogwoodCallOf(ctx));
}

/** A stage's call as the policy sources see it, with the calls recorded before it for session facts. */
function policyCallOf(ctx: StageContext, tool: NonNullable<StageContext['tool']>): PolicyCall {
  return {
    toolName: tool.name,
    aliases: tool.aliases,
    args: ctx.call.args,
    session: ctx.sessionId,
    callId: ctx.call.id,
    turn: ctx.turn,
    ...(ctx.record ? { record: ctx.record } : {}),
  };
}

/** The sources the options name, every one by default; their own examples must hold unless told not to refuse. */
function readSources(workspace: string, opts: PolicyRulesOptions): PolicySource[] {
  const sources: PolicySource[] = [];
  if (opts.claude !== false) sources.push(claudeSource(workspace, opts.claude ?? {}));
  if (opts.codex !== false) sources.push(codexRules({ workspace, ...(opts.codex ?? {}), verifyExamples: false }));
  if (opts.gemini !== false) sources.push(geminiPolicy({ workspace, ...(opts.gemini ?? {}) }));
  if (opts.opencode !== false) sources.push(openCodePermissions({ workspace, ...(opts.opencode ?? {}) }));
  if (opts.cedar !== false) sources.push(cedarPolicy({ workspace, ...(opts.cedar ?? {}) }));
  if ((opts.examples ?? 'refuse') === 'refuse') {
    const failures = sources.flatMap((s) => s.examples().failures);
    if (failures.length) throw new Error(describeFailures(failures));
  }
  return sources;
}

/** What every source says of a call, and the strictest of them, which decides. */
function explainCall(sources: readonly PolicySource[], call: PolicyCall): PolicyExplanation {
  const per: SourceExplanation[] = sources.map((s) => {
    const v: SourceVerdict = s.evaluate(call);
    return {
      format: s.format,
      files: s.files.map((f) => ({ label: f.label, digest: f.digest })),
      decision: v.decision,
      ...(v.rule ? { rule: v.rule } : {}),
      ...(v.note ? { note: v.note } : {}),
      ...(v.facts ? { facts: v.facts } : {}),
    };
  });
  let winner: SourceExplanation | undefined;
  for (const s of per)
    if (s.decision !== 'none' && (!winner || STRICTNESS[s.decision] > STRICTNESS[winner.decision as PolicyDecision]))
      winner = s;
  return { decision: winner?.decision ?? 'none', ...(winner ? { winner } : {}), sources: per };
}

/** The binding a decision carries; the files the digest is over go with every one, so a pending approval names them. */
function bindingWith(digest: string, files: readonly PolicyFile[]): (x: PolicyExplanation) => PolicyBinding {
  const boundFiles = files.map((f) => ({ source: f.format, file: f.label, digest: f.digest }));
  return (x) => ({
    digest,
    decision: x.decision,
    ...(x.winner?.rule ? { rule: ruleOf(x.winner.rule) } : {}),
    files: boundFiles,
  });
}

/** The pre-execute handler: records the deciding rule (and what the other sources said), then decides. */
function policyHandler(judge: Judge): PreExecuteHandler {
  const answer = filesAnswer(judge);
  return async (ctx) => {
    if (!ctx.tool) return undefined;
    await judge.ready;
    const x = judge.explain(policyCallOf(ctx, ctx.tool));
    const dw = await dogwoodVerdict(judge, ctx, x);
    const said = dw ? recordDogwood(ctx, dw) : undefined;
    if (said?.kind === 'deny') return said;
    const files = answer(ctx, x);
    if (said?.kind !== 'ask' || files.kind === 'deny') return files;
    // The Dogwood set asks: the card says why, beside what the files asked, bound to the same digest.
    const reasons = [
      files.kind === 'ask' ? files.reason : undefined,
      `${said.reason} (policy ${shortDigest(judge.digest)})`,
    ];
    return {
      kind: 'ask',
      reason: reasons.filter(Boolean).join('; '),
      ...(files.policy ? { policy: files.policy } : {}),
    };
  };
}

/** What the files decided, on record when a rule decided, with the binding an ask carries. */
function filesAnswer({ digest, bindingOf }: Judge): (ctx: StageContext, x: PolicyExplanation) => PreDecision {
  return (ctx, x) => {
    const w = x.winner;
    // No rule: no opinion, but an ask the tool's own approval raises is still bound to this policy
    // (a later policy that denies or asks by a rule judges the call again).
    if (!w?.rule || x.decision === 'none') return { kind: 'allow', policy: bindingOf(x) };
    ctx.emit('policy/decided', {
      turn: ctx.turn,
      callId: ctx.call.id,
      decision: x.decision,
      ...ruleRecord(w.rule),
      ...(w.note ? { note: w.note } : {}),
      // The session facts the deciding source read: a replay and an auditor read the same.
      ...(w.facts ? { facts: w.facts } : {}),
      policyDigest: digest,
      // What every other source said, so an auditor sees the whole picture.
      others: x.sources
        .filter((s) => s !== w && s.decision !== 'none' && s.rule)
        .map((s) => ({ decision: s.decision, ...ruleRecord(s.rule!) })),
    });
    const decided = decisionOf(x.decision, w.rule);
    const policy = bindingOf(x);
    // The approver sees which policy asked: its digest is what the approval is bound to.
    if (x.decision === 'ask')
      return { kind: 'ask', reason: `${askReason(w.rule)} (policy ${shortDigest(digest)})`, policy };
    return { ...decided, policy };
  };
}

/**
 * After a person decided a call asked under `askedUnder`: judges it under the files read now.
 * Same digest: nothing changed, the approval holds. Otherwise a deny denies; an allow, or no rule,
 * lets it run on the approval; an ask holds the approval only when the same rule asks.
 */
function policyRecheck(judge: Judge): PolicyRecheck {
  const { digest, ready, explain, bindingOf } = judge;
  return async (ctx, askedUnder) => {
    if (askedUnder.digest === digest || !ctx.tool) return undefined;
    await ready;
    const x = explain(policyCallOf(ctx, ctx.tool));
    const now = bindingOf(x);
    const change = `the policy changed while this call waited for approval (${shortDigest(askedUnder.digest)} → ${shortDigest(digest)})`;
    const dw = await dogwoodVerdict(judge, ctx, x);
    if (dw?.decision === 'deny') {
      const denial = `${change}: it is now ${dogwoodReason(dw)}; the approval given under the old policy does not hold`;
      ctx.emit('policy/rechecked', {
        turn: ctx.turn,
        callId: ctx.call.id,
        outcome: 'denied',
        askedUnder: askedUnder as unknown as JsonObject,
        now: now as unknown as JsonObject,
        dogwood: dw.at,
        note: denial,
      });
      return denial;
    }
    const was = askedUnder.rule ? `${askedUnder.rule.file}: \`${askedUnder.rule.text}\`` : 'no rule';
    let outcome: 'denied' | 'allowed' | 'same-rule' | 'other-rule' | 'no-rule';
    let denial: string | undefined;
    if (x.decision === 'deny') {
      outcome = 'denied';
      denial = `${change}: it is now ${denyReason(x.winner!.rule!)}; the approval given under the old policy does not hold`;
    } else if (x.decision === 'ask') {
      const r = now.rule!;
      const same =
        askedUnder.rule?.source === r.source && askedUnder.rule.file === r.file && askedUnder.rule.text === r.text;
      outcome = same ? 'same-rule' : 'other-rule';
      if (!same)
        denial = `${change}: it is now asked by ${r.file}: \`${r.text}\`, not by ${was} as when it was approved; call it again to be asked under the current policy`;
    } else outcome = x.decision === 'allow' ? 'allowed' : 'no-rule';
    ctx.emit('policy/rechecked', {
      turn: ctx.turn,
      callId: ctx.call.id,
      outcome,
      askedUnder: askedUnder as unknown as JsonObject,
      now: now as unknown as JsonObject,
      note:
        denial ??
        `${change}: ${
          outcome === 'allowed'
            ? `it is now allowed by ${now.rule!.file}: \`${now.rule!.text}\` and runs on the approval`
            : outcome === 'same-rule'
              ? `the same rule still asks (${was}), and the approval holds`
              : 'no rule speaks for it now, and it runs on the approval'
        }`,
    });
    return denial;
  };
}

/** The sources' own examples, the given tests, and the rules neither matched. */
function checkPolicy(
  sources: readonly PolicySource[],
  rules: readonly PolicyRuleRef[],
  explain: (call: PolicyCall) => PolicyExplanation,
  tests: readonly PolicyTest[],
): PolicyCheckReport {
  const ex = sources.map((s) => s.examples());
  const matched = new Set(ex.flatMap((e) => [...e.matched]));
  const failures: PolicyCheckReport['tests']['failures'] = [];
  tests.forEach((t, index) => {
    const got = explain({ toolName: t.tool, aliases: t.aliases ?? [], args: t.args ?? {} });
    for (const s of sources)
      for (const r of s.evaluate({ toolName: t.tool, aliases: t.aliases ?? [], args: t.args ?? {} }).matched)
        matched.add(r.id);
    let why = '';
    if (got.decision !== t.expect) why = `expected ${t.expect}, got ${got.decision}`;
    else if (t.source && got.winner?.format !== t.source)
      why = `expected ${t.source} to decide, ${got.winner?.format ?? 'no source'} did`;
    else if (t.rule && got.winner?.rule?.text !== t.rule)
      why = `expected the rule ${JSON.stringify(t.rule)} to decide, ${got.winner?.rule ? JSON.stringify(got.winner.rule.text) : 'no rule'} did`;
    if (why) failures.push({ test: t, index, got, why });
  });
  const exampleFailures = ex.flatMap((e) => e.failures);
  return {
    ok: exampleFailures.length === 0 && failures.length === 0,
    examples: { ran: ex.reduce((n, e) => n + e.ran, 0), failures: exampleFailures },
    tests: { ran: tests.length, failures },
    unmatched: rules.filter((r) => !matched.has(r.id)),
  };
}

function ruleOf(rule: PolicyRuleRef): NonNullable<PolicyBinding['rule']> {
  return { source: rule.format, file: rule.file, line: rule.line, text: rule.text };
}

function ruleRecord(rule: PolicyRuleRef): JsonObject {
  return {
    source: rule.format,
    file: rule.file,
    digest: rule.digest,
    line: rule.line,
    rule: rule.text,
    ...(rule.message ? { message: rule.message } : {}),
    ...(rule.policyId ? { policyId: rule.policyId } : {}),
  };
}

/** What the approver and the model read: which file and which rule. */
export function decisionOf(decision: PolicyDecision, rule: PolicyRuleRef): PreDecision {
  if (decision === 'deny') return { kind: 'deny', reason: denyReason(rule) };
  if (decision === 'ask') return { kind: 'ask', reason: askReason(rule) };
  return { kind: 'allow' };
}

function denyReason(rule: PolicyRuleRef): string {
  return `denied by ${rule.file}: \`${rule.text}\`${rule.message ? ` — ${rule.message}` : ''}`;
}

function askReason(rule: PolicyRuleRef): string {
  return `asked by ${rule.file}: \`${rule.text}\`${rule.message ? ` — ${rule.message}` : ''}`;
}

/** Reads a Sluice policy test file: `{"tests": [{"tool", "args", "expect", "source"?, "rule"?}]}`. */
export function readPolicyTests(file: string): PolicyTest[] {
  let doc: unknown;
  try {
    doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read the policy tests ${file}: ${(err as Error).message}`);
  }
  const tests = (doc as { tests?: unknown })?.tests;
  if (!Array.isArray(tests))
    throw new Error(`${file}: expected {"tests": [{"tool": "bash", "args": {...}, "expect": "allow|ask|deny|none"}]}`);
  return tests.map((t, i) => {
    const at = `${file}: tests[${i}]`;
    if (typeof t !== 'object' || t === null) throw new Error(`${at} must be an object`);
    const o = t as Record<string, unknown>;
    if (typeof o.tool !== 'string' || !o.tool) throw new Error(`${at}.tool must name a tool`);
    if (o.args !== undefined && (typeof o.args !== 'object' || o.args === null || Array.isArray(o.args)))
      throw new Error(`${at}.args must be an object`);
    if (!['allow', 'ask', 'deny', 'none'].includes(o.expect as string))
      throw new Error(`${at}.expect must be allow, ask, deny or none`);
    return o as unknown as PolicyTest;
  });
}
