// `sluice`: the command line. Every failure prints what happened and what to do, and exits non-zero.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import type { ArgumentPin } from '../pipeline/grants';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { isEvent } from '../pipeline/events';
import { canonicalJson } from '../pipeline/json';
import type { BatchOutput, DecisionApplied, Json, SessionEvent } from '../pipeline/types';
import { parseRetention, toolManifest } from '../define/config';
import { storedResultOf } from '../stores/claim-check';
import { loadConfig } from '../worker/load-config';
import { ensureDatabase, PG_RESULT_REF, PostgresStores, redactUrl, SCHEMA_VERSION } from '../stores/postgres';
import { databaseUrlFromEnv, openStores, type SluiceStores } from '../stores/stores';
import { codecFromEnv, dataConverterFromEnv, decryptHistory } from '../temporal/codec';
import { DEFAULT_STATE_DIR } from '../stores/session-log-path';
import { batchWorkflowId, DEFAULT_TASK_QUEUE } from '../workflows/definitions';
import { importOptional } from '../support/optional';
import { SluiceClient, SluiceError, type BatchRequest } from './client';
import { connect, connectClient } from '../temporal/connection';
import { BatchFailedError, NotFoundError, ServerError, UsageError } from '../support/errors';
import { auditHistories, type SessionAudit } from './audit';
import { LineInput, newChatSessionId, runChat, scriptMessages } from './chat';
import { followSessionEvents, type LiveEvent } from './session-events';
import { readModelScript } from '../agent/adapters/scripted';
// Static, not import(): bin/sluice.js loads the CLI through tsx's CommonJS hook only, which a
// dynamic import() bypasses ("Cannot find module …/client/codec-server").
import { runCodecServer } from './codec-server';
import { HOOK_HELP, hookMain } from './hook/command';
import { GATEWAY_HELP, gatewayMain } from './gateway';
import { historyToJson, loadHistories, type LoadedHistory } from './history';
import { DEFAULT_INBOX_HOST, DEFAULT_INBOX_PORT, startInbox } from './inbox/server';
import { clip, quorumLine, renderAudit, renderPendingCard, renderResultCard, terminalSafe } from './render';
import { policyCommand } from './policy-cli';
import { ensureSearchAttributes } from '../temporal/setup';

// Worker-side modules load when a command needs them: an app that installed Sluice for its client
// side has no @temporalio/worker, and `sluice batch`, `approve`, `pending` … still run there, on a
// plain client connection.
const hasWorkerRuntime = () => {
  try {
    require.resolve('@temporalio/worker');
    return true;
  } catch {
    return false;
  }
};
const needsWorker = <T>(command: string, load: () => Promise<T>): Promise<T> =>
  importOptional('@temporalio/worker', `\`sluice ${command}\``, load);
// require() where a CommonJS hook compiles the source (dist/, tsx under bin/sluice.js); import()
// where only the host's module loader knows TypeScript (vitest runs the CLI in-process).
const local = async <T>(req: () => T, imp: () => Promise<T>): Promise<T> => {
  try {
    return req();
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'MODULE_NOT_FOUND' && /Cannot find module '\.\.?\//.test(e.message)) return imp();
    throw err;
  }
};
const workerMain = (command: string) =>
  needsWorker(command, () =>
    local(
      () => require('../worker/main') as typeof import('../worker/main'),
      () => import('../worker/main'),
    ),
  );
const connectAny = (opts: { address?: string; namespace?: string }) =>
  hasWorkerRuntime() ? connect(opts) : connectClient(opts);

const HELP = `sluice — durable tool batches for AI agents, on Temporal

Usage: npx sluice <command> [options]

Commands (\`npx sluice <command> --help\` lists a command's options):
  dev                     Embedded Temporal dev server + a worker, in the foreground
  worker                  A worker against TEMPORAL_ADDRESS (or --address)
  setup                   Register Sluice's search attributes on the target server; with
                          SLUICE_DATABASE_URL, apply the database's schema migrations
  batch <calls.json>      Run a batch and print its outcome (--json for machines)
  approvals               List calls waiting for approval, across all batches (--task-queue Q or
                          --session S to narrow, --json for machines)
  approve <approvalId>    Approve a pending call (--by NAME, --reason TEXT, --digest D, --signal,
                          --wait [--wait-timeout S]: with no worker up the decision is queued;
                          --wait waits for the batch to apply or refuse it)
  deny <approvalId>       Deny a pending call (same options as approve)
  chat                    Talk to a durable agent session: --script FILE (no key, no network) or
                          --model provider:model; --resume ID picks a session up after a crash
  reconcile <id>          Settle an unknown outcome listed by approvals: --done --evidence TEXT,
                          --not-done or --run-again (--by NAME, --reason TEXT; queued with no worker up)
  reassign <approvalId>   Hand a pending approval to someone else: --to NAME (--by, --reason)
  events <sessionId>      Print a session's events (--json, --follow)
  result <ref>            Print a stored result (the ref a truncated result names) as JSON:
                          {content, isError, error?, value?, meta?} (--text: its text only)
  results prune           Delete stored results older than --older-than (default 30d; e.g. 12h, 90m)
  policy explain|check    What the workspace's policy files say about a call, which rule wins;
                          run their embedded tests (\`npx sluice policy --help\`)
  ui                      Serve the approval inbox web page for the server at --address
  audit <target>          Timeline of a batch or session from workflow histories (--json)
  replay <target>...      Replay histories with the current workflow code; exit 1 on a
                          determinism failure (--workflows FILE to replay another version)
  export <workflowId>     Write a batch's history JSON (--out FILE, default stdout)
  manifest                Print the config's model-facing tool schemas as JSON (--out FILE), for an agent
                          process that should not import the tool bodies
  codec-server            Decrypt payloads for the Temporal Web UI (--port, --ui-origin; needs SLUICE_CODEC_KEYS)
  hook <claude|codex|gemini>  Answer a harness's tool hook (stdin → stdout) with a Sluice decision;
                          \`hook serve\` for Claude Code http hooks (docs/gateway.md)
  gateway                 An MCP server (stdio, or --http) whose tool calls run as Sluice batches

  <target> is a batch's workflow id, a session id (all of its batches), a history .json file,
  or a folder of them (replay: test/fixtures/histories holds every release's fixtures).

Common options:
  --address host:port     Temporal frontend (default: TEMPORAL_ADDRESS, then localhost:7233)
  --namespace NAME        Temporal namespace (default: TEMPORAL_NAMESPACE, then "default")
  --task-queue NAME       Task queue of the Sluice workers (default "${DEFAULT_TASK_QUEUE}")
  --config FILE           Sluice config module for dev/worker (default sluice.config.ts)
  --state-dir DIR         State folder: dev server database, session logs (default ${DEFAULT_STATE_DIR})
  --database-url URL      Shared stores on PostgreSQL (default: SLUICE_DATABASE_URL; unset: files in --state-dir)
  --json                  Machine-readable output
  --inbox-host ADDR       Bind address of the inbox page for dev/ui (default ${DEFAULT_INBOX_HOST})
  --inbox-port N          Port of the inbox page for dev/ui (default ${DEFAULT_INBOX_PORT}); --no-inbox: none
  --trusted-user-header H Take the approver's name from header H set by your proxy (e.g. X-Forwarded-User)
  --trusted-proxy ADDR    With --trusted-user-header: the address the proxy connects from (repeat or
                          comma-separate; default 127.0.0.1 and ::1); requests from elsewhere are refused
  --proxy-secret-file F   With --trusted-user-header: a secret shared with the proxy, which sends it in
                          X-Sluice-Proxy-Secret on every request (or SLUICE_INBOX_PROXY_SECRET); required
  --insecure-proxy-without-secret  Header mode without the secret: any process on the proxy's
                          machine could decide under any name
  --inbox-allowed-host H  A Host name the page may be reached under besides its address (a proxy that
                          keeps the browser's Host); any other Host is refused (DNS rebinding)

Connection settings also come from Temporal's standard environment and config profiles:
TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE.
SLUICE_CODEC_KEYS="<id>:<base64 32-byte key>[,<old id>:<old key>]" encrypts every payload
(set the same value for workers, the CLI and the codec server).
SLUICE_DATABASE_URL=postgres://user:pass@host:5432/sluice keeps session events and stored results
in PostgreSQL, shared by every worker (run \`npx sluice setup\` once to create the tables).`;

