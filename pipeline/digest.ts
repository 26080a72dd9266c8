import { canonicalJson } from './json';
import type { Json } from './types';

// SHA-256 in plain code: workflow code has no crypto module, and the digest an approver sees
// must be the one the workflow checks, computed by the same function on both sides.

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

/**
 * UTF-8 of `text` with SHA-256's padding, in one buffer. A lone surrogate is encoded as its own
 * three bytes (not U+FFFD, as Node's encoder would): digests already recorded in histories were
 * computed that way, and replaying them must give the same digest.
 */
function paddedUtf8(text: string): Uint8Array {
  // A UTF-16 unit is at most 3 bytes (a surrogate pair is 4 for two units).
  const buf = new Uint8Array(paddedLength(text.length * 3));
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      buf[n++] = c;
      continue;
    }
    if (c >= 0xd800 && c < 0xdc00 && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (c < 0x800) {
      buf[n++] = 0xc0 | (c >> 6);
      buf[n++] = 0x80 | (c & 63);
    } else if (c < 0x10000) {
      buf[n++] = 0xe0 | (c >> 12);
      buf[n++] = 0x80 | ((c >> 6) & 63);
      buf[n++] = 0x80 | (c & 63);
    } else {
      buf[n++] = 0xf0 | (c >> 18);
      buf[n++] = 0x80 | ((c >> 12) & 63);
      buf[n++] = 0x80 | ((c >> 6) & 63);
      buf[n++] = 0x80 | (c & 63);
    }
  }
  const total = paddedLength(n);
  buf[n] = 0x80; // the rest up to the length is already zero
  const bitLength = n * 8;
  const hi = Math.floor(bitLength / 0x100000000);
  const lo = bitLength >>> 0;
  for (let k = 0; k < 4; k++) {
    buf[total - 8 + k] = (hi >>> (24 - 8 * k)) & 255;
    buf[total - 4 + k] = (lo >>> (24 - 8 * k)) & 255;
  }
  return buf.subarray(0, total);
}

/** Bytes of a message of n bytes after padding: a 0x80, zeros, the 8-byte length, whole blocks. */
function paddedLength(n: number): number {
  return (Math.floor((n + 8) / 64) + 1) * 64;
}

export function sha256Hex(text: string): string {
  const bytes = paddedUtf8(text);
  let h0 = 0x6a09e667;
  let h1 = 0xbb67ae85;
  let h2 = 0x3c6ef372;
  let h3 = 0xa54ff53a;
  let h4 = 0x510e527f;
  let h5 = 0x9b05688c;
  let h6 = 0x1f83d9ab;
  let h7 = 0x5be0cd19;
  const w = new Uint32Array(64);
  const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));
  for (let off = 0; off < bytes.length; off += 64) {
    for (let i = 0; i < 16; i++) {
      const j = off + i * 4;
      w[i] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
      const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    let f = h5;
    let g = h6;
    let hh = h7;
    for (let i = 0; i < 64; i++) {
      const t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
      const t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    h0 = (h0 + a) >>> 0;
    h1 = (h1 + b) >>> 0;
    h2 = (h2 + c) >>> 0;
    h3 = (h3 + d) >>> 0;
    h4 = (h4 + e) >>> 0;
    h5 = (h5 + f) >>> 0;
    h6 = (h6 + g) >>> 0;
    h7 = (h7 + hh) >>> 0;
  }
  return hex8(h0) + hex8(h1) + hex8(h2) + hex8(h3) + hex8(h4) + hex8(h5) + hex8(h6) + hex8(h7);
}

function hex8(x: number): string {
  return x.toString(16).padStart(8, '0');
}

/** How a keyed digest (codec/args-digest.ts) begins: the worker's HMAC, never the workflow's own sha-256. */
export const KEYED_DIGEST_PREFIX = 'hmac-sha256:';

export function isKeyedDigest(digest: string | undefined): digest is string {
  return digest?.startsWith(KEYED_DIGEST_PREFIX) === true;
}

/**
 * The workflow's own digest of the arguments: sha-256 of their canonical JSON. It identifies a
 * call inside the workflow (a Code Mode sub-call's arguments, a decision sent before the keyed
 * digest existed); what people see and bind decisions to is the keyed one.
 */
export function argsDigest(args: Json): string {
  return `sha256:${sha256Hex(canonicalJson(args))}`;
}
