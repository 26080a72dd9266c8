// `sluice gateway`: an MCP server whose tool calls run as Sluice batches (servers/gateway.ts): its
// options, and the config, client and bearer token it serves with. Its stdout is the protocol's
// (stdio), so it prints nothing else there, and it reads its own options.
import { randomBytes, randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { SluiceClient } from '../client/client';
import { parseToolManifest, toolSchemas } from '../define/config';
import { type GatewayOptions, serveGatewayStdio, startGatewayHttp } from '../servers/gateway';
import { untilStopSignal } from '../support/stop-signal';
import { dataConverterFromEnv } from '../codec/payload';
import { connectClient } from '../temporal/connection';
import { loadConfig } from '../worker/load-config';
import type { RawCommand } from './command';

const GATEWAY_HELP = `Usage: npx sluice gateway (--config FILE | --manifest FILE) --task-queue NAME [options]

An MCP server in front of a Sluice config's tools (its own and its mcpTools servers'). Every
tools/call runs as a durable Sluice batch on the task queue (policy, approvals, the upstream call,
post-execute) and answers with the recorded result. A worker with the same config must run there:
  npx sluice worker --config FILE --task-queue NAME

Options:
  --config FILE           The worker's config: its tools are listed (loading it connects to its
                          MCP servers to list theirs)
  --manifest FILE         Or the tool manifest \`sluice manifest --config FILE\` wrote (no tool code loaded)
  --task-queue NAME       The task queue of the worker that runs the calls
  --http                  Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio. Every
                          request must carry Authorization: Bearer <token>: the token of
                          --token-env, else the one in --token-file
  --port N, --host H      With --http: where to listen (default 127.0.0.1:8789)
  --token-env NAME        With --http: the environment variable holding the bearer token
  --token-file FILE       With --http and no --token-env: the file holding the bearer token,
                          created with a new random one (mode 0600) when missing, reused when
                          present (default .sluice/gateway-token)
  --no-token              With --http on a loopback address: serve without a token. INSECURE:
                          every local process (any user, any program) can then call every tool
  --elicitation-decides   Let the answer a client gives in an MCP elicitation form decide an ask.
                          Off by default: the client may be the agent itself. The answer is
                          recorded as the client's, unverified, and never counts toward a quorum
                          or where a verified approver is required (the form is not offered then)
  --session ID            The Sluice session of a stdio client (default: a new one per process);
                          give one to let a restarted gateway answer a repeated call from its batch
  --approval-timeout S    Deny timeout of an ask when the tool sets none (default 600)
  --inbox URL             The Sluice inbox as the person reaches it: a client that supports MCP
                          URL elicitation is sent a one-time approval link there (needs
                          SLUICE_LINK_KEY, the inbox's; default the config's approvalLinks.baseUrl)
  --address host:port     Temporal frontend (default: TEMPORAL_ADDRESS, then localhost:7233)
  --namespace NAME        Temporal namespace (default: TEMPORAL_NAMESPACE, then "default")`;

const DEFAULT_PORT = 8789;
/** Where `--http` keeps its bearer token when no --token-env names one. */
const DEFAULT_TOKEN_FILE = '.sluice/gateway-token';
/** Runs `sluice gateway ...`; returns the exit code. */
async function gatewayMain(argv: string[], log: (s: string) => void = (s) => process.stderr.write(s)) {
  let o: ReturnType<typeof parseOptions>;
  try {
    o = parseOptions(argv);
  } catch (err) {
    log(`sluice gateway: ${(err as Error).message}\n\n${GATEWAY_HELP}\n`);
    return 2;
  }
  if (o.help) {
    process.stdout.write(`${GATEWAY_HELP}\n`);
    return 0;
  }
  try {
    return await serve(o, log);
  } catch (err) {
    // Nothing is served yet (a bad config, no server, a refused address): say why and stop.
    log(`sluice gateway: ${(err as Error).message}\n`);
    return 1;
  }
}

async function serve(o: ReturnType<typeof parseOptions>, log: (s: string) => void): Promise<number> {
  const config = o.manifest ? undefined : await loadConfig(o.config);
  const tools = config
    ? toolSchemas(config)
    : parseToolManifest(fs.readFileSync(o.manifest!, 'utf8')).tools.map(({ name, description, inputSchema }) => ({
        name,
        description,
        inputSchema,
      }));
  const c = await connectClient({ address: o.address, namespace: o.namespace });
  const sluice = new SluiceClient({
    connection: c.connection,
    namespace: c.namespace,
    taskQueue: o.taskQueue,
    dataConverter: dataConverterFromEnv(),
  });
  const links = o.inbox ? { ...(config?.approvalLinks ?? {}), baseUrl: o.inbox } : config?.approvalLinks;
  const gw: GatewayOptions = {
    tools,
    sluice,
    log,
    ...(o.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: o.approvalTimeoutMs } : {}),
    ...(links ? { links } : {}),
    ...(o.elicitationDecides ? { elicitationDecides: true } : {}),
  };
  try {
    if (o.http) return await serveHttp(gw, o, log);
    const session = o.session ?? `gateway-${randomUUID()}`;
    const closed = untilStopSignal(serveGatewayStdio(gw, session));
    log(`sluice gateway: ${tools.length} tools on stdio, session ${session}, task queue ${o.taskQueue}\n`);
    await closed;
    return 0;
  } finally {
    await c.connection.close().catch(() => undefined);
  }
}

