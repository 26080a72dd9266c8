// The approval inbox attacked over raw HTTP (issue 10, item 11), with payload encryption on so
// the inbox is what decrypts: a hostile page that reached it under its own name by DNS rebinding
// (a foreign Host, with an Origin to match), and, behind a header-authenticating proxy, requests
// that reach the inbox directly with a forged user header or none. Neither may read a card or
// record a decision; the ordinary paths keep working.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { inboxSettings, main, UsageError } from '../cli';
import { startInbox, type Inbox } from '../servers/inbox/server';
import { dataConverterFromEnv } from '../codec/payload';
import { defineConfig, defineTool } from '../define/config';
import { pendingApproval } from './eventually';
import { batch, startHarness, text, type Harness } from './harness';

process.env.SLUICE_CODEC_KEYS = `k1:${randomBytes(32).toString('base64')}`;

const SECRET = 'ACCT-DE89-3704-SECRET';
const transfer = defineTool({
  name: 'transfer',
  description: 'Moves money (asks first).',
  input: z.object({ to: z.string(), amount: z.number() }),
  approval: 'ask',
  execute: ({ to, amount }) => `sent ${amount} to ${to}`,
});

/** The proxy's address, and an attacker's on the same network: both loopback, so tests can bind them. */
const PROXY = '127.0.0.3';
const DIRECT = '127.0.0.2';
/** The secret the inbox shares with its proxy (issue 22 item 11), and the header the proxy adds. */
const PROXY_SECRET = randomBytes(24).toString('base64');
const viaTheProxy = [`X-Sluice-Proxy-Secret: ${PROXY_SECRET}`];
let insecure: Inbox;

let h: Harness;
let open: Inbox;
let proxied: Inbox;
let proxiedDefault: Inbox;
let named: Inbox;
beforeAll(async () => {
  h = await startHarness('inbox-attacks', defineConfig({ tools: [transfer] }), {
    dataConverter: dataConverterFromEnv(),
  });
  open = await startInbox({ client: h.client, port: 0 });
  proxied = await startInbox({
    client: h.client,
    port: 0,
    trustedUserHeader: 'X-Forwarded-User',
    trustedProxies: [PROXY],
    proxySecret: PROXY_SECRET,
  });
  proxiedDefault = await startInbox({
    client: h.client,
    port: 0,
    trustedUserHeader: 'X-Forwarded-User',
    proxySecret: PROXY_SECRET,
  });
  insecure = await startInbox({
    client: h.client,
    port: 0,
    trustedUserHeader: 'X-Forwarded-User',
    insecureProxyWithoutSecret: true,
  });
  named = await startInbox({ client: h.client, port: 0, allowedHosts: ['approvals.example.com'] });
});
afterAll(async () => {
  await Promise.all([open, proxied, proxiedDefault, named, insecure].map((i) => i?.close()));
  await h?.close();
});

const portOf = (i: Inbox) => Number(new URL(i.url).port);

interface Reply {
  status: number;
  body: string;
}

/** One HTTP/1.1 request written by hand, so Host and every header are exactly what an attacker sends. */
function raw(
  inbox: Inbox,
  head: string[],
  opts: { body?: string; from?: string; readMs?: number } = {},
): Promise<Reply> {
  const body = opts.body ?? '';
  const request = [
    ...head,
    ...(body ? [`Content-Length: ${Buffer.byteLength(body)}`] : []),
    'Connection: close',
    '',
    body,
  ].join('\r\n');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ host: '127.0.0.1', port: portOf(inbox), localAddress: opts.from ?? '127.0.0.1' });
    socket.setTimeout(opts.readMs ?? 10_000, () => socket.destroy());
    socket.on('connect', () => socket.write(request));
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const all = Buffer.concat(chunks).toString('utf8');
      const [headers, ...rest] = all.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(headers)?.[1] ?? 0);
      let payload = rest.join('\r\n\r\n');
      if (/^transfer-encoding: chunked/im.test(headers)) payload = unchunk(payload);
      resolve({ status, body: payload });
    });
  });
}