const CONNECTION_OPTIONS = `Connection:
  --address host:port     Temporal frontend (default: TEMPORAL_ADDRESS, then localhost:7233)
  --namespace NAME        Temporal namespace (default: TEMPORAL_NAMESPACE, then "default")
  --task-queue NAME       Task queue of the Sluice workers (default "${DEFAULT_TASK_QUEUE}")`;

const INBOX_OPTIONS = `  --inbox-host ADDR       Bind address of the inbox page (default ${DEFAULT_INBOX_HOST})
  --inbox-port N          Port of the inbox page (default ${DEFAULT_INBOX_PORT})
  --trusted-user-header H Take the approver's name from header H set by your proxy (e.g. X-Forwarded-User);
                          requests without it, reads included, are refused
  --identity-token-header H  Verified approvers: header H carries the signed-in approver's JWT
                          (Authorization: Bearer ..., X-Forwarded-Access-Token); sealed to the
                          workers' key (SLUICE_SEAL_KEY) with each decision
  --trusted-proxy ADDR    The address that proxy connects from (repeat or comma-separate; default
                          127.0.0.1 and ::1): requests from any other address are refused
  --proxy-secret-file F   A secret (16+ characters) shared with that proxy, which sends it in
                          X-Sluice-Proxy-Secret on every request; or SLUICE_INBOX_PROXY_SECRET.
                          Required with --trusted-user-header, since any process on the proxy's
                          machine could otherwise set the header
  --insecure-proxy-without-secret  Take the header without the secret (not recommended)
  --inbox-allowed-host H  A Host name (or name:port) the page may be reached under besides its
                          address, e.g. the name your proxy forwards; any other Host is refused`;

/** Per-command help: every option the command reads, and every one its error messages mention. */
export const COMMAND_HELP: Record<string, string> = {
  hook: HOOK_HELP,
  gateway: GATEWAY_HELP,
  dev: `Usage: npx sluice dev [options]

Starts the embedded Temporal dev server (its database in the state folder), a worker and the
approval inbox page, in the foreground. Ctrl-C stops everything.

Options:
  --port N                Port of the Temporal frontend (default 7233); pick another when 7233 is taken
  --ui-port N             Port of the Temporal Web UI (default: --port + 1000)
  --headless              No Temporal Web UI
  --config FILE           Sluice config module (default sluice.config.ts)
  --state-dir DIR         Dev server database, session logs, stored results (default ${DEFAULT_STATE_DIR})
  --task-queue NAME       Task queue of the worker (default "${DEFAULT_TASK_QUEUE}")
${INBOX_OPTIONS}
  --no-inbox              No inbox page`,
  worker: `Usage: npx sluice worker [options]

A worker against an existing Temporal server.

Options:
  --config FILE           Sluice config module (default sluice.config.ts)
  --state-dir DIR         Session logs and stored results (default ${DEFAULT_STATE_DIR}) when no database is set
  --database-url URL      Session events and stored results in PostgreSQL, shared by every worker
                          (default: SLUICE_DATABASE_URL); apply its schema first with \`npx sluice setup\`
  --deployment NAME       Worker versioning (docs/upgrading.md): serve one version of this Worker
                          Deployment; every batch stays pinned to the version that started it
  --build-id ID           This worker's version in the deployment (a release or commit id; the same
                          on every worker running this code). Both also from SLUICE_DEPLOYMENT and
                          SLUICE_BUILD_ID
${CONNECTION_OPTIONS}`,
  batch: `Usage: npx sluice batch <calls.json> [options]

Runs a batch and prints its outcome. The file holds {"sessionId", "turn", "step", "calls": [...]}
or just the calls array.

Options:
  --session ID            Session id (default: the file's sessionId; one of the two is needed)
  --turn N, --step N      Turn and step of the batch (default: the file's, then 1)
  --start-seq N           First event seq of the batch (default: the file's startSeq, then the
                          session's next seq from its log in --state-dir, then from the server)
  --state-dir DIR         Where the session logs are (default ${DEFAULT_STATE_DIR})
  --json                  Print the BatchOutput as JSON
${CONNECTION_OPTIONS}

Exit codes:
  0  the batch completed and every call succeeded
  1  the batch could not run or failed (connection, server, seq conflict, output too large)
  2  usage: a missing or malformed calls file, an unknown option
  3  the batch completed and at least one call's result is an error (denied, failed, invalid)`,
  approve: `Usage: npx sluice approve <approvalId> [options]   (deny: the same options)

Decides a pending call. By default through an update, so the answer is confirmed: the outcome, or
why it was refused (expired, decided already, unknown id, arguments changed).

Options:
  --by NAME               Who decides (default: SLUICE_APPROVER, then USER)
  --reason TEXT           Why; kept in the history and the audit
  --digest D              The argsDigest you were shown (\`npx sluice approvals --json\`); binds the
                          decision to those arguments
  --workflow ID           The batch's workflow id, when the search attributes cannot find it
  --signal                Send a signal instead: accepted while no worker runs; whether it was
                          applied is reported when a worker answers within a few seconds
  --for-session           Approve this call and later calls of the same tool for the rest of the
                          session (a session grant: recorded, shown in the inbox and the audit)
  --pin PATH^=PREFIX      With --for-session: only calls whose argument PATH starts with PREFIX,
  --pin PATH=VALUE        or equals VALUE (JSON, else text); repeat for more pins. A pin must hold
                          for the call asked about: it narrows the grant, never widens it.
                          e.g. --for-session --pin 'command^=npm test'
  --token-file FILE       Decide as a verified approver: FILE holds your JWT (or set
                          SLUICE_APPROVER_TOKEN). It is sealed to the workers' key (SLUICE_SEAL_KEY)
                          and bound to this approval; the verified subject is recorded, not --by
  --wait                  With no worker up the decision is queued; wait for the batch to apply or refuse it
  --wait-timeout S        How long --wait waits, in seconds (default 600)
  --json                  Print the outcome as JSON
${CONNECTION_OPTIONS}

Exit codes: 0 applied (or signal sent, outcome not yet known), 1 refused or failed, 2 usage.`,
  reconcile: `Usage: npx sluice reconcile <id> (--done --evidence TEXT | --not-done | --run-again) [options]

Settles an unknown outcome: a call whose body must not run twice (bash, anything that sends or
pays) lost its attempt after it may have started, so nobody knows whether it ran. \`npx sluice
approvals\` lists these cards (OUTCOME UNKNOWN) with their ids. Check the effect first, then:

  --done                  It ran: give the evidence (a log line, an id, a receipt) with --evidence
  --not-done              It did not run (or its effect was undone); the call stays failed
  --run-again             Run the body once more with the same arguments (never retried); prints
                          its result. If that attempt is lost too, the card comes back

Options:
  --evidence TEXT         What shows it ran (required with --done)
  --by NAME               Who reconciles (default: SLUICE_APPROVER, then USER); recorded
  --reason TEXT           Why; recorded and shown in the audit
  --workflow ID           The reconcile workflow's id, when the search attributes cannot find it
  --token-file FILE       Your signed identity (a JWT; or SLUICE_APPROVER_TOKEN), sealed with
                          SLUICE_SEAL_KEY: needed to run again a tool with approverGroups
  --wait                  With no worker up the decision is queued; wait for it to be applied or refused
  --wait-timeout S        How long --wait waits, in seconds (default 600)
  --json                  Print the reconciliation as JSON
${CONNECTION_OPTIONS}

Exit codes: 0 reconciled (or queued), 1 refused (already reconciled, missing evidence) or failed, 2 usage.`,
  reassign: `Usage: npx sluice reassign <approvalId> --to NAME [--by NAME] [--reason TEXT]

Hands a pending approval to someone else (a person or a group): the batch records
approval/reassigned, shows the new assignee on the card and notifies. Works with no worker up
(the batch takes it when one runs).

  --to NAME               The new assignee
  --by NAME               Who reassigns (default: SLUICE_APPROVER, then USER); recorded
  --reason TEXT           Why; recorded
  --workflow ID           The batch's workflow id, when the search attributes cannot find it
${CONNECTION_OPTIONS}

Exit codes: 0 sent, 1 refused (no such pending approval), 2 usage.`,
  replay: `Usage: npx sluice replay <target>... [options]

Replays histories (workflow ids, session ids, .json files or folders of them) with the workflow
code and reports each. Exit 0: all replayed; 1: any failed; 2: usage.

Options:
  --workflows FILE        The workflows entry to bundle (default: this Sluice's workflows/index.ts)
  --json                  Print the results as JSON (only JSON on stdout; logs go to stderr)
${CONNECTION_OPTIONS}`,
  ui: `Usage: npx sluice ui [options]

Serves the approval inbox page for the server at --address, in the foreground. It answers only
to its own address (and --inbox-allowed-host names): a request under any other Host is refused
(421), so a web page cannot reach it by DNS rebinding.

Options:
  --task-queue NAME       Only the batches of this task queue (one team's, on a shared namespace)
${INBOX_OPTIONS}
${CONNECTION_OPTIONS}`,
};
COMMAND_HELP.chat = `Usage: npx sluice chat [--script FILE | --model PROVIDER:MODEL] [options]
       npx sluice chat --resume SESSION [options]

Runs an agent session (the whole loop on Temporal: a worker must run, e.g. \`npx sluice dev\`)
and talks to it here: each line you type is a user message; the model's text, tool cards and
results are shown as the worker records them; approvals are asked y/n. This terminal holds
nothing: kill it (or the worker, or both) and \`npx sluice chat --resume SESSION\` picks the
session up, a running turn watched to its end, an open approval asked again.

  /quit leaves (the session waits for you), /end ends the session.

Options:
  --script FILE           A scripted model: {"turns": [{"user"?, "steps": [{"text"?, "calls"?: [{"id"?,
                          "name", "args"}]}]}]}; step s of turn t answers step s of turn t
  --play                  With --script: send the script's "user" messages instead of reading them
  --model P:M             openai:<model>, openai-responses:<model>, anthropic:<model>, or a model
                          name from the worker's config (keys come from the worker's environment)
  --session ID            Id of a new session (default chat-<date and time>)
  --resume ID             Pick up session ID: show its current turn, answer its open approvals
  --system TEXT           System prompt of a new session
  --max-turns N           End the session after N turns
  --token-budget N        End the session once N tokens (input + output) were used
  --approval-timeout S    Deny an unanswered approval after S seconds (default 600)
  --by NAME               Who approves (default: SLUICE_APPROVER, then USER)
  --state-dir DIR         The worker's state folder, where the session log is (default ${DEFAULT_STATE_DIR})
${CONNECTION_OPTIONS}

Exit codes: 0 the session ended or you left it (it waits), 1 it could not start or resume, 2 usage.`;
COMMAND_HELP.deny = COMMAND_HELP.approve;

