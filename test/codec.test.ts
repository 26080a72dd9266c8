// The payload codec on its own: round trips, key rotation by id, tampering, bad key settings,
// and the codec server's HTTP surface, also as the `sluice codec-server` command.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCodecServer } from '../client/codec-server';
import { codecFromEnv, EncryptionCodec, ENCRYPTED_ENCODING, KEY_ID_METADATA, parseCodecKeys } from '../codec/payload';

const key = () => randomBytes(32).toString('base64');
const k1 = key();
const k0 = key();
const payload = (v: unknown): Payload => defaultPayloadConverter.toPayload(v)!;
const value = (p: Payload) => defaultPayloadConverter.fromPayload(p);
const str = (b?: Uint8Array | null) => Buffer.from(b ?? []).toString();

describe('EncryptionCodec', () => {
  it('round-trips payloads, and the ciphertext holds no plaintext', async () => {
    const codec = new EncryptionCodec(parseCodecKeys(`k1:${k1}`));
    const [enc] = await codec.encode([payload({ secret: 'sk-live-abc123' })]);
    expect(str(enc.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(str(enc.metadata![KEY_ID_METADATA])).toBe('k1');
    expect(Buffer.from(enc.data!).includes('sk-live-abc123')).toBe(false);
    const [dec] = await codec.decode([enc]);
    expect(value(dec)).toEqual({ secret: 'sk-live-abc123' });
  });

  it('encrypts with the first key and decrypts with any listed one: rotation keeps old history readable', async () => {
    const before = new EncryptionCodec(parseCodecKeys(`k0:${k0}`));
    const after = new EncryptionCodec(parseCodecKeys(`k1:${k1},k0:${k0}`));
    const [old] = await before.encode([payload('written before the rotation')]);
    expect(value((await after.decode([old]))[0])).toBe('written before the rotation');
    const [fresh] = await after.encode([payload('after')]);
    expect(str(fresh.metadata![KEY_ID_METADATA])).toBe('k1');
    await expect(before.decode([fresh])).rejects.toThrow(
      /encrypted with key "k1", which SLUICE_CODEC_KEYS does not hold \(it has k0\)/,
    );
  });

  it('refuses altered ciphertext and a swapped key id', async () => {
    const codec = new EncryptionCodec(parseCodecKeys(`k1:${k1},k0:${k0}`));
    const [enc] = await codec.encode([payload('x')]);
    const flipped = Buffer.from(enc.data!);
    flipped[flipped.length - 20] ^= 1;
    await expect(codec.decode([{ ...enc, data: flipped }])).rejects.toThrow(/failed authentication/);
    await expect(
      codec.decode([{ ...enc, metadata: { ...enc.metadata, [KEY_ID_METADATA]: Buffer.from('k0') } }]),
    ).rejects.toThrow(/failed authentication/);
    await expect(codec.decode([{ ...enc, data: Buffer.alloc(5) }])).rejects.toThrow(/too short/);
  });

  it('passes unencrypted payloads through on decode, so pre-encryption history stays readable', async () => {
    const codec = new EncryptionCodec(parseCodecKeys(`k1:${k1}`));
    expect(value((await codec.decode([payload({ a: 1 })]))[0])).toEqual({ a: 1 });
  });

  it('explains bad key settings', () => {
    expect(() => parseCodecKeys('')).toThrow(/holds no key/);
    expect(() => parseCodecKeys('nokeyhere')).toThrow(/<key id>:<base64 key>/);
    expect(() => parseCodecKeys(`a:${Buffer.alloc(16).toString('base64')}`)).toThrow(
      /"a" is 16 bytes; AES-256 needs 32/,
    );
    expect(() => parseCodecKeys(`a:${k1},a:${k0}`)).toThrow(/names key "a" twice/);
    expect(codecFromEnv({})).toBeUndefined();
    expect(codecFromEnv({ SLUICE_CODEC_KEYS: `k1:${k1}` })?.currentKeyId).toBe('k1');
  });
});

describe('codec server', () => {
  const codec = new EncryptionCodec(parseCodecKeys(`k1:${k1}`));
  let server: { url: string; close(): Promise<void> };
  beforeAll(async () => {
    server = await startCodecServer({ codec, port: 0, origins: ['http://localhost:8233'] });
  });
  afterAll(() => server?.close());

  const post = (route: string, body: string, origin?: string) =>
    fetch(`${server.url}${route}`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...(origin ? { origin } : {}) },
    });
  const toJson = (p: Payload) => ({
    metadata: Object.fromEntries(
      Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v!).toString('base64')]),
    ),
    data: Buffer.from(p.data ?? []).toString('base64'),
  });

  it('decodes what the workers encoded, and encodes for the UI', async () => {
    const [enc] = await codec.encode([payload({ args: 'secret' })]);
    const res = await post('/decode', JSON.stringify({ payloads: [toJson(enc)] }), 'http://localhost:8233');
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:8233');
    const body = (await res.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(Buffer.from(body.payloads[0].metadata.encoding, 'base64').toString()).toBe('json/plain');
    expect(JSON.parse(Buffer.from(body.payloads[0].data, 'base64').toString())).toEqual({ args: 'secret' });

    const encRes = await post('/encode', JSON.stringify({ payloads: body.payloads }));
    const encoded = (await encRes.json()) as { payloads: { metadata: Record<string, string> }[] };
    expect(Buffer.from(encoded.payloads[0].metadata.encoding, 'base64').toString()).toBe(ENCRYPTED_ENCODING);
  });

  it('answers the UI origin preflight and refuses other origins', async () => {
    const ok = await fetch(`${server.url}/decode`, {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:8233', 'access-control-request-method': 'POST' },
    });
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-headers')).toMatch(/X-Namespace/);
    const other = await post('/decode', JSON.stringify({ payloads: [] }), 'http://evil.example');
    expect(other.status).toBe(403);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('gives bad requests a clear error', async () => {
    expect((await post('/decode', 'not json')).status).toBe(400);
    expect(await (await post('/decode', '{"nope":1}')).json()).toEqual({ error: 'the body has no "payloads" array' });
    expect((await post('/elsewhere', '{}')).status).toBe(404);
    const bad = await post(
      '/decode',
      JSON.stringify({
        payloads: [
          {
            metadata: {
              encoding: Buffer.from(ENCRYPTED_ENCODING).toString('base64'),
              [KEY_ID_METADATA]: Buffer.from('zz').toString('base64'),
            },
            data: 'AAAA',
          },
        ],
      }),
    );
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { error: string }).error).toMatch(/key "zz"/);
  });
});