function unchunk(s: string): string {
  let out = '';
  let rest = s;
  for (;;) {
    const nl = rest.indexOf('\r\n');
    const size = Number.parseInt(rest.slice(0, nl), 16);
    if (!size) return out;
    out += rest.slice(nl + 2, nl + 2 + size);
    rest = rest.slice(nl + 2 + size + 2);
  }
}

const get = (inbox: Inbox, path: string, host: string, headers: string[] = [], from?: string) =>
  raw(inbox, [`GET ${path} HTTP/1.1`, `Host: ${host}`, ...headers], { from });

const decide = (inbox: Inbox, host: string, decision: object, headers: string[] = [], from?: string) =>
  raw(inbox, [`POST /api/decide HTTP/1.1`, `Host: ${host}`, 'Content-Type: application/json', ...headers], {
    body: JSON.stringify(decision),
    from,
  });

async function pendingTransfer() {
  const handle = await h.client.startBatch(
    batch([{ id: 't1', name: 'transfer', args: { to: SECRET, amount: 9_000 } }], {
      options: { approvalTimeoutMs: 600_000 },
    }),
  );
  const p = await pendingApproval(h.client, handle.workflowId);
  const form = { workflowId: handle.workflowId, approvalId: p.approvalId, argsDigest: p.argsDigest };
  return { handle, p, form };
}

const stillPending = async (workflowId: string) => (await h.client.batchState(workflowId)).pending.length;

describe('a foreign Host: DNS rebinding (issue 10, item 11)', () => {
  it('reads nothing and decides nothing under a name the inbox does not answer to', async () => {
    const { handle, p, form } = await pendingTransfer();
    const port = portOf(open);
    const evil = `rebind.attacker.example:${port}`;
    for (const path of ['/', '/api/snapshot', '/api/stream', `/api/session?id=${p.sessionId}`, '/api/whoami']) {
      const r = await get(open, path, evil);
      expect(r.status, path).toBe(421);
      expect(r.body).not.toContain(SECRET);
      expect(JSON.parse(r.body).message).toMatch(/answers to 127\.0\.0\.1:\d+.*DNS rebinding/);
    }
    // The page's own Origin matches the foreign Host, which is what let the decision through.
    for (const host of [evil, `localhost.attacker.example:${port}`, `127.0.0.1.nip.example:${port}`]) {
      const r = await decide(open, host, { ...form, decision: 'approve', by: 'mallory' }, [`Origin: http://${host}`]);
      expect(r.status, host).toBe(421);
    }
    // No Host at all (HTTP/1.0) is no better.
    const bare = await raw(open, ['GET /api/snapshot HTTP/1.0']);
    expect(bare.status).toBe(421);
    expect(bare.body).not.toContain(SECRET);
    expect(await stillPending(handle.workflowId)).toBe(1);

    // Under its own names the inbox works as before: it shows the decrypted card and decides.
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const r = await get(open, '/api/snapshot', host);
      expect(r.status).toBe(200);
      expect(r.body).toContain(SECRET);
    }
    const ok = await decide(open, `localhost:${port}`, { ...form, decision: 'deny', by: 'alice' }, [
      `Origin: http://localhost:${port}`,
    ]);
    expect(ok.status, ok.body).toBe(200);
    const out = await handle.result();
    expect(text(out.results[0].result)).toContain('rejected by alice');
  });

  it('answers to a configured name, and not to names that merely contain it', async () => {
    const port = portOf(named);
    expect((await get(named, '/api/whoami', 'approvals.example.com')).status).toBe(200);
    expect((await get(named, '/api/whoami', 'APPROVALS.example.com.')).status).toBe(200);
    expect((await get(named, '/api/whoami', `127.0.0.1:${port}`)).status).toBe(200);
    for (const host of [
      'approvals.example.com.attacker.example',
      'attacker.example',
      `evil-approvals.example.com:${port}`,
    ])
      expect((await get(named, '/api/whoami', host)).status, host).toBe(421);
  });
});