const OPTIONS = {
  address: { type: 'string' },
  namespace: { type: 'string' },
  'task-queue': { type: 'string' },
  config: { type: 'string' },
  'state-dir': { type: 'string' },
  'database-url': { type: 'string' },
  'older-than': { type: 'string' },
  text: { type: 'boolean' },
  json: { type: 'boolean' },
  by: { type: 'string' },
  to: { type: 'string' },
  reason: { type: 'string' },
  digest: { type: 'string' },
  workflow: { type: 'string' },
  signal: { type: 'boolean' },
  wait: { type: 'boolean' },
  'for-session': { type: 'boolean' },
  'token-file': { type: 'string' },
  pin: { type: 'string', multiple: true },
  'wait-timeout': { type: 'string' },
  follow: { type: 'boolean' },
  port: { type: 'string' },
  'ui-port': { type: 'string' },
  headless: { type: 'boolean' },
  session: { type: 'string' },
  turn: { type: 'string' },
  'start-seq': { type: 'string' },
  step: { type: 'string' },
  'ui-origin': { type: 'string', multiple: true },
  'inbox-host': { type: 'string' },
  'inbox-port': { type: 'string' },
  'no-inbox': { type: 'boolean' },
  'trusted-user-header': { type: 'string' },
  'identity-token-header': { type: 'string' },
  'trusted-proxy': { type: 'string', multiple: true },
  'proxy-secret-file': { type: 'string' },
  'insecure-proxy-without-secret': { type: 'boolean' },
  'inbox-allowed-host': { type: 'string', multiple: true },
  workflows: { type: 'string' },
  script: { type: 'string' },
  play: { type: 'boolean' },
  model: { type: 'string' },
  resume: { type: 'string' },
  system: { type: 'string' },
  'max-turns': { type: 'string' },
  'token-budget': { type: 'string' },
  'approval-timeout': { type: 'string' },
  done: { type: 'boolean' },
  'not-done': { type: 'boolean' },
  'run-again': { type: 'boolean' },
  evidence: { type: 'string' },
  deployment: { type: 'string' },
  'build-id': { type: 'string' },
  out: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parse>['values'];
function parse(argv: string[]) {
  return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
}

export { UsageError } from '../support/errors';

const stdoutLines = (s: string) => void process.stdout.write(`${s}\n`);

export async function main(argv: string[], write: (s: string) => void = stdoutLines): Promise<number> {
  // On a terminal's stdout (not a caller's line writer), `chat` prints the model's text as it streams.
  streamTo = write === stdoutLines ? (s) => void process.stdout.write(terminalSafe(s)) : undefined;
  // Everything printed passes here: model-written text cannot reach the terminal as a control
  // sequence (escapes stay valid JSON, so --json output is unchanged in meaning).
  const out = (s: string) => write(terminalSafe(s));
  // `policy` has options of its own (client/policy-cli.ts) and needs no server.
  if (argv[0] === 'policy') return policyCommand(argv.slice(1), out);
  // A harness hook speaks its harness's protocol on stdin/stdout/exit code, with its own options.
  if (argv[0] === 'hook' && !argv.slice(1).some((a) => a === '--help' || a === '-h')) return hookMain(argv.slice(1));
  // An MCP server: stdout is the protocol's (stdio), so it prints nothing else there.
  if (argv[0] === 'gateway' && !argv.slice(1).some((a) => a === '--help' || a === '-h'))
    return gatewayMain(argv.slice(1));
  let parsed;
  try {
    parsed = parse(argv);
  } catch (err) {
    out(`${(err as Error).message}\n\nRun \`npx sluice --help\` for usage.`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help && command && COMMAND_HELP[command]) {
    out(COMMAND_HELP[command]);
    return 0;
  }
  if (command === 'help' && rest[0] && COMMAND_HELP[rest[0]]) {
    out(COMMAND_HELP[rest[0]]);
    return 0;
  }
  if (values.help || !command || command === 'help') {
    out(HELP);
    return command || values.help ? 0 : 2;
  }
  // Core's own log lines go to stderr through the SDK logger, so stdout stays the command's output.
  if (hasWorkerRuntime()) (await workerMain(command)).installRuntime();
  // One place for the database: the worker, the inbox and every reader take it from the environment.
  if (values['database-url']) process.env.SLUICE_DATABASE_URL = values['database-url'];
  try {
    switch (command) {
      case 'dev':
        return await dev(values);
      case 'worker':
        return await worker(values);
      case 'setup':
        return await setup(values, out);
      case 'batch':
        return await batch(values, rest[0], out);
      case 'approvals':
        return await approvals(values, out);
      case 'approve':
      case 'deny':
        return await decide(values, command, rest[0], out);
      case 'chat':
        return await chat(values, out);
      case 'reconcile':
        return await reconcile(values, rest[0], out);
      case 'reassign':
        return await reassign(values, rest[0], out);
      case 'events':
        return await events(values, rest[0], out);
      case 'result':
        return await result(values, rest[0], out);
      case 'results':
        return await results(values, rest[0], out);
      case 'codec-server':
        return await runCodecServer({ port: values.port, origins: values['ui-origin'] }, out);
      case 'ui':
        return await ui(values, out);
      case 'audit':
        return await audit(values, rest, out);
      case 'replay':
        return await replay(values, rest, out);
      case 'export':
        return await exportHistory(values, rest[0], out);
      case 'manifest':
        return await manifest(values, out);
      default:
        throw new UsageError(`unknown command "${command}". Run \`npx sluice --help\` for the list.`);
    }
  } catch (err) {
    out(`sluice ${command}: ${(err as Error).message}`);
    return err instanceof UsageError ? 2 : 1;
  }
}

async function client(v: Values) {
  const c = await connectAny({ address: v.address, namespace: v.namespace });
  return {
    sluice: new SluiceClient({
      connection: c.connection,
      namespace: c.namespace,
      taskQueue: v['task-queue'],
      dataConverter: dataConverterFromEnv(),
    }),
    close: () => c.connection.close(),
  };
}

async function manifest(v: Values, out: (s: string) => void): Promise<number> {
  const json = JSON.stringify(toolManifest(await loadConfig(v.config)), null, 2);
  if (v.out) fs.writeFileSync(v.out, `${json}\n`);
  else out(json);
  return 0;
}

async function dev(v: Values): Promise<number> {
  await (
    await needsWorker('dev', () =>
      local(
        () => require('../scripts/dev') as typeof import('../scripts/dev'),
        () => import('../scripts/dev'),
      ),
    )
  ).runDev({
    stateDir: v['state-dir'] ?? DEFAULT_STATE_DIR,
    config: v.config,
    port: v.port ? Number(v.port) : undefined,
    uiPort: v['ui-port'] ? Number(v['ui-port']) : undefined,
    headless: v.headless,
    taskQueue: v['task-queue'],
    inbox: v['no-inbox'] ? undefined : inboxSettings(v),
  });
  return 0;
}

export function inboxSettings(v: Values): {
  host: string;
  port: number;
  trustedUserHeader?: string;
  trustedProxies?: string[];
  proxySecret?: string;
  insecureProxyWithoutSecret?: boolean;
  allowedHosts?: string[];
} {
  const port = v['inbox-port'] !== undefined ? Number(v['inbox-port']) : DEFAULT_INBOX_PORT;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--inbox-port must be a port number (0-65535), not ${JSON.stringify(v['inbox-port'])}`);
  const list = (x: string[] | undefined) =>
    (x ?? [])
      .flatMap((s) => s.split(','))
      .map((s) => s.trim())
      .filter(Boolean);
  const trustedProxies = list(v['trusted-proxy']);
  const allowedHosts = list(v['inbox-allowed-host']);
  if (trustedProxies.length && !v['trusted-user-header'])
    throw new UsageError(
      '--trusted-proxy names the proxy that sets --trusted-user-header; give the header too (e.g. --trusted-user-header X-Forwarded-User)',
    );
  // From a file or the environment, never the command line (which any local user can read in ps).
  let proxySecret: string | undefined;
  if (v['proxy-secret-file']) {
    try {
      proxySecret = fs.readFileSync(v['proxy-secret-file'], 'utf8').trim();
    } catch (err) {
      throw new UsageError(`cannot read --proxy-secret-file ${v['proxy-secret-file']}: ${(err as Error).message}`);
    }
  } else if (process.env.SLUICE_INBOX_PROXY_SECRET) proxySecret = process.env.SLUICE_INBOX_PROXY_SECRET.trim();
  if (proxySecret !== undefined && !v['trusted-user-header'])
    throw new UsageError(
      'a proxy secret goes with --trusted-user-header (the header your proxy sets); give both, or unset SLUICE_INBOX_PROXY_SECRET',
    );
  if (v['trusted-user-header'] && proxySecret === undefined && !v['insecure-proxy-without-secret'])
    throw new UsageError(
      `--trusted-user-header needs a secret shared with the proxy, since any process on the proxy's machine could set ${v['trusted-user-header']}: --proxy-secret-file FILE or SLUICE_INBOX_PROXY_SECRET (the proxy sends it in X-Sluice-Proxy-Secret), or --insecure-proxy-without-secret to go without`,
    );
  const notIp = trustedProxies.find((p) => !isIP(p));
  if (notIp !== undefined)
    throw new UsageError(
      `--trusted-proxy takes IP addresses (the address the proxy connects from), not ${JSON.stringify(notIp)}`,
    );
  return {
    host: v['inbox-host'] ?? DEFAULT_INBOX_HOST,
    port,
    ...(v['trusted-user-header'] ? { trustedUserHeader: v['trusted-user-header'] } : {}),
    // Verified approvers: the JWT the sign-in proxy passes, sealed with SLUICE_SEAL_KEY per decision.
    ...(v['identity-token-header'] ? { identityTokenHeader: v['identity-token-header'] } : {}),
    ...(trustedProxies.length ? { trustedProxies } : {}),
    ...(proxySecret !== undefined ? { proxySecret } : {}),
    ...(v['insecure-proxy-without-secret'] ? { insecureProxyWithoutSecret: true } : {}),
    ...(allowedHosts.length ? { allowedHosts } : {}),
  };
}

async function ui(v: Values, out: (s: string) => void): Promise<number> {
  const settings = inboxSettings(v);
  const { sluice, close } = await client(v);
  const stores = openStores({ stateDir: v['state-dir'] ?? DEFAULT_STATE_DIR });
  const inbox = await startInbox({
    client: sluice,
    ...settings,
    store: stores,
    // `sluice ui --task-queue Q`: one team's batches only on a shared namespace.
    ...(v['task-queue'] ? { taskQueue: v['task-queue'] } : {}),
  });
  out(`Approval inbox: ${inbox.url}   (Ctrl-C stops it)`);
  if (!['127.0.0.1', 'localhost', '::1'].includes(settings.host) && !settings.trustedUserHeader) {
    out(
      `warning: the inbox listens on ${settings.host} and anyone who reaches it can approve calls under any name; put it behind a proxy that authenticates and pass --trusted-user-header`,
    );
  }
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await inbox.close();
  await stores.close();
  await close();
  return 0;
}

/** Histories for the targets; a server connection only when some target is not a file. */
async function withHistories<T>(v: Values, targets: string[], use: (h: LoadedHistory[]) => Promise<T>): Promise<T> {
  const needsServer = targets.some((t) => !t.endsWith('.json') && !fs.existsSync(t));
  const c = needsServer ? await client(v) : undefined;
  try {
    const all = [];
    for (const t of targets) all.push(...(await loadHistories(t, c?.sluice.temporal)));
    const codec = codecFromEnv();
    if (codec) for (const h of all) await decryptHistory(h.history, codec);
    return await use(all);
  } finally {
    await c?.close();
  }
}

async function audit(v: Values, targets: string[], out: (s: string) => void): Promise<number> {
  if (targets.length === 0)
    throw new UsageError('audit needs a batch workflow id, a session id or a history .json file');
  return withHistories(v, targets, async (histories) => {
    const result = auditHistories(histories);
    const logs = await withStores(v, (stores) => checkSessionLogs(stores, result));
    out(v.json ? JSON.stringify({ ...result, logs }, null, 2) : renderAudit(result));
    if (!v.json)
      for (const l of logs)
        out(
          l.missing.length || l.differing.length || l.conflicts
            ? `session ${l.sessionId} log (${l.store}): ${l.logged} event(s); ${l.missing.length ? `missing seqs ${l.missing.join(', ')} that the batches recorded; ` : ''}${l.differing.length ? `seqs ${l.differing.join(', ')} differ from the batches' events; ` : ''}${l.conflicts ? `${l.conflicts} event(s) kept aside as conflicts (${l.conflictsWhere})` : ''}`
            : `session ${l.sessionId} log (${l.store}): ${l.logged} event(s), every event of the completed batches in it`,
        );
    return 0;
  });
}

export interface SessionLogCheck {
  sessionId: string;
  store: string;
  /** Events the store holds for the session. */
  logged: number;
  /** Seqs the completed batches recorded that the store lacks. */
  missing: number[];
  /** Seqs whose stored event differs from the batch's. */
  differing: number[];
  conflicts: number;
  conflictsWhere: string;
}

/** The session's log in the store against the events the completed batches recorded in history. */
async function checkSessionLogs(stores: SluiceStores, audit: SessionAudit): Promise<SessionLogCheck[]> {
  const out: SessionLogCheck[] = [];
  for (const sessionId of new Set(audit.batches.map((b) => b.sessionId))) {
    if (!(await stores.hasSession(sessionId))) continue;
    const logged = new Map((await stores.events(sessionId)).map((e) => [e.seq, canonicalJson(e as unknown as Json)]));
    const recorded = audit.batches.filter((b) => b.sessionId === sessionId).flatMap((b) => b.events);
    const conflicts = await stores.conflicts(sessionId);
    out.push({
      sessionId,
      store: `${stores.kind}: ${stores.where}`,
      logged: logged.size,
      missing: recorded.filter((e) => !logged.has(e.seq)).map((e) => e.seq),
      differing: recorded
        .filter((e) => logged.has(e.seq) && logged.get(e.seq) !== canonicalJson(e as unknown as Json))
        .map((e) => e.seq),
      conflicts: conflicts.count,
      conflictsWhere: conflicts.where,
    });
  }
  return out;
}

async function replay(v: Values, targets: string[], out: (s: string) => void): Promise<number> {
  if (targets.length === 0) throw new UsageError('replay needs batch workflow ids, session ids or history .json files');
  return withHistories(v, targets, async (histories) => {
    const { replayHistories } = await needsWorker('replay', () =>
      local(
        () => require('./replay') as typeof import('./replay'),
        () => import('./replay'),
      ),
    );
    const results = await replayHistories(histories, {
      ...(v.workflows ? { workflowsPath: path.resolve(v.workflows) } : {}),
    });
    if (v.json) out(JSON.stringify(results, null, 2));
    else
      for (const r of results)
        out(
          r.ok
            ? `ok      ${r.workflowId} (${r.source})`
            : `FAILED  ${r.workflowId} (${r.source}): ${r.failure}: ${r.message}`,
        );
    const failed = results.filter((r) => !r.ok).length;
    const unknown = results.filter((r) => r.failure === 'unknown-workflow-type').length;
    if (!v.json)
      out(
        !failed
          ? `${results.length} history(ies) replayed with no determinism failure`
          : failed === unknown
            ? `${failed} of ${results.length} history(ies) are of workflow types Sluice's bundle does not have: pass --workflows <file> with your workflows (nothing was found non-deterministic)`
            : `${failed} of ${results.length} replay(s) failed: the workflow code no longer matches these histories. Keep the old behaviour for running batches (patched()), or re-record the fixtures if the change is intended.`,
      );
    return failed ? 1 : 0;
  });
}

async function exportHistory(v: Values, workflowId: string | undefined, out: (s: string) => void): Promise<number> {
  if (!workflowId)
    throw new UsageError('export needs a batch workflow id (see `npx sluice audit <session>` for the ids)');
  const { sluice, close } = await client(v);
  try {
    const json = historyToJson(await sluice.temporal.workflow.getHandle(workflowId).fetchHistory());
    if (v.out) {
      fs.writeFileSync(v.out, json);
      out(`wrote ${v.out}`);
    } else out(json.trimEnd());
    return 0;
  } finally {
    await close();
  }
}

async function worker(v: Values): Promise<number> {
  await (await workerMain('worker')).runWorker({
    config: v.config,
    address: v.address,
    namespace: v.namespace,
    taskQueue: v['task-queue'],
    stateDir: v['state-dir'],
    deployment: v.deployment,
    buildId: v['build-id'],
  });
  return 0;
}

async function setup(v: Values, out: (s: string) => void): Promise<number> {
  const c = await connectAny({ address: v.address, namespace: v.namespace });
  try {
    const added = await ensureSearchAttributes(c.connection, c.namespace);
    out(added.length ? `registered search attributes: ${added.join(', ')}` : 'search attributes already registered');
    const url = databaseUrlFromEnv();
    if (url) {
      if (await ensureDatabase(url)) out(`created database ${redactUrl(url)}`);
      const pg = new PostgresStores(url);
      try {
        const applied = await pg.migrate();
        out(
          applied.length
            ? `database ${redactUrl(url)}: applied schema migration(s) ${applied.map((m) => `${m.version} (${m.name})`).join(', ')}`
            : `database ${redactUrl(url)}: schema up to date (version ${SCHEMA_VERSION})`,
        );
      } catch (err) {
        throw new ServerError(`could not apply the schema to ${redactUrl(url)}: ${(err as Error).message}`);
      } finally {
        await pg.close();
      }
    }
    return 0;
  } finally {
    await c.connection.close();
  }
}

/** Reads a calls file: a whole batch {sessionId, turn, step, calls}, or just an array of calls. */
export function readCallsFile(
  file: string | undefined,
  v: Pick<Values, 'session' | 'turn' | 'step' | 'start-seq'>,
): BatchRequest {
  if (!file) throw new UsageError('batch needs a calls file: npx sluice batch calls.json');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(
      `cannot read ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
    );
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new UsageError(
      `${file} is not valid JSON (${(err as Error).message}). Expected {"sessionId": "...", "turn": 1, "step": 1, "calls": [{"id": "...", "name": "...", "arguments": {...}}]} or just the calls array.`,
    );
  }
  const base = (Array.isArray(data) ? { calls: data } : data) as Partial<BatchRequest>;
  if (!base || typeof base !== 'object' || !Array.isArray(base.calls)) {
    throw new UsageError(
      `${file} has no "calls" array. Expected {"sessionId", "turn", "step", "calls": [{"id", "name", "arguments"}]} or just the calls array.`,
    );
  }
  // The session is named, never guessed from the file name: two folders' calls.json would
  // otherwise share one session, and a renamed file would start a new one.
  const sessionId = v.session ?? base.sessionId;
  if (sessionId === undefined)
    throw new UsageError(
      `${file} names no session: add "sessionId": "..." to the file (then it holds {"sessionId", "turn", "step", "calls"}) or pass --session ID. A batch's events are numbered in its session, so Sluice does not make one up.`,
    );
  return {
    ...base,
    sessionId,
    turn: v.turn !== undefined ? Number(v.turn) : (base.turn ?? 1),
    step: v.step !== undefined ? Number(v.step) : (base.step ?? 1),
    ...(v['start-seq'] !== undefined ? { startSeq: Number(v['start-seq']) } : {}),
  } as BatchRequest;
}

async function batch(v: Values, file: string | undefined, out: (s: string) => void): Promise<number> {
  const request = readCallsFile(file, v);
  const { sluice, close } = await client(v);
  try {
    const own = batchWorkflowId(request.sessionId, request.turn, request.step);
    if (request.startSeq === undefined) request.startSeq = await continuedSeq(v, sluice, request.sessionId, own);
    const handle = await sluice.startBatch(request);
    if (!v.json)
      out(`batch ${handle.workflowId} running (${request.calls.length} call(s)); waiting for its result ...`);
    let output: BatchOutput;
    try {
      output = await handle.result();
    } catch (err) {
      // The batch's own words (a seq conflict, an output too large), not Temporal's wrapper.
      if (err instanceof WorkflowFailedError && err.cause) throw new BatchFailedError(handle.workflowId, err.cause);
      throw err;
    }
    if (v.json) out(JSON.stringify(output, null, 2));
    else printOutput(output, out);
    return output.results.some((r) => r.result.isError) ? 3 : 0;
  } finally {
    await close();
  }
}

/**
 * A batch with no start seq continues its session: after the last event of the session log and of
 * the session's completed batches on the server. Another batch of the session still running would
 * number its events over this one's, so that is refused. The same (session, turn, step) is this
 * very batch: submitting it again attaches to it, running or finished (its own start seq stands;
 * the one computed here is not used).
 */
async function continuedSeq(v: Values, sluice: SluiceClient, sessionId: string, own: string): Promise<number> {
  const server = await sluice.sessionSeq(sessionId);
  const others = server.running.filter((id) => id !== own);
  if (others.length)
    throw new UsageError(
      `session ${sessionId} has another batch still running (${others.join(', ')}); this batch (${own}) now would claim the same event seqs. Wait for it to finish, or give this batch its own range with --start-seq N.`,
    );
  const logged = await withStores(v, (stores) => stores.lastSeq(sessionId));
  return Math.max(server.nextSeq, logged + 1);
}

export function printOutput(output: BatchOutput, out: (s: string) => void): void {
  for (const r of output.results) out(renderResultCard(r.name, r.callId, r.result));
  for (const m of output.messages) if (m.role === 'user') out(`+ context (${m.source ?? 'user'}): ${m.content}`);
  out(
    `next seq ${output.nextSeq}${output.concludesTurn ? '; the turn concludes' : ''}${output.cancelled ? '; the batch was cancelled' : ''}`,
  );
}

async function approvals(v: Values, out: (s: string) => void): Promise<number> {
  const { sluice, close } = await client(v);
  try {
    const { pending, unreadable } = await sluice.approvalsOverview({
      ...(v['task-queue'] ? { taskQueue: v['task-queue'] } : {}),
      ...(v.session ? { sessionId: v.session } : {}),
    });
    if (v.json) out(JSON.stringify(unreadable.length ? { pending, unreadable } : pending, null, 2));
    else {
      for (const p of pending) out(`${renderPendingCard(p)}\n`);
      for (const u of unreadable) out(`cannot tell whether batch ${u.workflowId} waits for approval: ${u.problem}`);
      if (pending.length === 0 && unreadable.length === 0) out('no calls are waiting for approval');
    }
    // A batch that could not be read may be waiting: never report "nothing" with a clean exit then.
    return unreadable.length ? 1 : 0;
  } finally {
    await close();
  }
}

async function decide(
  v: Values,
  command: 'approve' | 'deny',
  approvalId: string | undefined,
  out: (s: string) => void,
): Promise<number> {
  if (!approvalId) throw new UsageError(`${command} needs an approval id; list them with \`npx sluice approvals\``);
  const waitMs = v['wait-timeout'] !== undefined ? Number(v['wait-timeout']) * 1000 : 10 * 60_000;
  if (!Number.isFinite(waitMs) || waitMs < 0)
    throw new UsageError(`--wait-timeout takes seconds, not ${JSON.stringify(v['wait-timeout'])}`);
  if (v.pin?.length && !v['for-session'])
    throw new UsageError('--pin narrows a session grant: add --for-session (or drop --pin to approve once)');
  if (v['for-session'] && command === 'deny') throw new UsageError('--for-session goes with approve, not deny');
  // A signed identity (JWT): sealed to the workers' key (SLUICE_SEAL_KEY) before it is sent.
  const token = v['token-file'] ? readTokenFile(v['token-file']) : process.env.SLUICE_APPROVER_TOKEN?.trim();
  const decision = {
    approvalId,
    decision: command === 'approve' ? ('approve' as const) : ('deny' as const),
    by: decider(v, 'cli'),
    ...(v.reason ? { reason: v.reason } : {}),
    ...(v.digest ? { argsDigest: v.digest } : {}),
    ...(v.workflow ? { workflowId: v.workflow } : {}),
    ...(v['for-session'] ? { scope: 'session' as const, pins: (v.pin ?? []).map(parsePin) } : {}),
    ...(token ? { identityToken: token } : {}),
  };
  return withDecidingClient(v, out, async (sluice) => {
    if (v.signal) {
      const workflowId = decision.workflowId ?? (await sluice.findApproval(approvalId));
      try {
        await sluice.signalDecision({ ...decision, workflowId });
      } catch (err) {
        // A batch that has finished takes no signal; its result still says how the ask ended.
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
      const { workflowId: _omit, ...sent } = decision;
      const fate = await sluice.signalOutcome(sent, workflowId);
      if (v.json) out(JSON.stringify({ approvalId, workflowId, ...fate }));
      else if (fate.status === 'applied') out(`${approvalId}: ${fate.outcome} (signal applied)`);
      else if (fate.status === 'refused')
        out(`${approvalId}: signal refused (${fate.refusal.code}): ${fate.refusal.message}`);
      else out(`sent: ${command} ${approvalId} as a signal; not applied yet: ${fate.message}`);
      return fate.status === 'refused' ? 1 : 0;
    }
    const r = await sluice.submitDecision(decision);
    if (r.status === 'applied') {
      out(v.json ? JSON.stringify(r) : appliedLine(approvalId, r));
      return 0;
    }
    if (v.digest && r.pending && r.pending.argsDigest !== v.digest)
      out(
        `warning: the digest you gave is not the one batch ${r.workflowId} shows for this call (${r.pending.argsDigest}); the batch will refuse the decision and record the refusal`,
      );
    if (!v.wait) {
      out(v.json ? JSON.stringify(r) : `queued: ${r.message}. Add --wait to wait for the outcome.`);
      return 0;
    }
    if (!v.json) out(`queued: ${r.message}. Waiting up to ${Math.round(waitMs / 1000)}s for the outcome ...`);
    const applied = await sluice.awaitDecision(r, { timeoutMs: waitMs });
    out(
      v.json
        ? JSON.stringify({ status: 'applied', workflowId: r.workflowId, ...applied })
        : appliedLine(approvalId, applied),
    );
    return 0;
  });
}

/** What became of a decision; a quorum vote that left the ask waiting says so, with the tally. */
function appliedLine(approvalId: string, r: DecisionApplied): string {
  if (r.outcome === 'pending' && r.quorum)
    return `${approvalId}: vote recorded, still waiting (quorum ${quorumLine(r.quorum)})`;
  return `${approvalId}: ${r.outcome}${r.by ? ` by ${r.by}` : ''}`;
}

/** Who a decision is recorded under: --by, else SLUICE_APPROVER, else the login name, else `fallback`. */
function decider(v: Values, fallback: string): string {
  return v.by ?? process.env.SLUICE_APPROVER ?? process.env.USER ?? fallback;
}

/**
 * Runs a deciding command (approve, deny, reconcile) with a client: a refusal (a SluiceError, its
 * message saying why and what to do) is printed and exits 1; the connection is closed either way.
 */
async function withDecidingClient(
  v: Values,
  out: (s: string) => void,
  run: (sluice: SluiceClient) => Promise<number>,
): Promise<number> {
  const { sluice, close } = await client(v);
  try {
    return await run(sluice);
  } catch (err) {
    if (err instanceof SluiceError) {
      out(err.message);
      return 1;
    }
    throw err;
  } finally {
    await close();
  }
}

function positiveInt(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(`${flag} takes a whole number >= 1, not ${JSON.stringify(v)}`);
  return n;
}

let streamTo: ((s: string) => void) | undefined;

async function chat(v: Values, out: (s: string) => void): Promise<number> {
  const sources = [v.script, v.model, v.resume].filter((x) => x !== undefined).length;
  if (sources !== 1)
    throw new UsageError(
      'chat needs one of --script FILE (a scripted model: no key, no network), --model PROVIDER:MODEL, or --resume SESSION',
    );
  if (v.play && !v.script) throw new UsageError("--play sends a script's user messages: it needs --script FILE");
  let model: string | undefined;
  if (v.script) {
    const file = path.resolve(v.script);
    try {
      readModelScript(file);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    model = `script:${file}`;
  } else if (v.model) {
    if (!/^[\w.-]+(:.+)?$/.test(v.model))
      throw new UsageError(
        `--model takes provider:model (openai:gpt-4.1, anthropic:claude-sonnet-4-5) or a config model name, not ${JSON.stringify(v.model)}`,
      );
    model = v.model;
  }
  const approvalTimeout = positiveInt(v['approval-timeout'], '--approval-timeout');
  const maxTurns = positiveInt(v['max-turns'], '--max-turns');
  const tokenBudget = positiveInt(v['token-budget'], '--token-budget');
  const request = model
    ? {
        sessionId: v.session ?? newChatSessionId(),
        model,
        ...(v.system ? { system: v.system } : {}),
        ...(maxTurns ? { maxTurns } : {}),
        ...(tokenBudget ? { tokenBudget } : {}),
        batch: { approvalTimeoutMs: (approvalTimeout ?? 600) * 1000 },
      }
    : undefined;
  const { sluice, close } = await client(v);
  const input = new LineInput(process.stdin);
  try {
    const sessionId = request?.sessionId ?? v.resume!;
    if (request)
      out(
        `Session ${sessionId} (${v.script ? `script ${v.script}` : request.model}). Type a message; /quit leaves it waiting, /end ends it.`,
      );
    await withStores(v, (stores) =>
      runChat({
        client: sluice,
        sessionId,
        ...(request ? { start: request } : {}),
        events: stores,
        eventsWhere: `${stores.kind === 'files' ? 'the state folder' : 'the database'} ${stores.where}`,
        input,
        out,
        ...(streamTo ? { write: streamTo } : {}),
        approver: decider(v, 'terminal'),
        ...(v.play && v.script ? { messages: scriptMessages(path.resolve(v.script)) } : {}),
      }),
    );
    return 0;
  } finally {
    input.close();
    await close();
  }
}

/** The stores the workers write (PostgreSQL with SLUICE_DATABASE_URL, else the state folder's files). */
async function withStores<T>(v: Values, use: (stores: SluiceStores) => Promise<T>): Promise<T> {
  const stores = openStores({ stateDir: v['state-dir'] ?? DEFAULT_STATE_DIR });
  try {
    return await use(stores);
  } finally {
    await stores.close();
  }
}

async function reconcile(v: Values, reconcileId: string | undefined, out: (s: string) => void): Promise<number> {
  if (!reconcileId)
    throw new UsageError('reconcile needs the id of an unknown outcome; list them with `npx sluice approvals`');
  const chosen = (['done', 'not-done', 'run-again'] as const).filter((c) => v[c]);
  if (chosen.length !== 1)
    throw new UsageError(
      'say what happened with exactly one of --done (with --evidence TEXT), --not-done or --run-again',
    );
  const decision = chosen[0];
  if (decision === 'done' && !v.evidence?.trim())
    throw new UsageError('--done needs --evidence TEXT: what shows the call ran (a log line, an id, a receipt)');
  // A tool only verified approvers may decide is run again only with a signed identity.
  const token = v['token-file'] ? readTokenFile(v['token-file']) : process.env.SLUICE_APPROVER_TOKEN?.trim();
  return withDecidingClient(v, out, async (sluice) => {
    const submitted = await sluice.submitReconcile({
      reconcileId,
      decision,
      ...(token ? { identityToken: token } : {}),
      by: decider(v, 'cli'),
      ...(v.reason ? { reason: v.reason } : {}),
      ...(v.evidence ? { evidence: v.evidence } : {}),
      ...(v.workflow ? { workflowId: v.workflow } : {}),
    });
    // No worker runs the card's workflow: the decision waits on the server, as approvals do.
    if (submitted.status === 'queued') {
      if (!v.wait) {
        out(v.json ? JSON.stringify(submitted) : `queued: ${submitted.message}. Add --wait to wait for the outcome.`);
        return 0;
      }
      const waitMs = v['wait-timeout'] !== undefined ? Number(v['wait-timeout']) * 1000 : 10 * 60_000;
      if (!Number.isFinite(waitMs) || waitMs < 0)
        throw new UsageError(`--wait-timeout takes seconds, not ${JSON.stringify(v['wait-timeout'])}`);
      if (!v.json) out(`queued: ${submitted.message}. Waiting up to ${Math.round(waitMs / 1000)}s for the outcome ...`);
    }
    const r =
      submitted.status === 'queued'
        ? await sluice.awaitReconcile(submitted, {
            timeoutMs: v['wait-timeout'] !== undefined ? Number(v['wait-timeout']) * 1000 : 10 * 60_000,
          })
        : submitted;
    if (v.json) out(JSON.stringify(r));
    else
      out(
        `${reconcileId}: ${r.toolName} ${r.callId} reconciled ${r.outcome} by ${r.by}${r.reason ? ` (${r.reason})` : ''}${
          r.rerun ? `\n${r.rerun.isError ? '✗' : '✓'} ${r.rerun.text}` : ''
        }`,
      );
    return 0;
  });
}

async function reassign(v: Values, approvalId: string | undefined, out: (s: string) => void): Promise<number> {
  if (!approvalId) throw new UsageError('reassign needs an approval id; list them with `npx sluice approvals`');
  if (!v.to?.trim()) throw new UsageError('reassign needs --to NAME: who the approval goes to');
  return withDecidingClient(v, out, async (sluice) => {
    const { workflowId } = await sluice.reassign({
      approvalId,
      to: v.to!.trim(),
      by: decider(v, 'cli'),
      ...(v.reason ? { reason: v.reason } : {}),
      ...(v.workflow ? { workflowId: v.workflow } : {}),
    });
    out(`${approvalId}: reassigned to ${v.to!.trim()} (sent to ${workflowId}; recorded when a worker runs the batch)`);
    return 0;
  });
}

function readTokenFile(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new UsageError(`--token-file ${file}: ${(err as Error).message}`);
  }
}

/** `path^=prefix` or `path=value` (value as JSON when it parses, else the text). */
function parsePin(text: string): ArgumentPin {
  const prefix = /^([^=^]+)\^=(.+)$/s.exec(text);
  if (prefix) return { path: prefix[1].trim(), prefix: prefix[2] };
  const equals = /^([^=^]+)=(.*)$/s.exec(text);
  if (!equals) throw new UsageError(`--pin takes PATH^=PREFIX or PATH=VALUE, not ${JSON.stringify(text)}`);
  let value: ArgumentPin['equals'];
  try {
    value = JSON.parse(equals[2]);
  } catch {
    value = equals[2];
  }
  return { path: equals[1].trim(), equals: value };
}

async function events(v: Values, sessionId: string | undefined, out: (s: string) => void): Promise<number> {
  if (!sessionId) throw new UsageError('events needs a session id');
  const print = (e: SessionEvent) =>
    out(v.json ? JSON.stringify(e) : `${String(e.seq).padStart(5)} ${e.time} ${e.type.padEnd(22)} ${summarize(e)}`);
  return withStores(v, async (stores) => {
    let list: SessionEvent[];
    if (await stores.hasSession(sessionId)) {
      list = await stores.events(sessionId);
    } else {
      const { sluice, close } = await client(v);
      try {
        list = await sluice.sessionEvents(sessionId);
      } finally {
        await close();
      }
      if (list.length === 0 && !v.follow)
        throw new NotFoundError(
          `no events for session ${sessionId}: none in the session store (${stores.kind}: ${stores.where}) and no finished batch on the server`,
        );
    }
    list.forEach(print);
    const conflicts = await stores.conflicts(sessionId);
    if (!v.json && conflicts.count)
      out(
        `warning: some batch numbered ${conflicts.count} event(s) over seqs this log already held; they are kept in ${conflicts.where} with their batch`,
      );
    if (v.follow) {
      // Live: each event as the workers write it, until the session ends (a batch's session,
      // which records no session/ended: until Ctrl-C).
      if (list.some((e) => e.type === 'session/ended')) return 0;
      const from = list.length ? list[list.length - 1].seq + 1 : 0;
      // The model's answer streams in between, piece by piece (live/delta, live/void, live/dropped):
      // previews of the step that its model/message then records whole.
      for await (const e of followSessionEvents(stores, sessionId, { fromSeq: from, live: true })) {
        if (!('seq' in e)) {
          out(v.json ? JSON.stringify(e) : `${'~'.padStart(5)} ${e.type.padEnd(22 + 25)} ${summarizeLive(e)}`);
          continue;
        }
        print(e);
        if (e.type === 'session/ended') break;
      }
    }
    return 0;
  });
}

async function result(v: Values, ref: string | undefined, out: (s: string) => void): Promise<number> {
  if (!ref)
    throw new UsageError(
      'result needs the reference a truncated result names (sluice-result:... or sluice-pg-result:...), from its note or meta.storedResult.ref',
    );
  return withStores(v, async (stores) => {
    const value = await stores.results.get(ref);
    if (value === undefined) {
      const hint = ref.startsWith(PG_RESULT_REF)
        ? stores.kind === 'postgresql'
          ? 'the database has no result under that key'
          : "it is stored in PostgreSQL: set SLUICE_DATABASE_URL (or --database-url) to the workers' database"
        : stores.kind === 'postgresql'
          ? `it was stored in a worker's state folder; unset SLUICE_DATABASE_URL and give that folder with --state-dir`
          : `no such result in ${path.join(stores.where, 'results')}; give the workers' state folder with --state-dir`;
      throw new NotFoundError(
        `no stored result ${ref}: ${hint} (stored results are kept for the config's resultRetention, 30 days by default)`,
      );
    }
    const stored = storedResultOf(value);
    if (v.text) out(stored.content.map((b) => (b.type === 'text' ? b.text : `[image ${b.mimeType}]`)).join(''));
    else out(JSON.stringify(stored, null, 2));
    return 0;
  });
}

async function results(v: Values, action: string | undefined, out: (s: string) => void): Promise<number> {
  if (action !== 'prune')
    throw new UsageError('results takes one action: `npx sluice results prune [--older-than 30d]`');
  let olderThan: number;
  try {
    olderThan = parseRetention(v['older-than'] ?? '30d');
  } catch (err) {
    throw new UsageError(`--older-than: ${(err as Error).message}`);
  }
  return withStores(v, async (stores) => {
    if (!stores.results.prune) throw new UsageError(`the ${stores.kind} result store cannot delete old results`);
    const gone = await stores.results.prune(new Date(Date.now() - olderThan));
    out(
      `deleted ${gone.results} stored result(s), ${gone.bytes} bytes, older than ${v['older-than'] ?? '30d'} from ${stores.where}`,
    );
    return 0;
  });
}

function summarizeLive(e: LiveEvent): string {
  const at = `turn ${e.turn} step ${e.step} attempt ${e.attempt}`;
  if (e.type === 'live/delta')
    return `${at} ${e.kind}${e.call ? ` #${e.call.index}${e.call.name ? ` ${clip(e.call.name, 80)}` : ''}` : ''} ${JSON.stringify(clip(e.text, 200))}`;
  return `${at}: ${clip(e.reason, 200)}`;
}

function summarize(e: SessionEvent): string {
  // One line per event: clip() collapses newlines, so no field can forge an event line. Every
  // field goes through it whatever its declared type: a log file can hold anything.
  const f = (v: unknown, n = 200) => clip(String(v), n);
  if (isEvent(e, 'tool/call')) return `${f(e.data.callId)} ${f(e.data.name)} ${clip(String(e.data.arguments), 120)}`;
  if (isEvent(e, 'tool/result'))
    return `${f(e.data.callId)} ${e.data.isError ? 'error' : 'ok'}: ${clip(JSON.stringify(e.data.content), 120)}`;
  if (isEvent(e, 'approval/asked'))
    return `${f(e.data.id)} for ${f(e.data.callId)}${e.data.reason ? `: ${f(e.data.reason)}` : ''}`;
  if (isEvent(e, 'approval/decided')) {
    const d = e.data;
    return `${f(d.id)} ${f(d.outcome)}${d.by ? ` by ${f(d.by)}` : ''}${d.reason ? `: ${f(d.reason)}` : ''}`;
  }
  const d = e.data as Record<string, unknown>;
  if (e.type === 'session/user') return `you: ${f(d.content, 160)}`;
  if (e.type === 'model/message') {
    const calls = Array.isArray(d.toolCalls) ? d.toolCalls.map((c) => f((c as { name?: unknown }).name, 60)) : [];
    return `${d.text ? f(d.text, 160) : ''}${calls.length ? ` [calls ${calls.join(', ')}]` : ''}`;
  }
  if (e.type === 'session/turn-ended')
    return `turn ${f(d.turn)} ${f(d.reason)} after ${f(d.steps)} step(s)${d.error ? `: ${f(d.error)}` : ''}`;
  if (isEvent(e, 'approval/refused')) {
    const d = e.data;
    return `${f(d.id)} ${f(d.decision)}${d.by ? ` by ${f(d.by)}` : ''} refused (${f(d.code)}, via ${f(d.via)}): ${f(d.problem)}`;
  }
  return clip(JSON.stringify(e.data), 160);
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