describe('sluice codec-server, the command SECURITY.md gives', () => {
  it('starts from the command line and decrypts what a worker with the same keys encrypted', async () => {
    const keys = `k1:${k1}`;
    const child = spawn(
      process.execPath,
      [path.join(__dirname, '..', 'bin', 'sluice.js'), 'codec-server', '--port', '0'],
      {
        env: { ...process.env, SLUICE_CODEC_KEYS: keys },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      let printed = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (d) => {
          printed += d;
          const m = /codec server at (http:\/\/\S+)/.exec(printed);
          if (m) resolve(m[1]);
        });
        child.stderr.on('data', (d) => (printed += d));
        child.once('exit', (code) => reject(new Error(`sluice codec-server exited (${code}): ${printed}`)));
      });
      const [enc] = await new EncryptionCodec(parseCodecKeys(keys)).encode([payload({ pin: '4921' })]);
      const json = {
        metadata: Object.fromEntries(
          Object.entries(enc.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? []).toString('base64')]),
        ),
        data: Buffer.from(enc.data ?? []).toString('base64'),
      };
      const res = await fetch(`${url}/decode`, { method: 'POST', body: JSON.stringify({ payloads: [json] }) });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { payloads: { data: string }[] };
      expect(JSON.parse(Buffer.from(body.payloads[0].data, 'base64').toString())).toEqual({ pin: '4921' });
    } finally {
      child.kill('SIGKILL');
    }
  });
});
