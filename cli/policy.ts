// `sluice policy explain` and `sluice policy check`: what the policy files of a workspace say
// about a call, and whether their embedded tests hold — read the way the worker reads them
// (hooks/policy.ts), running nothing.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { policyRules, readPolicyTests, type PolicyExplanation, type PolicyRules } from '../hooks/policy';
import { shellParserReady } from '../hooks/shell';
import { callRecords, type SessionRecord } from '../pipeline/facts';
import type { JsonObject, SessionEvent } from '../pipeline/types';
import { UsageError } from '../support/errors';
import type { RawCommand } from './command';
import { checkWorkspaceDogwood, explainWithDogwood, workspaceJudge } from './policy-dogwood';
import { diffCommand, replayCommand } from './policy-replay';

const POLICY_HELP = `Usage: npx sluice policy explain <tool> <args-json> [--history FILE] [--workspace DIR] [--json]
       npx sluice policy explain --file calls.json [--history FILE] [--workspace DIR] [--json]
       npx sluice policy check [--tests FILE] [--workspace DIR] [--strict] [--json]
       npx sluice policy replay <candidate-dir> (--since 7d [--session ID] | --histories DIR) [--check] [--json]
       npx sluice policy diff (--since 1d [--session ID] | --histories DIR) [--check] [--json]

Reads the workspace's policy files as the worker does — .claude/settings.json and
.claude/settings.local.json (permissions), .codex/rules/*.rules and .codex/config.toml,
.gemini/policies/*.toml, opencode.json, .cedar/*.cedar with .cedar/*.cedarschema (Cedar,
validated against the schema), .dogwood/*.dw with .dogwood/scope.json (Dogwood, judged by its
reference interpreter, as the worker judges it) — and runs no tool.

explain   What every source says about a call and which answer wins (deny > ask > allow across
          sources). <tool> is the Sluice tool name (bash, write, mcp__server__tool); a calls file
          is [{"name": "bash", "arguments": {...}}] or {"calls": [...]}, arguments as an object
          or a JSON string. --history explains the call as the next one of a recorded
          session: a JSON array of its events or JSON lines (a session log), whose calls the
          session facts (.cedar/facts.json) fold, at the time of the last event; without it,
          the call is explained as the first of a session started with sessionFacts.
check     Runs every source's embedded tests (Codex match / not_match examples) and the calls of a
          Sluice policy test file (--tests, default policy-tests.json in the workspace when it
          exists): {"tests": [{"tool": "bash", "args": {"command": "git push"}, "expect": "ask",
          "source": "claude", "rule": "Bash(git push:*)"}]} (source and rule optional). Lists the
          rules no example and no test matched. --strict fails on those too. A Dogwood set is
          validated by the reference; tests with "source": "dogwood" are judged by it alone.
replay    Judges every recorded call of past batches again under the policy files of
          <candidate-dir> (read as the worker reads a workspace), with the session facts as they
          stood at each call, and lists the calls whose decision would change: what was decided,
          what the candidate says, the rules, the facts. --since 7d reads the batches started on
          the server within 7 days (--address, --namespace), --session ID only one session's;
          --histories DIR exported ones (\`npx sluice export\`). A batch whose history cannot be
          read (encrypted, and SLUICE_CODEC_KEYS not set) is skipped and named. --check exits 1
          when any decision would change.
diff      The calls where shadow mode's candidate (shadowPolicy in the worker's preExecute) and
          the enforced policy decided differently, with both rules and the facts each read.
          --check exits 1 on any.

Exit codes: 0 all held, 1 a test or example failed (or a file cannot be read), 2 usage.`;

export const policy: RawCommand = {
  name: 'policy',
  synopsis: 'policy explain|check|replay|diff',
  summary: `What the workspace's policy files say about a call, which rule wins; their
tests; a candidate tried on past calls (\`npx sluice policy --help\`)`,
  help: POLICY_HELP,
  raw: (argv, out) => policyCommand(argv, out),
};

