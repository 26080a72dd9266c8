// Dogwood policies (Cedar plus temporal conditions: `formerly`, `since`, counts and sums within a
// window) evaluated by the reference interpreter itself, never by a re-implementation: the Rust
// `dogwood-language` crate as the `dogwood-py` wheel ships it, run in a helper process. Sluice's
// recorded calls are the event store: each decision renders the session's call records (those
// still in flight included, as Dogwood counts them) as a Dogwood trace and asks the reference to
// replay it, so a decision is a pure function of the durable record and replays the same way.

import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { CallRecord, Json, JsonObject } from '../pipeline/types.js';

/** The pinned reference: the version the tests check against the reference's own examples. */
const DOGWOOD_PY = 'dogwood-py==0.0.12';

/** A Dogwood policy set as the reference takes it: policies, the Cedar action schema, the event schema. */
export interface DogwoodPolicySet {
  /** The `.dw` text (several files joined, each kept whole). */
  policy: string;
  /** The Cedar schema (`.cedarschema` text) the actions and their context are declared in. */
  policySchema: string;
  /** The Dogwood event schema (`.dwschema`); the reference's defaults when absent. */
  eventSchema?: string;
  /** Where the text came from, for errors. */
  source: string;
}

/**
 * How a Sluice call becomes a Dogwood request event. `principal` and `resource` are Cedar entity
 * uids (`Agent::OAuthUser::"alice"`); `actions` maps a tool to its action name (default: the tool
 * name); `input` picks the context shape: `tool-use` is the reference's framework-neutral
 * `{tool, input, toolUseId}` (its Strands adapter's), `arguments` is the call's arguments alone.
 */
export interface DogwoodScope {
  namespace: string;
  principal: string;
  resource: string;
  actions?: Record<string, string>;
  input?: 'tool-use' | 'arguments';
  /** The event schema's `sessionId` field, when it declares one. */
  sessionId?: string;
}

/** One verdict of the reference per decision event, in trace order. */
interface DogwoodVerdict {
  at: number;
  allowed: boolean;
}

class DogwoodError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DogwoodError';
  }
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A Cedar string literal: every character that could end or bend the literal escaped. */
export function cedarString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0) ?? 0;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (code < 0x20 || code === 0x7f || (code >= 0xd800 && code <= 0xdfff)) out += `\\u{${code.toString(16)}}`;
    else out += ch;
  }
  return `${out}"`;
}

function cedarNumber(n: number, path: string): string {
  if (Number.isSafeInteger(n)) return String(n);
  // Cedar's decimal holds four places; a value it cannot hold exactly would be judged as another.
  const fixed = n.toFixed(4);
  if (Number.isFinite(n) && Number(fixed) === n && Math.abs(n) < 922337203685477) return `decimal("${fixed}")`;
  throw new DogwoodError(
    `the argument ${path} is ${n}, which Cedar cannot hold (a Long is a safe integer, a decimal has at most 4 places); the call was not judged. Round the value or pass it as a string.`,
  );
}

/** A JSON value as a Cedar literal; null members are left out (Cedar has no null). */
function cedarValue(v: Json, path = 'input'): string {
  if (typeof v === 'string') return cedarString(v);
  if (typeof v === 'number') return cedarNumber(v, path);
  if (typeof v === 'boolean') return String(v);
  if (v === null) throw new DogwoodError(`the argument ${path} is null, which Cedar has no value for`);
  if (Array.isArray(v)) return `[${v.map((x, i) => cedarValue(x, `${path}[${i}]`)).join(', ')}]`;
  const members = Object.entries(v)
    .filter(([, x]) => x !== null)
    .map(([k, x]) => `${IDENT.test(k) ? k : cedarString(k)}: ${cedarValue(x, `${path}.${k}`)}`);
  return `{ ${members.join(', ')} }`;
}

function eventInput(call: CallRecord, scope: DogwoodScope): JsonObject {
  if (scope.input === 'arguments') return call.args;
  return { tool: call.tool, input: call.args, toolUseId: call.callId };
}