async function serveHttp(gw: GatewayOptions, o: ReturnType<typeof parseOptions>, log: (s: string) => void) {
  const token = o.noToken ? undefined : gatewayToken(o, log);
  const served = await startGatewayHttp(gw, {
    host: o.host,
    port: o.port,
    ...(token ? { token } : { insecureNoToken: true as const }),
  });
  if (!token)
    log(`sluice gateway: INSECURE, --no-token: any process on this machine can call every tool at ${served.url}\n`);
  log(`sluice gateway: ${gw.tools.length} tools on ${served.url}, task queue ${gw.sluice.taskQueue}\n`);
  await untilStopSignal();
  await served.close();
  return 0;
}

/**
 * The HTTP gateway's bearer token: from --token-env, else from --token-file, which is created
 * with a new random token (mode 0600) when missing and reused when present, so a restarted
 * gateway keeps its clients' token. A file others may read is refused: its token is as good as none.
 */
function gatewayToken(o: ReturnType<typeof parseOptions>, log: (s: string) => void): string {
  if (o.tokenEnv) {
    const token = process.env[o.tokenEnv];
    if (!token) throw new Error(`--token-env ${o.tokenEnv}: that environment variable is empty or unset`);
    return token;
  }
  const file = o.tokenFile;
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
    log(`sluice gateway: a new bearer token is in ${file}; clients send Authorization: Bearer <its contents>\n`);
  }
  const mode = fs.statSync(file).mode & 0o777;
  if (mode & 0o077)
    throw new Error(
      `--token-file ${file} may be read by other users (mode ${mode.toString(8)}): \`chmod 600 ${file}\`, or delete it to have a new one made`,
    );
  const token = fs.readFileSync(file, 'utf8').trim();
  if (token.length < 16)
    throw new Error(`--token-file ${file} holds no token of 16 characters or more: delete it to have a new one made`);
  log(`sluice gateway: bearer token from ${file}\n`);
  return token;
}

function parseOptions(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      config: { type: 'string' },
      manifest: { type: 'string' },
      'task-queue': { type: 'string' },
      http: { type: 'boolean' },
      port: { type: 'string' },
      host: { type: 'string' },
      'token-env': { type: 'string' },
      'token-file': { type: 'string' },
      'no-token': { type: 'boolean' },
      'elicitation-decides': { type: 'boolean' },
      session: { type: 'string' },
      'approval-timeout': { type: 'string' },
      inbox: { type: 'string' },
      address: { type: 'string' },
      namespace: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return { help: true } as never;
  if (positionals.length) throw new Error(`unexpected argument ${JSON.stringify(positionals[0])}`);
  if (!values['task-queue']) throw new Error('--task-queue is required: the queue of the worker that runs the calls');
  if (values.config && values.manifest) throw new Error('give --config or --manifest, not both');
  if (values['no-token'] && (values['token-env'] || values['token-file']))
    throw new Error('--no-token serves without a token: give it alone, not with --token-env or --token-file');
  if (values['token-env'] && values['token-file']) throw new Error('give --token-env or --token-file, not both');
  const port = values.port === undefined ? DEFAULT_PORT : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port must be a port number, not ${values.port}`);
  let approvalTimeoutMs: number | undefined;
  if (values['approval-timeout'] !== undefined) {
    const s = Number(values['approval-timeout']);
    if (!Number.isFinite(s) || s <= 0)
      throw new Error(`--approval-timeout must be a positive number of seconds, not ${values['approval-timeout']}`);
    approvalTimeoutMs = s * 1000;
  }
  return {
    help: false,
    config: values.config,
    manifest: values.manifest,
    taskQueue: values['task-queue'],
    http: values.http === true,
    port,
    host: values.host ?? '127.0.0.1',
    tokenEnv: values['token-env'],
    tokenFile: values['token-file'] ?? DEFAULT_TOKEN_FILE,
    noToken: values['no-token'] === true,
    elicitationDecides: values['elicitation-decides'] === true,
    session: values.session,
    approvalTimeoutMs,
    inbox: values.inbox,
    address: values.address,
    namespace: values.namespace,
  };
}

export const gateway: RawCommand = {
  name: 'gateway',
  synopsis: 'gateway',
  summary: 'An MCP server (stdio, or --http) whose tool calls run as Sluice batches',
  help: GATEWAY_HELP,
  raw: (argv) => gatewayMain(argv),
};
