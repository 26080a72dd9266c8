// `sluice`: the command line. One file per command (cli/<command>.ts: its flags, its help, what it
// does); this one lists them and dispatches on the first word. Every failure prints what happened
// and what to do, and exits non-zero: 2 for usage, 1 for the rest.
import { describeCopy } from '../support/copy';
import { UsageError } from '../support/errors';
import { DEFAULT_INBOX_HOST, DEFAULT_INBOX_PORT } from '../servers/inbox/server';
import { terminalSafe } from '../client/render';
import { DEFAULT_STATE_DIR } from '../stores/session-log-path';
import { DEFAULT_TASK_QUEUE } from '../workflows/definitions';
import { approvals } from './approvals';
import { approve, deny } from './approve';
import { auditCommand } from './audit';
import { batch } from './batch';
import { chat } from './chat';
import { codecServer } from './codec-server';
import { type AnyCommand, isRaw, parseCommand } from './command';
import { dev } from './dev';
import { eventsCommand } from './events';
import { exportCommand } from './export';
import { gateway } from './gateway';
import { hook } from './hook';
import { manifest } from './manifest';
import { policy } from './policy';
import { reassign } from './reassign';
import { reconcileCommand } from './reconcile';
import { replay } from './replay';
import { result } from './result';
import { results } from './results';
import { setup } from './setup';
import { hasWorkerRuntime, needsWorker } from './shared';
import { ui } from './ui';
import { worker } from './worker';

export { UsageError } from '../support/errors';
export { readCallsFile, printOutput } from './batch';
export { inboxSettings } from './inbox-options';
export type { SessionLogCheck } from './audit';

/** Every command, in the order `sluice --help` lists them. */
export const COMMANDS: readonly AnyCommand[] = [
  dev,
  worker,
  setup,
  batch,
  approvals,
  approve,
  deny,
  chat,
  reconcileCommand,
  reassign,
  eventsCommand,
  result,
  results,
  policy,
  ui,
  auditCommand,
  replay,
  exportCommand,
  manifest,
  codecServer,
  hook,
  gateway,
];

const byName = new Map(COMMANDS.map((c) => [c.name, c]));

/** Each command's own help, by name. */
export const COMMAND_HELP: Record<string, string> = Object.fromEntries(COMMANDS.map((c) => [c.name, c.help]));

/** `  batch <calls.json>      Run a batch ...`, continuation lines under the first. */
function listing(c: AnyCommand): string {
  const [first, ...more] = c.summary.split('\n');
  const head = c.synopsis.length < 24 ? c.synopsis.padEnd(24) : `${c.synopsis}  `;
  return [`  ${head}${first}`, ...more.map((l) => `${' '.repeat(26)}${l}`)].join('\n');
}

export const HELP = `sluice — durable tool batches for AI agents, on Temporal

Usage: npx sluice <command> [options]

Commands (\`npx sluice <command> --help\` lists a command's options):
${COMMANDS.map(listing).join('\n')}

  <target> is a batch's workflow id, a session id (all of its batches), a history .json file
  (\`npx sluice export\` writes one), or a folder of them (replay: keep one per release in CI).
  \`npx sluice --version\` names the copy of Sluice the CLI runs: the one your config imports.

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

Connection settings also come from Temporal's standard environment and config profiles:
TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE.
SLUICE_CODEC_KEYS="<id>:<base64 32-byte key>[,<old id>:<old key>]" encrypts every payload
(set the same value for workers, the CLI and the codec server).
SLUICE_DATABASE_URL=postgres://user:pass@host:5432/sluice keeps session events and stored results
in PostgreSQL, shared by every worker (run \`npx sluice setup\` once to create the tables).`;

const stdoutLines = (s: string) => void process.stdout.write(`${s}\n`);
const isHelp = (a: string) => a === '--help' || a === '-h';

export async function main(argv: string[], write: (s: string) => void = stdoutLines): Promise<number> {
  // Everything printed passes here: model-written text cannot reach the terminal as a control
  // sequence (escapes stay valid JSON, so --json output is unchanged in meaning).
  const out = (s: string) => write(terminalSafe(s));
  const [name, ...rest] = argv;
  if (name === undefined || isHelp(name)) {
    out(HELP);
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v') {
    out(describeCopy());
    return 0;
  }
  if (name === 'help') {
    out(byName.get(rest[0] ?? '')?.help ?? HELP);
    return 0;
  }
  const command = byName.get(name);
  if (!command) {
    out(
      name.startsWith('-')
        ? `sluice: the command comes first, then its options: npx sluice <command> [options]. Run \`npx sluice --help\` for the list.`
        : `sluice ${name}: unknown command "${name}". Run \`npx sluice --help\` for the list.`,
    );
    return 2;
  }
  // hook, gateway and policy read their own arguments (hook and gateway speak a protocol on stdio).
  if (isRaw(command)) {
    if (command !== policy && rest.some(isHelp)) {
      out(command.help);
      return 0;
    }
    return command.raw(rest, out);
  }
  let parsed: ReturnType<typeof parseCommand>;
  try {
    parsed = parseCommand(command, rest);
  } catch (err) {
    out(`sluice ${name}: ${(err as Error).message}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    out(command.help);
    return 0;
  }
  // Core's own log lines go to stderr through the SDK logger, so stdout stays the command's output.
  if (hasWorkerRuntime()) (await needsWorker(name, () => import('../worker/main'))).installRuntime();
  // One place for the database: the worker, the inbox and every reader take it from the environment.
  if (typeof values['database-url'] === 'string') process.env.SLUICE_DATABASE_URL = values['database-url'];
  // On a terminal's stdout (not a caller's line writer), `chat` prints the model's text as it streams.
  const stream = write === stdoutLines ? (s: string) => void process.stdout.write(terminalSafe(s)) : undefined;
  try {
    return await command.run({ values, positionals, out, ...(stream ? { stream } : {}) });
  } catch (err) {
    out(`sluice ${name}: ${(err as Error).message}`);
    return err instanceof UsageError ? 2 : 1;
  }
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
