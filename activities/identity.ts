// Opens a sealed approver identity and verifies its JWT (against a JWKS, a JWKS URL or a shared
// HMAC key), as an activity: the token is only ever in this process's memory. What it returns
// (subject, groups, issuer, or why not) is what history records.
import {
  compactDecrypt,
  createLocalJWKSet,
  createRemoteJWKSet,
  type JWK,
  type JWTPayload,
  type JWTVerifyGetKey,
  importJWK,
  jwtVerify,
  decodeProtectedHeader,
  errors,
} from 'jose';
import type { SealedIdentity, VerifyApproverRequest, VerifyApproverResult } from '../pipeline/identity';
import type { ApproverSettings } from '../define/config';

const DURATION =
  /^\d+(\.\d+)? ?(s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days|w|week|weeks)$/;

export function createIdentityActivities(settings: ApproverSettings | undefined) {
  const age = settings?.maxTokenAge;
  if (age !== undefined && !(typeof age === 'number' ? Number.isFinite(age) && age > 0 : DURATION.test(age)))
    throw new Error(
      `approvers.maxTokenAge must be a number of seconds or a duration such as '15m' or '1h', not ${JSON.stringify(age)}`,
    );
  let jwks: JWTVerifyGetKey | undefined;
  if (settings?.jwks) jwks = createLocalJWKSet(settings.jwks as { keys: JWK[] });
  else if (settings?.jwksUrl) jwks = createRemoteJWKSet(new URL(settings.jwksUrl));
  const shared = settings?.sharedKey ? new TextEncoder().encode(settings.sharedKey) : undefined;
  let sealKey: Promise<CryptoKey | Uint8Array> | undefined;

  return {
    async verifyApprover(req: VerifyApproverRequest): Promise<VerifyApproverResult> {
      const no = (problem: string, code: 'unverified' | 'wrong-group' = 'unverified'): VerifyApproverResult => ({
        ok: false,
        code,
        problem,
      });
      if (!settings?.sealKey || (!jwks && !shared))
        return no(
          'this worker cannot verify approvers: set approvers.sealKey and approvers.jwks, jwksUrl or sharedKey in the Sluice config',
        );
      sealKey ??= importJWK(settings.sealKey as JWK, 'ECDH-ES');
      let sealed: SealedIdentity;
      try {
        const { plaintext } = await compactDecrypt(req.sealed, await sealKey);
        sealed = JSON.parse(new TextDecoder().decode(plaintext));
      } catch {
        return no(
          "the signed identity could not be opened with this worker's seal key: seal it with the public key the workers publish (SLUICE_SEAL_KEY)",
        );
      }
      if (sealed.approvalId !== req.approvalId || sealed.argsDigest !== req.argsDigest)
        return no('the signed identity was sealed for another approval or other arguments; it is not reused');
      let payload: JWTPayload;
      try {
        const alg = decodeProtectedHeader(sealed.token).alg ?? '';
        // A token without `exp` would be good forever once leaked (from a proxy log, a browser):
        // `exp` is required. `maxTokenAge` also bounds a token by its `iat` (which it then needs),
        // whatever lifetime the identity provider gave it.
        const opts = {
          requiredClaims: ['exp', ...(settings.maxTokenAge !== undefined ? ['iat'] : [])],
          ...(settings.maxTokenAge !== undefined ? { maxTokenAge: settings.maxTokenAge } : {}),
          ...(settings.issuer ? { issuer: settings.issuer } : {}),
          ...(settings.audience ? { audience: settings.audience } : {}),
        };
        if (alg.startsWith('HS')) {
          if (!shared) return no(`the token is signed with ${alg} and this worker has no shared key`);
          ({ payload } = await jwtVerify(sealed.token, shared, opts));
        } else {
          if (!jwks) return no(`the token is signed with ${alg} and this worker has no JWKS`);
          ({ payload } = await jwtVerify(sealed.token, jwks, opts));
        }
      } catch (err) {
        if (err instanceof errors.JWTExpired && err.claim === 'iat')
          return no(
            `the token was issued more than ${String(settings.maxTokenAge)} ago (approvers.maxTokenAge); sign in again`,
          );
        if (err instanceof errors.JWTExpired)
          return no(`the token expired (exp ${String(err.payload.exp)}); sign in again`);
        if (err instanceof errors.JWSSignatureVerificationFailed || err instanceof errors.JWKSNoMatchingKey)
          return no("the token's signature does not verify against the keys this worker trusts");
        if (err instanceof errors.JWTClaimValidationFailed && err.claim === 'exp' && err.reason === 'missing')
          return no('the token has no "exp" (expiry) claim; only tokens that expire are accepted');
        if (err instanceof errors.JWTClaimValidationFailed)
          return no(`the token's "${err.claim}" claim is not accepted: ${err.reason}`);
        return no(`the token is not a valid JWT: ${(err as Error).message}`);
      }
      const subject = typeof payload.sub === 'string' ? payload.sub : '';
      if (!subject) return no('the token has no "sub" (subject) claim');
      const claim = payload[settings.groupsClaim ?? 'groups'];
      const groups = Array.isArray(claim) ? claim.filter((g): g is string => typeof g === 'string') : [];
      if (req.groups.length && !req.groups.some((g) => groups.includes(g)))
        return {
          ok: false,
          code: 'wrong-group',
          subject,
          problem: `${subject} is not in a group that may approve ${req.toolName} (needs one of ${req.groups.join(', ')}; has ${groups.length ? groups.join(', ') : 'none'})`,
        };
      return { ok: true, subject, groups, ...(typeof payload.iss === 'string' ? { issuer: payload.iss } : {}) };
    },
  };
}
