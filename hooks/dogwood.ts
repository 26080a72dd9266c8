// Dogwood policies (Cedar plus temporal conditions: `formerly`, `since`, counts and sums within a
// window) evaluated by the reference interpreter itself, never by a re-implementation: the Rust
// `dogwood-language` crate as the `dogwood-py` wheel ships it, run in a helper process. Sluice's
// recorded calls are the event store: each decision renders the session's call records (those
// still in flight included, as Dogwood counts them) as a Dogwood trace and asks the reference to
// replay it, so a decision is a pure function of the durable record and replays the same way.

import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
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

// The reference's process: one per Python for the life of the worker, so a decision costs the
// replay, not Python's start and the reference's import (about half a second each). A frame is one
// JSON line each way (JSON escapes every newline inside it): a request {id, op, ...} answered by
// {id, ...}, in order. Anything the reference itself prints goes to stderr, never into a frame.
// Kept here (not a file beside this one) so the built package carries it without a copy step.
const BRIDGE = `
import json, os, sys
frames = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
try:
    from dogwood import native
    native.require_available()
    missing = None
except Exception as e:
    missing = str(e)
def answer(req):
    if missing is not None:
        return {"missing": missing}
    try:
        if req["op"] == "validate":
            out = native.validate_policy(req["policy"], req["policySchema"], req.get("eventSchema"))
            return {"passed": out["passed"], "errors": list(out["errors"])}
        return {"replay": native.replay(req["policy"], req["policySchema"], req["trace"], req.get("eventSchema"))}
    except Exception as e:
        return {"error": str(e)}
while True:
    line = sys.stdin.buffer.readline()
    if not line:
        break
    req = json.loads(line)
    frames.write(json.dumps(dict(answer(req), id=req["id"])) + "\\n")
    frames.flush()
`;

type BridgeAnswer = { missing?: string; error?: string; replay?: string; passed?: boolean; errors?: string[] };

function python(): string {
  return process.env.SLUICE_PYTHON ?? 'python3';
}

function missing(python: string, detail: string): DogwoodError {
  return new DogwoodError(
    `Dogwood policies are evaluated by the reference interpreter, which is not installed for ${python} (${detail}): run \`${python} -m pip install ${DOGWOOD_PY}\`, or point SLUICE_PYTHON at a Python that has it.`,
  );
}

/** How long the reference may take over one answer before it is given up on (and the call denied). */
const DEFAULT_TIMEOUT_MS = 60_000;

/** The last of what the reference wrote on stderr that an error quotes. */
const STDERR_KEPT = 4000;

interface Asked {
  resolve: (a: BridgeAnswer) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * One running reference. Every request it was asked and has not answered fails (the call is
 * denied) when it exits, crashes or overruns a request's timeout (then it is stopped: the requests
 * behind the stuck one would wait as long); the next request starts a new one.
 */
class ReferenceProcess {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly asked = new Map<number, Asked>();
  private nextId = 1;
  private partial = '';
  private stderr = '';
  /** Set once it may not be asked again: it exited, failed to start, or was stopped. */
  ended = false;
  /** Why it was stopped, when Sluice stopped it: what its unanswered requests fail with. */
  private stopped?: string;

  constructor(readonly python: string) {
    this.child = spawn(python, ['-c', BRIDGE], { stdio: ['pipe', 'pipe', 'pipe'] });
    // An idle reference does not keep the worker's process alive; a request's timer does while it waits.
    this.child.unref();
    for (const s of [this.child.stdin, this.child.stdout, this.child.stderr]) (s as unknown as Socket).unref?.();
    this.child.stdout.setEncoding('utf8').on('data', (d: string) => this.read(d));
    this.child.stderr.setEncoding('utf8').on('data', (d: string) => {
      this.stderr = (this.stderr + d).slice(-STDERR_KEPT);
    });
    this.child.stdin.on('error', () => {}); // a process that died closes the pipe; 'close' says why
    this.child.on('error', (e: NodeJS.ErrnoException) =>
      this.end(e.code === 'ENOENT' ? missing(python, `${python} was not found`) : e),
    );
    this.child.on('close', (code, signal) => {
      const how = signal ? `was killed by ${signal}` : `exited ${code}`;
      this.end(
        new DogwoodError(this.stopped ?? `the Dogwood helper process (${python}) ${how}: ${this.stderr.trim()}`),
      );
    });
  }

