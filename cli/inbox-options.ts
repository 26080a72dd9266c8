// The approval inbox page's flags, which `sluice dev` and `sluice ui` share: where it listens, and
// the proxy that authenticates its approvers.
import * as fs from 'node:fs';
import { isIP } from 'node:net';
import { UsageError } from '../support/errors';
import { DEFAULT_INBOX_HOST, DEFAULT_INBOX_PORT } from '../servers/inbox/server';
import type { Values } from './command';

export const INBOX_FLAGS = {
  'inbox-host': { type: 'string' },
  'inbox-port': { type: 'string' },
  'trusted-user-header': { type: 'string' },
  'identity-token-header': { type: 'string' },
  'trusted-proxy': { type: 'string', multiple: true },
  'proxy-secret-file': { type: 'string' },
  'insecure-proxy-without-secret': { type: 'boolean' },
  'inbox-allowed-host': { type: 'string', multiple: true },
} as const;

export const INBOX_OPTIONS = `  --inbox-host ADDR       Bind address of the inbox page (default ${DEFAULT_INBOX_HOST})
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

/** The inbox's settings from its flags: a proxy header only with the proxy's secret, proxies by address. */
export function inboxSettings(v: Values<typeof INBOX_FLAGS>): {
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
