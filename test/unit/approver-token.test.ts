// The approver-token check (the verifyApprover activity, called directly): a signed token with no
// `exp` would be good forever once leaked, so it is refused; an operator's maxTokenAge bounds a
// token by its `iat` whatever lifetime the identity provider gave it.
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { createIdentityActivities } from '../../activities/identity';
import { sealIdentity } from '../../client/identity';
import type { ApproverSettings } from '../../define/config';

const SHARED = 'a-shared-secret-for-hs256-tokens-in-the-unit-test';
const FOR = { approvalId: 'a-1', argsDigest: `hmac-sha256:${'ab'.repeat(32)}` };
let settings: ApproverSettings;
let sealPublic: JWK;
let signing: CryptoKey;

beforeAll(async () => {
  const seal = await generateKeyPair('ECDH-ES', { crv: 'P-256', extractable: true });
  sealPublic = await exportJWK(seal.publicKey);
  const idp = await generateKeyPair('ES256', { extractable: true });
  signing = idp.privateKey;
  settings = {
    sealKey: (await exportJWK(seal.privateKey)) as Record<string, unknown>,
    jwks: { keys: [{ ...(await exportJWK(idp.publicKey)), kid: 'k1', alg: 'ES256' }] },
    sharedKey: SHARED,
  };
});

async function verify(s: ApproverSettings, jwt: string) {
  return createIdentityActivities(s).verifyApprover({
    sealed: await sealIdentity(jwt, FOR, sealPublic),
    ...FOR,
    groups: [],
    toolName: 'deploy',
  });
}

function unsigned(claims: { exp?: number | string; iat?: number }) {
  const t = new SignJWT({ groups: ['release'] }).setSubject('mallory@example.com');
  if (claims.iat !== undefined) t.setIssuedAt(claims.iat);
  if (claims.exp !== undefined) t.setExpirationTime(claims.exp);
  return t;
}

describe('approver tokens', () => {
  it('refuses a token without exp, HS and ES alike, and takes the same token with one', async () => {
    const now = Math.floor(Date.now() / 1000);
    const hsNoExp = await unsigned({ iat: now })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode(SHARED));
    const esNoExp = await unsigned({ iat: now }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).sign(signing);
    for (const jwt of [hsNoExp, esNoExp]) {
      const r = await verify(settings, jwt);
      expect(r).toMatchObject({ ok: false, code: 'unverified' });
      expect(r.ok ? '' : r.problem).toContain('no "exp"');
    }
    const withExp = await unsigned({ iat: now, exp: '5m' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .sign(signing);
    expect(await verify(settings, withExp)).toMatchObject({ ok: true, subject: 'mallory@example.com' });
  });

  it('with maxTokenAge, refuses a token issued too long ago or with no iat, though its exp is far ahead', async () => {
    const bounded = { ...settings, maxTokenAge: '15m' };
    const now = Math.floor(Date.now() / 1000);
    const sign = (c: { exp?: number | string; iat?: number }) =>
      unsigned(c).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(SHARED));
    const old = await verify(bounded, await sign({ iat: now - 3600, exp: now + 365 * 86400 }));
    expect(old).toMatchObject({ ok: false, code: 'unverified' });
    expect(old.ok ? '' : old.problem).toContain('maxTokenAge');
    const noIat = await verify(bounded, await sign({ exp: now + 300 }));
    expect(noIat).toMatchObject({ ok: false, code: 'unverified' });
    expect(noIat.ok ? '' : noIat.problem).toContain('"iat"');
    expect(await verify(bounded, await sign({ iat: now - 60, exp: now + 300 }))).toMatchObject({ ok: true });
    // Without the setting the old token still verifies: the bound is the operator's choice.
    expect(await verify(settings, await sign({ iat: now - 3600, exp: now + 300 }))).toMatchObject({ ok: true });
  });

  it('refuses a maxTokenAge it cannot read when the worker starts', () => {
    expect(() => createIdentityActivities({ ...settings, maxTokenAge: 'a while' })).toThrow(/maxTokenAge/);
    expect(() => createIdentityActivities({ ...settings, maxTokenAge: -5 })).toThrow(/maxTokenAge/);
  });
});