  ask(request: Record<string, unknown>, timeoutMs: number): Promise<BridgeAnswer> {
    const id = this.nextId++;
    return new Promise<BridgeAnswer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.stop(
          `the Dogwood reference (${this.python}) gave no answer within ${timeoutMs} ms and was stopped; a long session makes a long trace: raise \`timeoutMs\`, or see why ${this.python} is slow to start`,
        );
      }, timeoutMs);
      this.asked.set(id, { resolve, reject, timer });
      this.child.stdin.write(`${JSON.stringify({ ...request, id })}\n`);
    });
  }

  /** Stops it: every request it holds fails with `why`. */
  stop(why: string): void {
    this.stopped ??= why;
    this.ended = true;
    this.child.kill('SIGKILL');
    this.end(new DogwoodError(why));
  }

  private read(data: string): void {
    const lines = (this.partial + data).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) {
      let answer: BridgeAnswer & { id?: number };
      try {
        answer = JSON.parse(line);
      } catch {
        this.stop(
          `the Dogwood helper process (${this.python}) answered something that is not JSON: ${JSON.stringify(line.slice(0, 200))}`,
        );
        return;
      }
      const asked = answer.id === undefined ? undefined : this.asked.get(answer.id);
      if (!asked) continue;
      this.asked.delete(answer.id!);
      clearTimeout(asked.timer);
      if (answer.missing !== undefined) asked.reject(missing(this.python, answer.missing));
      else asked.resolve(answer);
    }
  }

  private end(err: Error): void {
    this.ended = true;
    for (const a of this.asked.values()) {
      clearTimeout(a.timer);
      a.reject(err);
    }
    this.asked.clear();
  }
}

/** The running reference per Python (SLUICE_PYTHON is read at each request). */
const running = new Map<string, ReferenceProcess>();

async function bridge(request: Record<string, unknown>, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<BridgeAnswer> {
  const py = python();
  let reference = running.get(py);
  if (!reference || reference.ended) {
    reference = new ReferenceProcess(py);
    running.set(py, reference);
  }
  return reference.ask(request, timeoutMs);
}

/** Stops the running references (a worker that shuts down, a bench that measures a cold start); the next decision starts one. */
export function stopDogwood(): void {
  for (const r of running.values()) r.stop('the Dogwood reference was stopped (stopDogwood)');
  running.clear();
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
  return found[0];
}

/** One file of a set as read: its name in the folder, its label (relative to the workspace), its path and text. */
export interface DogwoodFile {
  name: string;
  label: string;
  path: string;
  text: string;
}

/** A set read from its folder, not yet validated: the set, and every file it was read from (what a digest is over). */
export interface DogwoodRead {
  set: DogwoodPolicySet;
  /** The `.dw` files, by name. */
  policies: DogwoodFile[];
  /** The `.dw` files, then the schemas. */
  files: DogwoodFile[];
}

/**
 * Reads the policy set in `dir` (every `*.dw`, the one `*.cedarschema`, the optional `*.dwschema`)
 * once: what is validated, judged by and bound to is this one reading, so a file edited between
 * them cannot be judged under one text and recorded under another.
 */
export function readDogwoodPolicySet(dir: string, workspace = process.cwd()): DogwoodRead {
  const names = readdirSync(dir).sort();
  const file = (name: string): DogwoodFile => {
    const path = join(dir, name);
    return { name, label: relative(workspace, path), path, text: readFileSync(path, 'utf8') };
  };
  const schemaName = only(dir, names, '.cedarschema', true) ?? '';
  const eventName = only(dir, names, '.dwschema', false);
  const policies = names.filter((n) => n.endsWith('.dw')).map(file);
  if (policies.length === 0) throw new DogwoodError(`${dir} holds no .dw policy file`);
  const schema = file(schemaName);
  const event = eventName === undefined ? undefined : file(eventName);
  const set = {
    policy: policies.map((p) => p.text).join('\n'),
    policySchema: schema.text,
    source: relative(workspace, dir) || '.',
    ...(event === undefined ? {} : { eventSchema: event.text }),
  };
  return { set, policies, files: [...policies, schema, ...(event ? [event] : [])] };
}

/** Validates a read set with the reference: each `.dw` file on its own first, so an error names the file it is in. */
export async function validateDogwoodPolicySet(read: DogwoodRead, timeoutMs?: number): Promise<void> {
  for (const f of read.policies) await checkDogwood({ ...read.set, policy: f.text, source: f.label }, timeoutMs);
  await checkDogwood(read.set, timeoutMs);
}

/** The policy set in `dir`, read and validated by the reference. */
export async function loadDogwoodPolicySet(
  dir: string,
  workspace = process.cwd(),
  timeoutMs?: number,
): Promise<DogwoodPolicySet> {
  const read = readDogwoodPolicySet(dir, workspace);
  await validateDogwoodPolicySet(read, timeoutMs);
  return read.set;
}
