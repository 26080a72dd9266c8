// `sluice codec-server`: the HTTP endpoint the Temporal Web UI (and `temporal --codec-endpoint`)
// calls to show encrypted payloads in clear: POST /encode and POST /decode with
// {"payloads": [{"metadata": {k: base64}, "data": base64}]}. It decrypts for whoever can reach
// it, so it listens on loopback by default and answers cross-origin calls from the UI only.
import type { Payload, PayloadCodec } from '@temporalio/common';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CODEC_KEYS_ENV, codecFromEnv } from '../codec/payload';
import { ConfigError, InvalidInputError } from '../support/errors';

/** The dev server's Web UI: `sluice dev` serves it on the frontend port + 1000. */
const DEFAULT_UI_ORIGINS = ['http://localhost:8233', 'http://127.0.0.1:8233'];
const MAX_BODY_BYTES = 16 * 1024 * 1024;

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

interface CodecServerOptions {
  codec: PayloadCodec;
  port?: number;
  host?: string;
  /** Origins allowed to call from a browser (the Web UI's); others get no CORS headers. */
  origins?: string[];
}

export async function startCodecServer(opts: CodecServerOptions): Promise<{ url: string; close(): Promise<void> }> {
  const origins = new Set(opts.origins?.length ? opts.origins : DEFAULT_UI_ORIGINS);
  const server = http.createServer((req, res) => {
    const origin = req.headers.origin;
    if (origin && origins.has(origin)) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
      res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', 'Content-Type, X-Namespace, Authorization');
      res.setHeader('Vary', 'Origin');
    }
    if (req.method === 'OPTIONS')
      return end(
        res,
        origin && origins.has(origin) ? 204 : 403,
        origin && origins.has(origin)
          ? undefined
          : {
              error: `origin ${origin ?? '(none)'} may not call this codec server; start it with --ui-origin ${origin ?? '<origin>'}`,
            },
      );
    const route = (req.url ?? '').split('?')[0].replace(/\/+$/, '');
    if (!route.endsWith('/encode') && !route.endsWith('/decode'))
      return end(res, 404, { error: 'POST /encode or /decode' });
    if (req.method !== 'POST') return end(res, 405, { error: 'use POST' });
    if (origin && !origins.has(origin))
      return end(res, 403, {
        error: `origin ${origin} may not call this codec server; start it with --ui-origin ${origin}`,
      });
    readBody(req)
      .then(async (body) => {
        let payloads: Payload[];
        try {
          payloads = parsePayloads(body);
        } catch (err) {
          return end(res, 400, { error: (err as Error).message });
        }
        try {
          const out = route.endsWith('/encode') ? await opts.codec.encode(payloads) : await opts.codec.decode(payloads);
          end(res, 200, { payloads: out.map(toJson) });
        } catch (err) {
          end(res, 422, { error: (err as Error).message });
        }
      })
      .catch((err) => end(res, 413, { error: (err as Error).message }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 8888, opts.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address}:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function end(res: http.ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error(`request body over ${MAX_BODY_BYTES} bytes`));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parsePayloads(body: string): Payload[] {
  let data: { payloads?: unknown };
  try {
    data = JSON.parse(body);
  } catch {
    throw new InvalidInputError('the body is not JSON; send {"payloads": [{"metadata": {...}, "data": "<base64>"}]}');
  }
  if (!data || !Array.isArray(data.payloads)) throw new InvalidInputError('the body has no "payloads" array');
  return data.payloads.map((p: JsonPayload, i: number) => {
    if (!p || typeof p !== 'object') throw new InvalidInputError(`payloads[${i}] is not an object`);
    const metadata: Record<string, Uint8Array> = {};
    for (const [k, v] of Object.entries(p.metadata ?? {})) {
      if (typeof v !== 'string') throw new InvalidInputError(`payloads[${i}].metadata.${k} must be a base64 string`);
      metadata[k] = Buffer.from(v, 'base64');
    }
    if (p.data !== undefined && typeof p.data !== 'string')
      throw new InvalidInputError(`payloads[${i}].data must be a base64 string`);
    return { metadata, data: Buffer.from(p.data ?? '', 'base64') };
  });
}

function toJson(p: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(
      Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? []).toString('base64')]),
    ),
    data: Buffer.from(p.data ?? []).toString('base64'),
  };
}

/** The CLI command: runs until interrupted. */
export async function runCodecServer(
  v: { port?: string; origins?: string[] },
  out: (s: string) => void,
): Promise<number> {
  const codec = codecFromEnv();
  if (!codec)
    throw new ConfigError(`${CODEC_KEYS_ENV} is not set: the codec server needs the same keys as the workers`);
  const server = await startCodecServer({ codec, port: v.port ? Number(v.port) : undefined, origins: v.origins });
  out(
    `codec server at ${server.url} (POST /encode, /decode), for browser origins ${(v.origins?.length ? v.origins : DEFAULT_UI_ORIGINS).join(', ')}`,
  );
  out(
    `In the Temporal Web UI: Settings (Data Encoder) -> ${server.url}; or \`temporal server start-dev --ui-codec-endpoint ${server.url}\`.`,
  );
  await new Promise(() => undefined);
  return 0;
}