async function policyCommand(argv: string[], out: (s: string) => void): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        workspace: { type: 'string' },
        file: { type: 'string' },
        history: { type: 'string' },
        tests: { type: 'string' },
        strict: { type: 'boolean' },
        json: { type: 'boolean' },
        since: { type: 'string' },
        histories: { type: 'string' },
        session: { type: 'string' },
        check: { type: 'boolean' },
        address: { type: 'string' },
        namespace: { type: 'string' },
        'task-queue': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    out(`${(err as Error).message}\n\n${POLICY_HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [sub, ...rest] = positionals;
  if (values.help || !sub) {
    out(POLICY_HELP);
    return values.help ? 0 : 2;
  }
  const workspace = path.resolve(values.workspace ?? process.cwd());
  // Claude Code's Bash rules read commands with the shell parser; answer only once it has loaded.
  await shellParserReady();
  try {
    if (sub === 'explain') return await explain(workspace, rest, values, out);
    if (sub === 'check') return await check(workspace, values, out);
    if (sub === 'replay') return await replayCommand(rest, values, out);
    if (sub === 'diff') return await diffCommand(rest, values, out);
    throw new UsageError(`unknown policy command "${sub}"; use explain, check, replay or diff`);
  } catch (err) {
    out(`sluice policy ${sub}: ${(err as Error).message}`);
    return err instanceof UsageError ? 2 : 1;
  }
}

function load(workspace: string, examples: 'refuse' | 'report'): PolicyRules {
  return policyRules({ workspace, examples });
}

async function explain(
  workspace: string,
  rest: string[],
  v: { file?: string; json?: boolean; history?: string },
  out: (s: string) => void,
): Promise<number> {
  // Without --history: the first call of a session that carries its calls (nothing done yet).
  const history = v.history ? readHistory(v.history) : { record: { calls: [], now: 0, reach: 'session' as const } };
  const calls: { tool: string; args: JsonObject }[] = [];
  if (v.file) {
    if (rest.length) throw new UsageError('give either --file or <tool> <args-json>, not both');
    calls.push(...readCalls(v.file));
  } else {
    const [tool, argsJson] = rest;
    if (!tool) throw new UsageError('name a tool: sluice policy explain bash \'{"command":"git push"}\'');
    calls.push({ tool, args: parseArgsJson(argsJson ?? '{}', 'the arguments') });
  }
  const policy = load(workspace, 'report');
  const results = calls.map((c) => ({
    ...c,
    explanation: policy.explain({ toolName: c.tool, args: c.args, ...history }),
  }));
  // The Dogwood set answers from its reference, after the files, as in the worker.
  const dogwood = workspaceJudge(workspace);
  if (dogwood)
    for (const [index, r] of results.entries())
      r.explanation = await explainWithDogwood(dogwood, r.explanation, { ...r, index }, history);
  if (v.json) {
    out(JSON.stringify({ files: policy.files, policyDigest: policy.digest, calls: results }, null, 2));
    return 0;
  }
  if (!policy.files.length) out('no policy files found in the workspace');
  // The digest an approval's card names: the same digest means the same policy judged it.
  else out(`policy ${policy.digest} (${policy.files.map((f) => f.label).join(', ')})`);
  for (const w of policy.warnings) out(`note: ${w}`);
  for (const r of results) out(renderExplanation(r.tool, r.args, r.explanation));
  return 0;
}

function renderExplanation(tool: string, args: JsonObject, x: PolicyExplanation): string {
  const lines = [`${tool} ${JSON.stringify(args)}`];
  for (const s of x.sources) {
    const what = !s.files.length
      ? '(no files)'
      : s.rule
        ? `${s.decision.padEnd(5)} ${s.rule.file}:${s.rule.line}  ${s.rule.text}${s.rule.message ? `  — ${s.rule.message}` : ''}${s.note ? `  (${s.note})` : ''}`
        : `no opinion${s.note ? ` (${s.note})` : ''}`;
    lines.push(`  ${s.format.padEnd(9)} ${what}`);
    if (s.facts) lines.push(`  ${''.padEnd(9)} facts ${JSON.stringify(s.facts)}`);
  }
  lines.push(
    x.winner?.rule
      ? `  → ${x.decision}, decided by ${x.winner.rule.file}:${x.winner.rule.line}`
      : "  → no policy decides: the tool's own approval setting applies",
  );
  return lines.join('\n');
}

async function check(
  workspace: string,
  v: { tests?: string; strict?: boolean; json?: boolean },
  out: (s: string) => void,
): Promise<number> {
  const policy = load(workspace, 'report');
  const testsFile = v.tests ? path.resolve(v.tests) : path.join(workspace, 'policy-tests.json');
  const tests = v.tests || fs.existsSync(testsFile) ? readPolicyTests(testsFile) : [];
  const report = policy.check(tests.filter((t) => t.source !== 'dogwood'));
  const judge = workspaceJudge(workspace);
  const dogwood = judge ? await checkWorkspaceDogwood(workspace, judge, tests) : undefined;
  const dogwoodOk = !dogwood || (!dogwood.invalid && !dogwood.failures.length);
  const ok = report.ok && dogwoodOk && !(v.strict && report.unmatched.length);
  if (v.json) {
    out(JSON.stringify({ ...report, ...(dogwood ? { dogwood } : {}), ok }, null, 2));
    return ok ? 0 : 1;
  }
  out(`${policy.files.length} policy file(s), ${policy.rules.length} rule(s), policy ${policy.digest}`);
  out(`embedded examples: ${report.examples.ran} run, ${report.examples.failures.length} failed`);
  for (const f of report.examples.failures)
    out(`  FAIL ${f.rule.file}:${f.rule.line} ${f.rule.text}: example ${f.example} should ${f.expected} but ${f.got}`);
  out(
    `policy tests: ${report.tests.ran} run, ${report.tests.failures.length} failed${tests.length ? ` (${path.relative(process.cwd(), testsFile) || testsFile})` : ''}`,
  );
  for (const f of report.tests.failures)
    out(`  FAIL tests[${f.index}] ${f.test.tool} ${JSON.stringify(f.test.args ?? {})}: ${f.why}`);
  if (dogwood?.invalid) out(`dogwood: FAIL ${dogwood.invalid}`);
  else if (dogwood)
    out(
      `dogwood: ${judge?.label} validated by the reference; ${dogwood.ran} test(s) run, ${dogwood.failures.length} failed`,
    );
  for (const f of dogwood?.failures ?? [])
    out(`  FAIL tests[${f.index}] ${f.test.tool} ${JSON.stringify(f.test.args ?? {})}: ${f.why}`);
  if (report.unmatched.length) {
    out(`rules no example or test matched (${report.unmatched.length}):`);
    for (const r of report.unmatched) out(`  ${r.file}:${r.line} ${r.text}`);
  }
  out(ok ? 'ok' : 'FAILED');
  return ok ? 0 : 1;
}

/** A recorded session's events (a JSON array, or JSON lines as the session log keeps them) as the record a call is explained after. */
function readHistory(file: string): { record: SessionRecord; turn: number } {
  let events: SessionEvent[];
  try {
    const text = fs.readFileSync(file, 'utf8').trim();
    events = text.startsWith('[')
      ? JSON.parse(text)
      : text
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l));
  } catch (err) {
    throw new UsageError(`cannot read the history ${file}: ${(err as Error).message}`);
  }
  if (!Array.isArray(events) || events.some((e) => typeof e?.type !== 'string' || typeof e.time !== 'string'))
    throw new UsageError(
      `${file}: expected session events ({"type", "seq", "time", "data"}), as the session log keeps them`,
    );
  const calls = callRecords(events);
  const last = events.at(-1);
  return {
    // The file is the session's record as the person chose to give it: it reaches the session.
    record: { calls, now: last ? Date.parse(last.time) : 0, reach: 'session' },
    turn: calls.at(-1)?.turn ?? 0,
  };
}

function parseArgsJson(text: string, what: string): JsonObject {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${what} are not valid JSON (${(err as Error).message})`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new UsageError(`${what} must be a JSON object`);
  return v as JsonObject;
}

function readCalls(file: string): { tool: string; args: JsonObject }[] {
  let doc: unknown;
  try {
    doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`cannot read the calls file ${file}: ${(err as Error).message}`);
  }
  const list = Array.isArray(doc) ? doc : (doc as { calls?: unknown })?.calls;
  if (!Array.isArray(list))
    throw new UsageError(`${file}: expected [{"name": "bash", "arguments": {...}}] or {"calls": [...]}`);
  return list.map((c, i) => {
    const o = (c ?? {}) as Record<string, unknown>;
    const tool = o.name ?? o.tool;
    if (typeof tool !== 'string' || !tool) throw new UsageError(`${file}: calls[${i}] needs "name"`);
    const raw = o.arguments ?? o.args ?? {};
    const args =
      typeof raw === 'string'
        ? parseArgsJson(raw, `calls[${i}].arguments`)
        : parseArgsJson(JSON.stringify(raw), `calls[${i}].arguments`);
    return { tool, args };
  });
}
