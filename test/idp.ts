// A test identity provider for the verified-approver tests: an ES256 signing key whose JWKS the
// workers trust, the workers' seal key pair, and tokens for a subject in some groups. One place,
// so every file's issuer, audience and token shape agree with what the workers check.
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

const ISSUER = 'https://idp.test';
const AUDIENCE = 'sluice';

export interface TokenOptions {
  /** Another key than the provider's (a forged token), or a shared secret with `alg: 'HS256'`. */
  key?: CryptoKey | Uint8Array;
  alg?: string;
  /** `exp` as jose takes it: a time span from now (`'5m'`) or seconds since the epoch. */
  exp?: string | number;
  /** A fresh `jti` on every token, for workers that take each token once (`oneTimeTokens`). */
  jti?: boolean;
}

export interface TestIdp {
  /** The `approvers` part of a worker config: what the workers need to check and open tokens. */
  approvers: {
    sealKey: Record<string, unknown>;
    jwks: { keys: Record<string, unknown>[] };
    issuer: string;
    audience: string;
  };
  /** The workers' public seal key, as a client or the inbox seals a token to it. */
  sealPublic: JWK;
  /** A signed token for `sub` in `groups`. */
  token(sub: string, groups?: string[], opts?: TokenOptions): Promise<string>;
}

export async function testIdp(kid: string): Promise<TestIdp> {
  const signing = await generateKeyPair('ES256', { extractable: true });
  const seal = await generateKeyPair('ECDH-ES', { crv: 'P-256', extractable: true });
  const publicJwk = { ...(await exportJWK(signing.publicKey)), kid, alg: 'ES256' };
  return {
    approvers: {
      sealKey: (await exportJWK(seal.privateKey)) as Record<string, unknown>,
      jwks: { keys: [publicJwk as Record<string, unknown>] },
      issuer: ISSUER,
      audience: AUDIENCE,
    },
    sealPublic: await exportJWK(seal.publicKey),
    token(sub, groups = [], opts = {}) {
      const jwt = new SignJWT({ groups })
        .setProtectedHeader({ alg: opts.alg ?? 'ES256', kid })
        .setSubject(sub)
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(opts.exp ?? '5m');
      if (opts.jti) jwt.setJti(randomUUID());
      return jwt.sign(opts.key ?? signing.privateKey);
    },
  };
}