/** One call as a trace line: a `request` event at the call's recorded second. */
function traceLine(call: CallRecord, scope: DogwoodScope): string {
  const ns = scope.namespace;
  if (!IDENT.test(ns)) throw new DogwoodError(`the Dogwood namespace ${JSON.stringify(ns)} is not a Cedar identifier`);
  const action = `${ns}::Action::${cedarString(scope.actions?.[call.tool] ?? call.tool)}`;
  const input = cedarValue(eventInput(call, scope));
  const fields = [
    `input: ${input}`,
    `callerPrincipal: ${scope.principal}`,
    `callerResource: ${scope.resource}`,
    `requestId: ${cedarString(call.callId)}`,
    ...(scope.sessionId === undefined ? [] : [`sessionId: ${cedarString(scope.sessionId)}`]),
  ];
  const at = Math.floor(call.at / 1000);
  return `@${at} scope(principal: ${scope.principal}, resource: ${scope.resource}) request_context(input: ${input}) ${action}::request(${fields.join(', ')})`;
}

/** The session's calls as a Dogwood trace, in the order they were recorded. */
export function dogwoodTrace(calls: readonly CallRecord[], scope: DogwoodScope): string {
  return calls.map((c) => traceLine(c, scope)).join('\n');
}

// The helper process: reads one request as JSON on stdin, answers one JSON line. Kept here (not a
// file beside this one) so the built package carries it without a copy step.
const BRIDGE = `
import json, sys
req = json.load(sys.stdin)
try:
    from dogwood import native
    native.require_available()
except Exception as e:
    print(json.dumps({"missing": str(e)})); sys.exit(0)
try:
    if req["op"] == "validate":
        out = native.validate_policy(req["policy"], req["policySchema"], req.get("eventSchema"))
        print(json.dumps({"passed": out["passed"], "errors": list(out["errors"])}))
    else:
        print(json.dumps({"replay": native.replay(req["policy"], req["policySchema"], req["trace"], req.get("eventSchema"))}))
except Exception as e:
    print(json.dumps({"error": str(e)}))
`;

type BridgeAnswer = { missing?: string; error?: string; replay?: string; passed?: boolean; errors?: string[] };

function python(): string {
  return process.env.SLUICE_PYTHON ?? 'python3';
}

function missing(detail: string): DogwoodError {
  return new DogwoodError(
    `Dogwood policies are evaluated by the reference interpreter, which is not installed for ${python()} (${detail}): run \`${python()} -m pip install ${DOGWOOD_PY}\`, or point SLUICE_PYTHON at a Python that has it.`,
  );
}

/** How long the reference may take over one answer before it is given up on (and the call denied). */
const DEFAULT_TIMEOUT_MS = 60_000;

async function bridge(request: Record<string, unknown>, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<BridgeAnswer> {
  const child = spawn(python(), ['-c', BRIDGE], { stdio: ['pipe', 'pipe', 'pipe'] });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    err += d;
  });
  const done = new Promise<number>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve(code ?? -1));
  });
  child.stdin.on('error', () => {}); // a Python that is not there closes the pipe; 'error' above says why
  child.stdin.end(JSON.stringify(request));
  const code = await done
    .catch((e: NodeJS.ErrnoException) => {
      throw e.code === 'ENOENT' ? missing(`${python()} was not found`) : e;
    })
    .finally(() => clearTimeout(timer));
  if (timedOut)
    throw new DogwoodError(
      `the Dogwood reference (${python()}) gave no answer within ${timeoutMs} ms and was stopped; a long session makes a long trace: raise \`timeoutMs\`, or see why ${python()} is slow to start`,
    );
  if (code !== 0) throw new DogwoodError(`the Dogwood helper process (${python()}) exited ${code}: ${err.trim()}`);
  let answer: BridgeAnswer;
  try {
    answer = JSON.parse(out) as BridgeAnswer;
  } catch {
    throw new DogwoodError(
      `the Dogwood helper process (${python()}) answered something that is not JSON: ${JSON.stringify(out.slice(0, 200))} ${err.trim()}`,
    );
  }
  if (answer.missing !== undefined) throw missing(answer.missing);
  return answer;
}

/** The reference's verdict lines (`@<t> (time point <i>): true|false`) for a trace. */
export async function replayTrace(set: DogwoodPolicySet, trace: string, timeoutMs?: number): Promise<string> {
  const answer = await bridge({ op: 'replay', ...set, trace }, timeoutMs);
  if (answer.error !== undefined) throw new DogwoodError(`${set.source}: ${answer.error}`);
  return answer.replay ?? '';
}

