// The digest a person's decision is bound to, keyed so that it says nothing about the arguments
// to whoever sees it without the key. An unkeyed sha-256 of small arguments (a PIN, a yes/no) is
// guessed back in a few thousand tries; an HMAC needs the key first.
//
// The key lives with the workers: the preflight stage computes the digest and the workflow keeps
// it with the pending approval, so clients, the inbox and the stock CLI only ever echo it.
import { createHmac } from 'node:crypto';
import { KEYED_DIGEST_PREFIX } from '../pipeline/digest';
import { canonicalJson } from '../pipeline/json';
import type { JsonObject } from '../pipeline/types';
import { CODEC_KEYS_ENV } from './payload';

const DIGEST_KEY_ENV = 'SLUICE_DIGEST_KEY';
/**
 * Used when neither SLUICE_DIGEST_KEY nor SLUICE_CODEC_KEYS is set. It is public, so the digest
 * is then no secret, but neither are the arguments: without the codec they are in clear anyway.
 */
export const DEFAULT_DIGEST_KEY = 'sluice-default-digest-key-v1';

/**
 * SLUICE_DIGEST_KEY when set; else a key derived from the first SLUICE_CODEC_KEYS key (whoever
 * can decrypt history can read the arguments anyway); else the public default.
 */
export function digestKeyFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  const own = env[DIGEST_KEY_ENV]?.trim();
  if (own) return own;
  // The first entry as written (`<id>:<base64 key>`), not parsed: a malformed value is the codec's
  // to report where it is used; the digest key must not stop a worker that does not encrypt.
  const first = env[CODEC_KEYS_ENV]?.split(',')[0]?.trim();
  if (first) return createHmac('sha256', first).update('sluice argsDigest key v1').digest('hex');
  return DEFAULT_DIGEST_KEY;
}

/** `hmac-sha256:<hex>` of the canonical JSON of the arguments. */
export function keyedArgsDigest(args: JsonObject, key: string): string {
  return `${KEYED_DIGEST_PREFIX}${createHmac('sha256', key).update(canonicalJson(args)).digest('hex')}`;
}
