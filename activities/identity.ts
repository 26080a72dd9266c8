// Opens a sealed approver identity and verifies its JWT (against a JWKS, a JWKS URL or a shared
// HMAC key), as an activity: the token is only ever in this process's memory. What it returns
// (subject, groups, issuer, or why not) is what history records.
import { createHash } from 'node:crypto';
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
import { groupsProblem } from '../pipeline/quorum';

const DURATION =
  /^\d+(\.\d+)? ?(s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days|w|week|weeks)$/;

/** The keys a worker verifies approver tokens with: a JWKS (inline or by URL), a shared HMAC key. */
interface VerifyKeys {
  jwks?: JWTVerifyGetKey;
  shared?: Uint8Array;
}

/**
 * Where used one-time tokens are recorded (SluiceStores.claimOnce): shared by every worker of the
 * store, so a token decides once across approvals, batches and workers.
 */
type ClaimOnce = (key: string, holder: string) => Promise<string>;

export function createIdentityActivities(settings: ApproverSettings | undefined, opts: { claimOnce?: ClaimOnce } = {}) {
  checkMaxTokenAge(settings?.maxTokenAge);
  if (settings?.oneTimeTokens !== undefined && typeof settings.oneTimeTokens !== 'boolean')
    throw new Error('approvers.oneTimeTokens must be true or false');
  if (settings?.oneTimeTokens && !opts.claimOnce)
    throw new Error(
      'approvers.oneTimeTokens needs a store every worker shares to record used tokens in (the state folder or PostgreSQL); this worker has none',
    );
  const keys: VerifyKeys = {
    jwks: settings?.jwks
      ? createLocalJWKSet(settings.jwks as { keys: JWK[] })
      : settings?.jwksUrl
        ? createRemoteJWKSet(new URL(settings.jwksUrl))
        : undefined,
    shared: settings?.sharedKey ? new TextEncoder().encode(settings.sharedKey) : undefined,
  };
  // Imported on the first approval, then kept: a worker that never verifies never parses the key.
  let sealKey: Promise<CryptoKey | Uint8Array> | undefined;

  return {
    async verifyApprover(req: VerifyApproverRequest): Promise<VerifyApproverResult> {
      if (!settings?.sealKey || (!keys.jwks && !keys.shared))
        return no(
          'this worker cannot verify approvers: set approvers.sealKey and approvers.jwks, jwksUrl or sharedKey in the Sluice config',
        );
      sealKey ??= importJWK(settings.sealKey as JWK, 'ECDH-ES');
      const sealed = await openSealed(req.sealed, sealKey);
      if (!sealed)
        return no(
          "the signed identity could not be opened with this worker's seal key: seal it with the public key the workers publish (SLUICE_SEAL_KEY)",
        );
      if (sealed.approvalId !== req.approvalId || sealed.argsDigest !== req.argsDigest)
        return no('the signed identity was sealed for another approval or other arguments; it is not reused');
      const verified = await verifyToken(sealed.token, settings, keys);
      if ('problem' in verified) return no(verified.problem);
      const approver = approverOf(verified.payload, settings, req);
      if (!approver.ok || !settings.oneTimeTokens) return approver;
      return (await usedBefore(verified.payload, req, opts.claimOnce!)) ?? approver;
    },
  };
}

/**
 * One-time tokens: the token's `jti` (with its issuer) is claimed for this decision, the sealed
 * identity it came in. A retried activity brings the same sealed identity and finds its own
 * claim; any other decision with the token (re-sealed for another approval, batch or worker) finds
 * it taken. Claimed only once the token passed every other check, so a refused one is not spent.
 */
async function usedBefore(
  payload: JWTPayload,
  req: VerifyApproverRequest,
  claimOnce: ClaimOnce,
): Promise<VerifyApproverResult | undefined> {
  const subject = String(payload.sub);
  if (typeof payload.jti !== 'string' || !payload.jti)
    return {
      ok: false,
      code: 'unverified',
      subject,
      problem:
        'the token has no "jti" (token id) claim, and this worker takes each approver token once (approvers.oneTimeTokens): have the identity provider issue tokens with a jti',
    };
  const holder = createHash('sha256').update(req.sealed).digest('hex');
  const key = `approver-jti:${createHash('sha256')
    .update(JSON.stringify([payload.iss ?? '', payload.jti]))
    .digest('hex')}`;
  if ((await claimOnce(key, holder)) === holder) return undefined;
  return {
    ok: false,
    code: 'token-used',
    subject,
    problem: `this approver token (jti ${payload.jti.slice(0, 80)}) already decided another approval; each token decides once (approvers.oneTimeTokens): sign in again for a new one`,
  };
}

