// Encryption of every payload Temporal stores: tool arguments, results, events, approval
// decisions. AES-256-GCM, keys from the environment, the key id in each payload's metadata so old
// payloads stay readable after a rotation. The same codec runs in the client, the worker and the
// codec server the Temporal Web UI calls.
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import * as path from 'node:path';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
export const CODEC_KEYS_ENV = 'SLUICE_CODEC_KEYS';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const HOW_TO_MAKE_A_KEY = `node -e "console.log(require('crypto').randomBytes(32).toString('base64'))"`;

export interface CodecKey {
  id: string;
  key: Buffer;
}

/**
 * Parses `id1:base64key,id0:oldkey`: the first key encrypts, every key decrypts. To rotate, put
 * a new key first and keep the old ones until no history needs them.
 */
export function parseCodecKeys(spec: string): CodecKey[] {
  const keys: CodecKey[] = [];
  for (const [i, entry] of spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .entries()) {
    const colon = entry.indexOf(':');
    const id = colon > 0 ? entry.slice(0, colon) : '';
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(id)) {
      throw new Error(
        `${CODEC_KEYS_ENV} entry ${i + 1} must be <key id>:<base64 key> with an id of letters, digits, . _ or -, e.g. k2025:$(${HOW_TO_MAKE_A_KEY})`,
      );
    }
    const key = Buffer.from(entry.slice(colon + 1), 'base64');
    if (key.length !== 32)
      throw new Error(
        `${CODEC_KEYS_ENV} key "${id}" is ${key.length} bytes; AES-256 needs 32 random bytes, base64-encoded. Make one with: ${HOW_TO_MAKE_A_KEY}`,
      );
    if (keys.some((k) => k.id === id))
      throw new Error(`${CODEC_KEYS_ENV} names key "${id}" twice; key ids must be unique`);
    keys.push({ id, key });
  }
  if (keys.length === 0)
    throw new Error(`${CODEC_KEYS_ENV} holds no key; set it to <key id>:<base64 key>[,<older id>:<older key>...]`);
  return keys;
}

export class EncryptionCodec implements PayloadCodec {
  private readonly byId: Map<string, Buffer>;

  constructor(private readonly keys: CodecKey[]) {
    if (keys.length === 0) throw new Error('EncryptionCodec needs at least one key');
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  /** The id of the key new payloads are encrypted with. */
  get currentKeyId(): string {
    return this.keys[0].id;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const { id, key } = this.keys[0];
    return payloads.map((p) => {
      const plain = temporal.api.common.v1.Payload.encode(p).finish();
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(id)); // the key id in the metadata cannot be swapped unnoticed
      const body = Buffer.concat([cipher.update(plain), cipher.final()]);
      return {
        metadata: { encoding: Buffer.from(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: Buffer.from(id) },
        data: Buffer.concat([iv, body, cipher.getAuthTag()]),
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      if (Buffer.from(p.metadata?.encoding ?? []).toString() !== ENCRYPTED_ENCODING) return p;
      const id = Buffer.from(p.metadata?.[KEY_ID_METADATA] ?? []).toString();
      const key = this.byId.get(id);
      if (!key)
        throw new Error(
          `a payload was encrypted with key "${id}", which ${CODEC_KEYS_ENV} does not hold (it has ${[...this.byId.keys()].join(', ')}); add that key, after the current one`,
        );
      const data = Buffer.from(p.data ?? []);
      if (data.length < IV_BYTES + TAG_BYTES)
        throw new Error(`an encrypted payload (key "${id}") is too short to be one: it was damaged`);
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(id));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      let plain: Buffer;
      try {
        plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      } catch {
        throw new Error(
          `an encrypted payload (key "${id}") failed authentication: it was altered, or "${id}" in ${CODEC_KEYS_ENV} is not the key it was written with`,
        );
      }
      return temporal.api.common.v1.Payload.decode(plain) as Payload;
    });
  }
}

/** The codec from SLUICE_CODEC_KEYS, or undefined when the variable is unset. */
export function codecFromEnv(env: NodeJS.ProcessEnv = process.env): EncryptionCodec | undefined {
  const spec = env[CODEC_KEYS_ENV];
  return spec?.trim() ? new EncryptionCodec(parseCodecKeys(spec)) : undefined;
}

/**
 * The data converter for client and worker: payloads through the codec, and failure messages and
 * stack traces moved into an encoded payload so a body's error text is encrypted too.
 */
export function encryptingDataConverter(codec: PayloadCodec): DataConverter {
  return { payloadCodecs: [codec], failureConverterPath: path.join(__dirname, 'encrypted-failures.js') };
}

/** What client and worker use: encryption when SLUICE_CODEC_KEYS is set, Temporal's default otherwise. */
export function dataConverterFromEnv(env: NodeJS.ProcessEnv = process.env): DataConverter | undefined {
  const codec = codecFromEnv(env);
  return codec ? encryptingDataConverter(codec) : undefined;
}

/**
 * Decrypts, in place, every encrypted payload of a workflow history (as fetched or exported), so
 * an auditor's tools read it like an unencrypted one.
 */
export async function decryptHistory(history: object, codec: PayloadCodec): Promise<void> {
  const found: Payload[] = [];
  const walk = (node: unknown, depth: number): void => {
    if (!node || typeof node !== 'object' || depth > 40 || ArrayBuffer.isView(node)) return;
    const p = node as Payload;
    if (p.metadata && Buffer.from(p.metadata.encoding ?? []).toString() === ENCRYPTED_ENCODING) {
      found.push(p);
      return;
    }
    for (const v of Object.values(node)) walk(v, depth + 1);
  };
  walk(history, 0);
  const decoded = await codec.decode(found);
  found.forEach((p, i) => {
    p.metadata = decoded[i].metadata;
    p.data = decoded[i].data;
  });
}
