// The approver-token check (the verifyApprover activity, called directly): a signed token with no
// `exp` would be good forever once leaked, so it is refused; an operator's maxTokenAge bounds a
// token by its `iat` whatever lifetime the identity provider gave it; with oneTimeTokens a token
// (its jti) decides once, across approvals and across workers that share the store.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { createIdentityActivities } from '../../activities/identity';
import { sealIdentity } from '../../client/identity';
import type { ApproverSettings } from '../../define/config';
import { fileStores } from '../../stores/stores';

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

  it('with oneTimeTokens, a token decides once: re-sealed for another approval, or at another worker of the store, it is refused; a retried check of the same decision is not', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-one-time-'));
    try {
      const once = { ...settings, oneTimeTokens: true };
      // Two workers sharing one state folder: each its own activities, one store of claims.
      const workerA = createIdentityActivities(once, { claimOnce: fileStores(dir).claimOnce! });
      const workerB = createIdentityActivities(once, { claimOnce: fileStores(dir).claimOnce! });
      const now = Math.floor(Date.now() / 1000);
      const sign = (jti?: string) => {
        const t = unsigned({ iat: now, exp: now + 300 });
        if (jti) t.setJti(jti);
        return t.setProtectedHeader({ alg: 'ES256', kid: 'k1' }).sign(signing);
      };
      const request = async (jwt: string, approvalId: string) => ({
        sealed: await sealIdentity(jwt, { ...FOR, approvalId }, sealPublic),
        ...FOR,
        approvalId,
        groups: [],
        toolName: 'deploy',
      });
      const jwt = await sign('jti-1');
      const first = await request(jwt, 'a-1');
      expect(await workerA.verifyApprover(first)).toMatchObject({ ok: true, subject: 'mallory@example.com' });
      // The same decision's check again (an activity retry): still its own.
      expect(await workerA.verifyApprover(first)).toMatchObject({ ok: true });
      // The token again, sealed for another approval, at the other worker: refused.
      const again = await workerB.verifyApprover(await request(jwt, 'a-2'));
      expect(again).toMatchObject({ ok: false, code: 'token-used', subject: 'mallory@example.com' });
      expect(again.ok ? '' : again.problem).toContain('each token decides once');
      // And re-sealed for the same approval (another decision with it): refused too.
      expect(await workerA.verifyApprover(await request(jwt, 'a-1'))).toMatchObject({ ok: false, code: 'token-used' });
      // Another token (another jti) decides; a token with no jti cannot be taken once, so it is refused.
      expect(await workerB.verifyApprover(await request(await sign('jti-2'), 'a-2'))).toMatchObject({ ok: true });
      const noJti = await workerA.verifyApprover(await request(await sign(), 'a-3'));
      expect(noJti).toMatchObject({ ok: false, code: 'unverified' });
      expect(noJti.ok ? '' : noJti.problem).toContain('"jti"');
      // A token refused for its group is not spent.
      const grouped = await request(await sign('jti-3'), 'a-4');
      expect(await workerA.verifyApprover({ ...grouped, groups: ['ops'] })).toMatchObject({ code: 'wrong-group' });
      expect(await workerA.verifyApprover(grouped)).toMatchObject({ ok: true });
      // Without the setting, a token decides until it expires.
      const plain = createIdentityActivities(settings);
      expect(await plain.verifyApprover(await request(jwt, 'a-5'))).toMatchObject({ ok: true });
      expect(() => createIdentityActivities(once)).toThrow(/oneTimeTokens needs a store/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