/** A refusal: `problem` is what the approver is shown, so it says what to do. */
function no(problem: string): VerifyApproverResult {
  return { ok: false, code: 'unverified', problem };
}

function checkMaxTokenAge(age: ApproverSettings['maxTokenAge']): void {
  if (age !== undefined && !(typeof age === 'number' ? Number.isFinite(age) && age > 0 : DURATION.test(age)))
    throw new Error(
      `approvers.maxTokenAge must be a number of seconds or a duration such as '15m' or '1h', not ${JSON.stringify(age)}`,
    );
}

/**
 * The sealed identity, decrypted with the worker's seal key; undefined when it does not open. A
 * seal key that fails to import is awaited here too, so it reads as "could not be opened".
 */
async function openSealed(jwe: string, key: Promise<CryptoKey | Uint8Array>): Promise<SealedIdentity | undefined> {
  try {
    const { plaintext } = await compactDecrypt(jwe, await key);
    return JSON.parse(new TextDecoder().decode(plaintext));
  } catch {
    return undefined;
  }
}

/** Verifies the JWT with the key its algorithm calls for: the shared key for HS*, else the JWKS. */
async function verifyToken(
  token: string,
  settings: ApproverSettings,
  keys: VerifyKeys,
): Promise<{ payload: JWTPayload } | { problem: string }> {
  try {
    const alg = decodeProtectedHeader(token).alg ?? '';
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
      if (!keys.shared) return { problem: `the token is signed with ${alg} and this worker has no shared key` };
      return { payload: (await jwtVerify(token, keys.shared, opts)).payload };
    }
    if (!keys.jwks) return { problem: `the token is signed with ${alg} and this worker has no JWKS` };
    return { payload: (await jwtVerify(token, keys.jwks, opts)).payload };
  } catch (err) {
    return { problem: whyRejected(err, settings) };
  }
}

/** Why jose refused the token, in words the approver can act on. */
function whyRejected(err: unknown, settings: ApproverSettings): string {
  if (err instanceof errors.JWTExpired && err.claim === 'iat')
    return `the token was issued more than ${String(settings.maxTokenAge)} ago (approvers.maxTokenAge); sign in again`;
  if (err instanceof errors.JWTExpired) return `the token expired (exp ${String(err.payload.exp)}); sign in again`;
  if (err instanceof errors.JWSSignatureVerificationFailed || err instanceof errors.JWKSNoMatchingKey)
    return "the token's signature does not verify against the keys this worker trusts";
  if (err instanceof errors.JWTClaimValidationFailed && err.claim === 'exp' && err.reason === 'missing')
    return 'the token has no "exp" (expiry) claim; only tokens that expire are accepted';
  if (err instanceof errors.JWTClaimValidationFailed)
    return `the token's "${err.claim}" claim is not accepted: ${err.reason}`;
  return `the token is not a valid JWT: ${(err as Error).message}`;
}

/** The verified approver, if the token names a subject in one of the groups the tool requires. */
function approverOf(payload: JWTPayload, settings: ApproverSettings, req: VerifyApproverRequest): VerifyApproverResult {
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
  // Several sources named groups: a group of each list (any of one list would widen who approves).
  const outside = groupsProblem(req.groupSets ?? [], groups);
  if (outside)
    return {
      ok: false,
      code: 'wrong-group',
      subject,
      problem: `${subject} is not in the groups that may approve ${req.toolName}: it ${outside} (has ${groups.length ? groups.join(', ') : 'none'})`,
    };
  return { ok: true, subject, groups, ...(typeof payload.iss === 'string' ? { issuer: payload.iss } : {}) };
}