describe('behind a proxy that names the approver (issue 10, item 11)', () => {
  it('refuses requests that come around the proxy, forged header or not, and requests without the header', async () => {
    const { handle, form } = await pendingTransfer();
    const host = `127.0.0.1:${portOf(proxied)}`;
    const origin = `Origin: http://${host}`;

    // Straight to the inbox, with a forged header: neither the cards nor a decision.
    const forged = ['X-Forwarded-User: ceo@example.com'];
    for (const path of ['/', '/api/snapshot', '/api/whoami']) {
      const r = await get(proxied, path, host, forged, DIRECT);
      expect(r.status, path).toBe(403);
      expect(r.body).not.toContain(SECRET);
      expect(JSON.parse(r.body).message).toMatch(/only through its proxy \(127\.0\.0\.3\).*came from 127\.0\.0\.2/);
    }
    const d1 = await decide(proxied, host, { ...form, decision: 'approve', by: 'x' }, [...forged, origin], DIRECT);
    expect(d1.status).toBe(403);

    // From the proxy's address but without the header (a route the proxy does not cover): nothing either.
    for (const path of ['/', '/api/snapshot', '/api/stream']) {
      const r = await get(proxied, path, host, viaTheProxy, PROXY);
      expect(r.status, path).toBe(401);
      expect(r.body).not.toContain(SECRET);
    }
    const d2 = await decide(
      proxied,
      host,
      { ...form, decision: 'approve', by: 'mallory' },
      [origin, ...viaTheProxy],
      PROXY,
    );
    expect(d2.status).toBe(401);
    expect(await stillPending(handle.workflowId)).toBe(1);

    // Another process on the proxy's machine (the proxy's address), with a forged header but not
    // the shared secret, or a wrong one (issue 22 item 11): refused, reads and decisions alike.
    for (const wrong of [
      [],
      ['X-Sluice-Proxy-Secret: guessed-guessed-guessed'],
      [`X-Sluice-Proxy-Secret: ${PROXY_SECRET}x`],
    ]) {
      for (const path of ['/', '/api/snapshot', '/api/whoami']) {
        const r = await get(proxied, path, host, [...forged, ...wrong], PROXY);
        expect(r.status, path).toBe(403);
        expect(r.body).not.toContain(SECRET);
        expect(JSON.parse(r.body).message).toContain('does not carry the secret the inbox shares with its proxy');
      }
      const d = await decide(proxied, host, { ...form, decision: 'approve' }, [...forged, ...wrong, origin], PROXY);
      expect(d.status).toBe(403);
    }
    expect(await stillPending(handle.workflowId)).toBe(1);

    // Through the proxy: the cards, and a decision recorded under the proxy's name, not the body's.
    const viaProxy = ['X-Forwarded-User: carol', ...viaTheProxy];
    const seen = await get(proxied, '/api/snapshot', host, viaProxy, PROXY);
    expect(seen.status).toBe(200);
    expect(seen.body).toContain(SECRET);
    const d3 = await decide(proxied, host, { ...form, decision: 'deny', by: 'mallory' }, [...viaProxy, origin], PROXY);
    expect(d3.status, d3.body).toBe(200);
    const out = await handle.result();
    expect(text(out.results[0].result)).toContain('rejected by carol');
    expect(out.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({ by: 'carol' });
  });

  it('takes only a proxy on this machine unless told otherwise', async () => {
    const host = `127.0.0.1:${portOf(proxiedDefault)}`;
    const header = ['X-Forwarded-User: carol', ...viaTheProxy];
    expect((await get(proxiedDefault, '/api/whoami', host, header, DIRECT)).status).toBe(403);
    const r = await get(proxiedDefault, '/api/whoami', host, header);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ header: 'X-Forwarded-User', user: 'carol' });
  });

  it('header mode will not start without a shared secret unless told to go without, and then trusts the address only', async () => {
    await expect(startInbox({ client: h.client, port: 0, trustedUserHeader: 'X-Forwarded-User' })).rejects.toThrow(
      /any process on the proxy's machine could set.*--proxy-secret-file FILE or SLUICE_INBOX_PROXY_SECRET.*--insecure-proxy-without-secret/,
    );
    await expect(
      startInbox({ client: h.client, port: 0, trustedUserHeader: 'X-Forwarded-User', proxySecret: 'short' }),
    ).rejects.toThrow(/at least 16 characters/);
    await expect(startInbox({ client: h.client, port: 0, proxySecret: PROXY_SECRET })).rejects.toThrow(
      /only matters with trustedUserHeader/,
    );
    // Explicitly insecure: the documented old behaviour, by address alone.
    const host = `127.0.0.1:${portOf(insecure)}`;
    const r = await get(insecure, '/api/whoami', host, ['X-Forwarded-User: anyone']);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ header: 'X-Forwarded-User', user: 'anyone' });
  });
});