export function parseVerdicts(lines: string): DogwoodVerdict[] {
  return lines
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const m = /^@(-?\d+) \(time point \d+\): (true|false)$/.exec(l.trim());
      if (!m)
        throw new DogwoodError(`the Dogwood reference answered a line Sluice does not read: ${JSON.stringify(l)}`);
      return { at: Number(m[1]), allowed: m[2] === 'true' };
    });
}

/**
 * Validates a policy set against its schemas, as the reference does before lowering to Cedar: a
 * set that does not validate throws, naming its source and each of the reference's errors.
 */
export async function checkDogwood(set: DogwoodPolicySet, timeoutMs?: number): Promise<void> {
  const answer = await bridge({ op: 'validate', ...set }, timeoutMs);
  if (answer.error !== undefined) throw new DogwoodError(`${set.source}: ${answer.error}`);
  if (answer.passed) return;
  throw new DogwoodError(`${set.source} does not validate: ${(answer.errors ?? []).join('; ')}`);
}

/**
 * Judges `call` after `earlier` (the session's recorded calls, those still in flight included):
 * the reference's verdict for the call's own event. Denied earlier calls stay in the trace, since
 * Dogwood records every request; a policy that counts only completed ones says so in its
 * condition, as the reference's examples do.
 */
export async function decideDogwood(
  set: DogwoodPolicySet,
  scope: DogwoodScope,
  earlier: readonly CallRecord[],
  call: CallRecord,
  timeoutMs?: number,
): Promise<{ decision: 'allow' | 'deny'; trace: string }> {
  const trace = dogwoodTrace([...earlier, call], scope);
  const verdicts = parseVerdicts(await replayTrace(set, trace, timeoutMs));
  const last = verdicts.at(-1);
  if (verdicts.length !== earlier.length + 1 || last === undefined) {
    throw new DogwoodError(
      `${set.source}: the reference judged ${verdicts.length} of ${earlier.length + 1} events; every call must be a decision event of the event schema (\`decision event <A>::request\`).`,
    );
  }
  return { decision: last.allowed ? 'allow' : 'deny', trace };
}

function only(dir: string, names: string[], ext: string, required: boolean): string | undefined {
  const found = names.filter((n) => n.endsWith(ext));
  if (found.length > 1)
    throw new DogwoodError(
      `${dir} holds ${found.length} ${ext} files (${found.join(', ')}); a Dogwood policy set has one: join them into one file.`,
    );
  if (required && found.length === 0)
    throw new DogwoodError(
      `${dir} has Dogwood policies but no ${ext} file: the reference lowers policies against a Cedar schema, so add one declaring the actions the policies name.`,
    );
  return found[0] === undefined ? undefined : readFileSync(join(dir, found[0]), 'utf8');
}

/**
 * The policy set in `dir` (every `*.dw`, the one `*.cedarschema`, the optional `*.dwschema`),
 * validated by the reference: each file on its own first, so an error names the file it is in.
 */
export async function loadDogwoodPolicySet(
  dir: string,
  workspace = process.cwd(),
  timeoutMs?: number,
): Promise<DogwoodPolicySet> {
  const names = readdirSync(dir).sort();
  const policySchema = only(dir, names, '.cedarschema', true) ?? '';
  const eventSchema = only(dir, names, '.dwschema', false);
  const files = names.filter((n) => n.endsWith('.dw'));
  if (files.length === 0) throw new DogwoodError(`${dir} holds no .dw policy file`);
  const texts: string[] = [];
  for (const f of files) {
    const policy = readFileSync(join(dir, f), 'utf8');
    const set = {
      policy,
      policySchema,
      source: relative(workspace, join(dir, f)),
      ...(eventSchema === undefined ? {} : { eventSchema }),
    };
    await checkDogwood(set, timeoutMs);
    texts.push(policy);
  }
  const set = {
    policy: texts.join('\n'),
    policySchema,
    source: relative(workspace, dir) || '.',
    ...(eventSchema === undefined ? {} : { eventSchema }),
  };
  await checkDogwood(set, timeoutMs);
  return set;
}