describe('inbox options on the command line', () => {
  const parse = (args: string[]) => {
    const values: Record<string, string | string[] | boolean> = {};
    for (let i = 0; i < args.length; i += 2) {
      const k = args[i].slice(2);
      const multiple = k === 'trusted-proxy' || k === 'inbox-allowed-host';
      values[k] = multiple ? [...((values[k] as string[]) ?? []), args[i + 1]] : args[i + 1];
    }
    return inboxSettings(values as never);
  };

  it('reads --trusted-proxy, --proxy-secret-file and --inbox-allowed-host, and refuses what cannot work', async () => {
    const secretFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'inbox-secret-')), 'secret');
    fs.writeFileSync(secretFile, `${PROXY_SECRET}\n`);
    expect(
      parse([
        '--proxy-secret-file',
        secretFile,
        '--trusted-user-header',
        'X-Forwarded-User',
        '--trusted-proxy',
        '10.0.0.5,10.0.0.6',
        '--trusted-proxy',
        '::1',
        '--inbox-allowed-host',
        'approvals.example.com',
      ]),
    ).toMatchObject({
      trustedUserHeader: 'X-Forwarded-User',
      trustedProxies: ['10.0.0.5', '10.0.0.6', '::1'],
      proxySecret: PROXY_SECRET,
      allowedHosts: ['approvals.example.com'],
    });
    // The header without a secret (file or SLUICE_INBOX_PROXY_SECRET) is refused, unless explicitly insecure.
    expect(() => parse(['--trusted-user-header', 'X-User'])).toThrow(/needs a secret shared with the proxy/);
    expect(
      inboxSettings({ 'trusted-user-header': 'X-User', 'insecure-proxy-without-secret': true } as never),
    ).toMatchObject({
      trustedUserHeader: 'X-User',
      insecureProxyWithoutSecret: true,
    });
    expect(() => parse(['--proxy-secret-file', secretFile])).toThrow(/goes with --trusted-user-header/);
    expect(() => parse(['--trusted-proxy', '10.0.0.5'])).toThrow(UsageError);
    expect(() =>
      parse([
        '--proxy-secret-file',
        secretFile,
        '--trusted-user-header',
        'X-User',
        '--trusted-proxy',
        'proxy.internal',
      ]),
    ).toThrow(/takes IP addresses/);
    const help: string[] = [];
    expect(await main(['ui', '--help'], (s) => help.push(s))).toBe(0);
    for (const flag of [
      '--trusted-user-header',
      '--trusted-proxy',
      '--proxy-secret-file',
      '--insecure-proxy-without-secret',
      '--inbox-allowed-host',
    ])
      expect(help.join('\n')).toContain(flag);
  });
});
